package classify

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Result is the class of one GPU at one step, with the evidence: the figures that decided it
// (and where they came from), the thresholds by their setting keys, and any fallback taken.
type Result struct {
	Time     time.Time
	Class    Class
	Evidence []string
}

// The precedence, first match wins (the recording rules' "or" chain has the same order):
//
//  1. no data — the compute figure or the memory figure is missing: nothing else can be judged.
//  2. thermal-throttled — clock-event bits 0x20 (SW thermal) or 0x40 (HW thermal) when the
//     bitmask is exported; else temperature > thermalTempC and SM clock < thermalClockRatio ×
//     its maximum over the trailing window. Throttling comes first because it explains the other
//     figures: a throttled GPU's utilisation drops for reasons its workload does not have.
//  3. power-throttled — bits 0x4 (SW power cap) or 0x80 (HW power brake); needs the bitmask.
//  4. memory-bound — memory > memoryBoundPct and compute < memoryBoundMaxComputePct.
//  5. PCIe-bound — the busier direction > pcieBoundLinkShare of capacity, compute ≤
//     computeBoundPct and memory ≤ memoryBoundPct (neither saturated: the GPU waits on the link).
//  6. compute-bound — compute > computeBoundPct and memory < computeBoundMaxMemoryPct.
//  7. idle — compute < idleBelowPct (low utilisation).
//  8. balanced — anything else: both used, or in between, with no threshold crossed.
//
// Comparisons are strict as the seeds write them (">80%", "<60%"); PCIe's "not high" is the
// complement of the high tests (≤). Arithmetic is written in the same order as the PromQL
// (x / peak * 100, floor(x / 32) % 4) so both give the same float64 and the same class.

// Class codes, the value of the recording rule hsi:gpu_class:code; no data records nothing.
var classCodes = map[Class]int{
	ComputeBound: 1, MemoryBound: 2, PCIeBound: 3, ThermalThrottled: 4, PowerThrottled: 5, Idle: 6, Balanced: 7, NoData: 0,
}

// Code is the class's number in the recording rule hsi:gpu_class:code (1 compute-bound,
// 2 memory-bound, 3 PCIe-bound, 4 thermal, 5 power, 6 idle, 7 balanced; 0 no data, which the
// rule does not record).
func (c Class) Code() int {
	switch c { // a switch, not the map: classification loops call it per step
	case ComputeBound:
		return 1
	case MemoryBound:
		return 2
	case PCIeBound:
		return 3
	case ThermalThrottled:
		return 4
	case PowerThrottled:
		return 5
	case Idle:
		return 6
	case Balanced:
		return 7
	}
	return 0
}

// ClassOfCode is the inverse of Code; an unknown code is NoData.
func ClassOfCode(code int) Class {
	for c, n := range classCodes {
		if n == code {
			return c
		}
	}
	return NoData
}

// Metric names the evidence and the rules refer to.
const (
	MetricSMActive    = "DCGM_FI_PROF_SM_ACTIVE"
	MetricGrEngine    = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
	MetricGPUUtil     = "DCGM_FI_DEV_GPU_UTIL"
	MetricDRAMActive  = "DCGM_FI_PROF_DRAM_ACTIVE"
	MetricMemCopyUtil = "DCGM_FI_DEV_MEM_COPY_UTIL"
	MetricPCIeTxBytes = "DCGM_FI_PROF_PCIE_TX_BYTES"
	MetricPCIeRxBytes = "DCGM_FI_PROF_PCIE_RX_BYTES"
	MetricPCIeTxPerS  = "DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND" // dcgm-exporter 4.10
	MetricPCIeRxPerS  = "DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND"
	MetricPCIeTxKB    = "DCGM_FI_DEV_PCIE_TX_THROUGHPUT"
	MetricPCIeRxKB    = "DCGM_FI_DEV_PCIE_RX_THROUGHPUT"
	MetricTemp        = "DCGM_FI_DEV_GPU_TEMP"
	MetricSMClock     = "DCGM_FI_DEV_SM_CLOCK"
	MetricClockEvents = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
	// MetricClockThrottle is the older name of the clock-event bitmask.
	MetricClockThrottle = "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"
	// DCGM 4.6's names of the same fields (the old ones stay as aliases); pkg/prometheus reads
	// them after the classic names, and so do the rules.
	MetricSMActiveRatio   = "DCGM_FI_PROF_SM_UTIL_RATIO"
	MetricGrEngineRatio   = "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO"
	MetricDRAMActiveRatio = "DCGM_FI_PROF_DRAM_UTIL_RATIO"
	MetricTempCelsius     = "DCGM_FI_DEV_GPU_TEMP_CELSIUS"
)

