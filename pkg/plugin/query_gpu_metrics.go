package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// gpuMetricConcurrency bounds the Prometheus queries of one gpuMetrics query.
const gpuMetricConcurrency = 4

// queryGPUMetrics answers catalogue metrics of DCGM series: one frame per series and metric
// (frames.GPUMetricFrames). A metric the exporters do not send becomes a notice naming the DCGM
// metrics tried, not an error, and the other metrics still answer; a failing metric fails the
// query only when every metric failed.
func (d *Datasource) queryGPUMetrics(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	gq, err := models.ParseGPUMetricsQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeGPUMetrics, err)
	}
	prom, err := d.gpuPrometheus()
	if err != nil {
		return errorResponse(err)
	}
	step := max(q.Interval, time.Second)

	results := make([]*models.GPUMetricResult, len(gq.Metrics))
	errs := safe.ForEach("gpuMetrics", len(gq.Metrics), gpuMetricConcurrency, func(i int) (err error) {
		results[i], err = prom.GPUMetric(ctx, gq.Metrics[i], gq.GPUFilter, gq.Aggregation, q.TimeRange.From, q.TimeRange.To, step)
		return err
	})

	var out []*data.Frame
	var failures []string
	var firstErr error
	for i, res := range results {
		if errs[i] != nil {
			failures = append(failures, fmt.Sprintf("%s failed: %v", gq.Metrics[i], errs[i]))
			if firstErr == nil {
				firstErr = errs[i]
			}
			continue
		}
		out = append(out, frames.GPUMetricFrames(res)...)
	}
	if len(out) == 0 {
		if firstErr == nil {
			return withFrames()
		}
		return errorResponse(firstErr)
	}
	for _, f := range failures {
		// The other metrics answered: a part is missing, the panel is not failed.
		out[0].AppendNotices(frames.Warning(f))
	}
	return withFrames(out...)
}
