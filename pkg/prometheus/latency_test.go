package prometheus

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

var (
	demoHist = models.LatencyHistogram{Metric: "http_request_duration_seconds", ServiceLabels: []string{"service"}, EndpointLabel: "endpoint"}
	otelHist = models.LatencyHistogram{Metric: "http_server_request_duration_seconds", ServiceLabels: []string{"service_name", "job"}, EndpointLabel: "http_route"}
)

func TestQuantileExprIsTheUsualHistogramQuantile(t *testing.T) {
	got, err := QuantileExpr(demoHist, 0.99, "", "", 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	want := `histogram_quantile(0.99, sum by (le, service, endpoint) (rate(http_request_duration_seconds_bucket[5m])))`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	got, err = RequestCountExpr(demoHist, "nemotron-backend", "/api/detect", 90*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	want = `sum by (service, endpoint) (increase(http_request_duration_seconds_count{endpoint="/api/detect",service="nemotron-backend"}[1m30s]))`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestQuantileExprTriesEachServiceLabel(t *testing.T) {
	got, err := QuantileExpr(otelHist, 0.5, "checkout", "", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	want := `histogram_quantile(0.5, sum by (le, service_name, job, http_route) (rate(http_server_request_duration_seconds_bucket{service_name="checkout"}[1h])) or sum by (le, service_name, job, http_route) (rate(http_server_request_duration_seconds_bucket{job="checkout"}[1h])))`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestQuantileExprQuotesHostileValues(t *testing.T) {
	// A value that would end the selector and add a query if it were pasted into the text.
	evil := `x"} or vector(1) or up{a="`
	got, err := QuantileExpr(demoHist, 0.95, evil, "/a\\b\n", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(got)
	if err != nil {
		t.Fatalf("%s does not parse: %v", got, err)
	}
	var selectors []*parser.VectorSelector
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			selectors = append(selectors, vs)
		}
		return nil
	})
	if len(selectors) != 1 {
		t.Fatalf("%d selectors in %s", len(selectors), got)
	}
	values := map[string]string{}
	for _, m := range selectors[0].LabelMatchers {
		if m.Type != labels.MatchEqual {
			t.Errorf("matcher %s is not an equality", m)
		}
		values[m.Name] = m.Value
	}
	if values["service"] != evil || values["endpoint"] != "/a\\b\n" || values["__name__"] != "http_request_duration_seconds_bucket" {
		t.Errorf("matchers read back as %q", values)
	}
}

// fakeProm answers instant queries by the expression's quantile and histogram: each key of
// answers is a fragment of the expression, each value the vector to answer.
type fakeProm struct {
	answers map[string][]sample
	fail    string // a fragment whose queries fail with HTTP 503

	mu      sync.Mutex
	queries []string
}

type sample struct {
	labels map[string]string
	value  string
}

// vector answers an expression as Prometheus would: a union ("or") of label_replace parts part
// by part, each labelled as its call says; any other expression by the answers whose fragment
// it holds.
func (f *fakeProm) vector(e parser.Expr) []sample {
	return unionAnswer(e, func(e parser.Expr) []sample {
		var out []sample
		for frag, samples := range f.answers {
			if strings.Contains(e.String(), frag) {
				out = append(out, samples...)
			}
		}
		return out
	})
}

func (f *fakeProm) serve(t *testing.T) *Client {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		_ = r.ParseForm()
		q := r.Form.Get("query")
		f.mu.Lock()
		f.queries = append(f.queries, q)
		f.mu.Unlock()
		if f.fail != "" && strings.Contains(q, f.fail) {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "unavailable", "error": "storage is down"})
			return
		}
		e, err := parser.NewParser(parser.Options{}).ParseExpr(q)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "bad_data", "error": err.Error()})
			return
		}
		result := []map[string]any{}
		for _, s := range f.vector(e) {
			result = append(result, map[string]any{"metric": s.labels, "value": []any{1700000000, s.value}})
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": "vector", "result": result}})
	}))
	t.Cleanup(s.Close)
	c, err := New(models.Upstream{Name: models.Prometheus, URL: s.URL}, s.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func demoLatencyAnswers() map[string][]sample {
	backend := map[string]string{"service": "nemotron-backend", "endpoint": "/api/detect"}
	detector := map[string]string{"service": "ai-detector", "endpoint": "/detect"}
	return map[string][]sample{
		"histogram_quantile(0.5, sum by (le, service, endpoint)":  {{backend, "0.12"}, {detector, "0.07"}},
		"histogram_quantile(0.95, sum by (le, service, endpoint)": {{backend, "0.6"}, {detector, "0.09"}},
		"histogram_quantile(0.99, sum by (le, service, endpoint)": {{backend, "1.4"}, {detector, "NaN"}},
		"increase(http_request_duration_seconds_count":            {{backend, "120"}, {detector, "120"}},
		// An endpoint idle over the range: no requests, no percentiles. Not a row.
		"histogram_quantile(0.5, sum by (le, service_name": {{map[string]string{"job": "old", "http_route": "/gone"}, "NaN"}},
		"increase(http_server_request_duration_seconds_count": {
			{map[string]string{"job": "old", "http_route": "/gone"}, "0"},
			{map[string]string{"service_name": "checkout", "job": "shop/checkout", "http_route": "/pay"}, "3"},
		},
		"histogram_quantile(0.99, sum by (le, service_name": {{map[string]string{"service_name": "checkout", "job": "shop/checkout", "http_route": "/pay"}, "0.3"}},
	}
}

func TestEndpointLatenciesJoinsQuantilesAndCountsSlowestFirst(t *testing.T) {
	f := &fakeProm{answers: demoLatencyAnswers()}
	c := f.serve(t)
	res, err := c.EndpointLatencies(context.Background(), models.LatencyQuery{
		Histograms: []models.LatencyHistogram{demoHist, otelHist}, End: time.Now(), Range: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range res.Rows {
		got = append(got, fmt.Sprintf("%s %s %s %v %v", r.Metric, r.Service, r.Endpoint, r.Quantiles, r.Requests))
	}
	want := []string{
		"http_request_duration_seconds nemotron-backend /api/detect [0.12 0.6 1.4] 120",
		// service_name wins over job.
		"http_server_request_duration_seconds checkout /pay [NaN NaN 0.3] 3",
		"http_request_duration_seconds ai-detector /detect [0.07 0.09 NaN] 120",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// One query per histogram, of its 4 figures (each listed with its own query), all with a
	// range of at least a minute (10 s is too short for rate()).
	if len(f.queries) != 2 || len(res.Queries) != 8 {
		t.Fatalf("queries %d / %d", len(f.queries), len(res.Queries))
	}
	for _, q := range f.queries {
		if !strings.Contains(q, "[1m]") {
			t.Errorf("query %s does not use the minimum range", q)
		}
	}
	if len(res.Notices.Texts()) != 0 {
		t.Errorf("warnings %v", res.Notices.Texts())
	}
}

func TestEndpointLatenciesDegradesToWarningsUnlessEverythingFails(t *testing.T) {
	// The OpenTelemetry histogram's query fails: the demo's rows stay, with a warning.
	f := &fakeProm{answers: demoLatencyAnswers(), fail: "http_server_request_duration_seconds"}
	c := f.serve(t)
	both := []models.LatencyHistogram{demoHist, otelHist}
	res, err := c.EndpointLatencies(context.Background(), models.LatencyQuery{Histograms: both, End: time.Now(), Range: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 2 || res.Rows[0].Service != "nemotron-backend" || res.Rows[0].Quantiles[2] != 1.4 || res.Rows[1].Service != "ai-detector" {
		t.Errorf("rows %+v", res.Rows)
	}
	if len(res.Notices.Texts()) != 1 || !strings.Contains(res.Notices.Texts()[0], "1 of 2 latency queries failed") || !strings.Contains(res.Notices.Texts()[0], "Prometheus (http://127.0.0.1:") {
		t.Errorf("warnings %v", res.Notices.Texts())
	}

	f.fail = "request_duration_seconds"
	_, err = c.EndpointLatencies(context.Background(), models.LatencyQuery{Histograms: both, End: time.Now(), Range: time.Hour})
	if err == nil || !strings.Contains(err.Error(), "Prometheus (http://127.0.0.1:") || !strings.Contains(err.Error(), "503") {
		t.Errorf("error %v", err)
	}
}

func TestEndpointLatenciesNamesAnUnreachablePrometheus(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	c, err := New(models.Upstream{Name: models.Prometheus, URL: url}, http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.EndpointLatencies(context.Background(), models.LatencyQuery{Histograms: []models.LatencyHistogram{demoHist}, End: time.Now(), Range: time.Hour})
	if err == nil || !strings.Contains(err.Error(), "Prometheus ("+url+"): unreachable") {
		t.Errorf("error %v", err)
	}
}

func TestRequestsWithinAThresholdFromTheBuckets(t *testing.T) {
	buckets := map[float64]float64{0.1: 40, 0.25: 70, 0.5: 90, 1: 99, math.Inf(1): 100}
	for _, c := range []struct {
		threshold float64
		want      float64
		exact     bool
	}{
		{0.5, 90, true},    // a bucket boundary: exact
		{0.375, 80, false}, // halfway through (0.25, 0.5]: 70 + 20/2
		{0.05, 20, false},  // inside the first bucket, from 0
		{2, 99, false},     // in the +Inf bucket: the last finite bound's count
		{math.Inf(1), 100, true},
	} {
		got, exact := requestsWithin(buckets, c.threshold)
		if math.Abs(got-c.want) > 1e-9 || exact != c.exact {
			t.Errorf("within %v: %v (exact %v), want %v (exact %v)", c.threshold, got, exact, c.want, c.exact)
		}
	}
	// increase() may extrapolate a bucket below the one before it: counts are made monotonic.
	if got, _ := requestsWithin(map[float64]float64{0.1: 50, 0.5: 48, math.Inf(1): 60}, 0.5); got != 50 {
		t.Errorf("non-monotonic buckets: %v", got)
	}
	if got, _ := requestsWithin(nil, 0.5); !math.IsNaN(got) {
		t.Errorf("no buckets: %v", got)
	}
}

func TestEndpointLatenciesCountsTheRequestsWithinTheThreshold(t *testing.T) {
	answers := demoLatencyAnswers()
	backend := func(le, v string) sample {
		return sample{map[string]string{"service": "nemotron-backend", "endpoint": "/api/detect", "le": le}, v}
	}
	answers["increase(http_request_duration_seconds_bucket"] = []sample{
		backend("0.25", "60"), backend("0.5", "96"), backend("1", "110"), backend("+Inf", "120"),
	}
	f := &fakeProm{answers: answers}
	c := f.serve(t)
	res, err := c.EndpointLatencies(context.Background(), models.LatencyQuery{
		Histograms: []models.LatencyHistogram{demoHist}, End: time.Now(), Range: 2 * time.Minute, Threshold: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Range != 2*time.Minute || len(f.queries) != 1 || len(res.Queries) != 5 {
		t.Errorf("range %s, %d queries", res.Range, len(f.queries))
	}
	for _, r := range res.Rows {
		switch r.Service {
		case "nemotron-backend":
			if r.Good != 96 || !r.GoodExact || r.Requests != 120 {
				t.Errorf("backend: good %v exact %v of %v", r.Good, r.GoodExact, r.Requests)
			}
		default:
			if !math.IsNaN(r.Good) {
				t.Errorf("%s without buckets: good %v", r.Service, r.Good)
			}
		}
	}
	want := `sum by (le, service, endpoint) (increase(http_request_duration_seconds_bucket[2m]))`
	if !slices.Contains(res.Queries, want) {
		t.Errorf("queries %v lack %s", res.Queries, want)
	}
}
