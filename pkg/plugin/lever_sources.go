package plugin

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/prometheus"
)

// leverSources are the stores runbook 002's lever reads: the GPUs' figures and memory from the
// GPU Prometheus, the engines' queue and the service's latency from the application's.
func (d *Datasource) leverSources() correlate.LeverSources {
	var src correlate.LeverSources
	if gpu, err := d.gpuPrometheus(); err == nil {
		src.GPUs, src.Memory = gpu, gpu
	}
	if prom, err := d.prometheusClient(); err == nil {
		src.Engines = prom
		src.Latency = serviceLatency{prom: prom, d: d}
	}
	return src
}

// serviceLatency answers a service's p99 from the latency histograms slowRequests reads.
type serviceLatency struct {
	prom *prometheus.Client
	d    *Datasource
}

// ServiceP99 is the highest p99 among the service's endpoints over the range.
func (s serviceLatency) ServiceP99(ctx context.Context, service string, start, end time.Time) (correlate.LatencyFigure, error) {
	res, err := s.prom.EndpointLatencies(ctx, prometheus.LatencyQuery{
		Histograms: s.d.settings.Join.LatencyHistograms, Service: service, End: end, Range: end.Sub(start),
	})
	if err != nil {
		return correlate.LatencyFigure{}, err
	}
	p99 := slices.Index(prometheus.LatencyQuantiles, 0.99)
	var best correlate.LatencyFigure
	for _, r := range res.Rows {
		v := r.Quantiles[p99]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if d := time.Duration(v * float64(time.Second)); d > best.P99 {
			best = correlate.LatencyFigure{Endpoint: r.Endpoint, P99: d, Requests: r.Requests, Source: r.Metric}
		}
	}
	if best.P99 == 0 {
		return best, fmt.Errorf("no latency histogram of %s has requests in the range", service)
	}
	return best, nil
}
