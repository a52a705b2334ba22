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

// queryTriage answers the GPU fleet's failures of the range by runbook class (correlate.Triage):
// a store that is unavailable or fails leaves its classes unread, said in the signals and notices.
func (d *Datasource) queryTriage(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	tq, err := models.ParseTriageQuery(q.JSON)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	ans, err := correlate.Triage(ctx, correlate.TriageSources{
		GPUs:   correlate.Narrow[correlate.GPUMetrics](d.src.GPUs),
		Kube:   correlate.Narrow[correlate.KubeStates](d.src.Metrics),
		Traces: correlate.Narrow[correlate.FailedRequests](d.src.Traces),
	}, tq, d.settings.Join.SpanMatch, q.TimeRange.From, q.TimeRange.To, max(q.Interval, time.Second))
	if err != nil {
		return nil, err
	}
	j := d.settings.Join
	return frames.Triage(ans, tq.View, frames.TriageLinks{GPUDashboardUID: j.GPUDashboardUID, RequestDashboardUID: j.RequestDashboardUID,
		TraceDatasourceUID: j.TraceDatasourceUID, TraceDatasourceType: j.TraceDatasourceType}), nil
}
