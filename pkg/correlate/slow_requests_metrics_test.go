package correlate

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// tempoSearch is a trace store with its own latency metrics, as Tempo's TraceQL metrics.
type tempoSearch struct {
	fakeSearch
	rows  []models.TraceLatency
	err   error
	asked []models.TraceLatencyQuery
}

func (f *tempoSearch) EndpointLatencies(_ context.Context, q models.TraceLatencyQuery) (models.TraceLatencyResult, error) {
	f.asked = append(f.asked, q)
	return models.TraceLatencyResult{Rows: f.rows, Queries: []string{"{ kind = server } | quantile_over_time(duration, 0.5, 0.95, 0.99)"}}, f.err
}

type failingLatencies struct{}

func (failingLatencies) EndpointLatencies(context.Context, models.LatencyQuery) (models.LatencyResult, error) {
	return models.LatencyResult{}, errors.New("Prometheus (http://prom:9090): HTTP 503")
}

// Where no histogram has the requests (none in Prometheus, or Prometheus failing), the latency
// table comes from the trace store's metrics, slowest p99 first, and says so; where histograms
// have them, the trace store's metrics are not asked; a trace store without metrics (Jaeger)
// leaves the histograms' notice.
func TestSlowRequestsLatencyFromTheTraceStoresMetrics(t *testing.T) {
	tempoRows := []models.TraceLatency{
		{Service: "api", Endpoint: "GET /fast", Quantiles: []float64{0.01, 0.02, 0.03}, Requests: 100},
		{Service: "api", Endpoint: "POST /slow", Quantiles: []float64{0.4, 0.9, 1.6}, Requests: 12},
	}
	q := SlowRequestsQuery{Service: "api", From: t0, To: t0.Add(time.Hour), Limit: 5, Good: 500 * time.Millisecond}
	for _, tc := range []struct {
		name       string
		histograms Source[Latencies]
		store      TraceSearch
		wantFrom   string // the metric of the first row
		wantNotice string
		tempoAsked bool
	}{
		{name: "no histogram rows", histograms: Ready[Latencies](latencyRows{}), store: &tempoSearch{rows: tempoRows},
			wantFrom: TraceMetricsSource, wantNotice: "as no latency histogram has these requests", tempoAsked: true},
		{name: "Prometheus failing", histograms: Ready[Latencies](failingLatencies{}), store: &tempoSearch{rows: tempoRows},
			wantFrom: TraceMetricsSource, wantNotice: "the latency histograms could not be read (Prometheus (http://prom:9090): HTTP 503)", tempoAsked: true},
		{name: "Prometheus not configured", histograms: Unavailable[Latencies](errors.New("Prometheus is not configured")), store: &tempoSearch{rows: tempoRows},
			wantFrom: TraceMetricsSource, wantNotice: "could not be read (Prometheus is not configured)", tempoAsked: true},
		{name: "histograms answer", histograms: Ready[Latencies](latencyRows{{Metric: "http_server_duration", Service: "api", Endpoint: "/a", Quantiles: []float64{0.1, 0.2, 0.3}, Requests: 3, Good: 3}}),
			store: &tempoSearch{rows: tempoRows}, wantFrom: "http_server_duration"},
		{name: "Tempo's metrics fail too", histograms: Ready[Latencies](latencyRows{}), store: &tempoSearch{err: errors.New("Tempo (http://tempo:3200): HTTP 400: metrics are disabled")},
			wantNotice: "No latency from the trace store's metrics either: Tempo (http://tempo:3200): HTTP 400", tempoAsked: true},
		{name: "Jaeger has no metrics", histograms: Ready[Latencies](latencyRows{}), store: &fakeSearch{}, wantNotice: "No latency histogram has requests of service"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ans, err := SlowRequests(context.Background(), tc.histograms, Ready(tc.store), q)
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantFrom == "" && len(ans.Latency.Rows) != 0 || tc.wantFrom != "" && (len(ans.Latency.Rows) == 0 || ans.Latency.Rows[0].Metric != tc.wantFrom) {
				t.Errorf("latency rows %+v, want the first from %q", ans.Latency.Rows, tc.wantFrom)
			}
			if tc.wantFrom == TraceMetricsSource {
				if r := ans.Latency.Rows[0]; r.Endpoint != "POST /slow" || r.Quantiles[2] != 1.6 || r.Requests != 12 || !math.IsNaN(r.Good) {
					t.Errorf("first row %+v, want the slowest p99 without goodput", r)
				}
			}
			text := strings.Join(ans.LatencyNotices.Texts(), "\n")
			if tc.wantNotice != "" && !strings.Contains(text, tc.wantNotice) {
				t.Errorf("notices %q lack %q", text, tc.wantNotice)
			}
			// A failing Prometheus stays a warning even where Tempo's metrics stand in for it.
			if strings.Contains(tc.wantNotice, "could not be read") {
				warned := false
				for _, n := range ans.LatencyNotices {
					warned = warned || n.Severity == notices.Warning && strings.Contains(n.Text, tc.wantNotice)
				}
				if !warned {
					t.Errorf("the histograms' failure is not a warning: %+v", ans.LatencyNotices)
				}
			}
			if tc.wantFrom == TraceMetricsSource && strings.Contains(text, "No latency histogram has") {
				t.Errorf("rows from the trace store's metrics, yet the notices say there are none: %q", text)
			}
			if ts, ok := tc.store.(*tempoSearch); ok {
				if asked := len(ts.asked) > 0; asked != tc.tempoAsked {
					t.Errorf("Tempo's metrics asked: %v, want %v", asked, tc.tempoAsked)
				}
				if tc.tempoAsked && (ts.asked[0].Service != "api" || !ts.asked[0].Start.Equal(q.From) || len(ts.asked[0].Quantiles) != 3) {
					t.Errorf("asked %+v", ts.asked[0])
				}
			}
		})
	}
}

// The lever's p99 falls back to the trace store's metrics likewise, naming them as its source.
func TestServiceP99FromTheTraceStoresMetrics(t *testing.T) {
	traces := Ready[TraceLatencies](&tempoSearch{rows: []models.TraceLatency{
		{Service: "api", Endpoint: "POST /slow", Quantiles: []float64{0.4, 0.9, 1.6}, Requests: 12},
	}})
	for _, l := range []ServiceLatencies{{Store: latencyRows{}, Traces: traces}, {Traces: traces}} {
		got, err := l.ServiceP99(context.Background(), "api", t0, t0.Add(time.Hour))
		if err != nil || got.P99 != 1600*time.Millisecond || got.Source != TraceMetricsSource || got.Endpoint != "POST /slow" {
			t.Errorf("%+v, %v", got, err)
		}
	}
}
