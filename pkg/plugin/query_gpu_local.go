package plugin

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/nvml"
)

const nvmlOffMessage = "local GPUs (NVML) are off for this data source: turn on \"Local GPUs (NVML)\" in its settings (jsonData.nvmlEnabled: true); it reads the GPUs of the host Grafana runs on and needs the NVIDIA driver there"

// queryGPULocal answers the gpuLocal query from the instance's NVML sampler (pkg/nvml), which
// starts on the first such query and is shared by all of them.
func (d *Datasource) queryGPULocal(_ context.Context, q backend.DataQuery) backend.DataResponse {
	gq, err := models.ParseGPULocalQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeGPULocal, err)
	}
	src, err := d.localGPUs()
	if err != nil {
		return errorResponse(err)
	}
	return answerGPULocal(src, gq, d.settings.Classify)
}

// answerGPULocal builds a view's frames; NVML being unavailable is the query's error.
func answerGPULocal(src nvml.Source, gq *models.GPULocalQuery, cs models.ClassifySettings) backend.DataResponse {
	var (
		f       []*data.Frame
		notices []string
		err     error
	)
	switch gq.View {
	case models.GPULocalDevices:
		var devs []nvml.Device
		if devs, notices, err = src.Devices(); err == nil {
			f = []*data.Frame{frames.GPULocalDevices(devs)}
		}
	case models.GPULocalProcesses:
		var procs []nvml.Process
		if procs, notices, err = src.Processes(); err == nil {
			f = []*data.Frame{frames.GPULocalProcesses(procs)}
		}
	case models.GPULocalXID:
		var xids []nvml.XIDEvent
		if xids, notices, err = src.XIDs(); err == nil {
			f = []*data.Frame{frames.GPULocalXIDs(xids)}
		}
	case models.GPULocalSeries:
		var series []nvml.DeviceSeries
		if series, notices, err = src.Series(); err == nil {
			f = frames.GPULocalSeries(series)
		}
	case models.GPULocalClass:
		var series []nvml.DeviceSeries
		if series, notices, err = src.Series(); err == nil {
			var more []string
			f, more = localClassFrames(series, cs, src.Interval())
			notices = append(more, notices...)
		}
	}
	if err != nil {
		return errorResponse(backend.DownstreamError(err))
	}
	for _, n := range notices {
		f[0].AppendNotices(frames.Warning(n))
	}
	return withFrames(f...)
}

// localClassFrames classifies the sampler's series with the gpuClass engine (classifyGPUs) and
// renders its timeline and summary frames.
func localClassFrames(series []nvml.DeviceSeries, cs models.ClassifySettings, interval time.Duration) ([]*data.Frame, []string) {
	th := cs.Thresholds
	if th.Validate() != nil {
		th = classify.DefaultThresholds()
	}
	host, _ := os.Hostname()
	gs := make([]classify.GPUSeries, 0, len(series))
	var from time.Time
	for _, s := range series {
		g := s.ClassifySeries(host)
		if len(g.Samples) > 0 && (from.IsZero() || g.Samples[0].Time.Before(from)) {
			from = g.Samples[0].Time
		}
		gs = append(gs, g)
	}
	results := classify.ClassifyFleet(gs, nil, th, from)
	notices := []string{fmt.Sprintf("classes of the sampler's last samples (every %s, up to %d per GPU): NVML has no profiling metrics, so compute is GPU utilisation and memory is memory-controller utilisation (the %s/%s fallbacks)",
		interval, nvml.DefaultCapacity, classify.MetricGPUUtil, classify.MetricMemCopyUtil)}
	return []*data.Frame{frames.GPUClassTimeline(results), frames.GPUClassSummary(results)}, notices
}
