package pyroscope

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope/pyroscopetest"
)

// newTraceClient is in trace_test.go.

const (
	profileA = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	profileB = "0f8fad5b-d9cb-469f-a165-70867728950e"
	cpu      = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
)

// twoProfiles stores two individual profiles of one service: A (a request's handling, 300 in
// db and 20 in serialize) and B (background work, 50).
func twoProfiles(srv *pyroscopetest.Server, at time.Time) {
	api := map[string]string{"service_name": "api", "pod": "api-0"}
	srv.Add(
		pyroscopetest.Sample{Series: api, ProfileID: profileA, SpanID: "00f067aa0ba902b7", Time: at, Stack: "main.handle;main.dbQuery", Value: 300},
		pyroscopetest.Sample{Series: api, ProfileID: profileA, SpanID: "00f067aa0ba902b7", Time: at, Stack: "main.handle;main.serialize", Value: 20},
		pyroscopetest.Sample{Series: api, ProfileID: profileB, Time: at.Add(20 * time.Second), Stack: "runtime.gcBgMarkWorker", Value: 50},
	)
}

func flameQuery(at time.Time) models.FlameGraphQuery {
	return models.FlameGraphQuery{ProfileTypeID: cpu, LabelSelector: `{service_name="api"}`, Start: at.Add(-time.Minute), End: at.Add(time.Minute), MaxNodes: 100}
}

// uuidRE is a version 4 UUID in lower case, as Pyroscope writes profile IDs.
var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// dump prints a tree one node per line: depth-indented "name total/self".
func dump(n *flamegraph.Node) string {
	if n == nil {
		return "<nil>"
	}
	var b strings.Builder
	n.Walk(func(depth int, c *flamegraph.Node) {
		fmt.Fprintf(&b, "%s%s %d/%d\n", strings.Repeat("  ", depth), c.Name, c.Total, c.Self)
	})
	return b.String()
}

func functions(n *flamegraph.Node) string {
	var names []string
	n.Walk(func(_ int, c *flamegraph.Node) { names = append(names, c.Name) })
	return strings.Join(names, ",")
}

func TestProfileIDSelectorOnANewerServerKeepsTheProfileAfterOneProbe(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2}
	at := time.Now().Add(-5 * time.Minute)
	twoProfiles(srv, at)
	c := newTraceClient(t, srv)

	q := flameQuery(at)
	q.ProfileIDSelector = []string{profileB}
	fg, err := c.MergedFlameGraph(t.Context(), q)
	if err != nil || fg.Total != 50 || functions(fg) != "total,runtime.gcBgMarkWorker" {
		t.Fatalf("profile B: %v, %s", err, dump(fg))
	}
	calls := srv.Calls()
	if len(calls) != 2 || !reflect.DeepEqual(calls[0].ProfileIdSelector, []string{profileB}) {
		t.Fatalf("want the query and one probe, got %v", calls)
	}
	if probe := calls[1].ProfileIdSelector; len(probe) != 1 || probe[0] == profileB || !uuidRE.MatchString(probe[0]) {
		t.Errorf("probe for %v, not one other profile ID", probe)
	}
	if c.ProfileIDSelectorSupport() != SelectorHonoured || c.TraceSelectorSupport() != SelectorUnknown {
		t.Errorf("verdicts: profile IDs %v, trace IDs %v", c.ProfileIDSelectorSupport(), c.TraceSelectorSupport())
	}
	q.ProfileIDSelector = []string{profileA}
	if fg, err := c.MergedFlameGraph(t.Context(), q); err != nil || fg.Total != 320 || len(srv.Calls()) != 3 {
		t.Errorf("profile A once known: %v, %v, %d calls", err, fg, len(srv.Calls()))
	}
}

