package plugin

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
)

// promFake is a Prometheus HTTP API for the glue's unit tests. It serves DCGM series of the GPUs
// it is given: label APIs list their metrics and labels, a range query answers every GPU whose
// labels match the selectors of the query (before a top-level "and", where the GPU client puts
// its series limit) with the GPU's reading of each metric at each step. Instant queries answer
// from instant, by fragments of the expression (the latency queries). It serves the tests that
// check the plugin with its real clients (boundaries, injection, benchmarks); the other unit
// tests use the in-memory stores of fakes_memory_test.go. pkg/prometheus tests the queries
// themselves; the integration tests use the real Prometheus.
type promFake struct {
	GPUs    []fakeGPU
	Instant map[string][]fakeSample // expression fragment → vector
}

type fakeGPU struct {
	Labels map[string]string // Hostname, gpu, UUID, modelName; GPU_I_ID, GPU_I_PROFILE on MIG instances
	// Value is the GPU's reading of a DCGM metric at t; ok false: the GPU does not export it.
	Value func(metric string, t time.Time) (v float64, ok bool)
}

type fakeSample struct {
	Labels map[string]string
	Value  string
}

// dcgmMetrics are the series promFake's GPUs export.
var dcgmMetrics = []string{
	"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
	"DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES",
	"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
	"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE", // in dcgm-exporter's default counters
}

// steadyGPU is a GPU on host with fixed readings: util % and SM activity drive the class.
func steadyGPU(host, index string, util, smActive, dramActive float64) fakeGPU {
	values := map[string]float64{
		"DCGM_FI_DEV_GPU_UTIL": util, "DCGM_FI_DEV_MEM_COPY_UTIL": dramActive * 100, "DCGM_FI_PROF_SM_ACTIVE": smActive,
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE": smActive, "DCGM_FI_PROF_DRAM_ACTIVE": dramActive, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": smActive / 2,
		"DCGM_FI_PROF_PCIE_TX_BYTES": 1e9, "DCGM_FI_PROF_PCIE_RX_BYTES": 2e9, "DCGM_FI_DEV_GPU_TEMP": 60,
		"DCGM_FI_DEV_SM_CLOCK": 1410, "DCGM_FI_DEV_POWER_USAGE": 250, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS": 0,
		"DCGM_FI_DEV_FB_USED": 20480, "DCGM_FI_DEV_FB_FREE": 61440, // MiB
	}
	return fakeGPU{
		Labels: map[string]string{"Hostname": host, "gpu": index, "UUID": "GPU-" + host + "-" + index, "modelName": "NVIDIA A100-SXM4-80GB"},
		Value: func(metric string, _ time.Time) (float64, bool) {
			v, ok := values[metric]
			return v, ok
		},
	}
}

// promResult is a query's data in the order Prometheus writes it, its type before its result
// (a Go map would put the result first, which a reader must then hold until it knows the type).
type promResult struct {
	ResultType string `json:"resultType"`
	Result     any    `json:"result"`
}

func (f *promFake) serveHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	reply := func(data any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
	}
	switch path := r.URL.Path; {
	case path == "/api/v1/status/buildinfo":
		reply(map[string]string{"version": "2.53.0"})
	case path == "/api/v1/label/__name__/values":
		reply(f.metricNames())
	case path == "/api/v1/labels":
		reply(f.labelNames())
	case strings.HasPrefix(path, "/api/v1/label/") && strings.HasSuffix(path, "/values"):
		name := strings.TrimSuffix(strings.TrimPrefix(path, "/api/v1/label/"), "/values")
		var values []string
		for _, g := range f.GPUs {
			if v := g.Labels[name]; v != "" && !slices.Contains(values, v) {
				values = append(values, v)
			}
		}
		reply(append([]string{}, values...))
	case path == "/api/v1/series":
		reply(f.seriesResult(r.Form["match[]"]))
	case path == "/api/v1/query_range":
		reply(promResult{"matrix", f.rangeResult(r.Form.Get("query"), r.Form.Get("start"), r.Form.Get("end"), r.Form.Get("step"))})
	case path == "/api/v1/query":
		result := []map[string]any{}
		q := r.Form.Get("query")
		for frag, samples := range f.Instant {
			if strings.Contains(q, frag) {
				for _, s := range samples {
					result = append(result, map[string]any{"metric": s.Labels, "value": []any{float64(time.Now().Unix()), s.Value}})
				}
			}
		}
		reply(promResult{"vector", result})
	default:
		http.NotFound(w, r)
	}
}

// labelNames are the label names of the GPUs' series, as Prometheus lists them (sorted).
func (f *promFake) labelNames() []string {
	names := []string{"__name__"}
	for _, g := range f.GPUs {
		for k := range g.Labels {
			if !slices.Contains(names, k) {
				names = append(names, k)
			}
		}
	}
	slices.Sort(names)
	return names
}

