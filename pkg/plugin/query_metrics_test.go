package plugin

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// twoServices is what Pyroscope answers to a CPU query grouped by service_name over 15 s steps:
// 30e9 ns in 15 s is 2 cores.
func twoServices(start time.Time) []models.ProfileSeries {
	ms := start.UnixMilli()
	return []models.ProfileSeries{
		memSeries([]models.ProfilePoint{{Timestamp: ms, Value: 30e9}, {Timestamp: ms + 15000, Value: 15e9}}, "service_name", "ai-detector"),
		memSeries([]models.ProfilePoint{{Timestamp: ms, Value: 3e9}}, "service_name", "nemotron-backend"),
	}
}

// memSeries builds one series with labels given as name, value pairs.
func memSeries(points []models.ProfilePoint, labels ...string) models.ProfileSeries {
	s := models.ProfileSeries{Points: points}
	for i := 0; i+1 < len(labels); i += 2 {
		s.Labels = append(s.Labels, models.LabelPair{Name: labels[i], Value: labels[i+1]})
	}
	return s
}

// testStacks are the flame graph of every selector: total 10, all in main.dbQuery.
var testStacks = map[string][]string{"": {"main.dbQuery 10"}}

// profilesDS is a data source of these settings whose profile store is p.
func profilesDS(t *testing.T, p *memProfiles, jsonData map[string]any) *Datasource {
	t.Helper()
	if jsonData == nil {
		jsonData = map[string]any{}
	}
	return withSources(t, jsonData, correlate.Sources{Profiles: correlate.Ready[correlate.ProfileStore](p)})
}

// lastSeries is the last series query p was asked.
func lastSeries(t *testing.T, p *memProfiles) models.SeriesQuery {
	t.Helper()
	qs := p.seriesCalls()
	if len(qs) == 0 {
		t.Fatal("the plugin never asked for series")
	}
	return qs[len(qs)-1]
}

// errSeriesRefused and errIngesterDown are Pyroscope's errors as its client files them.
var (
	errSeriesRefused = pyroscopeErr(connect.CodeInvalidArgument, "the query time range exceeds the limit")
	errIngesterDown  = pyroscopeErr(connect.CodeUnavailable, "ingester ring has no healthy instances")
)

func metricsQuery(refID, model string, interval time.Duration) backend.DataQuery {
	q := query(refID, model)
	q.Interval = interval
	return q
}

func TestMetricsQueryAsksPyroscopeWhatGrafanaWouldAsk(t *testing.T) {
	fake := &memProfiles{}
	ds := profilesDS(t, fake, nil)
	q := metricsQuery("A", `{"queryType":"metrics","labelSelector":"{service_name=~\"ai-.*\"}",
		"profileTypeId":"memory:alloc_objects:count:space:bytes","groupBy":["service_name","span_name"],"limit":3}`, time.Minute)
	fake.series = twoServices(q.TimeRange.From)

	r := run(t, ds, q).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	// pkg/pyroscope tests how the client sends these fields (SelectSeries in ms, s, unset).
	req := lastSeries(t, fake)
	if req.ProfileTypeID != "memory:alloc_objects:count:space:bytes" || req.LabelSelector != `{service_name=~"ai-.*"}` {
		t.Errorf("type %q selector %q", req.ProfileTypeID, req.LabelSelector)
	}
	if !req.Start.Equal(q.TimeRange.From) || !req.End.Equal(q.TimeRange.To) {
		t.Errorf("range %v..%v, want the panel's %v..%v", req.Start, req.End, q.TimeRange.From, q.TimeRange.To)
	}
	if !slices.Equal(req.GroupBy, []string{"service_name", "span_name"}) {
		t.Errorf("groupBy = %v", req.GroupBy)
	}
	if req.Limit != 3 {
		t.Errorf("limit = %v, want 3", req.Limit)
	}
	if req.Step != time.Minute {
		t.Errorf("step = %v, want the panel's interval (1m) since it exceeds minStep", req.Step)
	}
	if req.Aggregation != "" {
		t.Errorf("aggregation = %q, want unset as Grafana leaves it", req.Aggregation)
	}
	if len(r.Frames) != 2 {
		t.Fatalf("frames = %d, want one per series", len(r.Frames))
	}
	f := r.Frames[0]
	if f.Name != "series" || f.Fields[1].Name != "alloc_objects" || f.Fields[1].Config.Unit != "ops" {
		t.Errorf("frame %q field %q unit %q", f.Name, f.Fields[1].Name, f.Fields[1].Config.Unit)
	}
	// 30e9 objects in a 60 s step: 5e8 per second.
	if got := f.Fields[1].At(0).(float64); got != 5e8 {
		t.Errorf("first value = %v, want 5e8 per second", got)
	}
}

