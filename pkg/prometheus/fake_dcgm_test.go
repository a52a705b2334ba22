package prometheus

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/prometheus/promql/parser"
)

// fakeDCGM is a Prometheus HTTP API serving DCGM series for the GPU client's unit tests: the
// label APIs answer from its tables, range queries from rangeAnswer. It records what it was
// asked. The integration tests run the same code against the test bed's real Prometheus.
type fakeDCGM struct {
	metricNames []string            // label values of __name__
	labelNames  []string            // label names
	labelValues map[string][]string // label values of other labels
	// rangeAnswer answers a range query, given the metric names the query (before its
	// series-limit part) reads; nil answers an empty matrix.
	rangeAnswer func(metrics []string, query string) []fakeStream
	status      int // non-zero: every request fails with it
	warnings    []string

	mu       sync.Mutex
	requests []fakeRequest
}

type fakeRequest struct {
	Path    string
	Matches []string // match[]
	Query   string   // query
	Step    string
}

type fakeStream struct {
	Metric map[string]string
	Values [][2]any // [unix seconds, "value"]
}

func newFakeDCGM(t *testing.T, f *fakeDCGM) (*Client, *httptest.Server) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	ac, err := api.NewClient(api.Config{Address: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return newClient(srv.URL, promv1.NewAPI(ac)), srv
}

func (f *fakeDCGM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	req := fakeRequest{Path: r.URL.Path, Matches: r.Form["match[]"], Query: r.Form.Get("query"), Step: r.Form.Get("step")}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	if f.status != 0 {
		w.WriteHeader(f.status)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"unavailable","error":"overloaded"}`))
		return
	}
	reply := func(data any) {
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data, "warnings": f.warnings})
	}
	switch {
	case r.URL.Path == "/api/v1/label/__name__/values":
		reply(nonNilStrings(f.metricNames))
	case r.URL.Path == "/api/v1/labels":
		reply(nonNilStrings(f.labelNames))
	case strings.HasPrefix(r.URL.Path, "/api/v1/label/") && strings.HasSuffix(r.URL.Path, "/values"):
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/label/"), "/values")
		reply(nonNilStrings(f.labelValues[name]))
	case r.URL.Path == "/api/v1/query_range":
		var streams []fakeStream
		if f.rangeAnswer != nil {
			streams = f.rangeAnswer(queriedMetrics(req.Query), req.Query)
		}
		result := []map[string]any{}
		for _, s := range streams {
			result = append(result, map[string]any{"metric": s.Metric, "values": s.Values})
		}
		reply(map[string]any{"resultType": "matrix", "result": result})
	default:
		http.NotFound(w, r)
	}
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// queriedMetrics lists the metric names a GPU query reads, leaving out its series-limit part
// (the right-hand side of the top-level "and"), which names every metric of the query family.
func queriedMetrics(q string) []string {
	e, err := gpuTestParser.ParseExpr(q)
	if err != nil {
		return nil
	}
	if b, ok := e.(*parser.BinaryExpr); ok && b.Op == parser.LAND {
		e = b.LHS
	}
	var out []string
	for _, vs := range selectorsOf(e) {
		if !slices.Contains(out, vs.Name) {
			out = append(out, vs.Name)
		}
	}
	return out
}

func (f *fakeDCGM) requestsTo(path string) []fakeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fakeRequest
	for _, r := range f.requests {
		if r.Path == path {
			out = append(out, r)
		}
	}
	return out
}
