//go:build integration

package prometheus

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// The bed runs no serving engine yet: every engine metric comes back missing, not failed, and
// the real Prometheus accepts every query EngineFigures builds (a query it rejects fails here).
func TestRealEngineFiguresOfAModelWithoutAnEngineAreMissing(t *testing.T) {
	ac, err := api.NewClient(api.Config{Address: bed.PrometheusURL})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(bed.PrometheusURL, promv1.NewAPI(ac))
	end := time.Now().Add(-10 * time.Second)
	for engine, want := range map[string][]string{
		models.EngineVLLM: {"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc",
			"vllm:gpu_cache_usage_perc", "vllm:request_queue_time_seconds", "vllm:num_preemptions_total", "vllm:time_per_output_token_seconds"},
		models.EngineTriton: {"nv_inference_pending_request_count", "nv_inference_queue_duration_us"},
	} {
		t.Run(engine, func(t *testing.T) {
			figs, err := c.EngineFigures(context.Background(), models.EngineQuery{
				Engine: engine, Model: `no-such-model "quoted"`, Start: end.Add(-2 * time.Second), End: end,
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(figs.Figures) != 0 || !slices.Equal(figs.Missing, want) {
				t.Errorf("figures %+v, missing %v; want none, missing %v", figs.Figures, figs.Missing, want)
			}
		})
	}
}

// The bed's own series stand in for an engine's, read the way EngineFigures reads a gauge and
// a queue-time ratio: the real Prometheus answers the shapes the code expects, and a 2 s request
// widened to 30 s holds several scrapes of every target.
func TestRealEngineReadingsOfTheBedsOwnSeries(t *testing.T) {
	ac, err := api.NewClient(api.Config{Address: bed.PrometheusURL})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(bed.PrometheusURL, promv1.NewAPI(ac))
	end := time.Now().Add(-20 * time.Second)
	q := models.EngineQuery{Engine: models.EngineVLLM, Start: end.Add(-2 * time.Second), End: end}
	up, err := c.engineGauge(context.Background(), engineFigureSpec{name: "targets up", unit: "short", metric: "up"}, nil, q)
	if err != nil {
		t.Fatal(err)
	}
	if up.figure == nil || up.figure.Max != 1 || up.figure.Series < 2 || up.figure.Samples < 2*up.figure.Series {
		t.Fatalf("up over the 30 s around %s: %+v (missing %v)", end, up.figure, up.missing)
	}
	// The demo's request histogram: series are there whether or not traffic runs, so it is
	// never missing; with traffic each service's mean latency is a positive figure.
	ratio, err := c.engineRatio(context.Background(), engineFigureSpec{name: "latency per request", unit: "s",
		metric: "http_request_duration_seconds", num: "http_request_duration_seconds_sum", den: "http_request_duration_seconds_count", divisor: 1}, nil, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(ratio.missing) != 0 || (ratio.figure != nil && (ratio.figure.Max <= 0 || ratio.figure.Mean > ratio.figure.Max)) {
		t.Errorf("demo latency per request: %+v, missing %v", ratio.figure, ratio.missing)
	}
	t.Logf("up: %+v; latency per request: %+v", *up.figure, ratio.figure)
}
