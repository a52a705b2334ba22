package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

const (
	cpuTypeID   = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	allocTypeID = "memory:alloc_space:bytes:space:bytes"
)

// joinTrace is the demo's request a minute ago: the backend's root (profiled) with db_query, the
// detector's root (profiled) and its model.predict on GPU 0, the enrichment's root (profiled)
// and its enrich on GPU 1, all on gpu-node-1.
func joinTrace() models.Trace {
	start := time.Now().Add(-time.Minute).Truncate(time.Second)
	tr := fakeTrace("4bf92f3577b34da6a3ce929d0e0e4736", start, 40*time.Millisecond,
		"nemotron-backend/GET /api/detect", "nemotron-backend/db_query", "ai-detector/GET /detect", "ai-enrichment/GET /enrich",
		"ai-detector/model.predict", "ai-enrichment/enrich")
	s := tr.Spans
	// fakeTrace makes every span a child of the root, 40 ms long, 1 ms apart: make the GPU spans
	// children of their service's root, and db_query take most of the root.
	s[0].Duration = 500 * time.Millisecond
	s[1].Duration = 300 * time.Millisecond
	s[2].Start, s[4].Start = start.Add(310*time.Millisecond), start.Add(312*time.Millisecond)
	s[3].Start, s[5].Start = start.Add(395*time.Millisecond), start.Add(396*time.Millisecond)
	s[4].ParentSpanID, s[5].ParentSpanID = s[2].SpanID, s[3].SpanID
	for _, i := range []int{0, 2, 3} {
		s[i].Attributes[models.ProfileIDAttribute] = s[i].SpanID
	}
	s[4].Attributes["gpu.index"] = "0"
	s[5].Attributes["gpu.index"] = "1"
	return tr
}

type joinBed struct {
	ds       *Datasource
	profiles *memProfiles
	traces   *memTraces
	gpus     *memGPUs
	trace    models.Trace
}

type joinBedOptions struct {
	jaegerDown, pyroDown bool
	settings             map[string]any
}

func newJoinBed(t *testing.T, o joinBedOptions) *joinBed {
	t.Helper()
	tr := joinTrace()
	id := func(i int) string { return tr.Spans[i].SpanID }
	profiles := &memProfiles{bySpan: map[string]map[string][]string{
		cpuTypeID: {
			id(0): {"main.handleDetect;main.dbQuery;crypto/sha256.block 280", "main.handleDetect;main.dbQuery 20", "main.handleDetect;main.serializeResponse 20"},
			id(2): {"main.handleDetector;main.modelPredict 60"},
			// The enrichment's root was profiled but got no sample.
		},
		allocTypeID: {
			id(0): {"main.handleDetect;encoding/json.Marshal 4096"},
			id(3): {"main.handleEnrichment;main.extractFeatures 1048576"},
		},
	}, byLabel: map[string][]string{`trace_id="4bf92f3577b34da6a3ce929d0e0e4736"`: {"main.handleDetect;main.dbQuery 99"}}}
	traces := &memTraces{traces: []models.Trace{tr}}
	gpus := &memGPUs{gpus: []fakeGPU{
		steadyGPU("gpu-node-1", "0", 95, 0.95, 0.3),
		steadyGPU("gpu-node-1", "1", 12, 0.1, 0.05),
		steadyGPU("gpu-node-2", "0", 50, 0.5, 0.5),
	}}
	if o.jaegerDown {
		traces.err = errJaegerDown
	}
	if o.pyroDown {
		profiles.err = errPyroscopeDown
	}
	settings := map[string]any{}
	for k, v := range o.settings {
		settings[k] = v
	}
	ds := withSources(t, settings, correlate.Sources{
		Profiles: correlate.Ready[correlate.ProfileStore](profiles),
		Traces:   correlate.Ready[correlate.TraceStore](traces),
		Metrics:  correlate.Ready[correlate.MetricStore](&memMetrics{}),
		GPUs:     correlate.Ready[correlate.GPUStore](gpus),
	})
	return &joinBed{ds: ds, profiles: profiles, traces: traces, gpus: gpus, trace: tr}
}

