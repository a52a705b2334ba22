package plugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// demoLikeTrace is a request like the demo's: the backend's local root calls the detector and the
// enrichment service, each a local root carrying pyroscope.profile.id.
func demoLikeTrace(start time.Time) models.Trace {
	tr := fakeTrace("4bf92f3577b34da6a3ce929d0e0e4736", start, 40*time.Millisecond,
		"nemotron-backend/GET /api/detect", "nemotron-backend/db_query", "ai-detector/GET /detect", "ai-enrichment/GET /enrich")
	for _, i := range []int{0, 2, 3} {
		tr.Spans[i].Attributes[models.ProfileIDAttribute] = tr.Spans[i].SpanID
	}
	return tr
}

type traceProfileBed struct {
	ds       *Datasource
	profiles *memProfiles
	traces   *memTraces
	trace    models.Trace
}

func newTraceProfileBed(t *testing.T, jaegerDown bool) *traceProfileBed {
	t.Helper()
	tr := demoLikeTrace(time.Now().Add(-10 * time.Minute))
	profiles := &memProfiles{bySpan: map[string]map[string][]string{cpuTypeID: {
		tr.Spans[0].SpanID: {"main.handleDetect;main.dbQuery 300", "main.handleDetect;main.serializeResponse 20"},
		tr.Spans[2].SpanID: {"main.handleDetector;main.modelPredict 40"},
		tr.Spans[3].SpanID: {"main.handleEnrichment;main.extractFeatures 15"},
	}}}
	traces := &memTraces{traces: []models.Trace{tr}}
	if jaegerDown {
		traces.err = errJaegerDown
	}
	ds := withSources(t, map[string]any{}, correlate.Sources{
		Profiles: correlate.Ready[correlate.ProfileStore](profiles),
		Traces:   correlate.Ready[correlate.TraceStore](traces),
	})
	return &traceProfileBed{ds: ds, profiles: profiles, traces: traces, trace: tr}
}

