package prometheus

import (
	"cmp"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// fakeDCGM is a Prometheus HTTP API serving DCGM series for the GPU client's unit tests: the
// label APIs answer from its tables, the series API and range queries of plain selectors from
// its stored series, other range queries from rangeAnswer. It records what it was asked. The
// integration tests run the same code against the test bed's real Prometheus.
type fakeDCGM struct {
	metricNames []string            // label values of __name__ (unset: those of stored)
	labelNames  []string            // label names (unset: those of stored)
	labelValues map[string][]string // label values of other labels
	// stored are the series Prometheus holds, each with its __name__ label: /api/v1/series
	// lists those with points in its range, and a range query made of selectors only (joined
	// with "or") answers the series they match, names kept, as Prometheus does.
	stored []fakeStream
	// rangeAnswer answers any other range query, given the metric names the query (before its
	// series-limit part) reads; nil answers an empty matrix.
	rangeAnswer func(metrics []string, query string) []fakeStream
	// instantAnswer answers instant queries, each stream's last value as the sample; nil
	// answers an empty vector.
	instantAnswer func(query string) []fakeStream
	// metadata answers /api/v1/metadata: per metric name, one entry per distinct HELP text, as
	// Prometheus keeps what its targets' exposition says (# HELP, # TYPE, # UNIT).
	metadata map[string][]promv1.Metadata
	status   int    // non-zero: every request fails with it
	failPath string // with status: only requests to this path fail
	// failQuery, with status: only queries it picks fail.
	failQuery func(query string) bool
	// failType, failMsg: the error envelope's errorType and error (default unavailable,
	// overloaded).
	failType, failMsg string
	warnings          []string

	mu       sync.Mutex
	requests []fakeRequest
}

type fakeRequest struct {
	Path    string
	Matches []string // match[]
	Query   string   // query
	Step    string
	Limit   string
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
	return newClient(srv.URL, newQueryAPI(ac)), srv
}

func (f *fakeDCGM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	req := fakeRequest{Path: r.URL.Path, Matches: r.Form["match[]"], Query: r.Form.Get("query"), Step: r.Form.Get("step"), Limit: r.Form.Get("limit")}
	f.mu.Lock()
	f.requests = append(f.requests, req)
	f.mu.Unlock()
	if f.status != 0 && (f.failPath == "" || f.failPath == r.URL.Path) && (f.failQuery == nil || f.failQuery(req.Query)) {
		w.WriteHeader(f.status)
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": cmp.Or(f.failType, "unavailable"), "error": cmp.Or(f.failMsg, "overloaded")})
		return
	}
	reply := func(data any) {
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data, "warnings": f.warnings})
	}
	switch {
	case r.URL.Path == "/api/v1/label/__name__/values":
		reply(nonNilStrings(orUnset(f.metricNames, f.storedLabelValues(model.MetricNameLabel))))
	case r.URL.Path == "/api/v1/labels":
		reply(nonNilStrings(orUnset(f.labelNames, f.storedLabelNames())))
	case r.URL.Path == "/api/v1/series":
		reply(f.series(r.Form["match[]"], r.Form.Get("start"), r.Form.Get("end"), r.Form.Get("limit")))
	case strings.HasPrefix(r.URL.Path, "/api/v1/label/") && strings.HasSuffix(r.URL.Path, "/values"):
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/api/v1/label/"), "/values")
		reply(nonNilStrings(f.labelValues[name]))
	case r.URL.Path == "/api/v1/metadata":
		out := map[string][]promv1.Metadata{}
		for name, md := range f.metadata {
			if m := r.Form.Get("metric"); m == "" || m == name {
				out[name] = md
			}
		}
		reply(out)
	case r.URL.Path == "/api/v1/query_range":
		streams, plain := f.selected(req.Query)
		if !plain && f.rangeAnswer != nil {
			streams = answerUnion(req.Query, func(q string) []fakeStream { return f.rangeAnswer(queriedMetrics(q), q) })
		}
		result := []map[string]any{}
		for _, s := range streams {
			result = append(result, map[string]any{"metric": s.Metric, "values": s.Values})
		}
		reply(map[string]any{"resultType": "matrix", "result": result})
	case r.URL.Path == "/api/v1/query":
		result := []map[string]any{}
		if f.instantAnswer != nil {
			for _, s := range answerUnion(req.Query, f.instantAnswer) {
				result = append(result, map[string]any{"metric": s.Metric, "value": s.Values[len(s.Values)-1]})
			}
		}
		reply(map[string]any{"resultType": "vector", "result": result})
	default:
		http.NotFound(w, r)
	}
}