// pluginCtx is what Grafana sends with each query: this data source's UID and name.
var pluginCtx = backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "hsi-uid", Name: "HSI Profiling"}}

func (b *joinBed) query(t *testing.T, model string) backend.DataResponse {
	t.Helper()
	ctx := backend.WithPluginContext(context.Background(), pluginCtx)
	res, err := b.ds.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pluginCtx, Queries: []backend.DataQuery{query("A", model)}})
	if err != nil {
		t.Fatalf("QueryData returned a Go error: %v", err)
	}
	return res.Responses["A"]
}

const traceModel = `{"queryType":"trace","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`

// table lists the frame's rows as "operation: field=value ..." for the named fields; null cells
// print as "-".
func table(t *testing.T, f *data.Frame, fields ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	op, i := f.FieldByName("operation")
	if i < 0 {
		t.Fatalf("frame %q has no operation field", f.Name)
	}
	for row := range f.Rows() {
		var parts []string
		for _, name := range fields {
			fld, i := f.FieldByName(name)
			if i < 0 {
				t.Fatalf("frame %q has no field %q", f.Name, name)
			}
			v, ok := fld.ConcreteAt(row)
			if !ok {
				v = "-"
			}
			parts = append(parts, fmt.Sprintf("%s=%v", name, v))
		}
		out[op.At(row).(string)] = strings.Join(parts, " ")
	}
	return out
}

