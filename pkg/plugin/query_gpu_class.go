package plugin

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// gpuFigureSource is what the gpuClass query needs of Prometheus: prometheus.Client's
// GPUFigures (every classify.Figures per GPU on one step grid, with notices).
type gpuFigureSource interface {
	GPUFigures(ctx context.Context, filter models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, []string, error)
}

// clockHistorySteps is how many steps the clock history before the share window is fetched at:
// enough to find the SM clock's maximum (a plateau under load, not a spike), few enough that a
// day of history costs a fraction of the panel's own range.
const clockHistorySteps = 720

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
	history, _, err := gpuClockHistory(ctx, src, gq.GPUFilter, series, th, step)
	if err != nil {
		// Without the history the fallback only sees the clock maximum since the share window
		// began; say so rather than fail the query.
		notices = append(notices, fmt.Sprintf("SM clock history before the range could not be fetched (%v): the thermal fallback compares with the maximum since %s only",
			err, from.Add(-th.ShareWindow).Format(time.RFC3339)))
	}

	results := classifyGPUs(series, history, th, from)
	notices = append(notices, gpuClassCoverage(results, series, th, gq, from, to)...)

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

// gpuClockHistory fetches the figures of the clock window before the share window, at a coarse
// step, when some GPU lacks the clock-event bitmask: only then does the thermal fallback need
// the SM clock's maximum over the window (clockMaxWindow, a day by default), which
// max_over_time in the recording rules sees. GPUs with the bitmask never pay for it.
func gpuClockHistory(ctx context.Context, src gpuFigureSource, f models.GPUFilter, series []classify.GPUSeries, th classify.Thresholds, step time.Duration) ([]classify.GPUSeries, []string, error) {
	if th.ClockMaxWindow <= th.ShareWindow || len(series) == 0 || !lacksBitmask(series) {
		return nil, nil, nil
	}
	first := series[0].Samples
	if len(first) == 0 {
		return nil, nil, nil
	}
	end := first[0].Time
	start := end.Add(-(th.ClockMaxWindow - th.ShareWindow))
	histStep := max(step, ((th.ClockMaxWindow - th.ShareWindow) / clockHistorySteps).Round(time.Second))
	return src.GPUFigures(ctx, f, start, end.Add(-time.Nanosecond), histStep)
}

// lacksBitmask says whether some GPU reports figures without the clock-event bitmask at some
// step (steps without any figure, such as before the GPU's first sample, do not count).
func lacksBitmask(series []classify.GPUSeries) bool {
	for _, s := range series {
		for _, smp := range s.Samples {
			f := &smp.Figures
			reports := !math.IsNaN(f.GPUUtil) || !math.IsNaN(f.SMActive) || !math.IsNaN(f.GrEngine) || !math.IsNaN(f.MemCopyUtil) || !math.IsNaN(f.DRAMActive)
			if reports && math.IsNaN(f.ClockEvents) {
				return true
			}
		}
	}
	return false
}

// classifyGPUs classifies each GPU (in parallel: classification is CPU-bound) with its clock
// history in front, and keeps the steps from the panel's start (aligned down to the step, as the
// first returned step is).
func classifyGPUs(series, history []classify.GPUSeries, th classify.Thresholds, from time.Time) []frames.GPUClassResult {
	hist := make(map[classify.GPU][]classify.Sample, len(history))
	for _, h := range history {
		hist[h.GPU] = h.Samples
	}
	results := make([]frames.GPUClassResult, len(series))
	// CPU work: one GPU per core at a time; a GPU whose classification panics keeps its zero result.
	safe.ForEach("GPU classification", len(series), runtime.GOMAXPROCS(0), func(i int) error {
		results[i] = classifyGPU(series[i], hist[series[i].GPU], th, from)
		return nil
	})
	return results
}

