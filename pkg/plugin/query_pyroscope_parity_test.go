package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope/pyroscopetest"
)

// The query Grafana's Pyroscope data source sends from Explore with every newer field, as its
// editor fills them (empty selectors included).
const exploreQuery = `{"refId":"A","queryType":"both","labelSelector":"{service_name=\"x\"}","profileTypeId":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","groupBy":[],"includeExemplars":true,"includeHeatmap":true,"heatmapType":"span","profileIdSelector":[],"stackTraceSelector":[],"annotations":true,"traceIdSelector":[],"spanSelector":[],"maxNodes":16384,"limit":10}`

const (
	parityProfileA = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	parityProfileB = "0f8fad5b-d9cb-469f-a165-70867728950e"
	paritySpan     = "00f067aa0ba902b7"
)

var parityCtx = backend.WithPluginContext(context.Background(),
	backend.PluginContext{DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{UID: "hsi-uid", Name: "HSI Profiling"}})

// parityBed is a fake Pyroscope of one version holding service x's two profiles 20 minutes ago:
// A, a span's request handling (3 s of CPU), and B, background work (1 s), captured together.
func parityBed(t *testing.T, v pyroscopetest.Version, extra ...pyroscopetest.Sample) (*pyroscopetest.Server, *Datasource, time.Time) {
	t.Helper()
	at := time.Now().Add(-20 * time.Minute)
	srv := &pyroscopetest.Server{Version: v}
	x := map[string]string{"service_name": "x", "pod": "x-0"}
	srv.Add(
		pyroscopetest.Sample{Series: x, ProfileID: parityProfileA, SpanID: paritySpan, Time: at, Stack: "net/http.(*conn).serve;main.handle;main.dbQuery", Value: 2e9},
		pyroscopetest.Sample{Series: x, ProfileID: parityProfileA, SpanID: paritySpan, Time: at, Stack: "net/http.(*conn).serve;main.handle;main.serialize", Value: 1e9},
		pyroscopetest.Sample{Series: x, ProfileID: parityProfileB, Time: at, Stack: "runtime.gcBgMarkWorker", Value: 1e9},
	)
	srv.Add(extra...)
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": pyroscopetest.Serve(t, srv)}, nil)
	return srv, ds, at
}