// spanCalls are the span profile queries p was asked.
func spanCalls(p *memProfiles) []models.FlameGraphQuery {
	var out []models.FlameGraphQuery
	for _, q := range p.flameCalls() {
		if len(q.SpanSelector) > 0 {
			out = append(out, q)
		}
	}
	return out
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

func frameNotices(f *data.Frame) string {
	var b strings.Builder
	for _, n := range f.Meta.Notices {
		fmt.Fprintf(&b, "[%s] %s\n", n.Severity, n.Text)
	}
	return b.String()
}

func TestTraceProfileIsTheWholeRequestWithAServiceLevel(t *testing.T) {
	b := newTraceProfileBed(t, false)
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
	if n := frameNotices(r.Frames[0]); !strings.Contains(n, "[info] Whole request 4bf92f3577b34da6a3ce929d0e0e4736, matched by span ID: 3 of 3 profiled span(s) had samples, in 3 of 3 service(s)") {
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
	calls := spanCalls(b.profiles)
	if len(calls) != 3 {
		t.Fatalf("span calls = %d", len(calls))
	}
	for _, c := range calls {
		if len(c.SpanSelector) != 1 || c.SpanSelector[0] == b.trace.Spans[1].SpanID {
			t.Errorf("span selector %v", c.SpanSelector)
		}
		if !strings.HasPrefix(c.LabelSelector, `{service_name="`) || c.End.Sub(c.Start) < 2*correlate.SpanWindowPadding {
			t.Errorf("call %s over %v", c.LabelSelector, c.End.Sub(c.Start))
		}
	}
}

// Grafana's Pyroscope data source's traceIdSelector with several trace IDs: the merged profile of
// those requests, per service, with a notice saying so.
func TestTraceIDSelectorOfSeveralRequestsMergesTheirProfiles(t *testing.T) {
	b := newTraceProfileBed(t, false)
	other := fakeTrace("00f067aa0ba902b700f067aa0ba902b7", b.trace.Spans[0].Start.Add(time.Minute), 40*time.Millisecond,
		"nemotron-backend/GET /api/detect", "ai-detector/GET /detect")
	for i := range other.Spans {
		other.Spans[i].Attributes[models.ProfileIDAttribute] = other.Spans[i].SpanID
	}
	b.traces.traces = append(b.traces.traces, other)
	b.profiles.bySpan[cpuTypeID][other.Spans[0].SpanID] = []string{"main.handleDetect;main.dbQuery 100"}
	b.profiles.bySpan[cpuTypeID][other.Spans[1].SpanID] = []string{"main.handleDetector;main.modelPredict 60"}
	r := b.query(t, `{"queryType":"profile","profileTypeId":"`+cpuTypeID+`","labelSelector":"{}","traceIdSelector":["4bf92f3577b34da6a3ce929d0e0e4736","00F067AA0BA902B700F067AA0BA902B7"]}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	want := []string{
		"0 total 535",
		"1 ai-detector 100", "2 main.handleDetector 100", "3 main.modelPredict 100",
		"1 ai-enrichment 15", "2 main.handleEnrichment 15", "3 main.extractFeatures 15",
		"1 nemotron-backend 420", "2 main.handleDetect 420", "3 main.dbQuery 400", "3 main.serializeResponse 20",
	}
	if got := rows(r.Frames[0]); !slices.Equal(got, want) {
		t.Errorf("two requests merged:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := frameNotices(r.Frames[0]); !strings.Contains(n, "The merged profile of 2 requests (traceIdSelector), 2 of them with samples") ||
		!strings.Contains(n, "Trace 00f067aa0ba902b700f067aa0ba902b7: Whole request") {
		t.Errorf("notices = %s", n)
	}
}

// The logic of the whole request's profile is tested in pkg/correlate; here, how its errors
// reach the user.

func TestTraceProfileWithASelectorMatchingNoServiceIsTheUsersToFix(t *testing.T) {
	b := newTraceProfileBed(t, false)
	r := b.query(t, `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736","labelSelector":"{service_name=\"billing\"}"}`)
	wantError(t, r, backend.ErrorSourceDownstream, "has no spans of a service matching", "ai-detector, ai-enrichment, nemotron-backend")
}

func TestTraceProfileWhenJaegerIsDownAndNothingIsLabelledNamesJaeger(t *testing.T) {
	b := newTraceProfileBed(t, true)
	r := b.query(t, `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`)
	wantError(t, r, backend.ErrorSourceDownstream, "Jaeger (http://jaeger:16686)", "HTTP 503", `no profile sample in the panel's time range carries trace ID 4bf92f3577b34da6a3ce929d0e0e4736 (asked by trace_id_selector and by the label trace_id="4bf92f3577b34da6a3ce929d0e0e4736")`)
}

func TestTraceProfileOfAnUnknownTrace(t *testing.T) {
	b := newTraceProfileBed(t, false)
	r := b.query(t, `{"queryType":"profile","traceId":"00000000000000000000000000000abc"}`)
	wantError(t, r, backend.ErrorSourceDownstream, "Jaeger", "not found", "trace_id")
}

func TestTraceProfileNeedsPyroscopeAndValidIDs(t *testing.T) {
	// Not configured: the stores as the data source builds them from settings without its URL.
	unset := newTestDatasource(t, map[string]any{"jaegerUrl": "http://127.0.0.1:1"}, nil)
	wantError(t, run(t, unset, query("A", `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`)).Responses["A"],
		backend.ErrorSourceDownstream, "Pyroscope is not configured")
	ds := newTraceProfileBed(t, false).ds
	for model, want := range map[string]string{
		`{"queryType":"profile","traceId":"xyz"}`:                                                  `field "traceId" must be a trace ID of 32 hex digits (or 16), without dashes, got "xyz"`,
		`{"queryType":"profile","traceId":"4bf92f3577b34da6","spanSelector":["a"]}`:                `field "spanSelector" item 1 must be a span ID of 16 hex digits`,
		`{"queryType":"profile","traceId":"4bf92f3577b34da6","spanSelector":["4bf92f3577b34da6"]}`: `cannot be combined with "traceId" or "traceIdSelector"`,
		`{"queryType":"profile","labelSelector":"{service_name=\"x\""}`:                            `field "labelSelector" is not a label selector`,
	} {
		wantError(t, run(t, ds, query("A", model)).Responses["A"], backend.ErrorSourceDownstream, want)
	}
}

func TestSpanSelectorProfileAsksSpanProfilesOverAWiderWindow(t *testing.T) {
	profiles := &memProfiles{bySpan: map[string]map[string][]string{cpuTypeID: {"00f067aa0ba902b7": {"main.handle;main.slow 12"}}}}
	ds := profilesDS(t, profiles, nil)
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
	c := spanCalls(profiles)[0]
	if c.Start.UnixMilli() != 1_700_000_000_000-60_000 || c.End.UnixMilli() != 1_700_000_000_030+60_000 || c.SpanSelector[0] != "00f067aa0ba902b7" {
		t.Errorf("asked %v–%v for %v", c.Start, c.End, c.SpanSelector)
	}
}
