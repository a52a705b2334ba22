package plugin

import (
	"context"
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// queryGPUClass answers the gpuClass query: DCGM figures from Prometheus classified per GPU and
// step (correlate.GPUClasses), as a state timeline, a summary with evidence and actions, and
// share series for alerting, according to the query's format.
func (d *Datasource) queryGPUClass(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	gq, err := models.ParseGPUClassQuery(q.JSON)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	gpus, err := d.src.GPUs.Get()
	if err != nil {
		return nil, err
	}
	ans, err := correlate.GPUClasses(ctx, gpus, correlate.GPUClassQuery{
		Filter: gq.GPUFilter, From: q.TimeRange.From, To: q.TimeRange.To,
		Interval: q.Interval, MinStep: gq.MinStep, Classify: d.settings.Classify,
	})
	if err != nil {
		return nil, err
	}
	return frames.GPUClasses(ans, gq.Format, gq.Classes), nil
}

// queryGPULocal answers the gpuLocal query from the instance's NVML sampler (pkg/nvml), which
// starts on the first such query and is shared by all of them.
func (d *Datasource) queryGPULocal(_ context.Context, q backend.DataQuery) (data.Frames, error) {
	gq, err := models.ParseGPULocalQuery(q.JSON)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	src, err := d.src.LocalGPUs.Get()
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	ans, err := correlate.LocalGPUView(src, gq.View, host, d.settings.Classify.Thresholds)
	if err != nil {
		return nil, backend.DownstreamError(err)
	}
	return frames.GPULocal(ans), nil
}
