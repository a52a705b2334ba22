package correlate

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// fakeProfiles is a profile store in memory, answering as pyroscope.Client does once it has
// checked the server: span queries by span ID, trace_id_selector queries by the samples that
// carry the trace ID (or traceErr, where the client found the server cannot filter), the rest
// by the series whose selector contains a key.
type fakeProfiles struct {
	bySpan       map[string][]string // span ID → folded stacks "a;b;c value"
	byLabel      map[string][]string // selector fragment → stacks, for queries without a trace ID
	byTrace      map[string][]string // selector fragment → stacks of samples carrying traceID
	traceID      string
	traceErr     error  // answered to every trace_id_selector query
	failSpansOf  string // a service whose span queries fail
	failSelector string // a selector fragment whose other queries fail

	mu    sync.Mutex
	calls []models.FlameGraphQuery
}

func (f *fakeProfiles) MergedFlameGraph(_ context.Context, q models.FlameGraphQuery) (*flamegraph.Node, error) {
	f.mu.Lock()
	f.calls = append(f.calls, q)
	f.mu.Unlock()
	var stacks []string
	switch {
	case len(q.SpanSelector) > 0:
		if f.failSpansOf != "" && strings.Contains(q.LabelSelector, `"`+f.failSpansOf+`"`) {
			return nil, errors.New("Pyroscope (http://pyroscope:4040): ingester unavailable")
		}
		for _, id := range q.SpanSelector {
			stacks = append(stacks, f.bySpan[id]...)
		}
		return folded(stacks...), nil
	case f.failSelector != "" && strings.Contains(q.LabelSelector, f.failSelector):
		return nil, errors.New("Pyroscope (http://pyroscope:4040): timed out")
	case q.TraceID != "":
		if f.traceErr != nil {
			return nil, f.traceErr
		}
		if q.TraceID == f.traceID {
			stacks = matching(f.byTrace, q.LabelSelector)
		}
	default:
		stacks = matching(f.byLabel, q.LabelSelector)
	}
	return folded(stacks...), nil
}

func matching(m map[string][]string, selector string) []string {
	var out []string
	for frag, s := range m {
		if strings.Contains(selector, frag) {
			out = append(out, s...)
		}
	}
	return out
}

// spanCalls, traceCalls and labelCalls split the calls by kind.
func (f *fakeProfiles) spanCalls() []models.FlameGraphQuery {
	return f.callsWhere(func(q models.FlameGraphQuery) bool { return len(q.SpanSelector) > 0 })
}

func (f *fakeProfiles) traceCalls() []models.FlameGraphQuery {
	return f.callsWhere(func(q models.FlameGraphQuery) bool { return q.TraceID != "" })
}

func (f *fakeProfiles) labelCalls() []models.FlameGraphQuery {
	return f.callsWhere(func(q models.FlameGraphQuery) bool { return q.TraceID == "" && len(q.SpanSelector) == 0 })
}

func (f *fakeProfiles) callsWhere(keep func(models.FlameGraphQuery) bool) []models.FlameGraphQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []models.FlameGraphQuery
	for _, q := range f.calls {
		if keep(q) {
			out = append(out, q)
		}
	}
	return out
}

// folded builds a tree from folded stacks ("a;b;c 10").
func folded(stacks ...string) *flamegraph.Node {
	root := flamegraph.New()
	for _, s := range stacks {
		path, v, _ := strings.Cut(s, " ")
		value, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			panic(s)
		}
		chain := &flamegraph.Node{Total: value}
		n := chain
		for _, name := range strings.Split(path, ";") {
			c := &flamegraph.Node{Name: name, Total: value}
			n.Children = []*flamegraph.Node{c}
			n = c
		}
		n.Self = value
		root.Merge(chain)
	}
	return root
}

// treeRows lists a tree as "depth name total" lines, for readable comparisons.
func treeRows(n *flamegraph.Node) []string {
	var out []string
	n.Walk(func(depth int, n *flamegraph.Node) {
		out = append(out, fmt.Sprintf("%d %s %d", depth, n.Name, n.Total))
	})
	return out
}

func noticeText(ns notices.List) string {
	var b strings.Builder
	for _, n := range ns {
		sev := "info"
		if n.Severity == notices.Warning {
			sev = "warning"
		}
		fmt.Fprintf(&b, "[%s] %s\n", sev, n.Text)
	}
	return b.String()
}

