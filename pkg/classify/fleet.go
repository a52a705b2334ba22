package classify

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// The classification pipeline of many GPUs over a range (the gpuClass query) and of the windows
// cut from them (the trace query's spans): classes per GPU and step, the clock history the
// thermal fallback needs, shares, the dominant class and the evidence for it.

// GPUResult is one GPU's classification over a query's range.
type GPUResult struct {
	GPU     GPU
	Times   []time.Time
	Classes []Class
	// Shares is each class's share of the classified steps over the trailing share window, at
	// each step (TrailingShares); NaN where the window holds no classified step.
	Shares map[Class][]float64
	// Evidence explains one step of the dominant class (the latest), at EvidenceTime.
	Evidence     []string
	EvidenceTime time.Time
	// Pods are the pods dcgm-exporter mapped the GPU to over the range (GPUSeries.Pods): more
	// than one is a GPU shared by several workloads (time-sliced, MPS) or handed over.
	Pods []Pod
}

// ClockHistorySteps is how many steps the clock history before the share window is fetched at:
// enough to find the SM clock's maximum (a plateau under load, not a spike), few enough that a
// day of history costs a fraction of the panel's own range.
const ClockHistorySteps = 720

// ClockHistoryWindow is the range before the fetched series whose SM clock maximum the thermal
// fallback needs, and the coarse step to fetch it at. ok is false when no history is needed:
// only a GPU without the clock-event bitmask falls back on the clock (max_over_time over
// ClockMaxWindow in the recording rules), so GPUs with the bitmask never pay for it.
func ClockHistoryWindow(series []GPUSeries, th Thresholds, step time.Duration) (start, end time.Time, histStep time.Duration, ok bool) {
	if th.ClockMaxWindow <= th.ShareWindow || len(series) == 0 || len(series[0].Samples) == 0 || !LacksBitmask(series) {
		return time.Time{}, time.Time{}, 0, false
	}
	end = series[0].Samples[0].Time.Add(-time.Nanosecond) // strictly before the fetched range
	start = series[0].Samples[0].Time.Add(-(th.ClockMaxWindow - th.ShareWindow))
	histStep = max(step, ((th.ClockMaxWindow - th.ShareWindow) / ClockHistorySteps).Round(time.Second))
	return start, end, histStep, true
}