func (f *promFake) metricNames() []string {
	if len(f.GPUs) == 0 {
		return []string{}
	}
	return dcgmMetrics
}

// rangeResult answers, for each selector of the query, every GPU series it selects: one per
// metric the selector's name matchers accept that the GPU exports. Series keep their metric name
// (__name__) when the query is plain selectors joined by "or", as Prometheus keeps it there and
// drops it from functions and aggregations.
func (f *promFake) rangeResult(query, startS, endS, stepS string) []map[string]any {
	out := []map[string]any{}
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(query)
	if err != nil {
		return out
	}
	if b, ok := expr.(*parser.BinaryExpr); ok && b.Op == parser.LAND {
		expr = b.LHS
	}
	start, end, step := promTime(startS), promTime(endS), promStep(stepS)
	if step <= 0 || end.Before(start) {
		return out
	}
	keepName := plainSelectors(expr)
	seen := map[string]bool{}
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		for _, g := range f.GPUs {
			for _, metric := range dcgmMetrics {
				if !selects(vs, metric, g.Labels) {
					continue
				}
				// Every label: MIG instances of one GPU share its UUID.
				key := metric + "|" + fmt.Sprint(g.Labels)
				if seen[key] {
					continue
				}
				var values [][2]any
				for t := start; !t.After(end); t = t.Add(step) {
					if v, ok := g.Value(metric, t); ok {
						values = append(values, [2]any{float64(t.UnixMilli()) / 1000, strconv.FormatFloat(v, 'f', -1, 64)})
					}
				}
				if len(values) == 0 {
					continue
				}
				seen[key] = true
				labels := maps.Clone(g.Labels)
				if keepName {
					labels["__name__"] = metric
				}
				out = append(out, map[string]any{"metric": labels, "values": values})
			}
		}
		return nil
	})
	return out
}

// seriesResult is the series API's answer: the label sets of the GPU series any match[]
// selector selects (every GPU exports its metrics over the whole range).
func (f *promFake) seriesResult(matches []string) []map[string]string {
	out := []map[string]string{}
	for _, m := range matches {
		vs, err := parser.NewParser(parser.Options{}).ParseMetricSelector(m)
		if err != nil {
			continue
		}
		sel := &parser.VectorSelector{LabelMatchers: vs}
		for _, g := range f.GPUs {
			for _, metric := range dcgmMetrics {
				if _, exported := g.Value(metric, time.Now()); exported && selects(sel, metric, g.Labels) {
					labels := maps.Clone(g.Labels)
					labels["__name__"] = metric
					out = append(out, labels)
				}
			}
		}
	}
	return out
}

// plainSelectors reports whether e is selectors joined by "or" (no function, no aggregation).
func plainSelectors(e parser.Expr) bool {
	switch e := e.(type) {
	case *parser.VectorSelector:
		return true
	case *parser.ParenExpr:
		return plainSelectors(e.Expr)
	case *parser.BinaryExpr:
		return e.Op == parser.LOR && plainSelectors(e.LHS) && plainSelectors(e.RHS)
	}
	return false
}

// selects reports whether the selector's matchers (its name included) accept the GPU's series of
// metric.
func selects(vs *parser.VectorSelector, metric string, labels map[string]string) bool {
	if vs.Name != "" && vs.Name != metric {
		return false
	}
	for _, m := range vs.LabelMatchers {
		v := labels[m.Name]
		if m.Name == "__name__" {
			v = metric
		}
		if !m.Matches(v) {
			return false
		}
	}
	return true
}

func promTime(s string) time.Time {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t, _ := time.Parse(time.RFC3339Nano, s)
		return t
	}
	return time.UnixMilli(int64(f * 1000))
}

func promStep(s string) time.Duration {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(f * float64(time.Second))
	}
	d, _ := time.ParseDuration(s)
	return d
}

// demoLatencies are the instant answers of the demo's histogram: the backend's /api/detect with
// a slow tail, the detector's /detect fast.
func demoLatencies() map[string][]fakeSample {
	backend := map[string]string{"service": "nemotron-backend", "endpoint": "/api/detect"}
	detector := map[string]string{"service": "ai-detector", "endpoint": "/detect"}
	return map[string][]fakeSample{
		"histogram_quantile(0.5, sum by (le, service, endpoint)":  {{backend, "0.12"}, {detector, "0.07"}},
		"histogram_quantile(0.95, sum by (le, service, endpoint)": {{backend, "0.6"}, {detector, "0.09"}},
		"histogram_quantile(0.99, sum by (le, service, endpoint)": {{backend, "1.4"}, {detector, "0.1"}},
		"increase(http_request_duration_seconds_count":            {{backend, "120"}, {detector, "120"}},
	}
}
