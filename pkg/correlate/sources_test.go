package correlate

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// gpuStoreOnly is a whole GPU store in memory: figures, and nothing for the rest.
type gpuStoreOnly struct{ fakeGPUs }

func (*gpuStoreOnly) GPUMetric(context.Context, string, models.GPUFilter, string, time.Time, time.Time, time.Duration) (*models.GPUMetricResult, error) {
	return nil, errors.New("no metric")
}

func (*gpuStoreOnly) GPULabelValues(context.Context, string, models.GPUFilter, time.Time, time.Time) ([]string, error) {
	return nil, errors.New("no labels")
}

var _ GPUStore = (*gpuStoreOnly)(nil)

func TestASourceIsItsClientOrWhyNot(t *testing.T) {
	gpus := &gpuStoreOnly{}
	ready := Ready[GPUStore](gpus)
	if c, err := ready.Get(); err != nil || c != gpus || !ready.Ready() {
		t.Errorf("ready: %v, %v", c, err)
	}
	why := errors.New("Prometheus is not configured: set its URL")
	if c, err := Unavailable[GPUStore](why).Get(); c != nil || !errors.Is(err, why) {
		t.Errorf("unavailable: %v, %v", c, err)
	}
	// A source nobody set is a bug, said as such, never a nil client.
	var unset Source[GPUStore]
	if _, err := unset.Get(); !errors.Is(err, ErrNotSet) || unset.Ready() {
		t.Errorf("unset: %v", err)
	}
	// Narrowing keeps the client, or the reason.
	if c, err := Narrow[GPUFigures](ready).Get(); err != nil || c.(*gpuStoreOnly) != gpus {
		t.Errorf("narrowed: %v, %v", c, err)
	}
	if _, err := Narrow[GPUFigures](Unavailable[GPUStore](why)).Get(); !errors.Is(err, why) {
		t.Errorf("narrowed unavailable: %v", err)
	}
}

func TestTheTraceJoinReadsEachStoreOfTheSourcesOrItsReason(t *testing.T) {
	noProm := errors.New("Prometheus is not configured")
	src := Sources{
		Traces:  Unavailable[TraceStore](errors.New("Jaeger is not configured")),
		GPUs:    Ready[GPUStore](&gpuStoreOnly{}),
		Metrics: Unavailable[MetricStore](noProm),
	}
	ts := src.ForTrace(models.DefaultLatencyHistograms())
	if !ts.GPUs.Ready() || !ts.Lever.GPUs.Ready() || !ts.Lever.Memory.Ready() {
		t.Error("the GPU store is not read by the join or the lever")
	}
	for name, s := range map[string]interface{ Ready() bool }{"engines": ts.Engines, "lever's engines": ts.Lever.Engines, "lever's latency": ts.Lever.Latency} {
		if s.Ready() {
			t.Errorf("%s ready without the application's Prometheus", name)
		}
	}
	if _, err := ts.Lever.Latency.Get(); !errors.Is(err, noProm) {
		t.Errorf("lever's latency says %v, want why Prometheus is unavailable", err)
	}
	// The trace store unavailable: the whole-request join still reads, and says why.
	if _, err := TracesOf(src.Traces).Trace(context.Background(), "abc"); err == nil || err.Error() != "Jaeger is not configured" {
		t.Errorf("traces: %v", err)
	}
}

// The p99 the lever compares is the highest of the service's endpoints that have requests.
func TestServiceLatenciesIsTheHighestP99OfTheServicesEndpoints(t *testing.T) {
	p99 := func(endpoint string, seconds float64) models.EndpointLatency {
		return models.EndpointLatency{Metric: "http_server_duration", Service: "api", Endpoint: endpoint, Quantiles: []float64{0.1, 0.2, seconds}, Requests: 10}
	}
	l := ServiceLatencies{Store: latencyRows{p99("/a", 0.4), p99("/b", 1.2), p99("/c", 0)}}
	got, err := l.ServiceP99(context.Background(), "api", t0, t0.Add(time.Hour))
	if err != nil || got.Endpoint != "/b" || got.P99 != 1200*time.Millisecond || got.Source != "http_server_duration" {
		t.Errorf("%+v, %v", got, err)
	}
	if _, err := (ServiceLatencies{Store: latencyRows{}}).ServiceP99(context.Background(), "api", t0, t0.Add(time.Hour)); err == nil {
		t.Error("no histogram with requests gave a p99")
	}
}

type latencyRows []models.EndpointLatency

func (r latencyRows) EndpointLatencies(context.Context, models.LatencyQuery) (models.LatencyResult, error) {
	return models.LatencyResult{Rows: r}, nil
}