// Clock-event (throttle) bits of DCGM_FI_DEV_CLOCKS_EVENT_REASONS.
const (
	BitSWPowerCap   = 0x4
	BitSWThermal    = 0x20
	BitHWThermal    = 0x40
	BitHWPowerBrake = 0x80
)

// source says which metric a figure came from.
type source uint8

const (
	srcNone source = iota
	srcSMActive
	srcGrEngine
	srcGPUUtil
	srcDRAM
	srcMemCopy
)

var sourceNames = [...]string{"", MetricSMActive, MetricGrEngine, MetricGPUUtil, MetricDRAMActive, MetricMemCopyUtil}

// decision is a classification with the numbers behind it, formatted into evidence only when
// asked (formatting costs more than deciding; panels need the class of every step, the summary
// the evidence of one).
type decision struct {
	class           Class
	compute, memory float64 // percent; NaN when missing
	computeFrom     source
	memoryFrom      source
	link            float64 // busier PCIe direction, bytes/s; NaN when neither is exported
	maxClock        float64 // observed SM-clock maximum over the window; NaN when none
	bitmask         bool    // the clock-event bitmask was exported at this step
}

func isNaN(v float64) bool { return v != v }

// Compute is a reading's compute figure in percent and the metric it comes from: SM_ACTIVE,
// else GR_ENGINE_ACTIVE, else GPU_UTIL (the classes' own choice); NaN and "" when none.
func Compute(f Figures) (pct float64, metric string) {
	v, src := computeFigure(&f)
	return v, sourceNames[src]
}

// ComputeFigures are the figures Compute reads, by their catalogue names: a caller that needs
// only the compute figure fetches these (models.GPUFilter.Figures).
var ComputeFigures = []string{"sm_active", "gr_engine_active", "gpu_utilization"}

// computeFigure is SM_ACTIVE × 100, else GR_ENGINE_ACTIVE × 100, else GPU_UTIL.
func computeFigure(f *Figures) (float64, source) {
	switch {
	case !isNaN(f.SMActive):
		return f.SMActive * 100, srcSMActive
	case !isNaN(f.GrEngine):
		return f.GrEngine * 100, srcGrEngine
	case !isNaN(f.GPUUtil):
		return f.GPUUtil, srcGPUUtil
	}
	return math.NaN(), srcNone
}

// memoryFigure is DRAM_ACTIVE / peak × 100, else MEM_COPY_UTIL.
func memoryFigure(f *Figures, peak float64) (float64, source) {
	switch {
	case !isNaN(f.DRAMActive):
		return f.DRAMActive / peak * 100, srcDRAM
	case !isNaN(f.MemCopyUtil):
		return f.MemCopyUtil, srcMemCopy
	}
	return math.NaN(), srcNone
}

// busierLink is the larger of TX and RX, either when only one is exported, NaN when neither.
func busierLink(f *Figures) float64 {
	switch {
	case isNaN(f.PCIeRx):
		return f.PCIeTx
	case isNaN(f.PCIeTx):
		return f.PCIeRx
	case f.PCIeTx >= f.PCIeRx:
		return f.PCIeTx
	}
	return f.PCIeRx
}

// bits reports whether floor(mask / 2^shift) % modulo > 0, as the PromQL writes bit tests.
func bits(mask float64, div, modulo float64) bool {
	return math.Mod(math.Floor(mask/div), modulo) > 0
}

// thermalBits: 0x20 or 0x40, floor(x / 32) % 4 > 0.
func thermalBits(mask float64) bool { return bits(mask, 32, 4) }

