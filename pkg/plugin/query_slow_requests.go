package plugin

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/prometheus"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// querySlowRequests answers two tables in parallel: p50/p95/p99 latency by endpoint from the
// request-duration histograms in Prometheus, and the slowest recent traces from Jaeger, each
// linking to the Request-Level Profiling dashboard. Either half failing leaves a notice and the
// other half; both failing is the query's error.
func (d *Datasource) querySlowRequests(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	sq, err := models.ParseSlowRequestsQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeSlowRequests, err)
	}
	var (
		lat        prometheus.LatencyResult
		latErr     = safe.ErrPanicked
		traces     []models.TraceSummary
		traceNotes []string
		traceErr   = safe.ErrPanicked
	)
	fanOut(2, func(i int) {
		switch i {
		case 0:
			lat, latErr = d.endpointLatencies(ctx, sq, q.TimeRange)
		case 1:
			traces, traceNotes, traceErr = d.slowestTraces(ctx, sq, q.TimeRange)
		}
	})
	if latErr != nil && traceErr != nil {
		return errorResponse(fmt.Errorf("latency table: %w; slow traces: %w", latErr, traceErr))
	}
	j := d.settings.Join
	th := frames.LatencyThresholds{Yellow: j.LatencyYellow, Red: j.LatencyRed}

	latency := frames.LatencyTable(latencyRows(lat.Rows), th, lat.Range)
	latency.Meta.Notices = latencyNotices(sq, lat, latErr, j)
	slow := frames.SlowTraces(slowTraceRows(traces), th, frames.SlowTraceLinks{
		RequestDashboardUID: j.RequestDashboardUID, TraceDatasourceUID: j.TraceDatasourceUID, TraceDatasourceType: j.TraceDatasourceType,
	})
	if traceErr != nil {
		slow.Meta.Notices = append(slow.Meta.Notices, frames.Warning(fmt.Sprintf("No slow traces: %v", traceErr)))
	}
	for _, n := range traceNotes {
		slow.Meta.Notices = append(slow.Meta.Notices, frames.Info(n))
	}
	if j.Err != nil {
		latency.Meta.Notices = append(latency.Meta.Notices, frames.Warning(fmt.Sprintf("Some join settings are invalid and use their defaults: %v", j.Err)))
	}
	return withFrames(latency, slow)
}

func (d *Datasource) endpointLatencies(ctx context.Context, sq *models.SlowRequestsQuery, tr backend.TimeRange) (prometheus.LatencyResult, error) {
	prom, err := d.prometheusClient()
	if err != nil {
		return prometheus.LatencyResult{}, err
	}
	return prom.EndpointLatencies(ctx, prometheus.LatencyQuery{
		Histograms: d.settings.Join.LatencyHistograms, Service: sq.Service, Endpoint: sq.Endpoint,
		End: tr.To, Range: tr.To.Sub(tr.From), Threshold: d.settings.Join.LatencyYellow,
	})
}

func latencyNotices(sq *models.SlowRequestsQuery, lat prometheus.LatencyResult, latErr error, j models.JoinSettings) []data.Notice {
	if latErr != nil {
		return []data.Notice{frames.Warning(fmt.Sprintf("No latency table: %v", latErr))}
	}
	var out []data.Notice
	if len(lat.Rows) == 0 {
		var names []string
		for _, h := range j.LatencyHistograms {
			names = append(names, h.Metric+"_bucket")
		}
		what := "any request"
		if sq.Service != "" || sq.Endpoint != "" {
			what = fmt.Sprintf("requests of service %q, endpoint %q", sq.Service, sq.Endpoint)
		}
		out = append(out, frames.Warning(fmt.Sprintf("No latency histogram has %s in the panel's time range (read: %s). Set jsonData.latencyHistograms to your request-duration histogram, its service and endpoint labels.",
			what, strings.Join(names, ", "))))
	}
	for _, w := range lat.Warnings {
		out = append(out, frames.Warning("Prometheus: "+w))
	}
	var interpolated []string
	for _, r := range lat.Rows {
		if !math.IsNaN(r.Good) && !r.GoodExact && !slices.Contains(interpolated, r.Metric) {
			interpolated = append(interpolated, r.Metric)
		}
	}
	if len(interpolated) > 0 {
		out = append(out, frames.Info(fmt.Sprintf("Goodput counts requests within %s (latencyYellowMs), which is not a bucket bound of %s: it is interpolated inside its bucket, as histogram_quantile does.",
			j.LatencyYellow, strings.Join(interpolated, ", "))))
	}
	return out
}

func latencyRows(rows []prometheus.EndpointLatency) []frames.EndpointLatency {
	out := make([]frames.EndpointLatency, 0, len(rows))
	for _, r := range rows {
		// LatencyQuantiles is 0.5, 0.95, 0.99 in that order.
		out = append(out, frames.EndpointLatency{
			Service: r.Service, Endpoint: r.Endpoint, Histogram: r.Metric,
			P50: r.Quantiles[0], P95: r.Quantiles[1], P99: r.Quantiles[2], Requests: r.Requests,
			Good: r.Good, GoodExact: r.GoodExact,
		})
	}
	return out
}

// slowestTraces lists the slowest recent traces (correlate.SlowestTraces) from Jaeger.
func (d *Datasource) slowestTraces(ctx context.Context, sq *models.SlowRequestsQuery, tr backend.TimeRange) ([]models.TraceSummary, []string, error) {
	jae, err := d.jaegerClient()
	if err != nil {
		return nil, nil, err
	}
	return correlate.SlowestTraces(ctx, jae, correlate.SlowTracesQuery{
		Service: sq.Service, Endpoint: sq.Endpoint, MinDuration: time.Duration(sq.MinDuration),
		Start: tr.From, End: tr.To, Limit: int(sq.Limit),
	})
}

func slowTraceRows(ts []models.TraceSummary) []frames.SlowTrace {
	out := make([]frames.SlowTrace, 0, len(ts))
	for _, t := range ts {
		out = append(out, frames.SlowTrace{
			TraceID: t.TraceID, RootService: t.RootService, RootOperation: t.RootOperation,
			Start: t.Start, Duration: t.Duration, Spans: t.Spans, Services: t.Services,
		})
	}
	return out
}