// LacksBitmask says whether some GPU reports figures without the clock-event bitmask at some
// step (steps without any figure, such as before the GPU's first sample, do not count).
func LacksBitmask(series []GPUSeries) bool {
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

// ClassifyFleet classifies each GPU (in parallel: classification is CPU-bound) with its clock
// history in front, and keeps the steps from the panel's start (aligned down to the step, as the
// first returned step is). A GPU whose classification panics keeps a zero result (logged).
func ClassifyFleet(series, history []GPUSeries, th Thresholds, from time.Time) []GPUResult {
	hist := make(map[GPU][]Sample, len(history))
	for _, h := range history {
		hist[h.GPU] = h.Samples
	}
	results := make([]GPUResult, len(series))
	safe.ForEach("GPU classification", len(series), runtime.GOMAXPROCS(0), func(i int) error {
		results[i] = classifyGPU(series[i], hist[series[i].GPU], th, from)
		return nil
	})
	return results
}

func classifyGPU(s GPUSeries, history []Sample, th Thresholds, from time.Time) GPUResult {
	// History strictly before the fetched range, then the range: one series in time order.
	var before []Sample
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
	classes := ClassesOf(full, th)
	times := make([]time.Time, len(full.Samples))
	for i, smp := range full.Samples {
		times[i] = smp.Time
	}
	// Shares over the fetched range only: the coarse history would weigh differently.
	rangeTimes, rangeClasses := times[len(before):], classes[len(before):]
	shares := TrailingShares(rangeTimes, rangeClasses, th.ShareWindow)

	// Keep the steps from the panel's start: the last step at or before it (the start aligned
	// down to the step, as Grafana's Prometheus data source shows it), then the rest.
	keep := max(0, sort.Search(len(rangeTimes), func(i int) bool { return rangeTimes[i].After(from) })-1)
	r := GPUResult{GPU: s.GPU, Times: rangeTimes[keep:], Classes: rangeClasses[keep:], Shares: map[Class][]float64{}, Pods: s.Pods}
	for c, v := range shares {
		r.Shares[c] = v[keep:]
	}
	dominant := dominantOf(r.Classes)
	for i := len(r.Classes) - 1; i >= 0; i-- {
		if r.Classes[i] == dominant {
			ex := Explain(full, th, len(before)+keep+i)
			r.Evidence, r.EvidenceTime = ex.Evidence, ex.Time
			break
		}
	}
	return r
}

func dominantOf(classes []Class) Class {
	rs := make([]Result, len(classes))
	for i, c := range classes {
		rs[i].Class = c
	}
	c, _ := Dominant(rs)
	return c
}

// Coverage says what the classes of a non-empty fleet could not see: GPUs without any class,
// and the fallbacks in use (no bitmask: thermal by temperature and clock, power undetectable).
// results and series are in the same order, as ClassifyFleet returns them.
func Coverage(results []GPUResult, series []GPUSeries, th Thresholds) notices.List {
	var found notices.List
	var unclassified, noBitmask []string
	for i, r := range results {
		name := r.GPU.Name()
		if !slices.ContainsFunc(r.Classes, func(c Class) bool { return c != NoData }) {
			unclassified = append(unclassified, name)
		}
		if i < len(series) && LacksBitmask(series[i:i+1]) {
			noBitmask = append(noBitmask, name)
		}
	}
	if len(unclassified) > 0 {
		found.Warnf("no class for %s: a compute figure (%s, %s or %s) and a memory figure (%s or %s) are both needed at a step",
			nameList(unclassified), MetricSMActive, MetricGrEngine, MetricGPUUtil, MetricDRAMActive, MetricMemCopyUtil)
	}
	if len(noBitmask) > 0 {
		found.Warnf("no clock-event bitmask (%s) for %s at some steps: there thermal throttling is judged by temperature > %g °C with the SM clock below %g × its %s maximum, and power throttling cannot be seen",
			MetricClockEvents, nameList(noBitmask), th.ThermalTempC, th.ThermalClockRatio, PromDuration(th.ClockMaxWindow))
	}
	return found
}

// nameList lists up to 8 names, then how many more.
func nameList(names []string) string {
	if len(names) <= 8 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:8], ", "), len(names)-8)
}

// Windows classifies each GPU's series once, then answers for any window cut from those series
// (a span's) the dominant class, its share and the evidence of its first reading.
type Windows struct {
	// Keyed by the whole identity: MIG instances of one GPU share its host, index and UUID.
	results map[GPU][]Result
}

// NewWindows classifies every step of series with th.
func NewWindows(series []GPUSeries, th Thresholds) *Windows {
	w := &Windows{results: make(map[GPU][]Result, len(series))}
	for _, s := range series {
		w.results[s.GPU] = ClassifySeries(s, th)
	}
	return w
}

// Dominant is the dominant class over the steps of cut (pieces of the series NewWindows was
// given), its share (0..1) and the evidence of its first reading, naming the GPU when the window
// covers several.
func (w *Windows) Dominant(cut []GPUSeries) (Class, float64, []string) {
	var window []Result
	var from []GPU // the GPU of each result
	for _, c := range cut {
		if len(c.Samples) == 0 {
			continue
		}
		first, last := c.Samples[0].Time, c.Samples[len(c.Samples)-1].Time
		for _, r := range w.results[c.GPU] {
			if !r.Time.Before(first) && !r.Time.After(last) {
				window = append(window, r)
				from = append(from, c.GPU)
			}
		}
	}
	class, share := Dominant(window)
	for i, r := range window {
		if r.Class != class || len(r.Evidence) == 0 {
			continue
		}
		evidence := slices.Clone(r.Evidence)
		if len(cut) > 1 {
			evidence[0] = from[i].OnHost() + ": " + evidence[0]
		}
		return class, share, evidence
	}
	return class, share, nil
}