func TestMetricsStepIsTheIntervalButNeverBelowMinStep(t *testing.T) {
	cases := []struct {
		name     string
		jsonData map[string]any
		interval time.Duration
		want     time.Duration
	}{
		{"default minStep wins over a short interval", nil, time.Second, 15 * time.Second},
		{"no interval at all", nil, 0, 15 * time.Second},
		{"a long interval wins", nil, 2 * time.Minute, 2 * time.Minute},
		{"configured minStep", map[string]any{"minStep": "1m"}, 30 * time.Second, time.Minute},
		{"configured sub-second minStep", map[string]any{"minStep": "500ms"}, 0, 500 * time.Millisecond},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fake := &memProfiles{}
			ds := profilesDS(t, fake, c.jsonData)
			q := metricsQuery("A", `{"queryType":"metrics"}`, c.interval)
			fake.series = []models.ProfileSeries{memSeries([]models.ProfilePoint{{Timestamp: q.TimeRange.From.UnixMilli(), Value: 60e9}})}
			r := run(t, ds, q).Responses["A"]
			if r.Error != nil {
				t.Fatal(r.Error)
			}
			if got := lastSeries(t, fake).Step; got != c.want {
				t.Errorf("step = %v, want %v", got, c.want)
			}
			// The default type is CPU: 60e9 ns over the step, in cores.
			if got, want := r.Frames[0].Fields[1].At(0).(float64), 60/c.want.Seconds(); math.Abs(got-want) > 1e-9 {
				t.Errorf("cores = %v, want %v (divided by the step actually asked for)", got, want)
			}
			if r.Frames[0].Fields[1].Config.Unit != "cores" {
				t.Errorf("unit = %q", r.Frames[0].Fields[1].Config.Unit)
			}
		})
	}
}

func TestMetricsLimitZeroMeansAllSeries(t *testing.T) {
	fake := &memProfiles{}
	ds := profilesDS(t, fake, nil)
	run(t, ds, metricsQuery("A", `{"queryType":"metrics","limit":0}`, 0))
	if l := lastSeries(t, fake).Limit; l != 0 {
		t.Errorf("limit = %d, want 0 (all series)", l)
	}
}

func TestMetricsAggregationIsPassedOnOrRejected(t *testing.T) {
	fake := &memProfiles{}
	ds := profilesDS(t, fake, nil)
	res := run(t, ds,
		metricsQuery("avg", `{"queryType":"metrics","profileTypeId":"memory:inuse_space:bytes:space:bytes","aggregation":"average"}`, 0),
		metricsQuery("bad", `{"queryType":"metrics","aggregation":"max"}`, 0),
	)
	if res.Responses["avg"].Error != nil {
		t.Fatal(res.Responses["avg"].Error)
	}
	if req := lastSeries(t, fake); req.Aggregation != models.AggregationAverage {
		t.Errorf("aggregation = %q, want average", req.Aggregation)
	}
	wantError(t, res.Responses["bad"], backend.ErrorSourceDownstream, `invalid metrics query: field "aggregation" must be "sum" (the default) or "average", got "max"`)
}

func TestMetricsQueryErrorsNameTheFieldTheSettingOrTheUpstream(t *testing.T) {
	fake := &memProfiles{seriesErr: errSeriesRefused}
	ds := profilesDS(t, fake, nil)
	res := run(t, ds,
		metricsQuery("upstream", `{"queryType":"metrics"}`, 0),
		metricsQuery("groupBy", `{"queryType":"metrics","groupBy":["service-name"]}`, 0),
		metricsQuery("limit", `{"queryType":"metrics","limit":-1}`, 0),
		metricsQuery("selector", `{"queryType":"metrics","labelSelector":"service_name=x"}`, 0),
	)
	wantError(t, res.Responses["upstream"], backend.ErrorSourceDownstream, "Pyroscope (http://pyroscope:4040)", "invalid_argument", "exceeds the limit")
	wantError(t, res.Responses["groupBy"], backend.ErrorSourceDownstream, `invalid metrics query: field "groupBy" item 1 must be a label name`)
	wantError(t, res.Responses["limit"], backend.ErrorSourceDownstream, `field "limit" must be zero (all series) or positive`)
	wantError(t, res.Responses["selector"], backend.ErrorSourceDownstream, `field "labelSelector" is not a label selector`)

	bad := profilesDS(t, fake, map[string]any{"minStep": "soon"})
	r := run(t, bad, metricsQuery("A", `{"queryType":"metrics"}`, 0)).Responses["A"]
	wantError(t, r, backend.ErrorSourceDownstream, "invalid data source settings", `jsonData.minStep must be a positive duration such as 15s or 1m, got "soon"`)

	unset := newTestDatasource(t, map[string]any{}, nil)
	r = run(t, unset, metricsQuery("A", `{"queryType":"metrics"}`, 0)).Responses["A"]
	wantError(t, r, backend.ErrorSourceDownstream, "Pyroscope is not configured", "jsonData.pyroscopeUrl")
}

