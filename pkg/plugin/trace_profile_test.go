package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope/pyroscopetest"
)

// spanPyroscope is a Pyroscope that knows span profiles: SelectMergeSpanProfile answers the
// merged stacks of the asked span IDs, SelectMergeStacktraces the stacks of series whose selector
// contains a key of bySelector, dropping trace_id_selector as Pyroscope 1.12 does. Each call
// waits delay, as a real server under load.
type spanPyroscope struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	bySpan     map[string][]string // span ID → stacks "a;b;c value"
	bySelector map[string][]string // selector fragment → stacks
	failFor    string              // a service_name whose span queries fail
	delay      time.Duration

	mu         sync.Mutex
	spanCalls  []*querierv1.SelectMergeSpanProfileRequest
	mergeSels  []string
	traceCalls []*querierv1.SelectMergeStacktracesRequest // those with trace_id_selector
}

func (f *spanPyroscope) SelectMergeSpanProfile(ctx context.Context, req *connect.Request[querierv1.SelectMergeSpanProfileRequest]) (*connect.Response[querierv1.SelectMergeSpanProfileResponse], error) {
	f.mu.Lock()
	f.spanCalls = append(f.spanCalls, req.Msg)
	f.mu.Unlock()
	time.Sleep(f.delay)
	if f.failFor != "" && strings.Contains(req.Msg.LabelSelector, `"`+f.failFor+`"`) {
		return nil, connect.NewError(connect.CodeInternal, errString("ingester unavailable"))
	}
	var stacks []string
	for _, id := range req.Msg.SpanSelector {
		stacks = append(stacks, f.bySpan[id]...)
	}
	return connect.NewResponse(&querierv1.SelectMergeSpanProfileResponse{Flamegraph: folded(stacks...)}), nil
}

func (f *spanPyroscope) SelectMergeStacktraces(ctx context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	f.mu.Lock()
	f.mergeSels = append(f.mergeSels, req.Msg.LabelSelector)
	if len(req.Msg.TraceIdSelector) > 0 {
		f.traceCalls = append(f.traceCalls, req.Msg)
	}
	f.mu.Unlock()
	time.Sleep(f.delay)
	var stacks []string
	for frag, s := range f.bySelector {
		if strings.Contains(req.Msg.LabelSelector, frag) {
			stacks = append(stacks, s...)
		}
	}
	return connect.NewResponse(&querierv1.SelectMergeStacktracesResponse{Flamegraph: folded(stacks...)}), nil
}

// folded builds Pyroscope's level-encoded flame graph from folded stacks ("a;b;c 10").
func folded(stacks ...string) *querierv1.FlameGraph { return pyroscopetest.FlameGraph(stacks...) }

// demoLikeTrace is a request like the demo's: the backend's local root calls the detector and the
// enrichment service, each a local root carrying pyroscope.profile.id.
func demoLikeTrace(start time.Time) jaeger.Trace {
	tr := fakeTrace("4bf92f3577b34da6a3ce929d0e0e4736", start, 40*time.Millisecond,
		"nemotron-backend/GET /api/detect", "nemotron-backend/db_query", "ai-detector/GET /detect", "ai-enrichment/GET /enrich")
	for _, i := range []int{0, 2, 3} {
		tr.Spans[i].Attributes[jaeger.ProfileIDAttribute] = tr.Spans[i].SpanID
	}
	return tr
}

type traceProfileBed struct {
	ds    *Datasource
	pyro  *spanPyroscope
	jae   *jaegerFake
	trace jaeger.Trace
}

func newTraceProfileBed(t *testing.T, pyro *spanPyroscope, jaegerDown bool) *traceProfileBed {
	t.Helper()
	tr := demoLikeTrace(time.Now().Add(-10 * time.Minute))
	if pyro.bySpan == nil {
		pyro.bySpan = map[string][]string{
			tr.Spans[0].SpanID: {"main.handleDetect;main.dbQuery 300", "main.handleDetect;main.serializeResponse 20"},
			tr.Spans[2].SpanID: {"main.handleDetector;main.modelPredict 40"},
			tr.Spans[3].SpanID: {"main.handleEnrichment;main.extractFeatures 15"},
		}
	}
	j := &jaegerFake{Traces: []jaeger.Trace{tr}, Down: jaegerDown}
	ds := newTestDatasource(t, map[string]any{
		"pyroscopeUrl": serveQuerier(t, pyro),
		"jaegerUrl":    newJaegerFake(t, j, nil).URL,
	}, nil)
	return &traceProfileBed{ds: ds, pyro: pyro, jae: j, trace: tr}
}