func TestTraceQueryJoinsSpansProfilesAndGPUs(t *testing.T) {
	b := newJoinBed(t, joinBedOptions{})
	r := b.query(t, traceModel)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if len(r.Frames) != 4 || r.Frames[0].Name != "spans" || r.Frames[1].Name != "breakdown" || r.Frames[2].Name != "verdict" || r.Frames[3].Name != "response" {
		t.Fatalf("frames %v", r.Frames)
	}
	// The breakdown's parts sum to the request's 500 ms.
	var sum float64
	durations, _ := r.Frames[1].FieldByName("duration")
	for i := range durations.Len() {
		sum += durations.At(i).(float64)
	}
	if math.Abs(sum-500) > 1e-9 {
		t.Errorf("breakdown sums to %v ms", sum)
	}
	spans := r.Frames[0]
	got := table(t, spans, "self", "cpu", "alloc_space", "hotFunction", "gpus", "gpuClass", "gpuUtil")
	want := map[string]string{
		// The root's own profile holds its children's samples in its service (db_query); its hot
		// function is the largest self. Self times: 500 ms minus db_query (1–301 ms), the
		// detector (310–350) and the enrichment (395–435); model.predict (312–352) covers its
		// parent from 312 ms on, so the detector's root keeps 2 ms.
		"GET /api/detect": "self=120 cpu=320 alloc_space=4096 hotFunction=crypto/sha256.block gpus=0,1 gpuClass=compute-bound gpuUtil=53.5",
		"db_query":        "self=300 cpu=- alloc_space=- hotFunction=- gpus=0,1 gpuClass=compute-bound gpuUtil=53.5",
		"GET /detect":     "self=2 cpu=60 alloc_space=0 hotFunction=main.modelPredict gpus=0 gpuClass=compute-bound gpuUtil=95",
		"model.predict":   "self=40 cpu=- alloc_space=- hotFunction=- gpus=0 gpuClass=compute-bound gpuUtil=95",
		"GET /enrich":     "self=1 cpu=0 alloc_space=1048576 hotFunction=- gpus=1 gpuClass=idle gpuUtil=12",
		"enrich":          "self=40 cpu=- alloc_space=- hotFunction=- gpus=1 gpuClass=idle gpuUtil=12",
	}
	for op, w := range want {
		if got[op] != w {
			t.Errorf("%s:\n got %s\nwant %s", op, got[op], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d rows: %v", len(got), got)
	}
	// The evidence comes from the classifier with the data source's thresholds; over several
	// GPUs it names the GPU it is about.
	ev := table(t, spans, "gpuEvidence")
	if !strings.HasPrefix(ev["GET /api/detect"], "gpuEvidence=GPU 0: ") || !strings.Contains(ev["GET /api/detect"], "computeBoundPct") ||
		!strings.Contains(ev["GET /detect"], "computeBoundPct") || strings.Contains(ev["GET /detect"], "GPU 0:") || !strings.Contains(ev["enrich"], "idleBelowPct") {
		t.Errorf("evidence %v", ev)
	}
	// The flame graph is the whole request's, as the profile query's.
	if rows(r.Frames[3])[0] != "0 total 380" {
		t.Errorf("flame graph root %s", rows(r.Frames[3])[0])
	}
	n := frameNotices(spans)
	if !strings.Contains(n, "[info] GPU figures for 6 of 6 span(s)") {
		t.Errorf("notices:\n%s", n)
	}
	// One call per profiled span and type; the GPUs asked for are the trace's host's only.
	spanCalls := 0
	for _, q := range b.profiles.flameCalls() {
		if len(q.SpanSelector) > 0 {
			spanCalls++
		}
	}
	if spanCalls != 6 {
		t.Errorf("%d span profile calls: %v", spanCalls, b.profiles.flameCalls())
	}
	asked := b.gpus.askedFilters()
	if len(asked) == 0 {
		t.Error("no GPU figures asked")
	}
	for _, f := range asked {
		if !slices.Equal(f.Hosts, []string{"gpu-node-1"}) {
			t.Errorf("GPU figures asked for hosts %v, want the trace's host only", f.Hosts)
		}
	}
}

// A dashboard's panels each ask for their own part of the same request, in one request as Grafana
// may send them: each gets its frame alone (no frame picker), the join's notices on it.
func TestTraceQueryPartsAnswerEachPanelItsOwnFrame(t *testing.T) {
	b := newJoinBed(t, joinBedOptions{})
	whole := b.query(t, traceModel)
	if whole.Error != nil {
		t.Fatal(whole.Error)
	}
	ctx := backend.WithPluginContext(context.Background(), pluginCtx)
	part := func(ref, parts string) backend.DataQuery {
		return query(ref, `{"queryType":"trace","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","parts":`+parts+`}`)
	}
	res, err := b.ds.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pluginCtx, Queries: []backend.DataQuery{
		part("verdict", `["verdict"]`), part("breakdown", `["breakdown"]`), part("spans", `["flamegraph","spans"]`),
	}})
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string][]string{"verdict": {"verdict"}, "breakdown": {"breakdown"}, "spans": {"spans", "response"}} {
		r := res.Responses[ref]
		if r.Error != nil {
			t.Fatalf("%s: %v", ref, r.Error)
		}
		var names []string
		for _, f := range r.Frames {
			names = append(names, f.Name)
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s: frames %v, want %v", ref, names, want)
			continue
		}
		// The join's notices go on the panel's first frame, whichever part it is.
		if n := frameNotices(r.Frames[0]); !strings.Contains(n, "[info] GPU figures for 6 of 6 span(s)") {
			t.Errorf("%s: notices\n%s", ref, n)
		}
		// A part is the whole answer's frame, cell for cell (the links aside).
		for _, f := range r.Frames {
			for _, w := range whole.Frames {
				if w.Name == f.Name {
					if diff := cmp.Diff(rowsOf(w), rowsOf(f)); diff != "" {
						t.Errorf("%s: frame %s differs from the whole answer's:\n%s", ref, f.Name, diff)
					}
				}
			}
		}
	}
}

// rowsOf is every cell of a frame, row by row, as text; links are left out (they hold the
// query's time range, which query() takes from the clock).
func rowsOf(f *data.Frame) []string {
	var out []string
	for row := range f.Rows() {
		var cells []string
		for _, fld := range f.Fields {
			if fld.Name == "link" {
				continue
			}
			v, _ := fld.ConcreteAt(row)
			cells = append(cells, fmt.Sprint(v))
		}
		out = append(out, strings.Join(cells, " | "))
	}
	return out
}

