//go:build integration

package frames

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/realdata"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

// The kernels query's timeline view, as Grafana's trace view reads it
// (src/__grafana__/timeline.test.ts): a generated request's trace, with what it holds, and the
// real ResNet-50 trace at the default cap. It needs no upstream: only trace directories. Written
// after the flame graphs' (frames_test.go), which empties the folder first.
func TestWriteTheKernelTimelinesGrafanaReads(t *testing.T) {
	dir := framesDir(t)
	traces := t.TempDir()
	truth, err := testbed.WriteKernelTimelineTrace(traces)
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Dir(realdata.Path(t, testbed.ResNetTimelineFile))
	h, err := pluginhost.Start(binary, pluginhost.DataSource{UID: "hsi-timeline", Name: "HSI Profiling", JSONData: map[string]any{
		"traceDirectories": []string{traces, real},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	now := time.Now()
	from := now.Add(-time.Hour)

	request := map[string]any{"queryType": "kernels", "traceId": testbed.KernelTimelineTraceID, "view": "timeline"}
	res := query(t, ctx, h, request, from, now)
	if names := frameNames(t, res); len(names) != 1 || names[0] != "timeline" {
		t.Fatalf("timeline frames %v", names)
	}
	writeAnswer(t, dir, "kernelTimeline", fixture{Query: request, From: from.UnixMilli(), To: now.UnixMilli(),
		TraceID: testbed.KernelTimelineTraceID, Truth: testbed.KernelTimelineTruth(truth)}, res)

	resnet := map[string]any{"queryType": "kernels", "file": testbed.ResNetTimelineFile, "view": "timeline"}
	res = query(t, ctx, h, resnet, from, now)
	if rows := res.Responses["A"].Frames[0].Rows(); rows < 10_000 {
		t.Fatalf("the ResNet-50 timeline has %d spans", rows)
	}
	writeAnswer(t, dir, "kernelTimelineResNet", fixture{Query: resnet, From: from.UnixMilli(), To: now.UnixMilli()}, res)
}