// powerBits: 0x4 or 0x80.
func powerBits(mask float64) bool { return bits(mask, 4, 2) || bits(mask, 128, 2) }

func decide(f *Figures, maxClock float64, th *Thresholds) decision {
	d := decision{maxClock: maxClock, link: busierLink(f), bitmask: !isNaN(f.ClockEvents)}
	d.compute, d.computeFrom = computeFigure(f)
	d.memory, d.memoryFrom = memoryFigure(f, th.DRAMActivePeak)
	c, m := d.compute, d.memory
	switch {
	case isNaN(c) || isNaN(m):
		d.class = NoData
	case d.bitmask && thermalBits(f.ClockEvents),
		!d.bitmask && f.TempC > th.ThermalTempC && f.SMClockMHz < th.ThermalClockRatio*maxClock:
		d.class = ThermalThrottled
	case d.bitmask && powerBits(f.ClockEvents):
		d.class = PowerThrottled
	case m > th.MemoryBoundPct && c < th.MemoryBoundMaxComputePct:
		d.class = MemoryBound
	case d.link/th.PCIeCapacity() > th.PCIeBoundLinkShare && c <= th.ComputeBoundPct && m <= th.MemoryBoundPct:
		d.class = PCIeBound
	case c > th.ComputeBoundPct && m < th.ComputeBoundMaxMemoryPct:
		d.class = ComputeBound
	case c < th.IdleBelowPct:
		d.class = Idle
	default:
		d.class = Balanced
	}
	return d
}

// clockWindow keeps the maximum SM clock over the trailing window [t-w, t] of samples visited in
// time order: a monotonic deque, so a whole series costs O(n).
type clockWindow struct {
	w     time.Duration
	times []time.Time
	vals  []float64
	head  int
}

func (cw *clockWindow) push(t time.Time, v float64) float64 {
	lo := t.Add(-cw.w)
	for cw.head < len(cw.times) && cw.times[cw.head].Before(lo) {
		cw.head++
	}
	if !isNaN(v) {
		for len(cw.vals) > cw.head && cw.vals[len(cw.vals)-1] <= v {
			cw.vals = cw.vals[:len(cw.vals)-1]
			cw.times = cw.times[:len(cw.times)-1]
		}
		cw.vals = append(cw.vals, v)
		cw.times = append(cw.times, t)
	}
	if cw.head == len(cw.vals) {
		return math.NaN()
	}
	return cw.vals[cw.head]
}

// decideSeries classifies every sample, calling each with the decision.
func decideSeries(s *GPUSeries, th *Thresholds, each func(i int, d *decision)) {
	cw := clockWindow{w: clockMaxWindow(th)}
	for i := range s.Samples {
		smp := &s.Samples[i]
		maxClock := cw.push(smp.Time, smp.Figures.SMClockMHz)
		d := decide(&smp.Figures, maxClock, th)
		each(i, &d)
	}
}

// clockMaxWindow is th's window of the observed SM-clock maximum; a zero Thresholds (never
// validated) gets the default rather than a window that holds only the sample itself.
func clockMaxWindow(th *Thresholds) time.Duration {
	if th.ClockMaxWindow <= 0 {
		return DefaultThresholds().ClockMaxWindow
	}
	return th.ClockMaxWindow
}

// ClassifySeries classifies each sample of one GPU, with its evidence. The observed SM-clock
// maximum is taken over the samples of the trailing Thresholds.ClockMaxWindow ([t-window, t]) of
// this series, so the series should start a window before the first step that matters (the
// gpuClass query fetches that history), as Prometheus' max_over_time sees the day before a range.
func ClassifySeries(s GPUSeries, th Thresholds) []Result {
	out := make([]Result, len(s.Samples))
	decideSeries(&s, &th, func(i int, d *decision) {
		out[i] = Result{Time: s.Samples[i].Time, Class: d.class, Evidence: d.evidence(&s.Samples[i].Figures, &th)}
	})
	return out
}

// ClassesOf is ClassifySeries without the evidence: the class of each sample, for panels that
// show every step (several times faster; Explain gives any one step's evidence).
func ClassesOf(s GPUSeries, th Thresholds) []Class {
	out := make([]Class, len(s.Samples))
	decideSeries(&s, &th, func(i int, d *decision) { out[i] = d.class })
	return out
}

