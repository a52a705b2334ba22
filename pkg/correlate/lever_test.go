package correlate

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// leverGPUs answers every GPU asked with one compute reading (SM active) per minute.
type leverGPUs struct {
	smActive float64
	err      error
	asked    models.GPUFilter
}

func (g *leverGPUs) GPUFigures(_ context.Context, f models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, notices.List, error) {
	g.asked = f
	if g.err != nil {
		return nil, nil, g.err
	}
	var out []classify.GPUSeries
	for _, id := range []string{"0", "1"} {
		s := classify.GPUSeries{GPU: classify.GPU{Host: f.Hosts[0], Index: id}}
		for t := start; t.Before(end); t = t.Add(time.Minute) {
			fig := classify.Missing()
			fig.SMActive = g.smActive
			s.Samples = append(s.Samples, classify.Sample{Time: t, Figures: fig})
		}
		out = append(out, s)
	}
	return out, nil, nil
}

type leverMemory struct{ usedPct float64 }

func (m leverMemory) GPUMetric(context.Context, string, models.GPUFilter, string, time.Time, time.Time, time.Duration) (*models.GPUMetricResult, error) {
	return &models.GPUMetricResult{Series: []models.GPUMetricSeries{{Values: []float64{m.usedPct / 2, m.usedPct, math.NaN()}}}}, nil
}

type leverLatency struct {
	p99 time.Duration
	err error
}

func (l leverLatency) ServiceP99(_ context.Context, service string, _, _ time.Time) (LatencyFigure, error) {
	return LatencyFigure{Endpoint: "/answer", P99: l.p99, Requests: 1200, Source: "http_request_duration_seconds"}, l.err
}

// leverRequestOf is a request of service "api" on gpu-node-1 that met a vLLM engine.
func leverRequestOf(t *testing.T) LeverRequest {
	tr := engineTrace()
	for i := range tr.Spans {
		tr.Spans[i].Resource = map[string]string{"host.name": "gpu-node-1"}
	}
	engines, _ := engineSpans(tr)
	r, ok := leverRequest(tr, models.NewSpanTree(tr.Spans), models.DefaultJoinSettings().SpanMatch, engines)
	if !ok {
		t.Fatal("no lever request")
	}
	return r
}

func engineWaiting(mean, kvMax float64) *fakeEngines {
	f := waitingFigures()
	f.Figures[0].Mean = mean
	f.Figures[1].Max = kvMax
	return &fakeEngines{byModel: map[string]models.EngineFigures{"llama-3": f, "densenet_onnx": f}}
}

func TestLeverFollowsRunbook002(t *testing.T) {
	start := time.Date(2026, 11, 24, 1, 0, 0, 0, time.UTC)
	end := start.Add(time.Hour)
	slo := 500 * time.Millisecond
	for _, c := range []struct {
		name    string
		src     LeverSources
		want    string
		answers []string
	}{
		{"idle, queue low", LeverSources{GPUs: Ready[GPUFigures](&leverGPUs{smActive: 0.12}), Engines: Ready[Engines](engineWaiting(0.2, 0.3)), Latency: Ready[ServiceLatency](leverLatency{p99: time.Second})},
			"host-side work", []string{"GPU idle: compute 12.0% (DCGM_FI_PROF_SM_ACTIVE) on average over gpu-node-1 GPU 0, GPU 1, under idleBelowPct 50", "queue low: requests waiting 0.2 on average (vllm:num_requests_waiting)", "p99 1s over the 500ms threshold (http_request_duration_seconds, /answer, 1200 requests)"}},
		{"idle, queue high", LeverSources{GPUs: Ready[GPUFigures](&leverGPUs{smActive: 0.12}), Engines: Ready[Engines](engineWaiting(2.5, 0.3))},
			"batching and queue delay", []string{"queue high: requests waiting 2.5 on average (vllm:num_requests_waiting)"}},
		{"busy, p99 within", LeverSources{GPUs: Ready[GPUFigures](&leverGPUs{smActive: 0.85}), Engines: Ready[Engines](engineWaiting(0.2, 0.3)), Latency: Ready[ServiceLatency](leverLatency{p99: 400 * time.Millisecond})},
			"headroom", []string{"GPU busy: compute 85.0%", "p99 400ms within the 500ms threshold"}},
		{"busy, p99 over", LeverSources{GPUs: Ready[GPUFigures](&leverGPUs{smActive: 0.85}), Latency: Ready[ServiceLatency](leverLatency{p99: 2 * time.Second})},
			"isolating workload classes", []string{"p99 2s over the 500ms threshold"}},
		{"memory high", LeverSources{GPUs: Ready[GPUFigures](&leverGPUs{smActive: 0.85}), Memory: Ready[GPUMetrics](leverMemory{usedPct: 96})},
			"the memory envelope", []string{"GPU memory up to 96% used"}},
		{"KV cache full", LeverSources{GPUs: Ready[GPUFigures](&leverGPUs{smActive: 0.12}), Engines: Ready[Engines](engineWaiting(0.2, 0.95))},
			"the memory envelope", []string{"KV cache up to 95% (vllm:kv_cache_usage_perc)"}},
		{"busy, p99 unknown", LeverSources{GPUs: Ready[GPUFigures](&leverGPUs{smActive: 0.85}), Latency: Ready[ServiceLatency](leverLatency{err: errors.New("no histogram")})},
			"unknown", nil},
		{"GPU unknown", LeverSources{GPUs: Ready[GPUFigures](&leverGPUs{err: errors.New("Prometheus (http://p): 503")}), Latency: Ready[ServiceLatency](leverLatency{p99: time.Second})},
			"unknown", nil},
	} {
		l := LeverOf(context.Background(), c.src, leverRequestOf(t), classify.DefaultThresholds(), slo, start, end)
		if l == nil || l.Name != c.want || l.Service != "api" {
			t.Errorf("%s: lever %+v, want %q", c.name, l, c.want)
			continue
		}
		got := strings.Join(l.Answers, "\n")
		for _, a := range c.answers {
			if !strings.Contains(got, a) {
				t.Errorf("%s: answers lack %q:\n%s", c.name, a, got)
			}
		}
		if c.want == "unknown" && len(l.Unknown) == 0 {
			t.Errorf("%s: no unknown question listed", c.name)
		}
	}
	// The GPUs asked are the request's hosts', over the panel's range, for the compute figure
	// only (the one the lever reads).
	g := &leverGPUs{smActive: 0.5}
	LeverOf(context.Background(), LeverSources{GPUs: Ready[GPUFigures](g)}, leverRequestOf(t), classify.DefaultThresholds(), slo, start, end)
	if strings.Join(g.asked.Hosts, ",") != "gpu-node-1" || len(g.asked.GPUs) != 0 || !slices.Equal(g.asked.Figures, classify.ComputeFigures) {
		t.Errorf("asked %+v", g.asked)
	}
	// Without a range there is no lever.
	if l := LeverOf(context.Background(), LeverSources{GPUs: Ready[GPUFigures](g)}, leverRequestOf(t), classify.DefaultThresholds(), slo, end, start); l != nil {
		t.Errorf("lever without a range: %+v", l)
	}
}
