package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
)

// timelineAnswer runs a kernels query and hands its answer back as Grafana's server decodes it
// from the plugin's Arrow frames.
func timelineAnswer(t *testing.T, ds *Datasource, model string) *backend.QueryDataResponse {
	t.Helper()
	res, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{query("A", model)}})
	if err != nil {
		t.Fatal(err)
	}
	proto, err := backend.ToProto().QueryDataResponse(backend.DataFrameFormat_ARROW, res)
	if err != nil {
		t.Fatal(err)
	}
	back, err := backend.FromProto().QueryDataResponse(proto)
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// The timeline view answers one trace frame of the request's file: a span per activity of the
// trace, the query's trace ID on every span.
func TestKernelsQueryTimeline(t *testing.T) {
	dir := t.TempDir()
	truth, err := testbed.WriteKernelTimelineTrace(dir)
	if err != nil {
		t.Fatal(err)
	}
	ds := newTestDatasource(t, map[string]any{"traceDirectories": []string{dir}}, nil)
	r := timelineAnswer(t, ds, `{"queryType":"kernels","traceId":"`+testbed.KernelTimelineTraceID+`","view":"timeline"}`).Responses["A"]
	if r.Error != nil || len(r.Frames) != 1 {
		t.Fatalf("%v, %d frames", r.Error, len(r.Frames))
	}
	f := r.Frames[0]
	if f.Name != frames.KernelTimelineFrameName || f.Meta.PreferredVisualization != data.VisTypeTrace {
		t.Fatalf("frame %q %+v", f.Name, f.Meta)
	}
	categories := map[string]int64{}
	tags, _ := f.FieldByName("tags")
	ids, _ := f.FieldByName("traceID")
	for i := range f.Rows() {
		raw, _ := tags.ConcreteAt(i)
		for _, cat := range []string{"kernel", "gpu_memcpy", "cuda_sync", "cuda_runtime"} {
			if strings.Contains(string(raw.(json.RawMessage)), `{"key":"category","value":"`+cat+`"}`) {
				categories[cat]++
			}
		}
		if ids.At(i) != testbed.KernelTimelineTraceID {
			t.Fatalf("row %d trace ID %v", i, ids.At(i))
		}
	}
	if categories["kernel"] != truth.Kernels || categories["gpu_memcpy"] != truth.Transfers || categories["cuda_sync"] != truth.SyncCalls {
		t.Errorf("spans %v; truth %+v", categories, truth)
	}
	if !strings.Contains(noticeTexts(f), "Read from infer_"+testbed.KernelTimelineTraceID) {
		t.Errorf("notices %q", noticeTexts(f))
	}

	// The summary stays the default.
	if r := runKernels(t, ds, `{"queryType":"kernels","traceId":"`+testbed.KernelTimelineTraceID+`"}`); r.Error != nil || r.Frames[0].Name != "kernel summary" {
		t.Fatalf("summary: %v", r.Error)
	}
	// An unknown view is the user's mistake, naming the views.
	r2 := runKernels(t, ds, `{"queryType":"kernels","traceId":"`+testbed.KernelTimelineTraceID+`","view":"gantt"}`)
	if r2.Error == nil || r2.ErrorSource != backend.ErrorSourceDownstream || !strings.Contains(r2.Error.Error(), `"view" must be one of summary, launches, criticalPath, timeline, diff`) {
		t.Errorf("unknown view: %v (%s)", r2.Error, r2.ErrorSource)
	}
	// No trace for the request: the empty trace frame says so.
	r = timelineAnswer(t, ds, `{"queryType":"kernels","traceId":"`+strings.Repeat("b", 32)+`","view":"timeline"}`).Responses["A"]
	if r.Error != nil || len(r.Frames) != 1 || r.Frames[0].Rows() != 0 || !strings.Contains(noticeTexts(r.Frames[0]), "no GPU kernel trace found") {
		t.Errorf("no trace: %v %v", r.Error, r.Frames)
	}
}
