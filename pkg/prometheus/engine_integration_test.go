//go:build integration

package prometheus

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/promwrite"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// The bed runs no serving engine yet: every engine metric comes back missing, not failed, and
// the real Prometheus accepts every query EngineFigures builds (a query it rejects fails here).
func TestRealEngineFiguresOfAModelWithoutAnEngineAreMissing(t *testing.T) {
	ac, err := api.NewClient(api.Config{Address: bed.PrometheusURL})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(bed.PrometheusURL, newQueryAPI(ac))
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
	c := newClient(bed.PrometheusURL, newQueryAPI(ac))
	end := time.Now().Add(-20 * time.Second)
	q := models.EngineQuery{Engine: models.EngineVLLM, Start: end.Add(-2 * time.Second), End: end}
	// Three gauges in one query of their raw samples: one found under its older name (a newer
	// name Prometheus lacks), one under its own, one missing.
	gauges := []engineFigureSpec{
		{name: "targets up", unit: "short", metric: "no_such_gauge", olderNames: []string{"up"}},
		{name: "scrape samples", unit: "short", metric: "scrape_samples_scraped"},
		{name: "nothing", unit: "short", metric: "no_such_gauge_either"},
	}
	answers := make([]engineAnswer, 3)
	if err := c.engineGauges(context.Background(), gauges, []int{0, 1, 2}, nil, q, answers); err != nil {
		t.Fatal(err)
	}
	up, scraped, nothing := answers[0], answers[1], answers[2]
	if up.figure == nil || up.figure.Metric != "up" || up.figure.Max != 1 || up.figure.Series < 2 || up.figure.Samples < 2*up.figure.Series ||
		len(up.missing) != 0 || up.figure.Query != "up[30s]" {
		t.Fatalf("up over the 30 s around %s: %+v (missing %v)", end, up.figure, up.missing)
	}
	if scraped.figure == nil || scraped.figure.Series != up.figure.Series || scraped.figure.Max < 1 {
		t.Errorf("samples scraped over the same 30 s: %+v (missing %v)", scraped.figure, scraped.missing)
	}
	if nothing.figure != nil || !slices.Equal(nothing.missing, []string{"no_such_gauge_either"}) {
		t.Errorf("a gauge without series: %+v", nothing)
	}
	// The counters and ratios in one query (engineRates): the demo's request histogram, whose
	// series are there whether or not traffic runs, so it is never missing (with traffic each
	// service's mean latency is a positive figure); its request counter found under an older
	// name (the newer is then not missing); a counter missing under every name.
	rates := []engineFigureSpec{
		{name: "latency per request", unit: "s", metric: "http_request_duration_seconds",
			num: "http_request_duration_seconds_sum", den: "http_request_duration_seconds_count", divisor: 1},
		{name: "requests", unit: "short", metric: "no_such_counter_total", olderNames: []string{"http_request_duration_seconds_count"}, counter: true},
		{name: "nothing", unit: "short", metric: "no_such_counter_either_total", counter: true},
	}
	rated := make([]engineAnswer, 3)
	if err := c.engineRates(context.Background(), rates, []int{0, 1, 2}, nil, q, rated); err != nil {
		t.Fatal(err)
	}
	ratio, requests, none := rated[0], rated[1], rated[2]
	if len(ratio.missing) != 0 || (ratio.figure != nil && (ratio.figure.Max <= 0 || ratio.figure.Mean > ratio.figure.Max)) {
		t.Errorf("demo latency per request: %+v, missing %v", ratio.figure, ratio.missing)
	}
	if requests.figure == nil || requests.figure.Metric != "http_request_duration_seconds_count" || requests.figure.Series < 1 ||
		requests.figure.Max < 0 || len(requests.missing) != 0 || requests.figure.Query != "increase(http_request_duration_seconds_count[1m])" {
		t.Errorf("demo requests: %+v, missing %v", requests.figure, requests.missing)
	}
	if none.figure != nil || !slices.Equal(none.missing, []string{"no_such_counter_either_total"}) {
		t.Errorf("a counter without series: %+v", none)
	}
	t.Logf("up: %+v; latency per request: %+v", *up.figure, ratio.figure)
}

// A TensorRT-LLM server's series (trtllm-serve's collector names), written into the bed's real
// Prometheus through its remote-write receiver for a model named for this run: the vLLM reading
// of an engine span finds them where vLLM's are absent, its paused requests among them.
func TestRealEngineFiguresReadTensorRTLLMsSeries(t *testing.T) {
	ctx := context.Background()
	model := fmt.Sprintf("trt-%x", time.Now().UnixNano()&0xffffff)
	from := bed.FixtureEnd.Add(time.Second).Truncate(time.Second)
	if wait := time.Until(from.Add(70 * time.Second)); wait > 0 {
		t.Logf("waiting %s for the bed to hold 70 s of new samples", wait.Round(time.Second))
		time.Sleep(wait)
	}
	end := time.Now().Truncate(time.Second)
	labels := func(metric string) map[string]string {
		return map[string]string{"__name__": metric, "model_name": model, "engine_type": "trtllm", "job": "trtllm", "simulated": "true"}
	}
	since := func(t time.Time) float64 { return t.Sub(from).Seconds() }
	series := []promwrite.Series{
		{Labels: labels("trtllm_kv_cache_utilization"), Samples: promwrite.Every(from, end, time.Second, func(time.Time) float64 { return 0.98 })},
		{Labels: labels("trtllm_num_paused_requests"), Samples: promwrite.Every(from, end, time.Second, func(time.Time) float64 { return 2 })},
		{Labels: labels("trtllm_num_requests_waiting"), Samples: promwrite.Every(from, end, time.Second, func(time.Time) float64 { return 5 })},
		// One request a second, each 20 ms per output token.
		{Labels: labels("trtllm_time_per_output_token_seconds_sum"), Samples: promwrite.Every(from, end, time.Second, func(t time.Time) float64 { return 0.02 * since(t) })},
		{Labels: labels("trtllm_time_per_output_token_seconds_count"), Samples: promwrite.Every(from, end, time.Second, since)},
	}
	if err := (promwrite.Client{URL: bed.PrometheusURL}).Write(ctx, series); err != nil {
		t.Fatal(err)
	}
	ac, err := api.NewClient(api.Config{Address: bed.PrometheusURL})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(bed.PrometheusURL, newQueryAPI(ac))
	span := end.Add(-35 * time.Second)
	q := models.EngineQuery{Engine: models.EngineVLLM, Model: model, Start: span, End: span.Add(800 * time.Millisecond)}
	want := map[string]float64{"KV cache usage": 0.98, "paused requests": 2, "requests waiting": 5, "time per output token": 0.02}
	var figs models.EngineFigures
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Second) {
		if figs, err = c.EngineFigures(ctx, q); err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, f := range figs.Figures {
			if w, ok := want[f.Name]; ok && math.Abs(f.Max-w) < 1e-6*max(1, w) && strings.HasPrefix(f.Metric, "trtllm_") {
				got++
			}
		}
		if got == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("figures %+v: want %v from TensorRT-LLM's series", figs.Figures, want)
		}
	}
	if slices.Contains(figs.Missing, "trtllm_num_paused_requests") || !slices.Contains(figs.Missing, "vllm:num_preemptions_total") {
		t.Errorf("missing %v: vLLM's counter, not TensorRT-LLM's own gauge", figs.Missing)
	}
}