func classifyGPU(s classify.GPUSeries, history []classify.Sample, th classify.Thresholds, from time.Time) frames.GPUClassResult {
	// History strictly before the fetched range, then the range: one series in time order.
	var before []classify.Sample
	if len(s.Samples) > 0 {
		for _, h := range history {
			if h.Time.Before(s.Samples[0].Time) {
				before = append(before, h)
			}
		}
	}
	full := s
	if len(before) > 0 {
		full.Samples = append(before, s.Samples...)
	}
	classes := classify.ClassesOf(full, th)
	times := make([]time.Time, len(full.Samples))
	for i, smp := range full.Samples {
		times[i] = smp.Time
	}
	// Shares over the fetched range only: the coarse history would weigh differently.
	rangeTimes, rangeClasses := times[len(before):], classes[len(before):]
	shares := classify.TrailingShares(rangeTimes, rangeClasses, th.ShareWindow)

	// Keep the steps from the panel's start: the last step at or before it (the start aligned
	// down to the step, as Grafana's Prometheus data source shows it), then the rest.
	keep := max(0, sort.Search(len(rangeTimes), func(i int) bool { return rangeTimes[i].After(from) })-1)
	r := frames.GPUClassResult{GPU: s.GPU, Times: rangeTimes[keep:], Classes: rangeClasses[keep:], Shares: map[classify.Class][]float64{}}
	for c, v := range shares {
		r.Shares[c] = v[keep:]
	}
	dominant := dominantClass(r.Classes)
	for i := len(r.Classes) - 1; i >= 0; i-- {
		if r.Classes[i] == dominant {
			ex := classify.Explain(full, th, len(before)+keep+i)
			r.Evidence, r.EvidenceTime = ex.Evidence, ex.Time
			break
		}
	}
	return r
}

func dominantClass(classes []classify.Class) classify.Class {
	rs := make([]classify.Result, len(classes))
	for i, c := range classes {
		rs[i].Class = c
	}
	c, _ := classify.Dominant(rs)
	return c
}

// gpuClassCoverage say what the classes could not see: no GPU matched, GPUs without any class,
// and the fallbacks in use (no bitmask: thermal by temperature and clock, power undetectable).
func gpuClassCoverage(results []frames.GPUClassResult, series []classify.GPUSeries, th classify.Thresholds, gq *models.GPUClassQuery, from, to time.Time) []string {
	if len(results) == 0 {
		return []string{fmt.Sprintf("no DCGM series match the filter%s between %s and %s: check the filter and that dcgm-exporter is scraped by this Prometheus",
			gpuClassFilterText(gq.GPUFilter), from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))}
	}
	var notices, unclassified, noBitmask []string
	for i, r := range results {
		name := r.GPU.Name()
		if !slices.ContainsFunc(r.Classes, func(c classify.Class) bool { return c != classify.NoData }) {
			unclassified = append(unclassified, name)
		}
		if lacksBitmask(series[i : i+1]) {
			noBitmask = append(noBitmask, name)
		}
	}
	if len(unclassified) > 0 {
		notices = append(notices, fmt.Sprintf("no class for %s: a compute figure (%s, %s or %s) and a memory figure (%s or %s) are both needed at a step",
			gpuClassList(unclassified), classify.MetricSMActive, classify.MetricGrEngine, classify.MetricGPUUtil, classify.MetricDRAMActive, classify.MetricMemCopyUtil))
	}
	if len(noBitmask) > 0 {
		notices = append(notices, fmt.Sprintf("no clock-event bitmask (%s) for %s at some steps: there thermal throttling is judged by temperature > %g °C with the SM clock below %g × its %s maximum, and power throttling cannot be seen",
			classify.MetricClockEvents, gpuClassList(noBitmask), th.ThermalTempC, th.ThermalClockRatio, classify.PromDuration(th.ClockMaxWindow)))
	}
	return notices
}

// gpuClassList lists up to 8 names, then how many more.
func gpuClassList(names []string) string {
	if len(names) <= 8 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:8], ", "), len(names)-8)
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