func runParity(t *testing.T, ds *Datasource, q backend.DataQuery) backend.DataResponse {
	t.Helper()
	res, err := ds.QueryData(parityCtx, &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	if err != nil {
		t.Fatalf("QueryData returned a Go error: %v", err)
	}
	return res.Responses[q.RefID]
}

// allNotices lists every frame's notices as "[severity] text".
func allNotices(frames data.Frames) []string {
	var out []string
	for _, f := range frames {
		if f.Meta == nil {
			continue
		}
		for _, n := range f.Meta.Notices {
			out = append(out, "["+n.Severity.String()+"] "+n.Text)
		}
	}
	return out
}

func parityFrames(frames data.Frames) string {
	var names []string
	for _, f := range frames {
		names = append(names, f.Name)
	}
	return strings.Join(names, ",")
}

func TestGrafanasExploreQueryOnANewerPyroscopeAnswersHeatmapExemplarsAndFlameGraph(t *testing.T) {
	srv, ds, _ := parityBed(t, pyroscopetest.V2)
	r := runParity(t, ds, query("A", exploreQuery))
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	// The flame graph, then the span heatmap of the one span (groupBy [] gives one unlabelled
	// series) and its exemplar.
	if got := parityFrames(r.Frames); got != "response,heatmap,exemplar" {
		t.Fatalf("frames %s", got)
	}
	if n := allNotices(r.Frames); len(n) != 0 {
		t.Errorf("notices on a server that has everything: %q", n)
	}
	if total := r.Frames[0].Fields[1].At(0).(int64); total != 4e9 {
		t.Errorf("flame graph total %d, want both profiles' 4e9", total)
	}
	heat := r.Frames[1]
	var spans int64
	for i := range heat.Rows() {
		spans += heat.Fields[3].At(i).(int64)
	}
	if heat.Meta.Type != "heatmap-cells" || spans != 1 {
		t.Errorf("heatmap type %q counts %d spans, want 1", heat.Meta.Type, spans)
	}
	ex := r.Frames[2]
	if ex.Fields[2].At(0) != paritySpan || ex.Fields[2].Config.DisplayName != "Span ID" || ex.Fields[1].At(0).(float64) != 3e9 {
		t.Errorf("exemplar %v (%q) value %v", ex.Fields[2].At(0), ex.Fields[2].Config.DisplayName, ex.Fields[1].At(0))
	}
	if l := ex.Fields[2].Config.Links; len(l) != 1 || l[0].Internal.DatasourceUID != "hsi-uid" {
		t.Errorf("exemplar links %+v", l)
	}
	calls := srv.HeatmapCalls()
	if len(calls) != 1 {
		t.Fatalf("%d SelectHeatmap calls", len(calls))
	}
	// Grafana's step: the panel's interval (none here) and minStep (15 s), but at most 64 slots
	// in the range (1 h / 64 = 56.25 s).
	c := calls[0]
	if c.QueryType != querierv1.HeatmapQueryType_HEATMAP_QUERY_TYPE_SPAN || c.ExemplarType != typesv1.ExemplarType_EXEMPLAR_TYPE_SPAN || c.Step != 56.25 || c.GetLimit() != 10 {
		t.Errorf("SelectHeatmap request %v", c)
	}
	if len(srv.SeriesCalls()) != 0 {
		t.Error("series asked as well as the heatmap")
	}
}

func TestGrafanasExploreQueryOnPyroscope112AnswersSeriesAndSaysWhatIsMissing(t *testing.T) {
	srv, ds, _ := parityBed(t, pyroscopetest.V112)
	r := runParity(t, ds, query("A", exploreQuery))
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := parityFrames(r.Frames); got != "response,series" {
		t.Fatalf("frames %s, want the flame graph and the series", got)
	}
	if total := r.Frames[0].Fields[1].At(0).(int64); total != 4e9 {
		t.Errorf("flame graph total %d", total)
	}
	got := allNotices(r.Frames)
	want := []string{
		"[warning] heatmap (includeHeatmap) needs Pyroscope 1.19 or newer (SelectHeatmap); this server does not have it: series shown",
		"[info] exemplars (includeExemplars) need Pyroscope 1.17 or newer: Pyroscope sent none for this range, which is also how an older server answers, as it ignores the request; the two cannot be told apart",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("notices\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(r.Frames[1].Meta.Notices) != 2 {
		t.Errorf("the notices are not on the series frame")
	}
	if s := srv.SeriesCalls(); len(s) != 1 || s[0].ExemplarType != typesv1.ExemplarType_EXEMPLAR_TYPE_INDIVIDUAL || s[0].GetLimit() != 10 {
		t.Errorf("SelectSeries requests %v", s)
	}
}

func TestSeriesExemplarsFollowTheirSeriesOnItsScaleWithALinkToTheProfile(t *testing.T) {
	_, ds, _ := parityBed(t, pyroscopetest.V2)
	q := metricsQuery("A", `{"queryType":"metrics","labelSelector":"{service_name=\"x\"}","includeExemplars":true}`, time.Minute)
	r := runParity(t, ds, q)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := parityFrames(r.Frames); got != "series,exemplar" {
		t.Fatalf("frames %s", got)
	}
	if n := allNotices(r.Frames); len(n) != 0 {
		t.Errorf("notices %q", n)
	}
	series, ex := r.Frames[0], r.Frames[1]
	// Both profiles fall in one 60 s step: 4e9 ns of CPU in 60 s. Profile A alone is 3e9 ns, so
	// its marker sits at 3/4 of the point's height, in the same unit.
	point := series.Fields[1].At(0).(float64)
	byID := map[string]float64{}
	for i := range ex.Rows() {
		byID[ex.Fields[2].At(i).(string)] = ex.Fields[1].At(i).(float64)
	}
	if point != 4e9/60/1e9 || byID[parityProfileA] != 3e9/60/1e9 || byID[parityProfileB] != 1e9/60/1e9 {
		t.Errorf("point %v, exemplars %v", point, byID)
	}
	if ex.Fields[1].Config.Unit != "cores" || series.Fields[1].Config.Unit != "cores" {
		t.Errorf("units %q, %q", ex.Fields[1].Config.Unit, series.Fields[1].Config.Unit)
	}
	l := ex.Fields[2].Config.Links
	if len(l) != 1 || l[0].Title != "View profile" || l[0].Internal.DatasourceUID != "hsi-uid" {
		t.Fatalf("links %+v", l)
	}
	// Following the link runs the flame graph of that one profile.
	raw, _ := json.Marshal(l[0].Internal.Query)
	link := strings.ReplaceAll(string(raw), "${__value.raw}", parityProfileB)
	pr := runParity(t, ds, query("B", link))
	if pr.Error != nil || pr.Frames[0].Fields[1].At(0).(int64) != 1e9 || len(allNotices(pr.Frames)) != 0 {
		t.Errorf("the exemplar's link: %v, %v, %q", pr.Error, pr.Frames, allNotices(pr.Frames))
	}
}

func TestAnnotationsAreOneFrameAndABadOneIsSkippedWithANotice(t *testing.T) {
	at := time.Now().Add(-10 * time.Minute)
	reset := at.Add(5 * time.Minute).Unix()
	x := map[string]string{"service_name": "x"}
	_, ds, _ := parityBed(t, pyroscopetest.V2,
		pyroscopetest.Sample{Series: x, Time: at, Stack: "main.work", Value: 1, Annotations: []models.ProfileAnnotation{
			{Key: "pyroscope.ingest.throttled", Value: `{"body":{"periodType":"day","periodLimitMb":4,"limitResetTime":` + jsonInt(reset) + `}}`},
		}},
		pyroscopetest.Sample{Series: x, Time: at.Add(time.Minute), Stack: "main.work", Value: 1, Annotations: []models.ProfileAnnotation{
			{Key: "pyroscope.ingest.sampled", Value: `{"body":`},
		}},
	)
	r := runParity(t, ds, metricsQuery("A", `{"queryType":"metrics","labelSelector":"{service_name=\"x\"}","annotations":true}`, time.Minute))
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := parityFrames(r.Frames); got != "series,annotations" {
		t.Fatalf("frames %s", got)
	}
	a := r.Frames[1]
	if a.Rows() != 1 || a.Fields[2].At(0) != "Ingestion limit (4.0 MiB/day) reached" || a.Fields[1].At(0).(time.Time).Unix() != reset {
		t.Errorf("annotation rows %d: %v until %v", a.Rows(), a.Fields[2].At(0), a.Fields[1].At(0))
	}
	n := allNotices(r.Frames)
	if len(n) != 1 || !strings.HasPrefix(n[0], "[warning] 1 Pyroscope annotation(s) could not be read and are not shown: pyroscope.ingest.sampled at ") {
		t.Errorf("notices %q", n)
	}

	// Not asked, not shown.
	r = runParity(t, ds, metricsQuery("A", `{"queryType":"metrics","labelSelector":"{service_name=\"x\"}"}`, time.Minute))
	if got := parityFrames(r.Frames); r.Error != nil || got != "series" {
		t.Errorf("without annotations: %v, %s", r.Error, got)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestAnIndividualHeatmapSaysItIsNotCutToTheCallSite(t *testing.T) {
	_, ds, _ := parityBed(t, pyroscopetest.V2)
	r := runParity(t, ds, query("A", `{"queryType":"metrics","labelSelector":"{service_name=\"x\"}","groupBy":["pod"],"includeHeatmap":true,"stackTraceSelector":["main.handle"]}`))
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := parityFrames(r.Frames); got != "heatmap{pod=x-0}" {
		t.Fatalf("frames %s (exemplars were not asked)", got)
	}
	if n := allNotices(r.Frames); len(n) != 1 || !strings.Contains(n[0], "SelectHeatmap has no such selector") {
		t.Errorf("notices %q", n)
	}

	r = runParity(t, ds, query("A", `{"queryType":"metrics","labelSelector":"{service_name=\"nobody\"}","includeHeatmap":true}`))
	if r.Error != nil || parityFrames(r.Frames) != "heatmap" || r.Frames[0].Rows() != 0 {
		t.Fatalf("empty heatmap: %v, %s", r.Error, parityFrames(r.Frames))
	}
	if n := allNotices(r.Frames); len(n) != 1 || !strings.Contains(n[0], "[warning] Nothing to show") {
		t.Errorf("empty heatmap notices %q", n)
	}
}

func TestProfileIDSelectorShowsTheProfileOrFailsClearly(t *testing.T) {
	model := `{"queryType":"profile","labelSelector":"{service_name=\"x\"}","profileIdSelector":["` + parityProfileB + `"]}`

	_, ds, _ := parityBed(t, pyroscopetest.V2)
	r := runParity(t, ds, query("A", model))
	if r.Error != nil || r.Frames[0].Fields[1].At(0).(int64) != 1e9 {
		t.Fatalf("newer server: %v, %v", r.Error, r.Frames)
	}

	_, old, _ := parityBed(t, pyroscopetest.V112)
	wantError(t, runParity(t, old, query("A", model)), backend.ErrorSourceDownstream,
		"this Pyroscope ignores profileIdSelector and would answer every profile: individual profiles (from exemplars) need Pyroscope 1.17 or newer")
}

func TestStackTraceSelectorCutsTheFlameGraphOnEveryServerAndSaysSo(t *testing.T) {
	for _, v := range []pyroscopetest.Version{pyroscopetest.V112, pyroscopetest.V2} {
		_, ds, _ := parityBed(t, v)
		r := runParity(t, ds, query("A", `{"queryType":"profile","labelSelector":"{service_name=\"x\"}","stackTraceSelector":["net/http.(*conn).serve","main.handle"]}`))
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		f := r.Frames[0]
		if total := f.Fields[1].At(0).(int64); total != 3e9 {
			t.Errorf("version %d: total %d, want the call site's 3e9", v, total)
		}
		names := f.Fields[3].Config.TypeConfig.Enum.Text
		if strings.Join(names, ",") != "total,net/http.(*conn).serve,main.handle,main.dbQuery,main.serialize" {
			t.Errorf("version %d: functions %v", v, names)
		}
		n := allNotices(r.Frames)
		if len(n) != 1 || n[0] != "[info] flame graph cut to the call site net/http.(*conn).serve → main.handle (stackTraceSelector): only the stacks under it are shown" {
			t.Errorf("version %d: notices %q", v, n)
		}

		r = runParity(t, ds, query("A", `{"queryType":"profile","labelSelector":"{service_name=\"x\"}","stackTraceSelector":["main.handle"]}`))
		n = allNotices(r.Frames)
		if r.Error != nil || r.Frames[0].Fields[1].At(0).(int64) != 0 || len(n) != 1 || !strings.Contains(n[0], "starts with the call site main.handle") {
			t.Errorf("version %d: a call site no stack starts with: %v, %q", v, r.Error, n)
		}
	}
}
