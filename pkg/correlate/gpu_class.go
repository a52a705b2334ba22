package correlate

import (
	"context"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// GPUClassQuery asks for the classes of the GPUs matching Filter over [From, To].
type GPUClassQuery struct {
	Filter   models.GPUFilter
	From, To time.Time
	// Interval is the panel's; the step is never below MinStep (DCGM's samples are 30 s apart).
	Interval, MinStep time.Duration
	Classify          models.ClassifySettings
}

// GPUClassAnswer is each GPU's classes per step, and what the user must know about them.
type GPUClassAnswer struct {
	Results     []classify.GPUResult
	ShareWindow time.Duration
	Notices     notices.List
}

// GPUClasses classifies the GPUs' DCGM figures per step (classify.ClassifyFleet). The figures
// start a share window before the range, so the first shares are whole, as Prometheus'
// avg_over_time sees the hour before a range; where the thermal fallback needs the SM clock's
// maximum from before that, a second, coarser call reads it.
func GPUClasses(ctx context.Context, gpus GPUFigures, q GPUClassQuery) (*GPUClassAnswer, error) {
	th := q.Classify.Thresholds
	if !q.From.Before(q.To) {
		return nil, models.InvalidQueryf("the time range must start before it ends, got %s to %s", q.From.Format(time.RFC3339), q.To.Format(time.RFC3339))
	}
	step := max(q.Interval, q.MinStep)
	ans := &GPUClassAnswer{ShareWindow: th.ShareWindow}
	ans.Notices.Infof("classes are judged at each %s step on DCGM's samples: dcgm-exporter collects every 30 s by default, so they describe coarse averages, not individual kernels", step)
	if q.Interval > 0 && q.Interval < step {
		ans.Notices.Infof("step raised from the panel's %s to minStep %s: shorter steps would repeat the same DCGM samples (set minStep in the query to change it)", q.Interval, step)
	}
	if len(q.Classify.Changed) > 0 {
		ans.Notices.Warnf("thresholds differ from the defaults (%s): the provisioned recording rules (provisioning/prometheus/rules/gpu-classification.yml) use the defaults; render matching rules with `go run ./cmd/hsi-rulegen -settings jsonData.json`",
			strings.Join(q.Classify.Changed, ", "))
	}
	series, found, err := gpus.GPUFigures(ctx, q.Filter, q.From.Add(-th.ShareWindow), q.To, step)
	if err != nil {
		return nil, err
	}
	ans.Notices.Merge(found)

	// The history's own notices are left out: they repeat the range's, or only say the history
	// is empty (a new GPU, a young Prometheus), which changes nothing the classes could show.
	var history []classify.GPUSeries
	if start, end, histStep, ok := classify.ClockHistoryWindow(series, th, step); ok {
		if history, _, err = gpus.GPUFigures(ctx, q.Filter, start, end, histStep); err != nil {
			// Without the history the fallback only sees the clock maximum since the share
			// window began; say so rather than fail the query.
			ans.Notices.Warnf("SM clock history before the range could not be fetched (%v): the thermal fallback compares with the maximum since %s only",
				err, q.From.Add(-th.ShareWindow).Format(time.RFC3339))
		}
	}
	ans.Results = classify.ClassifyFleet(series, history, th, q.From)
	if len(ans.Results) == 0 {
		ans.Notices.Warnf("no DCGM series match the filter%s between %s and %s: check the filter and that dcgm-exporter is scraped by this Prometheus",
			filterText(q.Filter), q.From.UTC().Format(time.RFC3339), q.To.UTC().Format(time.RFC3339))
	}
	ans.Notices.Merge(classify.Coverage(ans.Results, series, th))
	return ans, nil
}

// LocalGPUClasses classifies the NVML sampler's series of this host's GPUs with the same engine.
func LocalGPUClasses(series []models.GPUDeviceSeries, host string, th classify.Thresholds, interval time.Duration, capacity int) *GPUClassAnswer {
	gs := make([]classify.GPUSeries, 0, len(series))
	var from time.Time
	for _, s := range series {
		g := s.ClassifySeries(host)
		if len(g.Samples) > 0 && (from.IsZero() || g.Samples[0].Time.Before(from)) {
			from = g.Samples[0].Time
		}
		gs = append(gs, g)
	}
	ans := &GPUClassAnswer{Results: classify.ClassifyFleet(gs, nil, th, from), ShareWindow: th.ShareWindow}
	ans.Notices.Infof("classes of the sampler's last samples (every %s, up to %d per GPU): NVML has no profiling metrics, so compute is GPU utilisation and memory is memory-controller utilisation (the %s/%s fallbacks)",
		interval, capacity, classify.MetricGPUUtil, classify.MetricMemCopyUtil)
	return ans
}

// filterText writes a GPU filter as the user wrote it: " (hosts=a|b, gpuSelector=…)".
func filterText(f models.GPUFilter) string {
	var parts []string
	for _, p := range []struct {
		name string
		vals []string
	}{{"hosts", f.Hosts}, {"gpus", f.GPUs}, {"models", f.Models}, {"pods", f.Pods}, {"namespaces", f.Namespaces}} {
		if len(p.vals) > 0 {
			parts = append(parts, p.name+"="+strings.Join(p.vals, "|"))
		}
	}
	if f.GPUSelector != "" {
		parts = append(parts, "gpuSelector="+f.GPUSelector)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// LocalGPUAnswer is one view of this host's GPUs (gpuLocal): only the view's part is set.
type LocalGPUAnswer struct {
	View      string
	Devices   []models.GPUDevice
	Processes []models.GPUProcess
	XIDs      []models.XIDEvent
	Series    []models.GPUDeviceSeries
	Classes   *GPUClassAnswer
	Notices   notices.List
}

// LocalGPUView reads one view of the host's GPUs from the NVML sampler; the sampler failing
// (no driver, no GPU) is the error.
func LocalGPUView(src models.LocalGPUSource, view, host string, th classify.Thresholds) (*LocalGPUAnswer, error) {
	ans := &LocalGPUAnswer{View: view}
	var err error
	switch view {
	case models.GPULocalDevices:
		ans.Devices, ans.Notices, err = src.Devices()
	case models.GPULocalProcesses:
		ans.Processes, ans.Notices, err = src.Processes()
	case models.GPULocalXID:
		ans.XIDs, ans.Notices, err = src.XIDs()
	case models.GPULocalSeries:
		ans.Series, ans.Notices, err = src.Series()
	case models.GPULocalClass:
		var series []models.GPUDeviceSeries
		if series, ans.Notices, err = src.Series(); err == nil {
			ans.Classes = LocalGPUClasses(series, host, th, src.Interval(), src.Capacity())
		}
	default:
		return nil, models.InvalidQueryf("unknown view %q", view)
	}
	if err != nil {
		return nil, err
	}
	return ans, nil
}
