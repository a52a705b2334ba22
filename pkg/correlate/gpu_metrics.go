package correlate

import (
	"context"
	"fmt"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// gpuMetricConcurrency bounds the Prometheus queries of one gpuMetrics query.
const gpuMetricConcurrency = 4

// GPUMetricsOf reads each catalogue metric of the query, at most gpuMetricConcurrency at once. A
// metric that fails is a warning while another answered; the query fails, with the first
// metric's error, only when every metric failed.
func GPUMetricsOf(ctx context.Context, gpus GPUMetrics, q *models.GPUMetricsQuery, from, to time.Time, step time.Duration) ([]*models.GPUMetricResult, notices.List, error) {
	results := make([]*models.GPUMetricResult, len(q.Metrics))
	errs := safe.ForEach("gpuMetrics", len(q.Metrics), gpuMetricConcurrency, func(i int) (err error) {
		results[i], err = gpus.GPUMetric(ctx, q.Metrics[i], q.GPUFilter, q.Aggregation, from, to, step)
		return err
	})
	var (
		out      []*models.GPUMetricResult
		failures notices.List
		firstErr error
	)
	for i, res := range results {
		if errs[i] != nil {
			failures.Warn(fmt.Sprintf("%s failed: %v", q.Metrics[i], errs[i]))
			if firstErr == nil {
				firstErr = errs[i]
			}
			continue
		}
		out = append(out, res)
	}
	if len(out) == 0 && firstErr != nil {
		return nil, nil, firstErr
	}
	return out, failures, nil
}
