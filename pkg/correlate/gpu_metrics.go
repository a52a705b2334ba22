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

// GPUMetricSet is a GPUMetrics store that reads several metrics of one filter, aggregation and
// window in one call, each with its own result or error (prometheus.Client: one query for all).
type GPUMetricSet interface {
	GPUMetrics(ctx context.Context, names []string, filter models.GPUFilter, aggregation string, start, end time.Time, step time.Duration) ([]*models.GPUMetricResult, []error)
}

// askGPUMetrics reads the metrics in one call where the store is a GPUMetricSet, else each
// alone, at most concurrency at once (0: all).
func askGPUMetrics(ctx context.Context, gpus GPUMetrics, names []string, filter models.GPUFilter, aggregation string,
	start, end time.Time, step time.Duration, concurrency int,
) ([]*models.GPUMetricResult, []error) {
	if set, ok := gpus.(GPUMetricSet); ok {
		return set.GPUMetrics(ctx, names, filter, aggregation, start, end, step)
	}
	results := make([]*models.GPUMetricResult, len(names))
	errs := safe.ForEach("GPU metric", len(names), concurrency, func(i int) (err error) {
		results[i], err = gpus.GPUMetric(ctx, names[i], filter, aggregation, start, end, step)
		return err
	})
	return results, errs
}

// GPUMetricsOf reads each catalogue metric of the query (askGPUMetrics: in one call where the
// store can, else at most gpuMetricConcurrency at once). A metric that fails is a warning while
// another answered; the query fails, with the first metric's error, only when every metric
// failed.
func GPUMetricsOf(ctx context.Context, gpus GPUMetrics, q *models.GPUMetricsQuery, from, to time.Time, step time.Duration) ([]*models.GPUMetricResult, notices.List, error) {
	results, errs := askGPUMetrics(ctx, gpus, q.Metrics, q.GPUFilter, q.Aggregation, from, to, step, gpuMetricConcurrency)
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