func TestProfileIDSelectorOnPyroscope112FailsRatherThanShowEveryProfile(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V112}
	at := time.Now().Add(-5 * time.Minute)
	twoProfiles(srv, at)
	c := newTraceClient(t, srv)

	q := flameQuery(at)
	q.ProfileIDSelector = []string{profileB}
	fg, err := c.MergedFlameGraph(t.Context(), q)
	if fg != nil || !errors.Is(err, models.ErrProfileIDSelectorIgnored) || !backend.IsDownstreamError(err) {
		t.Fatalf("got %v, %v; want models.ErrProfileIDSelectorIgnored as a downstream error", fg, err)
	}
	if !strings.Contains(err.Error(), "this Pyroscope ignores profileIdSelector and would answer every profile: individual profiles (from exemplars) need Pyroscope 1.17 or newer") {
		t.Errorf("message %q", err)
	}
	before := len(srv.Calls())
	if _, err := c.MergedFlameGraph(t.Context(), q); !errors.Is(err, models.ErrProfileIDSelectorIgnored) || len(srv.Calls()) != before {
		t.Errorf("second query: %v after %d more calls", err, len(srv.Calls())-before)
	}
	// Other queries are untouched by the verdict.
	if fg, err := c.MergedFlameGraph(t.Context(), flameQuery(at)); err != nil || fg.Total != 370 {
		t.Errorf("plain query: %v, %v", err, fg)
	}
}

func TestProfileIDsExcludeSpanAndTraceSelectors(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2}
	c := newTraceClient(t, srv)
	q := flameQuery(time.Now())
	q.ProfileIDSelector, q.SpanSelector = []string{profileA}, []string{"00f067aa0ba902b7"}
	if _, err := c.MergedFlameGraph(t.Context(), q); err == nil || !strings.Contains(err.Error(), "profile IDs cannot be asked with a span selector or a trace ID") {
		t.Errorf("err = %v", err)
	}
	if len(srv.Calls())+len(srv.SpanCalls()) != 0 {
		t.Error("the combination reached Pyroscope")
	}
}

// The call site is sent where the call has the field and always cut here: the graph is the same
// whether the server honours it (2.x), drops it (1.12) or the call has no such field (span
// profiles).
func TestACallSiteCutsEveryKindOfFlameGraphOnEveryServer(t *testing.T) {
	at := time.Now().Add(-5 * time.Minute)
	const want = "total 320/0\n  main.handle 320/0\n    main.dbQuery 300/300\n    main.serialize 20/20\n"
	for _, v := range []pyroscopetest.Version{pyroscopetest.V112, pyroscopetest.V2} {
		srv := &pyroscopetest.Server{Version: v}
		twoProfiles(srv, at)
		c := newTraceClient(t, srv)
		q := flameQuery(at)
		q.StackTraceSelector = []string{"main.handle"}

		fg, err := c.MergedFlameGraph(t.Context(), q)
		if err != nil || dump(fg) != want {
			t.Errorf("version %d, plain: %v\n%s", v, err, dump(fg))
		}
		sel := srv.Calls()[0].StackTraceSelector
		if len(sel.GetCallSite()) != 1 || sel.GetCallSite()[0].GetName() != "main.handle" {
			t.Errorf("version %d: stack_trace_selector sent %v", v, sel)
		}

		span := q
		span.SpanSelector = []string{"00f067aa0ba902b7"}
		if fg, err := c.MergedFlameGraph(t.Context(), span); err != nil || dump(fg) != want {
			t.Errorf("version %d, span profile: %v\n%s", v, err, dump(fg))
		}

		gc := q
		gc.StackTraceSelector = []string{"main.handle", "main.serialize"}
		if fg, err := c.MergedFlameGraph(t.Context(), gc); err != nil || fg.Total != 20 || functions(fg) != "total,main.handle,main.serialize" {
			t.Errorf("version %d, two-frame call site: %v\n%s", v, err, dump(fg))
		}
	}

	srv := &pyroscopetest.Server{Version: pyroscopetest.V2}
	srv.Add(pyroscopetest.Sample{Series: map[string]string{"service_name": "api"}, TraceID: traceA, Time: at, Stack: "main.handle;main.dbQuery", Value: 300},
		pyroscopetest.Sample{Series: map[string]string{"service_name": "api"}, TraceID: traceA, Time: at, Stack: "runtime.mcall", Value: 9})
	q := flameQuery(at)
	q.TraceID, q.StackTraceSelector = traceA, []string{"main.handle"}
	if fg, err := newTraceClient(t, srv).MergedFlameGraph(t.Context(), q); err != nil || fg.Total != 300 || functions(fg) != "total,main.handle,main.dbQuery" {
		t.Errorf("trace profile: %v\n%s", err, dump(fg))
	}
}