func TestTraceQueryLinksSpansFunctionsAndGPUs(t *testing.T) {
	b := newJoinBed(t, joinBedOptions{settings: map[string]any{"traceDatasourceUid": "jaeger-uid"}})
	r := b.query(t, traceModel)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	f := r.Frames[0]
	linkOf := func(name string) string {
		fld, _ := f.FieldByName(name)
		raw, _ := json.Marshal(fld.Config.Links)
		return string(raw)
	}
	for name, want := range map[string]string{
		"spanID":      `"datasourceUid":"jaeger-uid"`,
		"hotFunction": `"datasourceUid":"hsi-uid","datasourceName":"HSI Profiling"`,
		"gpus":        `/d/hsi-gpu-metrics?var-host=${__data.fields.host}`,
	} {
		if !strings.Contains(linkOf(name), want) {
			t.Errorf("%s links %s lack %s", name, linkOf(name), want)
		}
	}
	// The function link's query is a profile query this plugin answers: the backend root's
	// profile ID and service, filled in by Grafana from the row.
	host, _ := f.FieldByName("host")
	pid, _ := f.FieldByName("profileID")
	if host.At(0) != "gpu-node-1" || pid.At(0) != b.trace.Spans[0].SpanID {
		t.Errorf("row 0 host %v profile %v", host.At(0), pid.At(0))
	}
	model := fmt.Sprintf(`{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}","profileTypeId":%q,"spanSelector":[%q]}`, cpuTypeID, pid.At(0))
	if pr := b.query(t, model); pr.Error != nil || rows(pr.Frames[0])[0] != "0 total 320" {
		t.Errorf("the linked profile query answers %v %v", pr.Error, pr.Frames)
	}
}

// The trace join's answers when a store fails are correlate's (JoinRequest's tests); here the
// frames and the error Grafana gets.
func TestTraceQueryWithoutTheTrace(t *testing.T) {
	t.Run("Jaeger down", func(t *testing.T) {
		b := newJoinBed(t, joinBedOptions{jaegerDown: true})
		r := b.query(t, traceModel)
		// The breakdown and the verdict keep their places, empty.
		if r.Error != nil || len(r.Frames) != 4 || r.Frames[1].Rows() != 0 || r.Frames[2].Rows() != 0 {
			t.Fatalf("%v %v", r.Error, r.Frames)
		}
		if r.Frames[0].Rows() != 0 || !strings.Contains(frameNotices(r.Frames[0]), "[warning] No span table: could not read trace 4bf92f3577b34da6a3ce929d0e0e4736 (Jaeger (http://jaeger:16686): HTTP 503") {
			t.Errorf("span table %d rows, notices %s", r.Frames[0].Rows(), frameNotices(r.Frames[0]))
		}
		// The flame graph still comes, from the trace_id label.
		if rows(r.Frames[3])[0] != "0 total 99" {
			t.Errorf("flame graph %v", rows(r.Frames[3]))
		}
	})
	t.Run("Jaeger and Pyroscope down", func(t *testing.T) {
		b := newJoinBed(t, joinBedOptions{jaegerDown: true, pyroDown: true})
		wantError(t, b.query(t, traceModel), backend.ErrorSourceDownstream, "Jaeger (http://jaeger:16686): HTTP 503")
	})
}

func TestTraceQueryNeedsATraceID(t *testing.T) {
	b := newJoinBed(t, joinBedOptions{})
	wantError(t, b.query(t, `{"queryType":"trace"}`), backend.ErrorSourceDownstream, `invalid trace query: field "traceId" is required`)
	wantError(t, b.query(t, `{"queryType":"trace","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","allocTypeId":"bytes"}`), backend.ErrorSourceDownstream, `field "allocTypeId" must have the form`)
}