// An empty answer says why: a profile type or a service Pyroscope does not hold (listing what it
// holds), or nothing in the window. Grafana's Pyroscope data source answers no frame at all; here
// one empty series frame carries the reason, so the panel can show it.
func TestEmptyProfileAndSeriesAnswersSayWhy(t *testing.T) {
	fake := &memProfiles{
		types:       []models.ProfileType{{ID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds"}, {ID: "memory:alloc_objects:count:space:bytes"}},
		labelValues: map[string][]string{"service_name": {"ai-detector", "nemotron-backend"}},
	}
	ds := profilesDS(t, fake, nil)
	for _, c := range []struct{ model, want string }{
		{`{"queryType":"metrics","profileTypeId":"wall:wall:nanoseconds:wall:nanoseconds"}`,
			`Pyroscope holds no profiles of type "wall:wall:nanoseconds:wall:nanoseconds" between `},
		{`{"queryType":"metrics","labelSelector":"{service_name=\"backend\"}"}`,
			`Pyroscope holds no profiles of service_name "backend" between `},
		{`{"queryType":"metrics","labelSelector":"{service_name=\"nemotron-backend\"}"}`,
			`no process_cpu:cpu:nanoseconds:cpu:nanoseconds samples match {service_name="nemotron-backend"} between `},
		{`{"queryType":"profile","labelSelector":"{service_name=\"backend\"}"}`,
			`the services it holds are ai-detector, nemotron-backend.`},
	} {
		r := run(t, ds, metricsQuery("A", c.model, 0)).Responses["A"]
		if r.Error != nil || len(r.Frames) != 1 || r.Frames[0].Meta == nil || len(r.Frames[0].Meta.Notices) == 0 {
			t.Fatalf("%s: error %v, frames %v", c.model, r.Error, r.Frames)
		}
		if n := r.Frames[0].Meta.Notices[0]; !strings.Contains(n.Text, c.want) || n.Severity != data.NoticeSeverityWarning {
			t.Errorf("%s: notice %q lacks %q", c.model, n.Text, c.want)
		}
	}
	r := run(t, ds, metricsQuery("A", `{"queryType":"metrics","profileTypeId":"wall:wall:nanoseconds:wall:nanoseconds"}`, 0)).Responses["A"]
	if got := r.Frames[0].Meta.Notices[0].Text; !strings.HasSuffix(got, "; it holds process_cpu:cpu:nanoseconds:cpu:nanoseconds, memory:alloc_objects:count:space:bytes.") {
		t.Errorf("the types held are not listed: %q", got)
	}
	if r.Frames[0].Name != "series" || len(r.Frames[0].Fields) != 0 {
		t.Errorf("empty series frame %+v", r.Frames[0])
	}
}

func TestBothQueryGivesTheFlameGraphAndTheSeries(t *testing.T) {
	fake := &memProfiles{byLabel: testStacks}
	ds := profilesDS(t, fake, nil)
	q := metricsQuery("A", `{"queryType":"both","labelSelector":"{service_name=\"nemotron-backend\"}","groupBy":["service_name"]}`, 0)
	fake.series = twoServices(q.TimeRange.From)

	r := run(t, ds, q).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if got := frameNames(r.Frames); !slices.Equal(got, []string{"response", "series", "series"}) {
		t.Fatalf("frames = %v, want the flame graph then one series per service", got)
	}
	if r.Frames[0].Rows() != 2 || r.Frames[0].Meta.PreferredVisualization != data.VisTypeFlameGraph {
		t.Errorf("flame graph: %d rows, meta %+v", r.Frames[0].Rows(), r.Frames[0].Meta)
	}
	if got := r.Frames[1].Fields[1].At(0).(float64); got != 2 {
		t.Errorf("first series value = %v cores, want 2", got)
	}
	for _, f := range r.Frames {
		if f.Meta != nil && len(f.Meta.Notices) > 0 {
			t.Errorf("frame %q has notices %v although both halves worked", f.Name, f.Meta.Notices)
		}
	}
	if len(fake.flameCalls()) != 1 || len(fake.seriesCalls()) != 1 {
		t.Errorf("profile calls %d, series calls %d; want one each", len(fake.flameCalls()), len(fake.seriesCalls()))
	}
}

func TestBothQueryKeepsTheHalfThatWorked(t *testing.T) {
	t.Run("series fail", func(t *testing.T) {
		ds := profilesDS(t, &memProfiles{byLabel: testStacks, seriesErr: errIngesterDown}, nil)
		r := run(t, ds, metricsQuery("A", `{"queryType":"both"}`, 0)).Responses["A"]
		if r.Error != nil {
			t.Fatalf("the flame graph worked, yet the query failed: %v", r.Error)
		}
		if got := frameNames(r.Frames); !slices.Equal(got, []string{"response"}) || r.Frames[0].Rows() != 2 {
			t.Fatalf("frames = %v", got)
		}
		wantNotice(t, r.Frames[0], "series unavailable", "Pyroscope (http://pyroscope:4040)", "ingester ring")
	})

	t.Run("flame graph fails", func(t *testing.T) {
		fake := &memProfiles{flameErr: errIngesterDown}
		ds := profilesDS(t, fake, nil)
		q := metricsQuery("A", `{"queryType":"both","groupBy":["service_name"]}`, 0)
		fake.series = twoServices(q.TimeRange.From)
		r := run(t, ds, q).Responses["A"]
		if r.Error != nil {
			t.Fatalf("the series worked, yet the query failed: %v", r.Error)
		}
		if got := frameNames(r.Frames); !slices.Equal(got, []string{"response", "series", "series"}) {
			t.Fatalf("frames = %v", got)
		}
		if frames.FlameGraphHasSamples(r.Frames[0]) || r.Frames[0].Meta.PreferredVisualization != data.VisTypeFlameGraph {
			t.Errorf("the failed flame graph should be an empty flame graph frame, got %v", rows(r.Frames[0]))
		}
		wantNotice(t, r.Frames[0], "flame graph unavailable", "Pyroscope (http://pyroscope:4040)", "unavailable")
	})

	t.Run("both fail", func(t *testing.T) {
		ds := profilesDS(t, &memProfiles{flameErr: errIngesterDown, seriesErr: errIngesterDown}, nil)
		r := run(t, ds, metricsQuery("A", `{"queryType":"both"}`, 0)).Responses["A"]
		wantError(t, r, backend.ErrorSourceDownstream, "flame graph failed: Pyroscope (http://pyroscope:4040)", "series failed: Pyroscope (http://pyroscope:4040)")
	})

	t.Run("bad query fails once, before any call", func(t *testing.T) {
		fake := &memProfiles{}
		ds := profilesDS(t, fake, nil)
		r := run(t, ds, metricsQuery("A", `{"queryType":"both","maxNodes":-1}`, 0)).Responses["A"]
		wantError(t, r, backend.ErrorSourceDownstream, `invalid both query: field "maxNodes" must be from 1 to 1048576`)
		if len(fake.flameCalls()) != 0 || len(fake.seriesCalls()) != 0 {
			t.Errorf("an invalid query still reached Pyroscope")
		}
	})
}

func wantNotice(t *testing.T, f *data.Frame, parts ...string) {
	t.Helper()
	if f.Meta == nil || len(f.Meta.Notices) != 1 {
		t.Fatalf("frame %q: want one notice, got meta %+v", f.Name, f.Meta)
	}
	n := f.Meta.Notices[0]
	if n.Severity != data.NoticeSeverityWarning {
		t.Errorf("notice severity = %v, want warning", n.Severity)
	}
	for _, p := range parts {
		if !strings.Contains(n.Text, p) {
			t.Errorf("notice %q lacks %q", n.Text, p)
		}
	}
}

func frameNames(frames []*data.Frame) []string {
	names := []string{}
	for _, f := range frames {
		names = append(names, f.Name)
	}
	return names
}