// serveQuerier serves any Pyroscope querier implementation on a loopback server.
func serveQuerier(t testing.TB, h querierv1connect.QuerierServiceHandler) string {
	return pyroscopetest.Serve(t, h)
}

func (b *traceProfileBed) query(t *testing.T, model string) backend.DataResponse {
	t.Helper()
	return run(t, b.ds, query("A", model)).Responses["A"]
}

// rows lists a flame graph frame as "depth name value" lines, for readable comparisons.
func rows(f *data.Frame) []string {
	names := f.Fields[3].Config.TypeConfig.Enum.Text
	out := make([]string, f.Rows())
	for i := range f.Rows() {
		out[i] = fmt.Sprintf("%d %s %d", f.Fields[0].At(i), names[f.Fields[3].At(i).(data.EnumItemIndex)], f.Fields[1].At(i))
	}
	return out
}

func notices(f *data.Frame) string {
	var b strings.Builder
	for _, n := range f.Meta.Notices {
		fmt.Fprintf(&b, "[%s] %s\n", n.Severity, n.Text)
	}
	return b.String()
}

func TestTraceProfileIsTheWholeRequestWithAServiceLevel(t *testing.T) {
	b := newTraceProfileBed(t, &spanPyroscope{}, false)
	r := b.query(t, `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","perService":true}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	want := []string{
		"0 total 375",
		"1 ai-detector 40", "2 main.handleDetector 40", "3 main.modelPredict 40",
		"1 ai-enrichment 15", "2 main.handleEnrichment 15", "3 main.extractFeatures 15",
		"1 nemotron-backend 320", "2 main.handleDetect 320", "3 main.dbQuery 300", "3 main.serializeResponse 20",
	}
	if got := rows(r.Frames[0]); !slices.Equal(got, want) {
		t.Errorf("whole request:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Frames[0].Name != "response" {
		t.Errorf("first frame is %q", r.Frames[0].Name)
	}
	if n := notices(r.Frames[0]); !strings.Contains(n, "matched by span ID: 3 of 3 profiled span(s) had samples, in 3 of 3 service(s)") {
		t.Errorf("notice = %s", n)
	}
	// One frame per service, named after it.
	var names []string
	for _, f := range r.Frames[1:] {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"ai-detector", "ai-enrichment", "nemotron-backend"}) || rows(r.Frames[3])[1] != "1 main.handleDetect 320" {
		t.Errorf("per-service frames %v", names)
	}
	// One call per profiled span, each with the service's selector and a window padded around the
	// span; the unprofiled db_query span is not asked for.
	if len(b.pyro.spanCalls) != 3 {
		t.Fatalf("span calls = %d", len(b.pyro.spanCalls))
	}
	for _, c := range b.pyro.spanCalls {
		if len(c.SpanSelector) != 1 || c.SpanSelector[0] == b.trace.Spans[1].SpanID {
			t.Errorf("span selector %v", c.SpanSelector)
		}
		if !strings.HasPrefix(c.LabelSelector, `{service_name="`) || c.End-c.Start < 2*SpanWindowPadding.Milliseconds() {
			t.Errorf("call %s over %d ms", c.LabelSelector, c.End-c.Start)
		}
	}
}