func TestSeriesBringExemplarsAndAnnotationsFromANewerServerOnly(t *testing.T) {
	at := time.Now().Add(-5 * time.Minute).Truncate(time.Minute)
	throttle := models.ProfileAnnotation{Key: "pyroscope.ingest.throttled", Value: `{"body":{"periodType":"day","periodLimitMb":4,"limitResetTime":1}}`}
	for _, v := range []pyroscopetest.Version{pyroscopetest.V2, pyroscopetest.V112} {
		srv := &pyroscopetest.Server{Version: v}
		twoProfiles(srv, at)
		srv.Add(pyroscopetest.Sample{Series: map[string]string{"service_name": "api", "pod": "api-1"}, ProfileID: profileA, Time: at.Add(time.Second),
			Stack: "main.handle;main.dbQuery", Value: 1, Annotations: []models.ProfileAnnotation{throttle}})
		c := newTraceClient(t, srv)
		series, err := c.Series(t.Context(), models.SeriesQuery{ProfileTypeID: cpu, LabelSelector: `{service_name="api"}`, Start: at, End: at.Add(time.Minute),
			Step: time.Minute, GroupBy: []string{"service_name"}, Exemplars: models.ExemplarsIndividual, StackTraceSelector: []string{"main.handle"}})
		if err != nil {
			t.Fatal(err)
		}
		req := srv.SeriesCalls()[0]
		if req.ExemplarType != typesv1.ExemplarType_EXEMPLAR_TYPE_INDIVIDUAL || len(req.StackTraceSelector.GetCallSite()) != 1 {
			t.Errorf("version %d: request %v", v, req)
		}
		if len(series) != 1 || len(series[0].Points) != 1 {
			t.Fatalf("version %d: %+v", v, series)
		}
		p := series[0].Points[0]
		if p.Value != 321 {
			t.Errorf("version %d: value %v, want only main.handle's 321 (both versions honour the call site on series)", v, p.Value)
		}
		switch v {
		case pyroscopetest.V2:
			want := []models.ProfileExemplar{{Timestamp: at.UnixMilli(), ProfileID: profileA, SpanID: "00f067aa0ba902b7", Value: 321,
				Labels: []models.LabelPair{{Name: "pod", Value: "api-0"}}}}
			if !reflect.DeepEqual(p.Exemplars, want) {
				t.Errorf("exemplars %+v, want %+v", p.Exemplars, want)
			}
			if !reflect.DeepEqual(p.Annotations, []models.ProfileAnnotation{throttle}) {
				t.Errorf("annotations %+v", p.Annotations)
			}
		case pyroscopetest.V112:
			if p.Exemplars != nil || p.Annotations != nil {
				t.Errorf("1.12 answered exemplars %v annotations %v", p.Exemplars, p.Annotations)
			}
		}
	}
}

func TestSeriesRejectsAnUnknownExemplarTypeWithoutCallingPyroscope(t *testing.T) {
	f := &fakeQuerier{}
	c, _ := newFakeClient(t, f)
	_, err := c.Series(t.Context(), models.SeriesQuery{ProfileTypeID: cpu, Step: time.Second, Exemplars: "all"})
	if err == nil || !strings.Contains(err.Error(), `series exemplars must be "individual" or "span", got "all"`) || f.requests != 0 {
		t.Errorf("%v after %d requests", err, f.requests)
	}
	if _, err := c.Series(t.Context(), models.SeriesQuery{ProfileTypeID: cpu, Step: time.Second}); err != nil {
		t.Fatal(err)
	}
	if f.series1.ExemplarType != typesv1.ExemplarType_EXEMPLAR_TYPE_UNSPECIFIED || f.series1.StackTraceSelector != nil {
		t.Errorf("without exemplars or call site: %v, %v", f.series1.ExemplarType, f.series1.StackTraceSelector)
	}
}

