package plugin

import (
	"context"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// querySlowRequests answers two tables in parallel: p50/p95/p99 latency by endpoint from the
// request-duration histograms in Prometheus, and the slowest recent traces from Jaeger
// (correlate.SlowRequests). Either half failing leaves a notice and the other half.
func (d *Datasource) querySlowRequests(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	sq, err := models.ParseSlowRequestsQuery(q.JSON)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	j := d.settings.Join
	ans, err := correlate.SlowRequests(ctx, correlate.Narrow[correlate.Latencies](d.src.Metrics), correlate.Narrow[correlate.TraceSearch](d.src.Traces), correlate.SlowRequestsQuery{
		Service: sq.Service, Endpoint: sq.Endpoint, MinDuration: time.Duration(sq.MinDuration), Limit: int(sq.Limit),
		From: q.TimeRange.From, To: q.TimeRange.To, Histograms: j.LatencyHistograms, Good: j.LatencyYellow, SettingsErr: d.invalid.Join,
		SkipLatency: !sq.Wants(models.SlowRequestsPartLatency), SkipTraces: !sq.Wants(models.SlowRequestsPartTraces),
	})
	if err != nil {
		return nil, err
	}
	return frames.SlowRequests(ans, frames.LatencyThresholds{Yellow: j.LatencyYellow, Red: j.LatencyRed}, frames.SlowTraceLinks{
		RequestDashboardUID: j.RequestDashboardUID, TraceDatasourceUID: j.TraceDatasourceUID, TraceDatasourceType: j.TraceDatasourceType,
	}, sq.Parts), nil
}
