//go:build integration

package plugin

import (
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Profiles to traces from Jaeger's own search, against the bed's real Jaeger and Pyroscope 1.12.

// spanQueryOver runs a span query over [from, to].
func spanQueryOver(t *testing.T, ds *Datasource, from, to time.Time, model string) backend.DataResponse {
	t.Helper()
	q := query("A", model)
	q.TimeRange = backend.TimeRange{From: from, To: to}
	q.Interval = time.Second
	return run(t, ds, q).Responses["A"]
}

// jaegerSpans reads what the heatmap must count straight from Jaeger: the spans of service and
// operation that started in [from, to].
func jaegerSpans(t *testing.T, ds *Datasource, service, operation string, from, to time.Time) []models.Span {
	t.Helper()
	store, err := ds.src.Traces.Get()
	if err != nil {
		t.Fatal(err)
	}
	jae := store.(*jaeger.Client)
	if err := jae.UseAPI(jaeger.APIv1); err != nil { // the other API than the plugin detects
		t.Fatal(err)
	}
	all, err := jae.SearchSpans(context.Background(), models.TraceSearchQuery{Service: service, Operation: operation, Start: from, End: to, Limit: models.DefaultSpanTraces})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var out []models.Span
	for _, s := range all {
		if s.Service == service && s.Operation == operation && !s.Start.Before(from) && !s.Start.After(to) && !seen[s.SpanID] {
			seen[s.SpanID] = true
			out = append(out, s)
		}
	}
	return out
}

func TestRealSpanHeatmapCountsEverySpanAndItsExemplarsAreTheSlowestOfEachStep(t *testing.T) {
	ds := bedDatasource(t)
	from := time.Now().Add(-5 * time.Second)
	slowID := demoRequest(t, "db")
	waitForTrace(t, ds, slowID)
	to := time.Now()
	// Jaeger read before and after the heatmap: a span of other traffic still on its way to
	// Jaeger when the heatmap was asked would make the counts differ, so ask again until both
	// reads agree.
	var r backend.DataResponse
	var want []models.Span
	for try := 1; ; try++ {
		before := jaegerSpans(t, ds, "nemotron-backend", "db_query", from, to)
		r = spanQueryOver(t, ds, from, to, `{"queryType":"spanHeatmap","service":"nemotron-backend","operation":"db_query"}`)
		want = jaegerSpans(t, ds, "nemotron-backend", "db_query", from, to)
		if len(before) == len(want) || try == 5 {
			break
		}
		time.Sleep(time.Second)
	}
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if len(r.Frames) != 2 || r.Frames[0].Meta.Type != "heatmap-cells" || r.Frames[1].Name != "exemplar" {
		t.Fatalf("frames %v", r.Frames)
	}
	heat := r.Frames[0]
	var counted int64
	for i := range heat.Rows() {
		counted += heat.Fields[3].At(i).(int64)
	}
	if counted != int64(len(want)) || len(want) == 0 {
		t.Errorf("heatmap counts %d spans, Jaeger holds %d db_query spans of the range", counted, len(want))
	}
	// Each exemplar is the slowest db_query span ending in its step.
	step := time.Duration(heat.Fields[0].Config.Interval) * time.Millisecond
	ex := r.Frames[1]
	ids, _ := ex.FieldByName("traceID")
	for i := range ex.Rows() {
		end := ex.Fields[0].At(i).(time.Time)
		dur := ex.Fields[1].At(i).(float64)
		xMax := end.Truncate(step) // the step (xMax-step, xMax] holding the end
		if !xMax.Equal(end) {
			xMax = xMax.Add(step)
		}
		for _, s := range want {
			e := s.Start.Add(s.Duration)
			if e.After(xMax.Add(-step)) && !e.After(xMax) && s.Duration.Seconds() > dur+1e-9 {
				t.Errorf("exemplar %d (%g s, trace %s) is not the slowest of its step: %s took %s", i, dur, ids.At(i), s.TraceID, s.Duration)
			}
		}
	}
	slow := slices.IndexFunc(want, func(s models.Span) bool { return s.TraceID == slowID })
	if slow < 0 || want[slow].Duration < 200*time.Millisecond {
		t.Fatalf("the slow request's db_query is not among Jaeger's spans: %v", want)
	}
	found := false
	for i := range ex.Rows() {
		found = found || ex.Fields[1].At(i).(float64) >= want[slow].Duration.Seconds()
	}
	if !found {
		t.Errorf("no exemplar as slow as the slow request's db_query (%s)", want[slow].Duration)
	}
	if n := frameNotices(heat); !strings.Contains(n, fmt.Sprintf("%d span(s) of nemotron-backend db_query", len(want))) {
		t.Errorf("notice %q does not say how many spans it read", n)
	}
}

func TestRealSpanProfileMergesTheSlowRequestsOfAnOperationAcrossRequests(t *testing.T) {
	ds := bedDatasource(t)
	from := time.Now().Add(-5 * time.Second)
	// Two requests slow in their database step, each profiled in every service.
	var ours []string
	for range 2 {
		id, _ := profiledRequest(t, ds, "db", cpuType)
		ours = append(ours, id)
	}
	to := time.Now()
	slowSpans := func() ([]models.Span, []models.Span) {
		roots := jaegerSpans(t, ds, "nemotron-backend", "GET /api/detect", from, to)
		var slow []models.Span
		for _, s := range roots {
			// A profile ID that is no span ID (a trace store may mangle one) is unprofiled, and
			// said so in a warning; the span is not merged.
			if id, bad := s.ProfileID(); s.Duration >= 200*time.Millisecond && id != "" && !bad {
				slow = append(slow, s)
			}
		}
		return slow, roots
	}
	// The bed's own traffic runs too, and its spans of the window reach Jaeger a batch later:
	// the query is compared with Jaeger's spans only when they stayed the same around it.
	var slow, roots []models.Span
	var r backend.DataResponse
	for attempt := 1; ; attempt++ {
		slow, roots = slowSpans()
		r = spanQueryOver(t, ds, from, to, `{"queryType":"spanProfile","service":"nemotron-backend","operation":"GET /api/detect","minDuration":"200ms"}`)
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		after, _ := slowSpans()
		if len(after) == len(slow) || attempt == 5 {
			break
		}
		time.Sleep(2 * time.Second)
	}
	if len(slow) < 2 {
		t.Fatalf("Jaeger holds %d profiled request spans of 200 ms or more: %v", len(slow), roots)
	}
	f := r.Frames[0]
	n := frameNotices(f)
	if !strings.Contains(n, fmt.Sprintf("Merged the span profiles of %d span(s) of nemotron-backend GET /api/detect (spans of at least 200ms", len(slow))) {
		t.Errorf("notices %q: want %d spans merged", n, len(slow))
	}
	if !strings.Contains(n, "CPU sample(s)") || !hasFunction(f, "main.dbQuery") {
		t.Errorf("merged profile lacks the database step's main.dbQuery or its sample count; notices %q", n)
	}
	// The merged graph is the sum of the requests' own span profiles: more than any one. One of
	// the test's own requests, busy in its database step: the bed's traffic has slow requests
	// that only wait (queued or preempted in the engine), whose profiles hold no CPU.
	var one int64
	for _, s := range slow {
		if s.TraceID == ours[0] {
			one = rootTotal(t, spanQueryOver(t, ds, from, to, fmt.Sprintf(`{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}","spanSelector":[%q]}`, s.Attributes[models.ProfileIDAttribute])).Frames[0])
		}
	}
	if all := rootTotal(t, f); all <= one || one == 0 {
		t.Errorf("merged total %d, one request's %d: the merge should hold every request's samples", all, one)
	}

	// db_query is a child span: otel-profiling-go profiles root spans only, and the answer (empty,
	// not an error: a dashboard panel on it stays readable) says which operation to pick instead.
	r = spanQueryOver(t, ds, from, to, `{"queryType":"spanProfile","service":"nemotron-backend","operation":"db_query","percentile":90}`)
	if r.Error != nil || len(r.Frames) == 0 || frames.FlameGraphHasSamples(r.Frames[0]) ||
		!strings.Contains(frameNotices(r.Frames[0]), `operations of nemotron-backend with span profiles: "GET /api/detect"`) {
		t.Errorf("db_query: %v %v", r.Error, r.Frames)
	}
}

func rootTotal(t *testing.T, f *data.Frame) int64 {
	t.Helper()
	if f.Rows() == 0 {
		return 0
	}
	return f.Fields[1].At(0).(int64)
}

// waitForTrace waits until Jaeger holds the trace's backend spans.
func waitForTrace(t *testing.T, ds *Datasource, traceID string) {
	t.Helper()
	traceAnswer(t, ds, traceID, "nemotron-backend")
}

// The span panels' operation variable and the editor's picker list the service's operations
// from Jaeger.
func TestRealOperationsOfAServiceForTheVariableAndThePicker(t *testing.T) {
	ds := bedDatasource(t)
	for _, path := range []string{"/variable?query=" + url.QueryEscape("trace_operations(nemotron-backend)"), "/trace-operations?service=nemotron-backend"} {
		rec := httptest.NewRecorder()
		ds.newResourceMux().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		if rec.Code != 200 {
			t.Fatalf("%s: HTTP %d %s", path, rec.Code, rec.Body)
		}
		body := rec.Body.String()
		for _, want := range []string{`"db_query"`, `"GET /api/detect"`} {
			if !strings.Contains(body, want) {
				t.Errorf("%s: %s lacks %s", path, body, want)
			}
		}
	}
}
