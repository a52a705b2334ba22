package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// gpuFigureSource is what the gpuClass query needs of Prometheus: prometheus.Client's
// GPUFigures (every classify.Figures per GPU on one step grid, with notices).
type gpuFigureSource interface {
	GPUFigures(ctx context.Context, filter models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, []string, error)
}

// queryGPUClass answers the gpuClass query: DCGM figures from Prometheus, classified per GPU and
// step (classify.ClassesOf), as a state timeline, a summary table with evidence and actions, and
// share series for alerting (frames.GPUClass*), according to the query's format.
func (d *Datasource) queryGPUClass(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	gq, err := models.ParseGPUClassQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeGPUClass, err)
	}
	prom, err := d.gpuPrometheus()
	if err != nil {
		return errorResponse(err)
	}
	return answerGPUClass(ctx, prom, q, gq, d.settings.Classify)
}

// answerGPUClass is queryGPUClass after the settings checks, against any figure source.
func answerGPUClass(ctx context.Context, src gpuFigureSource, q backend.DataQuery, gq *models.GPUClassQuery, cs models.ClassifySettings) backend.DataResponse {
	th := cs.Thresholds
	if th.Validate() != nil {
		// Settings built without LoadSettings (never the case in Grafana): the seeds' defaults.
		th = classify.DefaultThresholds()
	}
	from, to := q.TimeRange.From, q.TimeRange.To
	if !from.Before(to) {
		return badQuery(models.QueryTypeGPUClass, fmt.Errorf("the time range must start before it ends, got %s to %s", from.Format(time.RFC3339), to.Format(time.RFC3339)))
	}
	step := max(q.Interval, gq.MinStep)
	method := frames.Info(fmt.Sprintf("classes are judged at each %s step on DCGM's samples: dcgm-exporter collects every 30 s by default, so they describe coarse averages, not individual kernels", step))
	var notices []string // what may mislead or is missing: warnings
	if q.Interval > 0 && q.Interval < step {
		notices = append(notices, fmt.Sprintf("step raised from the panel's %s to minStep %s: shorter steps would repeat the same DCGM samples (set minStep in the query to change it)", q.Interval, step))
	}
	if len(cs.Changed) > 0 {
		notices = append(notices, fmt.Sprintf("thresholds differ from the defaults (%s): the provisioned recording rules (provisioning/prometheus/rules/gpu-classification.yml) use the defaults; render matching rules with `go run ./cmd/hsi-rulegen -settings jsonData.json`",
			strings.Join(cs.Changed, ", ")))
	}

	// The share window before the range makes the first shares whole, as Prometheus'
	// avg_over_time sees the hour before a range.
	series, figNotices, err := src.GPUFigures(ctx, gq.GPUFilter, from.Add(-th.ShareWindow), to, step)
	if err != nil {
		return errorResponse(err)
	}
	notices = appendNewNotices(notices, figNotices...)

	// The history's own notices are left out: they repeat the range's, or only say the history
	// is empty (a new GPU, a young Prometheus), which changes nothing the classes could show.
	var history []classify.GPUSeries
	if start, end, histStep, ok := classify.ClockHistoryWindow(series, th, step); ok {
		if history, _, err = src.GPUFigures(ctx, gq.GPUFilter, start, end, histStep); err != nil {
			// Without the history the fallback only sees the clock maximum since the share
			// window began; say so rather than fail the query.
			notices = append(notices, fmt.Sprintf("SM clock history before the range could not be fetched (%v): the thermal fallback compares with the maximum since %s only",
				err, from.Add(-th.ShareWindow).Format(time.RFC3339)))
		}
	}

	results := classify.ClassifyFleet(series, history, th, from)
	if len(results) == 0 {
		notices = append(notices, fmt.Sprintf("no DCGM series match the filter%s between %s and %s: check the filter and that dcgm-exporter is scraped by this Prometheus",
			gpuClassFilterText(gq.GPUFilter), from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339)))
	}
	notices = append(notices, classify.Coverage(results, series, th)...)

	var out []*data.Frame
	if gq.Format == models.GPUClassFormatAll || gq.Format == models.GPUClassFormatTimeline {
		out = append(out, frames.GPUClassTimeline(results))
	}
	if gq.Format == models.GPUClassFormatAll || gq.Format == models.GPUClassFormatSummary {
		out = append(out, frames.GPUClassSummary(results))
	}
	if gq.Format == models.GPUClassFormatAll || gq.Format == models.GPUClassFormatShares {
		shares := frames.GPUClassShareFrames(results, th.ShareWindow)
		if len(shares) == 0 && gq.Format == models.GPUClassFormatShares {
			// An empty share frame carries the notices, so the panel or alert says why.
			empty := data.NewFrame(frames.GPUClassShareFrameName, data.NewField("time", nil, []time.Time{}), data.NewField("share", nil, []*float64{}))
			empty.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}}
			shares = append(shares, empty)
		}
		out = append(out, shares...)
	}
	out[0].AppendNotices(method)
	for _, n := range notices {
		out[0].AppendNotices(frames.Warning(n))
	}
	return withFrames(out...)
}

func gpuClassFilterText(f models.GPUFilter) string {
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

func appendNewNotices(list []string, items ...string) []string {
	for _, it := range items {
		if !slices.Contains(list, it) {
			list = append(list, it)
		}
	}
	return list
}