// Explain classifies sample i of s with its evidence, exactly as ClassifySeries would.
func Explain(s GPUSeries, th Thresholds, i int) Result {
	if i < 0 || i >= len(s.Samples) {
		return Result{Class: NoData, Evidence: []string{"no such sample"}}
	}
	w := clockMaxWindow(&th)
	t := s.Samples[i].Time
	maxClock := math.NaN()
	for j := i; j >= 0 && !s.Samples[j].Time.Before(t.Add(-w)); j-- {
		if v := s.Samples[j].Figures.SMClockMHz; !isNaN(v) && (isNaN(maxClock) || v > maxClock) {
			maxClock = v
		}
	}
	d := decide(&s.Samples[i].Figures, maxClock, &th)
	return Result{Time: t, Class: d.class, Evidence: d.evidence(&s.Samples[i].Figures, &th)}
}

// Dominant is the class most results have, ignoring "no data" unless every result is; ties go
// to the earlier class in Classes. share is its fraction of all results (gaps included), 0 for
// no results (class NoData).
func Dominant(results []Result) (Class, float64) {
	if len(results) == 0 {
		return NoData, 0
	}
	counts := map[Class]int{}
	for _, r := range results {
		counts[r.Class]++
	}
	best, n := NoData, 0
	for _, c := range Classes {
		if c != NoData && counts[c] > n {
			best, n = c, counts[c]
		}
	}
	if n == 0 {
		best, n = NoData, counts[NoData]
	}
	return best, float64(n) / float64(len(results))
}

// evidence formats the decision: the figures with their source metrics, the thresholds they
// crossed (by setting key), and any fallback.
func (d *decision) evidence(f *Figures, th *Thresholds) []string {
	var ev []string
	add := func(parts ...string) { ev = append(ev, strings.Join(parts, "")) }
	switch d.class {
	case NoData:
		if isNaN(d.compute) {
			add("no compute figure: ", MetricSMActive, ", ", MetricGrEngine, " and ", MetricGPUUtil, " all missing")
		}
		if isNaN(d.memory) {
			add("no memory-bandwidth figure: ", MetricDRAMActive, " and ", MetricMemCopyUtil, " both missing")
		}
		return ev
	case ThermalThrottled:
		if d.bitmask {
			add("clock-event bitmask ", hex(f.ClockEvents), " has ", bitNames(f.ClockEvents, BitSWThermal, BitHWThermal))
		} else {
			add("no clock-event bitmask (", MetricClockEvents, "): temperature ", num(f.TempC, 0), " °C > thermalTempC ",
				num(th.ThermalTempC, 0), " and SM clock ", num(f.SMClockMHz, 0), " MHz < thermalClockRatio ",
				num(th.ThermalClockRatio, 2), " × observed max ", num(d.maxClock, 0), " MHz (clockMaxWindow ", PromDuration(clockMaxWindow(th)), ")")
		}
	case PowerThrottled:
		add("clock-event bitmask ", hex(f.ClockEvents), " has ", bitNames(f.ClockEvents, BitSWPowerCap, BitHWPowerBrake))
	case MemoryBound:
		add(d.memoryText(th), " > memoryBoundPct ", num(th.MemoryBoundPct, 0))
		add(d.computeText(), " < memoryBoundMaxComputePct ", num(th.MemoryBoundMaxComputePct, 0))
	case PCIeBound:
		capacity := th.PCIeCapacity()
		add("PCIe ", d.linkText(f), " ", num(d.link/1e9, 1), " GB/s = ", num(100*d.link/capacity, 0), "% of Gen",
			strconv.Itoa(th.PCIeGeneration), " x", strconv.Itoa(th.PCIeWidth), " capacity ", num(capacity/1e9, 1),
			" GB/s > pcieBoundLinkShare ", num(100*th.PCIeBoundLinkShare, 0), "%")
		add(d.computeText(), " ≤ computeBoundPct ", num(th.ComputeBoundPct, 0), ", ", d.memoryText(th), " ≤ memoryBoundPct ", num(th.MemoryBoundPct, 0))
	case ComputeBound:
		add(d.computeText(), " > computeBoundPct ", num(th.ComputeBoundPct, 0))
		add(d.memoryText(th), " < computeBoundMaxMemoryPct ", num(th.ComputeBoundMaxMemoryPct, 0))
	case Idle:
		add(d.computeText(), " < idleBelowPct ", num(th.IdleBelowPct, 0), " (low utilisation)")
	case Balanced:
		add(d.computeText(), ", ", d.memoryText(th), ": no class threshold crossed")
	}
	if d.computeFrom == srcGPUUtil {
		add("fallback: no ", MetricSMActive, " or ", MetricGrEngine, ", compute from ", MetricGPUUtil)
	}
	if d.memoryFrom == srcMemCopy {
		add("fallback: no ", MetricDRAMActive, ", memory bandwidth from ", MetricMemCopyUtil)
	}
	return ev
}

