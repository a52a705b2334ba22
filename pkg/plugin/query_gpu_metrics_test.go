package plugin

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// gpuPrometheus is a fake Prometheus holding DCGM series of a mixed fleet: the label APIs
// answer from its tables, a range query with the streams of the metrics it reads.
type gpuPrometheus struct {
	metricNames []string
	labelNames  []string
	labelValues map[string][]string
	streams     map[string][]gpuStream // by metric name

	mu      sync.Mutex
	queries []string
	matches [][]string // match[] of label-values requests
}

type gpuStream struct {
	Metric map[string]string `json:"metric"`
	Values [][2]any          `json:"values"`
}

var gpuParser = parser.NewParser(parser.Options{})

func newGPUPrometheus(t *testing.T, f *gpuPrometheus) *httptest.Server {
	mux := http.NewServeMux()
	reply := func(w http.ResponseWriter, data any) {
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
	}
	mux.HandleFunc("/api/v1/label/{name}/values", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		name := r.PathValue("name")
		if name == "__name__" {
			reply(w, f.metricNames)
			return
		}
		f.mu.Lock()
		f.matches = append(f.matches, r.Form["match[]"])
		f.mu.Unlock()
		reply(w, append([]string{}, f.labelValues[name]...))
	})
	mux.HandleFunc("/api/v1/labels", func(w http.ResponseWriter, _ *http.Request) { reply(w, f.labelNames) })
	mux.HandleFunc("/api/v1/query_range", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		q := r.Form.Get("query")
		f.mu.Lock()
		f.queries = append(f.queries, q)
		f.mu.Unlock()
		e, err := gpuParser.ParseExpr(q)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "bad_data", "error": err.Error()})
			return
		}
		if b, ok := e.(*parser.BinaryExpr); ok && b.Op == parser.LAND {
			e = b.LHS // leave out the series-limit part, which names other metrics too
		}
		result := []gpuStream{}
		seen := map[string]bool{}
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			if vs, ok := n.(*parser.VectorSelector); ok && !seen[vs.Name] {
				seen[vs.Name] = true
				result = append(result, f.streams[vs.Name]...)
			}
			return nil
		})
		reply(w, map[string]any{"resultType": "matrix", "result": result})
	})
	return serve(t, mux, nil)
}

var gpuT0 = time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)

func gpuPoints(values ...string) [][2]any {
	out := make([][2]any, len(values))
	for i, v := range values {
		out[i] = [2]any{float64(gpuT0.Add(time.Duration(i) * time.Minute).Unix()), v}
	}
	return out
}

func mixedFleet() *gpuPrometheus {
	return &gpuPrometheus{
		metricNames: []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"},
		labelNames:  []string{"Hostname", "hostname", "gpu", "UUID", "modelName", "pod", "pod_name", "instance", "job"},
		labelValues: map[string][]string{"Hostname": {"gpu-node-1"}, "hostname": {"fixture-node-b", "gpu-node-1"}},
		streams: map[string][]gpuStream{
			"DCGM_FI_DEV_GPU_UTIL": {
				{Metric: map[string]string{"hostname": "fixture-node-b", "gpu": "1", "UUID": "GPU-b1", "modelName": "Tesla T4", "pod_name": "ai-enrichment-0"}, Values: gpuPoints("40", "41")},
				{Metric: map[string]string{"Hostname": "gpu-node-1", "gpu": "0", "UUID": "GPU-a0", "modelName": "NVIDIA A100-SXM4-80GB"}, Values: gpuPoints("95", "96")},
			},
		},
	}
}

func gpuQuery(refID, model string) backend.DataQuery {
	return backend.DataQuery{RefID: refID, QueryType: models.QueryTypeGPUMetrics, JSON: json.RawMessage(model), Interval: time.Minute,
		TimeRange: backend.TimeRange{From: gpuT0, To: gpuT0.Add(time.Minute)}}
}