// answerUnion answers a labelled union (labelledUnion) as Prometheus does: each part by answer,
// its series labelled with the part; any other query by answer alone.
func answerUnion(q string, answer func(string) []fakeStream) []fakeStream {
	e, err := gpuTestParser.ParseExpr(q)
	if err != nil {
		return answer(q)
	}
	var parts []*parser.Call
	var collect func(e parser.Expr) bool
	collect = func(e parser.Expr) bool {
		switch n := e.(type) {
		case *parser.ParenExpr:
			return collect(n.Expr)
		case *parser.BinaryExpr:
			return n.Op == parser.LOR && collect(n.LHS) && collect(n.RHS)
		case *parser.Call:
			if n.Func.Name == "label_replace" && n.Args[1].(*parser.StringLiteral).Val == partLabel {
				parts = append(parts, n)
				return true
			}
		}
		return false
	}
	if !collect(e) {
		return answer(q)
	}
	var out []fakeStream
	for _, p := range parts {
		for _, s := range answer(p.Args[0].String()) {
			m := maps.Clone(s.Metric)
			if m == nil {
				m = map[string]string{}
			}
			m[partLabel] = p.Args[2].(*parser.StringLiteral).Val
			out = append(out, fakeStream{Metric: m, Values: s.Values})
		}
	}
	return out
}

// storedLabelValues are the values of a label among the stored series, sorted.
func (f *fakeDCGM) storedLabelValues(name string) []string {
	var out []string
	for _, s := range f.stored {
		if v, ok := s.Metric[name]; ok && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// storedLabelNames are the label names of the stored series, sorted.
func (f *fakeDCGM) storedLabelNames() []string {
	var out []string
	for _, s := range f.stored {
		for k := range s.Metric {
			if !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	slices.Sort(out)
	return out
}

// series answers /api/v1/series: the label sets of the stored series matching any of the
// selectors with a point from start to end, at most limit of them when limit is set.
func (f *fakeDCGM) series(matches []string, start, end, limit string) []map[string]string {
	from, _ := strconv.ParseFloat(start, 64)
	to, _ := strconv.ParseFloat(end, 64)
	most, _ := strconv.Atoi(limit)
	out := []map[string]string{}
	for _, s := range f.stored {
		inRange := slices.ContainsFunc(s.Values, func(p [2]any) bool { return p[0].(float64) >= from && p[0].(float64) <= to })
		matched := slices.ContainsFunc(matches, func(m string) bool {
			ms, err := gpuTestParser.ParseMetricSelector(m)
			return err == nil && matchesAll(ms, s.Metric)
		})
		if inRange && matched && (most == 0 || len(out) < most) {
			out = append(out, s.Metric)
		}
	}
	return out
}

// selected answers a range query made of selectors joined with "or" from the stored series;
// plain is false for any other query.
func (f *fakeDCGM) selected(q string) (out []fakeStream, plain bool) {
	e, err := gpuTestParser.ParseExpr(q)
	if err != nil {
		return nil, false
	}
	var sels []*parser.VectorSelector
	var collect func(e parser.Expr) bool
	collect = func(e parser.Expr) bool {
		switch n := e.(type) {
		case *parser.VectorSelector:
			sels = append(sels, n)
			return true
		case *parser.ParenExpr:
			return collect(n.Expr)
		case *parser.BinaryExpr:
			return n.Op == parser.LOR && collect(n.LHS) && collect(n.RHS)
		}
		return false
	}
	if !collect(e) {
		return nil, false
	}
	for _, s := range f.stored {
		if slices.ContainsFunc(sels, func(vs *parser.VectorSelector) bool { return matchesAll(vs.LabelMatchers, s.Metric) }) {
			out = append(out, s)
		}
	}
	return out, true
}

func matchesAll(ms []*labels.Matcher, metric map[string]string) bool {
	for _, m := range ms {
		if !m.Matches(metric[m.Name]) {
			return false
		}
	}
	return true
}

func orUnset(set, otherwise []string) []string {
	if set != nil {
		return set
	}
	return otherwise
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