func (d *decision) computeText() string {
	if d.computeFrom == srcGPUUtil {
		return "compute " + num(d.compute, 1) + "% (" + MetricGPUUtil + ")"
	}
	return "compute " + num(d.compute, 1) + "% (" + sourceNames[d.computeFrom] + " " + num(d.compute/100, 3) + ")"
}

func (d *decision) memoryText(th *Thresholds) string {
	if d.memoryFrom == srcDRAM {
		return "memory bandwidth " + num(d.memory, 1) + "% (" + MetricDRAMActive + " " + num(d.memory*th.DRAMActivePeak/100, 3) +
			" / dramActivePeak " + num(th.DRAMActivePeak, 2) + ")"
	}
	return "memory bandwidth " + num(d.memory, 1) + "% (" + MetricMemCopyUtil + ")"
}

func (d *decision) linkText(f *Figures) string {
	if !isNaN(f.PCIeTx) && f.PCIeTx == d.link {
		return "TX"
	}
	return "RX"
}

func num(v float64, prec int) string { return strconv.FormatFloat(v, 'f', prec, 64) }

func hex(mask float64) string {
	if mask < 0 || mask > math.MaxUint32 {
		return num(mask, 0)
	}
	return "0x" + strconv.FormatUint(uint64(mask), 16)
}

var bitLabels = map[int]string{
	BitSWPowerCap: "SW power cap (0x4)", BitSWThermal: "SW thermal slowdown (0x20)",
	BitHWThermal: "HW thermal slowdown (0x40)", BitHWPowerBrake: "HW power brake (0x80)",
}

func bitNames(mask float64, want ...int) string {
	var names []string
	for _, b := range want {
		if bits(mask, float64(b), 2) {
			names = append(names, bitLabels[b])
		}
	}
	return strings.Join(names, " and ")
}

// TrailingShares gives, at each step, the share of each class among the classified steps (not
// "no data") in the trailing window [t-w, t]; NaN where the window holds none. This is
// avg_over_time(hsi:gpu_class:state[w]) of the recording rules when the rules are evaluated at
// the same steps. classes[i] is the class at times[i], in time order.
func TrailingShares(times []time.Time, classes []Class, w time.Duration) map[Class][]float64 {
	// Counts by class code (1..7) in a sliding window: no map work per step.
	var counts [8]int
	shares := [8][]float64{}
	for code := 1; code < len(shares); code++ {
		shares[code] = make([]float64, len(times))
	}
	classified, lo := 0, 0
	for i, t := range times {
		if code := classes[i].Code(); code > 0 {
			counts[code]++
			classified++
		}
		for ; times[lo].Before(t.Add(-w)); lo++ {
			if code := classes[lo].Code(); code > 0 {
				counts[code]--
				classified--
			}
		}
		for code := 1; code < len(shares); code++ {
			if classified == 0 {
				shares[code][i] = math.NaN()
			} else {
				shares[code][i] = float64(counts[code]) / float64(classified)
			}
		}
	}
	out := make(map[Class][]float64, 7)
	for code := 1; code < len(shares); code++ {
		out[ClassOfCode(code)] = shares[code]
	}
	return out
}