func TestGPUMetricsQueryAnswersOneFramePerSeriesWithRoleLabels(t *testing.T) {
	fake := mixedFleet()
	ds := newTestDatasource(t, map[string]any{"prometheusUrl": newGPUPrometheus(t, fake).URL}, nil)
	r := run(t, ds, gpuQuery("A", `{"queryType":"gpuMetrics","metrics":["gpu_utilization","sm_active"]}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if len(r.Frames) != 3 {
		t.Fatalf("%d frames, want 2 series of gpu_utilization and 1 empty sm_active frame", len(r.Frames))
	}
	first := r.Frames[0]
	if first.Name != "gpu_utilization" || first.Fields[1].Config.Unit != "percent" ||
		first.Fields[1].Config.DisplayNameFromDS != "GPU utilisation fixture-node-b/1 (ai-enrichment-0)" ||
		first.Fields[1].Labels["host"] != "fixture-node-b" || first.Fields[1].Labels["pod"] != "ai-enrichment-0" || first.Fields[1].Labels["hostname"] != "" {
		t.Errorf("first frame %q: %+v labels %v", first.Name, first.Fields[1].Config, first.Fields[1].Labels)
	}
	if v := r.Frames[1].Fields[1].At(1).(float64); v != 96 || r.Frames[1].Fields[1].Labels["host"] != "gpu-node-1" {
		t.Errorf("second frame %v value %v", r.Frames[1].Fields[1].Labels, v)
	}
	if !strings.Contains(first.Meta.ExecutedQueryString, "DCGM_FI_DEV_GPU_UTIL") {
		t.Errorf("executed query %q", first.Meta.ExecutedQueryString)
	}
	missing := r.Frames[2]
	if missing.Name != "sm_active" || missing.Rows() != 0 || len(missing.Meta.Notices) != 1 ||
		!strings.Contains(missing.Meta.Notices[0].Text, "DCGM_FI_PROF_SM_ACTIVE or DCGM_FI_PROF_SM_UTIL_RATIO") {
		t.Errorf("sm_active frame %q rows %d notices %v", missing.Name, missing.Rows(), missing.Meta)
	}
	if len(fake.queries) != 1 {
		t.Errorf("%d range queries: a metric Prometheus does not hold must not be queried", len(fake.queries))
	}
}

func TestGPUMetricsQueryComputesFramebufferPercent(t *testing.T) {
	fake := mixedFleet()
	fake.streams = map[string][]gpuStream{"DCGM_FI_DEV_FB_USED": {{Metric: map[string]string{"Hostname": "gpu-node-1"}, Values: gpuPoints("62.5")}}}
	ds := newTestDatasource(t, map[string]any{"prometheusUrl": newGPUPrometheus(t, fake).URL}, nil)
	r := run(t, ds, gpuQuery("A", `{"queryType":"gpuMetrics","metrics":["fb_used_percent"],"aggregation":"host","hosts":["gpu-node-1"]}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	f := r.Frames[0]
	if f.Fields[1].Config.Unit != "percent" || f.Fields[1].Config.DisplayNameFromDS != "Framebuffer used gpu-node-1" || !maps1(f.Fields[1].Labels, "host", "gpu-node-1") {
		t.Errorf("frame %+v labels %v", f.Fields[1].Config, f.Fields[1].Labels)
	}
	q := fake.queries[0]
	if !strings.HasPrefix(q, "avg by (Hostname, hostname) (max by (Hostname, hostname, gpu, UUID, modelName) ((") || !strings.Contains(q, " / (") || !strings.Contains(q, "DCGM_FI_DEV_FB_FREE{hostname=\"gpu-node-1\"}") {
		t.Errorf("query %s", q)
	}
}

func maps1(l data.Labels, k, v string) bool { return len(l) == 1 && l[k] == v }

func TestGPUMetricsQueryNeedsPrometheusAndValidSettings(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{}, nil)
	wantError(t, run(t, ds, gpuQuery("A", `{}`)).Responses["A"], backend.ErrorSourceDownstream,
		"Prometheus is not configured: set its URL (jsonData.prometheusUrl)")

	ds = newTestDatasource(t, map[string]any{"prometheusUrl": "http://127.0.0.1:1", "gpuMaxSeries": -1}, nil)
	wantError(t, run(t, ds, gpuQuery("A", `{}`)).Responses["A"], backend.ErrorSourceDownstream,
		"invalid GPU settings: jsonData.gpuMaxSeries must be a whole number between 1 and 10000, got -1")

	wantError(t, run(t, ds, gpuQuery("A", `{"metrics":["gpu_util"]}`)).Responses["A"], backend.ErrorSourceDownstream,
		`invalid gpuMetrics query: field "metrics" item 1: unknown GPU metric "gpu_util"; valid metrics are gpu_utilization,`)
}

func TestGPUMetricsQueryNamesAFailingPrometheus(t *testing.T) {
	url := closedURL(t)
	ds := newTestDatasource(t, map[string]any{"prometheusUrl": url}, nil)
	wantError(t, run(t, ds, gpuQuery("A", `{"metrics":["power","temperature"]}`)).Responses["A"], backend.ErrorSourceDownstream,
		"Prometheus ("+url+"): unreachable")
}

func TestGPUMetricsIsARegisteredQueryType(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{}, nil)
	r := run(t, ds, backend.DataQuery{RefID: "A", QueryType: "gpuMetricz", JSON: json.RawMessage(`{}`)}).Responses["A"]
	if r.Error == nil {
		t.Fatal("an unknown query type answered")
	}
	_, valid, _ := strings.Cut(r.Error.Error(), "valid query types are ")
	if !slices.Contains(strings.Split(valid, ", "), models.QueryTypeGPUMetrics) {
		t.Errorf("valid query types %q lack gpuMetrics", valid)
	}
}
