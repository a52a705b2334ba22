package correlate

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/tracetest"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

var t0 = tracetest.T0

func span(id, service string, startMs, durMs int, profiled bool) models.Span {
	s := models.Span{SpanID: id, Service: service, Start: t0.Add(time.Duration(startMs) * time.Millisecond),
		Duration: time.Duration(durMs) * time.Millisecond, Attributes: map[string]string{}}
	if profiled {
		s.Attributes[models.ProfileIDAttribute] = id
	}
	return s
}

// A request like the demo's: backend root (profiled), its db child, detector and enrichment
// local roots (profiled) with children.
var demoTrace = &models.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Spans: []models.Span{
	span("0000000000000001", "nemotron-backend", 0, 400, true),
	span("0000000000000002", "nemotron-backend", 5, 300, false),
	span("0000000000000003", "ai-detector", 310, 45, true),
	span("0000000000000004", "ai-detector", 312, 40, false),
	span("0000000000000005", "ai-enrichment", 360, 30, true),
}}

func TestPlanAsksEachProfiledSpanWithItsOwnWindow(t *testing.T) {
	plan := PlanTraceProfile(demoTrace, nil)
	if !plan.PerSpan || plan.ProfiledSpans != 3 || plan.AskedSpans != 3 {
		t.Fatalf("plan = %+v", plan)
	}
	want := []SpanProfileQuery{
		{Service: "ai-detector", SpanIDs: []string{"0000000000000003"}, Start: t0.Add(310 * time.Millisecond), End: t0.Add(355 * time.Millisecond)},
		{Service: "ai-enrichment", SpanIDs: []string{"0000000000000005"}, Start: t0.Add(360 * time.Millisecond), End: t0.Add(390 * time.Millisecond)},
		{Service: "nemotron-backend", SpanIDs: []string{"0000000000000001"}, Start: t0, End: t0.Add(400 * time.Millisecond)},
	}
	if !reflect.DeepEqual(plan.Queries, want) {
		t.Errorf("queries = %+v\nwant %+v", plan.Queries, want)
	}
	if !plan.Start.Equal(t0) || !plan.End.Equal(t0.Add(400*time.Millisecond)) {
		t.Errorf("window = %v – %v", plan.Start, plan.End)
	}
}

// A profile ID that is not a span ID (a mangled attribute) is never sent: Pyroscope refuses the
// whole call for one. The span counts as unprofiled, and the plan keeps the value to say so.
func TestPlanLeavesOutProfileIDsThatAreNotSpanIDs(t *testing.T) {
	tr := &models.Trace{Spans: slices.Clone(demoTrace.Spans)}
	tr.Spans[2].Attributes = map[string]string{models.ProfileIDAttribute: "/detect"}
	plan := PlanTraceProfile(tr, nil)
	if plan.ProfiledSpans != 2 || plan.AskedSpans != 2 || !slices.Equal(plan.Malformed, []string{"/detect"}) {
		t.Fatalf("plan = %+v", plan)
	}
	for _, q := range plan.Queries {
		if q.Service == "ai-detector" {
			t.Errorf("asked %+v", q)
		}
	}
	if n := spanMatchNotice(tr.TraceID, plan, 2, nil); !strings.Contains(n, `1 span(s) carry a pyroscope.profile.id that is not a span ID (16 hex digits), for example "/detect"`) {
		t.Errorf("notice %s", n)
	}
}

func TestPlanAsksEverySpanWhenNoneCarriesTheProfileAttribute(t *testing.T) {
	tr := &models.Trace{Spans: []models.Span{
		span("0000000000000001", "a", 0, 10, false), span("0000000000000002", "a", 1, 5, false),
		span("0000000000000002", "a", 1, 5, false), // reported twice
		span("0000000000000003", "b", 2, 5, false),
	}}
	plan := PlanTraceProfile(tr, nil)
	if plan.PerSpan || plan.ProfiledSpans != 0 || plan.AskedSpans != 3 || len(plan.Queries) != 2 {
		t.Fatalf("plan = %+v", plan)
	}
	if !reflect.DeepEqual(plan.Queries[0].SpanIDs, []string{"0000000000000001", "0000000000000002"}) {
		t.Errorf("service a asks %v", plan.Queries[0].SpanIDs)
	}
}

func TestPlanBatchesPerServiceAboveTheSpanLimit(t *testing.T) {
	tr := &models.Trace{}
	for i := range MaxSpanQueries + 1 {
		tr.Spans = append(tr.Spans, span(fmt.Sprintf("%016x", i+1), []string{"a", "b"}[i%2], i, 1, true))
	}
	plan := PlanTraceProfile(tr, nil)
	if plan.PerSpan || len(plan.Queries) != 2 || plan.AskedSpans != MaxSpanQueries+1 {
		t.Errorf("plan: perSpan=%v queries=%d asked=%d", plan.PerSpan, len(plan.Queries), plan.AskedSpans)
	}
}

func TestPlanKeepsOnlyServicesTheSelectorMatches(t *testing.T) {
	m, err := parser.NewParser(parser.Options{}).ParseMetricSelector(`{service_name=~"ai-.*", env="prod"}`)
	if err != nil {
		t.Fatal(err)
	}
	plan := PlanTraceProfile(demoTrace, m)
	if !reflect.DeepEqual(plan.Services, []string{"ai-detector", "ai-enrichment"}) {
		t.Errorf("services = %v", plan.Services)
	}
	if got := TraceServices(demoTrace, nil); len(got) != 3 {
		t.Errorf("trace services = %v", got)
	}
}

func TestServiceSelectorQuotesValuesAndReplacesTheServiceMatcher(t *testing.T) {
	m := []*labels.Matcher{
		labels.MustNewMatcher(labels.MatchEqual, "service_name", "other"),
		labels.MustNewMatcher(labels.MatchEqual, "env", `pr"od`),
	}
	got := ServiceSelector(m, `evil"} or {a="b`, TraceIDMatcher("0000000000000000a3ce929d0e0e4736"))
	want := `{service_name="evil\"} or {a=\"b",env="pr\"od",trace_id=~"(0{16})?a3ce929d0e0e4736"}`
	if got != want {
		t.Errorf("selector = %s\nwant       %s", got, want)
	}
	// What we print parses back to the same matchers: nothing a span's service name holds can
	// escape its quotes.
	back, err := parser.NewParser(parser.Options{}).ParseMetricSelector(got)
	if err != nil || len(back) != 3 || back[0].Value != `evil"} or {a="b` {
		t.Errorf("parsed back = %v, %v", back, err)
	}
	if got := TraceIDMatcher("4bf92f3577b34da6a3ce929d0e0e4736").String(); got != `trace_id="4bf92f3577b34da6a3ce929d0e0e4736"` {
		t.Errorf("full trace ID matcher = %s", got)
	}
}