const (
	demoTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	cpuType     = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	heapType    = "memory:alloc_objects:count:space:bytes"
)

// demoSpanSamples are the span profiles of demoTrace's profiled spans.
func demoSpanSamples() map[string][]string {
	return map[string][]string{
		"0000000000000001": {"main.handleDetect;main.dbQuery 300", "main.handleDetect;main.serializeResponse 20"},
		"0000000000000003": {"main.handleDetector;main.modelPredict 40"},
		"0000000000000005": {"main.handleEnrichment;main.extractFeatures 15"},
	}
}

func requestQuery(t *testing.T, selector string) RequestProfileQuery {
	t.Helper()
	m, err := models.ParseLabelSelector(selector)
	if err != nil {
		t.Fatal(err)
	}
	return RequestProfileQuery{TraceID: demoTraceID, LabelSelector: selector, Matchers: m, ProfileTypeID: cpuType,
		From: t0.Add(-time.Hour), To: t0.Add(time.Hour)}
}

func wantParts(t *testing.T, text string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(text, p) {
			t.Errorf("lacks %q:\n%s", p, text)
		}
	}
}

func TestRequestProfileIsTheWholeRequestWithAServiceLevel(t *testing.T) {
	p := &fakeProfiles{bySpan: demoSpanSamples()}
	traces := tracesFunc(func(_ context.Context, id string) (*models.Trace, error) {
		if id != demoTraceID {
			t.Errorf("asked trace %s", id)
		}
		return demoTrace, nil
	})
	rp, err := ProfileOfRequest(context.Background(), traces, p, requestQuery(t, "{}"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"0 total 375",
		"1 ai-detector 40", "2 main.handleDetector 40", "3 main.modelPredict 40",
		"1 ai-enrichment 15", "2 main.handleEnrichment 15", "3 main.extractFeatures 15",
		"1 nemotron-backend 320", "2 main.handleDetect 320", "3 main.dbQuery 300", "3 main.serializeResponse 20",
	}
	if got := treeRows(rp.Tree); !slices.Equal(got, want) {
		t.Errorf("whole request:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := treeRows(rp.Services["nemotron-backend"]); got[1] != "1 main.handleDetect 320" || len(rp.Services) != 3 {
		t.Errorf("services %v, backend %v", slices.Sorted(maps.Keys(rp.Services)), got)
	}
	// Each profiled span's own profile, for the trace table.
	if len(rp.Spans) != 3 || rp.Spans["0000000000000003"].Total != 40 {
		t.Errorf("span profiles %v", rp.Spans)
	}
	if n := noticeText(rp.Notices); n != "[info] Whole request 4bf92f3577b34da6a3ce929d0e0e4736, matched by span ID: 3 of 3 profiled span(s) had samples, in 3 of 3 service(s) (ai-detector, ai-enrichment, nemotron-backend).\n" {
		t.Errorf("notice = %s", n)
	}
	// One call per profiled span, each with its service's selector and a window padded around
	// the span; the unprofiled spans are not asked for, and nothing by trace ID.
	calls := p.spanCalls()
	if len(calls) != 3 || len(p.calls) != 3 {
		t.Fatalf("calls = %+v", p.calls)
	}
	for _, c := range calls {
		if len(c.SpanSelector) != 1 || c.SpanSelector[0] == "0000000000000002" || c.SpanSelector[0] == "0000000000000004" {
			t.Errorf("span selector %v", c.SpanSelector)
		}
		if !strings.HasPrefix(c.LabelSelector, `{service_name="`) || c.End.Sub(c.Start) < 2*SpanWindowPadding || c.ProfileTypeID != cpuType {
			t.Errorf("call %s %s over %s", c.LabelSelector, c.ProfileTypeID, c.End.Sub(c.Start))
		}
	}
	if !rp.Start.Equal(t0.Add(-SpanWindowPadding)) || !rp.End.Equal(t0.Add(400*time.Millisecond+SpanWindowPadding)) {
		t.Errorf("window %s – %s", rp.Start, rp.End)
	}
}

func TestRequestProfileKeepsTheUsersMatchers(t *testing.T) {
	p := &fakeProfiles{bySpan: demoSpanSamples()}
	rp, err := ProfileOfTrace(context.Background(), p, requestQuery(t, `{service_name=~"ai-.*", env="prod"}`), demoTrace, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := treeRows(rp.Tree); got[0] != "0 total 55" || len(p.calls) != 2 {
		t.Errorf("rows %v after %d calls", got, len(p.calls))
	}
	for _, c := range p.calls {
		if !strings.Contains(c.LabelSelector, `env="prod"`) {
			t.Errorf("selector %s lost the user's matcher", c.LabelSelector)
		}
	}

	// A selector no service of the trace matches is the user's to fix, and says what would.
	_, err = ProfileOfTrace(context.Background(), p, requestQuery(t, `{service_name="billing"}`), demoTrace, nil)
	nm, ok := errors.AsType[*NoMatchingServiceError](err)
	if !ok || err.Error() != `trace 4bf92f3577b34da6a3ce929d0e0e4736 has no spans of a service matching {service_name="billing"} (its services: ai-detector, ai-enrichment, nemotron-backend)` {
		t.Errorf("error %v (%T %v)", err, err, nm)
	}
}

func TestRequestProfileWithOneFailingServiceKeepsTheOthers(t *testing.T) {
	p := &fakeProfiles{bySpan: demoSpanSamples(), failSpansOf: "ai-detector"}
	rp, err := ProfileOfTrace(context.Background(), p, requestQuery(t, "{}"), demoTrace, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := treeRows(rp.Tree); got[0] != "0 total 335" {
		t.Errorf("rows %v", got)
	}
	if _, ok := rp.Spans["0000000000000003"]; ok || len(rp.Spans) != 2 {
		t.Errorf("a failed span has a profile: %v", rp.Spans)
	}
	wantParts(t, noticeText(rp.Notices),
		"[warning] 1 of 3 span-profile queries failed, so the graph lacks their samples: Pyroscope (http://pyroscope:4040): ingester unavailable",
		"[info] Whole request 4bf92f3577b34da6a3ce929d0e0e4736, matched by span ID: 2 of 3 profiled span(s) had samples, in 2 of 3 service(s) (ai-enrichment, nemotron-backend). No samples for: ai-detector.")

	// Every span query failed: nothing can be said, and the error is the upstream's.
	p = &fakeProfiles{failSpansOf: "ai-detector"}
	_, err = ProfileOfTrace(context.Background(), p, requestQuery(t, `{service_name="ai-detector"}`), demoTrace, nil)
	if err == nil || err.Error() != "Pyroscope (http://pyroscope:4040): ingester unavailable" {
		t.Errorf("error %v", err)
	}
}

func TestRequestProfileWithManySpansAsksOneQueryPerService(t *testing.T) {
	tr := &models.Trace{TraceID: demoTraceID}
	for i := range MaxSpanQueries + 1 {
		tr.Spans = append(tr.Spans, span(fmt.Sprintf("%016x", i+1), "ai-detector", i, 1, true))
	}
	p := &fakeProfiles{bySpan: map[string][]string{"0000000000000001": {"detect.py;infer 7"}}}
	rp, err := ProfileOfTrace(context.Background(), p, requestQuery(t, "{}"), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.calls) != 1 || len(p.calls[0].SpanSelector) != MaxSpanQueries+1 || len(rp.Spans) != 0 {
		t.Errorf("%d calls, %d span profiles", len(p.calls), len(rp.Spans))
	}
	if n := noticeText(rp.Notices); n != "[info] Whole request 4bf92f3577b34da6a3ce929d0e0e4736, matched by span ID: 65 span(s) asked in one query per service, in 1 of 1 service(s) (ai-detector). Spans with samples are counted per service above 64 profiled spans.\n" {
		t.Errorf("notice = %s", n)
	}
}

func TestRequestProfileFallsBackToTheTraceIDLabel(t *testing.T) {
	p := &fakeProfiles{byLabel: map[string][]string{
		`service_name="ai-detector",trace_id="4bf92f3577b34da6a3ce929d0e0e4736"`: {"detect.py;infer 70"},
	}}
	rp, err := ProfileOfTrace(context.Background(), p, requestQuery(t, "{}"), demoTrace, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := treeRows(rp.Tree); !slices.Equal(got, []string{"0 total 70", "1 ai-detector 70", "2 detect.py 70", "3 infer 70"}) {
		t.Errorf("rows %v", got)
	}
	if n := noticeText(rp.Notices); n != "[info] No span of trace 4bf92f3577b34da6a3ce929d0e0e4736 has span-profile samples; matched by the trace_id label instead (older SDKs tag samples this way): samples in 1 service(s) (ai-detector).\n" {
		t.Errorf("notice = %s", n)
	}
	// First by trace_id_selector, one query per service without the label; then the label.
	traced, labelled := p.traceCalls(), p.labelCalls()
	if len(traced) != 3 || len(labelled) != 3 {
		t.Errorf("%d trace_id_selector and %d label queries, want 3 and 3", len(traced), len(labelled))
	}
	for _, c := range traced {
		if c.TraceID != demoTraceID || strings.Contains(c.LabelSelector, "trace_id") {
			t.Errorf("trace_id_selector call %s %s", c.LabelSelector, c.TraceID)
		}
	}
	for _, c := range labelled {
		if !strings.Contains(c.LabelSelector, `trace_id="4bf92f3577b34da6a3ce929d0e0e4736"`) || !c.Start.Equal(rp.Start) || !c.End.Equal(rp.End) {
			t.Errorf("label call %s over %s – %s", c.LabelSelector, c.Start, c.End)
		}
	}
}

func TestRequestProfileWithoutAnySamplesSaysWhatToCheck(t *testing.T) {
	rp, err := ProfileOfTrace(context.Background(), &fakeProfiles{}, requestQuery(t, "{}"), demoTrace, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rp.Tree.Empty() {
		t.Errorf("rows %v", treeRows(rp.Tree))
	}
	if n := noticeText(rp.Notices); n != `[warning] No profile samples for trace 4bf92f3577b34da6a3ce929d0e0e4736 yet: none of its spans has span-profile samples (span_id labels, as otel-profiling-go adds) and no sample carries trace ID 4bf92f3577b34da6a3ce929d0e0e4736 (asked by trace_id_selector and by the label trace_id="4bf92f3577b34da6a3ce929d0e0e4736"). Profilers upload every 10–15 s, so a request of the last seconds may not be there yet; otherwise check that its services (ai-detector, ai-enrichment, nemotron-backend) push span profiles of type process_cpu:cpu:nanoseconds:cpu:nanoseconds to this Pyroscope.`+"\n" {
		t.Errorf("notice = %s", n)
	}
}

func TestRequestProfileOfAllocationsUsesTheRequestsUploadPeriod(t *testing.T) {
	p := &fakeProfiles{byLabel: map[string][]string{`{service_name="ai-enrichment"}`: {"main.handleEnrichment;main.extractFeatures 5000"}}}
	q := requestQuery(t, "{}")
	q.ProfileTypeID = heapType
	rp, err := ProfileOfTrace(context.Background(), p, q, demoTrace, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := treeRows(rp.Tree); !slices.Equal(got, []string{"0 total 5000", "1 ai-enrichment 5000", "2 main.handleEnrichment 5000", "3 main.extractFeatures 5000"}) {
		t.Errorf("rows %v", got)
	}
	if n := noticeText(rp.Notices); n != "[warning] No memory:alloc_objects:count:space:bytes sample carries the span IDs of trace 4bf92f3577b34da6a3ce929d0e0e4736 (heap profiles cannot record them: Pyroscope's span profiles cover CPU and wall profiles); showing what its services (ai-enrichment) sampled from 15s before the request to its end instead, which includes other requests of that period.\n" {
		t.Errorf("notice = %s", n)
	}
	// The span IDs and each service over the request's upload period, asked together; no trace
	// ID is asked (no heap sample carries one).
	labelled := p.labelCalls()
	if len(p.spanCalls()) != 3 || len(p.traceCalls()) != 0 || len(labelled) != 3 {
		t.Fatalf("%d span, %d trace, %d label calls", len(p.spanCalls()), len(p.traceCalls()), len(labelled))
	}
	last := labelled[2]
	if !last.Start.Equal(t0.Add(-UploadPeriod)) || !last.End.Equal(t0.Add(400*time.Millisecond+time.Second)) || !rp.Start.Equal(last.Start) {
		t.Errorf("period %s – %s", last.Start, last.End)
	}

	// A profiler that labels its allocations with span IDs: the spans' samples answer, not the
	// period's.
	labels := &fakeProfiles{bySpan: map[string][]string{}, byLabel: p.byLabel}
	for _, s := range demoTrace.Spans {
		if id, _ := s.ProfileID(); id != "" {
			labels.bySpan[id] = []string{"main.alloc 7"}
		}
	}
	rp, err = ProfileOfTrace(context.Background(), labels, q, demoTrace, nil)
	if err != nil || rp.Tree.Total != 7*int64(len(labels.bySpan)) || !strings.Contains(noticeText(rp.Notices), "matched by span ID") {
		t.Errorf("span-labelled allocations: %v, total %d, %s", err, rp.Tree.Total, noticeText(rp.Notices))
	}

	// Nothing around the request either.
	rp, err = ProfileOfTrace(context.Background(), &fakeProfiles{}, q, demoTrace, nil)
	if err != nil || noticeText(rp.Notices) != "[warning] No profile samples for trace 4bf92f3577b34da6a3ce929d0e0e4736: its services (ai-detector, ai-enrichment, nemotron-backend) have no memory:alloc_objects:count:space:bytes samples around it. Check that they push profiles of this type to this Pyroscope.\n" {
		t.Errorf("%v: %s", err, noticeText(rp.Notices))
	}
}

var errJaeger = errors.New("Jaeger (http://jaeger:16686): HTTP 503")

func TestRequestProfileWhenTheTraceCannotBeReadUsesTheTraceIDLabelAndSaysWhy(t *testing.T) {
	p := &fakeProfiles{byLabel: map[string][]string{`trace_id="4bf92f3577b34da6a3ce929d0e0e4736"`: {"legacy;work 9"}}}
	traces := tracesFunc(func(context.Context, string) (*models.Trace, error) { return nil, errJaeger })
	q := requestQuery(t, "{}")
	rp, err := ProfileOfRequest(context.Background(), traces, p, q)
	if err != nil {
		t.Fatal(err)
	}
	// Services unknown: no service level.
	if got := treeRows(rp.Tree); !slices.Equal(got, []string{"0 total 9", "1 legacy 9", "2 work 9"}) {
		t.Errorf("rows %v", got)
	}
	if n := noticeText(rp.Notices); n != `[warning] Could not read the trace's spans (Jaeger (http://jaeger:16686): HTTP 503); matched the samples labelled trace_id="4bf92f3577b34da6a3ce929d0e0e4736" in the panel's time range instead, without span detail.`+"\n" {
		t.Errorf("notice = %s", n)
	}
	// One query for all services, the user's selector, over the panel's range.
	for _, c := range p.calls {
		if !c.Start.Equal(q.From) || !c.End.Equal(q.To) || len(c.SpanSelector) > 0 {
			t.Errorf("asked %+v", c)
		}
	}
	if l := p.labelCalls(); len(l) != 1 || l[0].LabelSelector != `{trace_id="4bf92f3577b34da6a3ce929d0e0e4736"}` {
		t.Errorf("label calls %+v", l)
	}

	// Nothing labelled either: the error is the trace store's, and says what was tried.
	_, err = ProfileOfRequest(context.Background(), traces, &fakeProfiles{}, q)
	if !errors.Is(err, errJaeger) || err.Error() != `Jaeger (http://jaeger:16686): HTTP 503; and no profile sample in the panel's time range carries trace ID 4bf92f3577b34da6a3ce929d0e0e4736 (asked by trace_id_selector and by the label trace_id="4bf92f3577b34da6a3ce929d0e0e4736")` {
		t.Errorf("error %v", err)
	}

	// And Pyroscope failing too: both errors.
	_, err = ProfileOfRequest(context.Background(), traces, &fakeProfiles{failSelector: "{"}, q)
	if !errors.Is(err, errJaeger) || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("error %v", err)
	}
}

func TestRequestProfileMatchesByTraceIDSelectorWhenNoSpanHasSamples(t *testing.T) {
	p := &fakeProfiles{traceID: demoTraceID, byTrace: map[string][]string{
		`"ai-detector"`:      {"detect.py;infer 70"},
		`"nemotron-backend"`: {"main.handleDetect;main.dbQuery 30"},
	}, byLabel: map[string][]string{`trace_id=`: {"legacy 9"}}}
	rp, err := ProfileOfTrace(context.Background(), p, requestQuery(t, "{}"), demoTrace, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"0 total 100", "1 ai-detector 70", "2 detect.py 70", "3 infer 70", "1 nemotron-backend 30", "2 main.handleDetect 30", "3 main.dbQuery 30"}
	if got := treeRows(rp.Tree); !slices.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
	if n := noticeText(rp.Notices); n != "[info] No span of trace 4bf92f3577b34da6a3ce929d0e0e4736 has span-profile samples; matched by trace_id_selector (Pyroscope 2.x) instead, which keeps each sample's trace ID: samples in 2 service(s) (ai-detector, nemotron-backend).\n" {
		t.Errorf("notice = %s", n)
	}
	if l := p.labelCalls(); len(l) != 0 {
		t.Errorf("asked the trace_id label although the selector found the trace: %+v", l)
	}

	// One service's trace_id_selector query failing otherwise: the others' samples, with a warning.
	p.failSelector = `"ai-enrichment"`
	rp, err = ProfileOfTrace(context.Background(), p, requestQuery(t, "{}"), demoTrace, nil)
	if err != nil || rp.Tree.Total != 100 {
		t.Fatalf("%v %v", err, treeRows(rp.Tree))
	}
	wantParts(t, noticeText(rp.Notices), "[warning] Some trace_id queries failed, so the graph may lack samples: Pyroscope (http://pyroscope:4040): timed out")
}

func TestRequestProfileWithTheTraceUnreadMatchesBySelectorOverThePanelsRange(t *testing.T) {
	const id = "0000000000000000a3ce929d0e0e4736"
	p := &fakeProfiles{traceID: id, byTrace: map[string][]string{"{": {"detect.py;infer 40"}}}
	q := requestQuery(t, "{}")
	q.TraceID = id
	rp, err := ProfileOfTrace(context.Background(), p, q, nil, errJaeger)
	if err != nil {
		t.Fatal(err)
	}
	if got := treeRows(rp.Tree); !slices.Equal(got, []string{"0 total 40", "1 detect.py 40", "2 infer 40"}) {
		t.Errorf("rows %v", got)
	}
	if n := noticeText(rp.Notices); n != "[warning] Could not read the trace's spans (Jaeger (http://jaeger:16686): HTTP 503); matched the samples of trace 0000000000000000a3ce929d0e0e4736 by trace_id_selector (Pyroscope 2.x) in the panel's time range instead, without span detail.\n" {
		t.Errorf("notice = %s", n)
	}
	if c := p.traceCalls(); len(c) != 1 || c[0].LabelSelector != "{}" || !c[0].Start.Equal(q.From) || !c[0].End.Equal(q.To) {
		t.Errorf("asked %+v", c)
	}
}

func TestRequestProfileUsesTheLabelWhereTheSelectorIsRefusedAndSaysSo(t *testing.T) {
	refused := fmt.Errorf("%w (Pyroscope answered: trace_id_selector is only supported with the v2 query backend)", models.ErrTraceSelectorRefused)
	p := &fakeProfiles{traceErr: refused, byLabel: map[string][]string{
		`service_name="ai-detector",trace_id="4bf92f3577b34da6a3ce929d0e0e4736"`: {"detect.py;infer 70"},
	}}
	rp, err := ProfileOfTrace(context.Background(), p, requestQuery(t, "{}"), demoTrace, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := treeRows(rp.Tree); !slices.Equal(got, []string{"0 total 70", "1 ai-detector 70", "2 detect.py 70", "3 infer 70"}) {
		t.Errorf("rows %v", got)
	}
	if n := noticeText(rp.Notices); n != "[info] Pyroscope refused trace_id_selector for this time range, as Pyroscope 2.x in v1-v2 dual mode does where the range holds data of its v1 storage (Pyroscope answered: trace_id_selector is only supported with the v2 query backend); so samples were matched by the trace_id label only.\n"+
		"[info] No span of trace 4bf92f3577b34da6a3ce929d0e0e4736 has span-profile samples; matched by the trace_id label instead (older SDKs tag samples this way): samples in 1 service(s) (ai-detector).\n" {
		t.Errorf("notices = %s", n)
	}

	// Nothing labelled: the notice says why only the label was asked.
	p.byLabel = nil
	rp, err = ProfileOfTrace(context.Background(), p, requestQuery(t, "{}"), demoTrace, nil)
	if err != nil {
		t.Fatal(err)
	}
	wantParts(t, noticeText(rp.Notices), `no sample carries the label trace_id="4bf92f3577b34da6a3ce929d0e0e4736" (trace_id_selector could not be asked: Pyroscope refused trace_id_selector for this time range`)
}

func TestRequestProfileNeverPassesAnUnfilteredProfileOffAsTheRequests(t *testing.T) {
	// A server that ignores trace_id_selector answers every request's samples; the client
	// returns ErrTraceSelectorIgnored instead, and the label is asked alone.
	p := &fakeProfiles{traceErr: models.ErrTraceSelectorIgnored}
	rp, err := ProfileOfTrace(context.Background(), p, requestQuery(t, "{}"), demoTrace, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rp.Tree.Empty() || len(p.labelCalls()) != 3 {
		t.Errorf("showed %v as the request's profile", treeRows(rp.Tree))
	}
	wantParts(t, noticeText(rp.Notices), `[warning] No profile samples for trace 4bf92f3577b34da6a3ce929d0e0e4736 yet`,
		`no sample carries the label trace_id="4bf92f3577b34da6a3ce929d0e0e4736" (this Pyroscope ignores trace_id_selector, as 1.x does, so only the label could be asked)`)

	// With the trace unread, it is an error naming both.
	_, err = ProfileOfTrace(context.Background(), p, requestQuery(t, "{}"), nil, errJaeger)
	if !errors.Is(err, errJaeger) || !strings.Contains(err.Error(), `; and no profile sample in the panel's time range carries the label trace_id="4bf92f3577b34da6a3ce929d0e0e4736" (this Pyroscope ignores trace_id_selector`) {
		t.Errorf("error %v", err)
	}
}

// stackTraceSelector on a whole request cuts each service's graph, not the merged one, where the
// call site would have to start under the service level.
func TestRequestProfileCutsEachServiceToTheCallSite(t *testing.T) {
	prof := &fakeProfiles{bySpan: map[string][]string{}}
	tr := &models.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
	for i, svc := range []string{"api", "db"} {
		id := fmt.Sprintf("%016x", i+1)
		tr.Spans = append(tr.Spans, models.Span{TraceID: tr.TraceID, SpanID: id, Service: svc, Operation: "op",
			Start: time.Unix(1000, 0), Duration: time.Second, Attributes: map[string]string{models.ProfileIDAttribute: id}})
		prof.bySpan[id] = []string{"main;handle;query 30", "main;other 70"}
	}
	// The profile store cuts what it answers as pyroscope.Client does.
	cutting := profilesFunc(func(ctx context.Context, q models.FlameGraphQuery) (*flamegraph.Node, error) {
		tree, err := prof.MergedFlameGraph(ctx, q)
		return flamegraph.CallSite(tree, q.StackTraceSelector), err
	})
	rp, err := ProfileOfTrace(context.Background(), cutting, RequestProfileQuery{TraceID: tr.TraceID, ProfileTypeID: models.DefaultProfileTypeID, CallSite: []string{"main", "handle"}}, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Each service keeps its 30 under main;handle, and the request its 60: a cut of the merged
	// graph (total → service → main …) would have kept nothing.
	if rp.Tree.Total != 60 || rp.Services["api"].Total != 30 || rp.Services["db"].Total != 30 {
		t.Errorf("totals: request %d, api %d, db %d; want 60, 30, 30", rp.Tree.Total, rp.Services["api"].Total, rp.Services["db"].Total)
	}
	for _, q := range prof.calls {
		if strings.Join(q.StackTraceSelector, ";") != "main;handle" {
			t.Errorf("query %+v asked without the call site", q)
		}
	}
	if len(prof.calls) != 2 {
		t.Errorf("%d queries, want one per service", len(prof.calls))
	}
}

type profilesFunc func(ctx context.Context, q models.FlameGraphQuery) (*flamegraph.Node, error)

func (f profilesFunc) MergedFlameGraph(ctx context.Context, q models.FlameGraphQuery) (*flamegraph.Node, error) {
	return f(ctx, q)
}

// tracesFunc lets a function be a Traces.
type tracesFunc func(ctx context.Context, traceID string) (*models.Trace, error)

func (f tracesFunc) Trace(ctx context.Context, traceID string) (*models.Trace, error) {
	return f(ctx, traceID)
}
