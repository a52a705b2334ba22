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

// queryGPUMetrics answers catalogue metrics of DCGM series: one frame per series and metric
// (frames.GPUMetrics). A metric the exporters do not send becomes a notice naming the DCGM
// metrics tried, not an error, and the other metrics still answer.
func (d *Datasource) queryGPUMetrics(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	gq, err := models.ParseGPUMetricsQuery(q.JSON)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	gpus, err := d.src.GPUs.Get()
	if err != nil {
		return nil, err
	}
	results, failures, err := correlate.GPUMetricsOf(ctx, gpus, gq, q.TimeRange.From, q.TimeRange.To, max(q.Interval, time.Second))
	if err != nil {
		return nil, err
	}
	return frames.GPUMetrics(results, failures), nil
}