func TestHeatmapAsksSelectHeatmapAndConvertsTheSlots(t *testing.T) {
	at := time.Now().Add(-10 * time.Minute).Truncate(time.Minute)
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2}
	twoProfiles(srv, at.Add(10*time.Second))
	c := newTraceClient(t, srv)

	series, err := c.Heatmap(t.Context(), models.HeatmapQuery{ProfileTypeID: cpu, LabelSelector: `{service_name="api"}`, Start: at, End: at.Add(2 * time.Minute),
		Step: time.Minute, GroupBy: []string{"service_name"}, Limit: 3, Exemplars: true})
	if err != nil {
		t.Fatal(err)
	}
	req := srv.HeatmapCalls()[0]
	if req.QueryType != querierv1.HeatmapQueryType_HEATMAP_QUERY_TYPE_INDIVIDUAL || req.ExemplarType != typesv1.ExemplarType_EXEMPLAR_TYPE_INDIVIDUAL ||
		req.Step != 60 || req.GetLimit() != 3 || !reflect.DeepEqual(req.GroupBy, []string{"service_name"}) || req.Start != at.UnixMilli() {
		t.Errorf("request %v", req)
	}
	// Profile A (320) at +10 s and B (50) at +30 s fall in the slot ending at +60 s; the fake's
	// four buckets are 80 wide up to the largest profile.
	want := []models.HeatmapSeries{{Labels: []models.LabelPair{{Name: "service_name", Value: "api"}}, Slots: []models.HeatmapSlot{{
		Timestamp: at.Add(time.Minute).UnixMilli(), YMin: []float64{0, 80, 160, 240}, Counts: []int64{1, 0, 0, 1},
		Exemplars: []models.ProfileExemplar{
			{Timestamp: at.Add(30 * time.Second).UnixMilli(), ProfileID: profileB, Value: 50, Labels: []models.LabelPair{{Name: "pod", Value: "api-0"}}},
			{Timestamp: at.Add(10 * time.Second).UnixMilli(), ProfileID: profileA, SpanID: "00f067aa0ba902b7", Value: 320, Labels: []models.LabelPair{{Name: "pod", Value: "api-0"}}},
		},
	}}}}
	if !reflect.DeepEqual(series, want) {
		t.Errorf("series\n%+v\nwant\n%+v", series, want)
	}

	if _, err := c.Heatmap(t.Context(), models.HeatmapQuery{ProfileTypeID: cpu, LabelSelector: "{}", Start: at, End: at.Add(time.Minute), Step: time.Minute, Spans: true}); err != nil {
		t.Fatal(err)
	}
	if req := srv.HeatmapCalls()[1]; req.QueryType != querierv1.HeatmapQueryType_HEATMAP_QUERY_TYPE_SPAN || req.ExemplarType != typesv1.ExemplarType_EXEMPLAR_TYPE_NONE || req.Limit != nil {
		t.Errorf("span heatmap without exemplars: %v", req)
	}
}

func TestHeatmapOnPyroscope112SaysWhichVersionHasIt(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V112}
	c := newTraceClient(t, srv)
	_, err := c.Heatmap(t.Context(), models.HeatmapQuery{ProfileTypeID: cpu, LabelSelector: "{}", Start: time.Now().Add(-time.Hour), End: time.Now(), Step: time.Minute})
	if !errors.Is(err, models.ErrUnsupported) || !backend.IsDownstreamError(err) {
		t.Fatalf("err = %v; want models.ErrUnsupported, downstream", err)
	}
	if !strings.Contains(err.Error(), "SelectHeatmap needs Pyroscope 1.19 or newer; this server does not have it") || strings.Contains(err.Error(), "is this URL a Pyroscope server") {
		t.Errorf("message %q", err)
	}
	if len(srv.HeatmapCalls()) != 0 {
		t.Error("the fake 1.12 served SelectHeatmap")
	}
}