func TestTraceProfileKeepsTheUsersMatchers(t *testing.T) {
	b := newTraceProfileBed(t, &spanPyroscope{}, false)
	r := b.query(t, `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","labelSelector":"{service_name=~\"ai-.*\", env=\"prod\"}"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := rows(r.Frames[0]); got[0] != "0 total 55" || len(b.pyro.spanCalls) != 2 {
		t.Errorf("rows %v after %d calls", got, len(b.pyro.spanCalls))
	}
	for _, c := range b.pyro.spanCalls {
		if !strings.Contains(c.LabelSelector, `env="prod"`) {
			t.Errorf("selector %s lost the user's matcher", c.LabelSelector)
		}
	}
	r = b.query(t, `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","labelSelector":"{service_name=\"billing\"}"}`)
	wantError(t, r, backend.ErrorSourceDownstream, "has no spans of a service matching", "ai-detector, ai-enrichment, nemotron-backend")
}

func TestTraceProfileWithOneFailingServiceKeepsTheOthers(t *testing.T) {
	b := newTraceProfileBed(t, &spanPyroscope{failFor: "ai-detector"}, false)
	r := b.query(t, `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := rows(r.Frames[0]); got[0] != "0 total 335" {
		t.Errorf("rows %v", got)
	}
	n := notices(r.Frames[0])
	for _, part := range []string{"[warning] 1 of 3 span-profile queries failed", "Pyroscope (http://127.0.0.1:", "ingester unavailable", "No samples for: ai-detector"} {
		if !strings.Contains(n, part) {
			t.Errorf("notices lack %q:\n%s", part, n)
		}
	}
}

func TestTraceProfileFallsBackToTheTraceIDLabel(t *testing.T) {
	pyro := &spanPyroscope{bySpan: map[string][]string{}, bySelector: map[string][]string{
		`service_name="ai-detector",trace_id="4bf92f3577b34da6a3ce929d0e0e4736"`: {"detect.py;infer 70"},
	}}
	b := newTraceProfileBed(t, pyro, false)
	r := b.query(t, `{"queryType":"profile","traceId":"4BF92F3577B34DA6A3CE929D0E0E4736"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := rows(r.Frames[0]); !slices.Equal(got, []string{"0 total 70", "1 ai-detector 70", "2 detect.py 70", "3 infer 70"}) {
		t.Errorf("rows %v", got)
	}
	if n := notices(r.Frames[0]); !strings.Contains(n, "matched by the trace_id label instead") || !strings.Contains(n, "1 service(s) (ai-detector)") {
		t.Errorf("notice = %s", n)
	}
	// One trace_id_selector query per service, all empty (this trace's samples are labelled, not
	// tagged per sample), so no probe; then one trace_id label query per service.
	if len(pyro.traceCalls) != 3 || len(pyro.mergeSels) != 6 {
		t.Errorf("fallback asked %d trace_id_selector and %d selectors in all, want 3 and 6: %v", len(pyro.traceCalls), len(pyro.mergeSels), pyro.mergeSels)
	}
	for _, c := range pyro.traceCalls {
		if c.TraceIdSelector[0] != "4bf92f3577b34da6a3ce929d0e0e4736" || strings.Contains(c.LabelSelector, "trace_id") {
			t.Errorf("trace_id_selector call %s %v", c.LabelSelector, c.TraceIdSelector)
		}
	}
}

func TestTraceProfileWithoutAnySamplesSaysWhatToCheck(t *testing.T) {
	b := newTraceProfileBed(t, &spanPyroscope{bySpan: map[string][]string{}}, false)
	r := b.query(t, `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if frames.FlameGraphHasSamples(r.Frames[0]) || !strings.Contains(notices(r.Frames[0]), "[warning] No profile samples for trace 4bf92f3577b34da6a3ce929d0e0e4736 yet") {
		t.Errorf("rows %v, notices %s", rows(r.Frames[0]), notices(r.Frames[0]))
	}
}

func TestTraceProfileOfAllocationsUsesTheRequestsUploadPeriod(t *testing.T) {
	pyro := &spanPyroscope{bySpan: map[string][]string{}, bySelector: map[string][]string{
		`{service_name="ai-enrichment"}`: {"main.handleEnrichment;main.extractFeatures 5000"},
	}}
	b := newTraceProfileBed(t, pyro, false)
	r := b.query(t, `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","profileTypeId":"memory:alloc_objects:count:space:bytes"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := rows(r.Frames[0]); !slices.Equal(got, []string{"0 total 5000", "1 ai-enrichment 5000", "2 main.handleEnrichment 5000", "3 main.extractFeatures 5000"}) {
		t.Errorf("rows %v", got)
	}
	if n := notices(r.Frames[0]); !strings.Contains(n, "[warning] No memory:alloc_objects:count:space:bytes sample carries the span or trace IDs") || !strings.Contains(n, "includes other requests") {
		t.Errorf("notice = %s", n)
	}
	// span IDs; trace_id_selector per service, whose non-empty answer for ai-enrichment (this fake
	// drops the field, as 1.12) is probed once and discarded; the trace_id label per service; then
	// the services over the request's period.
	if len(pyro.spanCalls) != 3 || len(pyro.traceCalls) != 4 || len(pyro.mergeSels) != 10 {
		t.Errorf("%d span calls, %d trace_id_selector calls, selectors %v", len(pyro.spanCalls), len(pyro.traceCalls), pyro.mergeSels)
	}
}

func TestTraceProfileWhenJaegerIsDownUsesTheTraceIDLabelAndSaysWhy(t *testing.T) {
	pyro := &spanPyroscope{bySelector: map[string][]string{`trace_id="4bf92f3577b34da6a3ce929d0e0e4736"`: {"legacy;work 9"}}}
	b := newTraceProfileBed(t, pyro, true)
	r := b.query(t, `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := rows(r.Frames[0]); !slices.Equal(got, []string{"0 total 9", "1 legacy 9", "2 work 9"}) {
		t.Errorf("rows %v", got)
	}
	if n := notices(r.Frames[0]); !strings.Contains(n, "[warning] Could not read the trace's spans (Jaeger (http://127.0.0.1:") {
		t.Errorf("notice = %s", n)
	}

	// Nothing labelled either: the error names Jaeger and what was tried.
	b = newTraceProfileBed(t, &spanPyroscope{}, true)
	r = b.query(t, `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`)
	wantError(t, r, backend.ErrorSourceDownstream, "Jaeger (http://127.0.0.1:", "HTTP 503", `no profile sample in the panel's time range carries trace ID 4bf92f3577b34da6a3ce929d0e0e4736 (asked by trace_id_selector and by the label trace_id="4bf92f3577b34da6a3ce929d0e0e4736")`)
}

func TestTraceProfileOfAnUnknownTrace(t *testing.T) {
	b := newTraceProfileBed(t, &spanPyroscope{}, false)
	r := b.query(t, `{"queryType":"profile","traceId":"00000000000000000000000000000abc"}`)
	wantError(t, r, backend.ErrorSourceDownstream, "Jaeger", "not found", "trace_id")
}

func TestTraceProfileNeedsPyroscopeAndValidIDs(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{"jaegerUrl": "http://127.0.0.1:1"}, nil)
	wantError(t, run(t, ds, query("A", `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`)).Responses["A"],
		backend.ErrorSourceDownstream, "Pyroscope is not configured")
	for model, want := range map[string]string{
		`{"queryType":"profile","traceId":"xyz"}`:                                                  `field "traceId" must be a trace ID of 16 or 32 hex digits, got "xyz"`,
		`{"queryType":"profile","traceId":"4bf92f3577b34da6","spanSelector":["a"]}`:                `field "spanSelector" item 1 must be a span ID of 16 hex digits`,
		`{"queryType":"profile","traceId":"4bf92f3577b34da6","spanSelector":["4bf92f3577b34da6"]}`: `exclude each other`,
		`{"queryType":"profile","labelSelector":"{service_name=\"x\""}`:                            `field "labelSelector" is not a label selector`,
	} {
		wantError(t, run(t, ds, query("A", model)).Responses["A"], backend.ErrorSourceDownstream, want)
	}
}

func TestSpanSelectorProfileAsksSpanProfilesOverAWiderWindow(t *testing.T) {
	pyro := &spanPyroscope{bySpan: map[string][]string{"00f067aa0ba902b7": {"main.handle;main.slow 12"}}}
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": serveQuerier(t, pyro)}, nil)
	// The embedded span flame graph of Grafana's trace view, exactly as it is sent.
	q := query("span-flamegraph-refId", `{"refId":"span-flamegraph-refId","queryType":"profile","labelSelector":"{service_name=\"ai-detector\"}","groupBy":[],"profileTypeId":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","spanSelector":["00F067AA0BA902B7"]}`)
	q.TimeRange = backend.TimeRange{From: time.UnixMilli(1_700_000_000_000), To: time.UnixMilli(1_700_000_000_030)}
	r := run(t, ds, q).Responses["span-flamegraph-refId"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := rows(r.Frames[0]); !slices.Equal(got, []string{"0 total 12", "1 main.handle 12", "2 main.slow 12"}) {
		t.Errorf("rows %v", got)
	}
	c := pyro.spanCalls[0]
	if c.Start != 1_700_000_000_000-60_000 || c.End != 1_700_000_000_030+60_000 || c.SpanSelector[0] != "00f067aa0ba902b7" {
		t.Errorf("asked %d–%d for %v", c.Start, c.End, c.SpanSelector)
	}
}

// newVersionBed serves srv (a fake Pyroscope of one version) and a Jaeger holding the demo-like
// trace; the services' samples are stamped at the trace's start.
func newVersionBed(t *testing.T, srv *pyroscopetest.Server, jaegerDown bool) (*Datasource, jaeger.Trace) {
	t.Helper()
	tr := demoLikeTrace(time.Now().Add(-10 * time.Minute))
	ds := newTestDatasource(t, map[string]any{
		"pyroscopeUrl": pyroscopetest.Serve(t, srv),
		"jaegerUrl":    newJaegerFake(t, &jaegerFake{Traces: []jaeger.Trace{tr}, Down: jaegerDown}, nil).URL,
	}, nil)
	return ds, tr
}

// sample is one stack of service, carrying traceID per sample (as 2.x stores otel-profiling-go's
// trace_id) and no span ID, so no span-profile query can find it.
func sample(service, traceID string, at time.Time, stack string, value int64) pyroscopetest.Sample {
	return pyroscopetest.Sample{Series: map[string]string{"service_name": service}, TraceID: traceID, Time: at, Stack: stack, Value: value}
}

const otherTrace = "0af7651916cd43dd8448eb211c80319c"

func TestTraceProfileOnPyroscope2MatchesByTraceIDSelectorWhenNoSpanHasSamples(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2}
	ds, tr := newVersionBed(t, srv, false)
	at := tr.Spans[0].Start
	srv.Add(
		sample("ai-detector", tr.TraceID, at, "detect.py;infer", 70),
		sample("nemotron-backend", tr.TraceID, at, "main.handleDetect;main.dbQuery", 30),
		// Another request of the same services in the same seconds: not this trace's.
		sample("ai-detector", otherTrace, at, "detect.py;warmup", 500),
		// An older SDK's label: never needed once the selector found the trace.
		pyroscopetest.Sample{Series: map[string]string{"service_name": "ai-enrichment", "trace_id": tr.TraceID}, Time: at, Stack: "legacy", Value: 9},
	)
	r := run(t, ds, query("A", `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	want := []string{"0 total 100", "1 ai-detector 70", "2 detect.py 70", "3 infer 70", "1 nemotron-backend 30", "2 main.handleDetect 30", "3 main.dbQuery 30"}
	if got := rows(r.Frames[0]); !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if n := notices(r.Frames[0]); !strings.Contains(n, "[info] No span of trace 4bf92f3577b34da6a3ce929d0e0e4736 has span-profile samples; matched by trace_id_selector (Pyroscope 2.x) instead") ||
		!strings.Contains(n, "2 service(s) (ai-detector, nemotron-backend)") {
		t.Errorf("notice = %s", n)
	}
	// Three span-profile calls, three trace_id_selector calls and one probe; no label query.
	for _, c := range srv.Calls() {
		if strings.Contains(c.LabelSelector, "trace_id") {
			t.Errorf("asked the trace_id label although the selector found the trace: %s", c.LabelSelector)
		}
	}
	if len(srv.SpanCalls()) != 3 || len(srv.TraceSelectorCalls()) != 4 {
		t.Errorf("%d span calls, %d trace_id_selector calls", len(srv.SpanCalls()), len(srv.TraceSelectorCalls()))
	}
	if got := ds.pyroscope.TraceSelectorSupport(); got != pyroscope.TraceSelectorHonoured {
		t.Errorf("support %v", got)
	}
}

func TestTraceProfileOnPyroscope2WithJaegerDownMatchesA64BitIDBySelector(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2}
	ds, _ := newVersionBed(t, srv, true)
	at := time.Now().Add(-20 * time.Minute)
	srv.Add(sample("ai-detector", "0000000000000000a3ce929d0e0e4736", at, "detect.py;infer", 40),
		sample("ai-detector", otherTrace, at, "detect.py;warmup", 500))
	r := run(t, ds, query("A", `{"queryType":"profile","traceId":"A3CE929D0E0E4736"}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := rows(r.Frames[0]); !slices.Equal(got, []string{"0 total 40", "1 detect.py 40", "2 infer 40"}) {
		t.Errorf("rows %v", got)
	}
	if n := notices(r.Frames[0]); !strings.Contains(n, "[warning] Could not read the trace's spans (Jaeger (http://127.0.0.1:") ||
		!strings.Contains(n, "matched the samples of trace 0000000000000000a3ce929d0e0e4736 by trace_id_selector (Pyroscope 2.x) in the panel's time range") {
		t.Errorf("notice = %s", n)
	}
	// Services unknown: one query for all, the user's (empty) selector, over the panel's hour.
	c := srv.TraceSelectorCalls()[0]
	if c.LabelSelector != "{}" || c.TraceIdSelector[0] != "0000000000000000a3ce929d0e0e4736" || c.End-c.Start != time.Hour.Milliseconds() {
		t.Errorf("asked %s %v over %d ms", c.LabelSelector, c.TraceIdSelector, c.End-c.Start)
	}
}

func TestTraceProfileInDualModeUsesTheLabelForWindowsOfV1DataAndSaysSo(t *testing.T) {
	// Everything older than a minute lies in the v1 storage: the trace's window reaches into it.
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2, V1Until: time.Now().Add(-time.Minute)}
	ds, tr := newVersionBed(t, srv, false)
	srv.Add(pyroscopetest.Sample{Series: map[string]string{"service_name": "ai-detector", "trace_id": tr.TraceID}, Time: tr.Spans[0].Start, Stack: "detect.py;infer", Value: 70})
	r := run(t, ds, query("A", `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := rows(r.Frames[0]); !slices.Equal(got, []string{"0 total 70", "1 ai-detector 70", "2 detect.py 70", "3 infer 70"}) {
		t.Errorf("rows %v", got)
	}
	n := notices(r.Frames[0])
	for _, part := range []string{
		"[info] Pyroscope refused trace_id_selector for this time range, as Pyroscope 2.x in v1-v2 dual mode does where the range holds data of its v1 storage",
		"(Pyroscope answered: trace_id_selector is only supported with the v2 query backend); so samples were matched by the trace_id label only.",
		"matched by the trace_id label instead (older SDKs tag samples this way)",
	} {
		if !strings.Contains(n, part) {
			t.Errorf("notices lack %q:\n%s", part, n)
		}
	}
	if got := ds.pyroscope.TraceSelectorSupport(); got != pyroscope.TraceSelectorUnknown {
		t.Errorf("a refused window settled the verdict: %v", got)
	}
}

func TestTraceProfileOnPyroscope112NeverPassesTheUnfilteredProfileOffAsTheRequests(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V112}
	ds, tr := newVersionBed(t, srv, false)
	// Other requests' samples, in every service and at the trace's time: what 1.12 answers to
	// any trace_id_selector.
	for _, svc := range []string{"ai-detector", "ai-enrichment", "nemotron-backend"} {
		srv.Add(sample(svc, "", tr.Spans[0].Start, "main.busy", 1000))
	}
	r := run(t, ds, query("A", `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if frames.FlameGraphHasSamples(r.Frames[0]) {
		t.Errorf("showed %v as the request's profile", rows(r.Frames[0]))
	}
	if n := notices(r.Frames[0]); !strings.Contains(n, `[warning] No profile samples for trace 4bf92f3577b34da6a3ce929d0e0e4736 yet`) ||
		!strings.Contains(n, `no sample carries the label trace_id="4bf92f3577b34da6a3ce929d0e0e4736" (this Pyroscope ignores trace_id_selector, as 1.x does`) {
		t.Errorf("notice = %s", n)
	}
	if got := ds.pyroscope.TraceSelectorSupport(); got != pyroscope.TraceSelectorIgnored {
		t.Errorf("support %v", got)
	}

	// Known now: a trace that Jaeger lacks is asked by the label alone, and is an error naming both.
	sent := len(srv.TraceSelectorCalls())
	r = run(t, ds, query("A", `{"queryType":"profile","traceId":"00000000000000000000000000000abc"}`)).Responses["A"]
	wantError(t, r, backend.ErrorSourceDownstream, "Jaeger", `carries the label trace_id="00000000000000000000000000000abc" (this Pyroscope ignores trace_id_selector`)
	if n := len(srv.TraceSelectorCalls()) - sent; n != 0 {
		t.Errorf("sent trace_id_selector %d more times to a server known to ignore it", n)
	}
}
