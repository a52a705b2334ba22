package gpusim

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"time"
)

// The fixture hosts. Hosts A to C stand for real exporters (no simulated label): their label
// sets are the exporters' own, plus job and instance as a Prometheus scrape adds them. Host D's
// series, and the kube-state-metrics fixtures of its pods, also carry simulated="true".
const (
	// FixtureHostA runs a current dcgm-exporter on seven A100s, one class per GPU.
	FixtureHostA = "fixture-node-a"
	// FixtureHostB runs an old dcgm-exporter on four T4s.
	FixtureHostB = "fixture-node-b"
	// FixtureHostC runs a current dcgm-exporter with --kubernetes-virtual-gpus on one A100
	// time-sliced between two pods: each series comes once per pod, same value, with that pod's
	// pod, namespace, container and vgpu labels.
	FixtureHostC = "fixture-node-c"
	// FixtureHostD runs a current dcgm-exporter with the ECC counters enabled on four H100s of
	// an inference service that fail during the window (XID 79, double-bit ECC errors with a
	// row-remap failure and PCIe replays, a framebuffer near full while its pod restarts); every
	// series of it is labelled simulated="true". FixtureIncidents says what happens when.
	FixtureHostD = "fixture-node-d"
	// FixtureJob is the job label of every fixture series; instance is "<host>:9400".
	FixtureJob = "dcgm"
)

// The window the test bed loads: the two hours before it starts, one sample every 15 s (half
// dcgm-exporter's default 30 s collection interval).
const (
	FixtureHistory = 2 * time.Hour
	FixtureStep    = 15 * time.Second
)

// FixtureGPU is one GPU of the fixtures and the classes it shows over the window.
type FixtureGPU struct {
	GPU
	// Shows says in words what the GPU shows.
	Shows  string
	phases []phaseDef
	// SharedBy are the Kubernetes labels of each pod sharing the GPU, when the exporter copies
	// its series per pod (--kubernetes-virtual-gpus); empty for a GPU exported once.
	SharedBy []map[string]string
	// ECC: the exporter's counters file enables the ECC counters (ECCMetrics), off in
	// dcgm-exporter's default counters.
	ECC bool
	// fault changes the GPU's sample at t (an XID, memory errors, a full framebuffer); nil for a
	// healthy GPU.
	fault func(s *Sample, class string, t, start, end time.Time)
}

// Metrics are the series the GPU's exporter sends: its flavour's, plus the ECC counters where
// enabled.
func (g FixtureGPU) Metrics() []Metric {
	ms := g.Exporter.Metrics()
	if g.ECC {
		ms = append(ms, ECCMetrics...)
	}
	return ms
}

// fraction is the moment num/den of the way through [start, end], rounded up to the nanosecond
// as Phases cuts phases: a sample at t is at or after it when !t.Before(fraction(...)).
func fraction(start, end time.Time, num, den int64) time.Time {
	w := end.Sub(start).Nanoseconds()
	return start.Add(time.Duration((w*num + den - 1) / den))
}

// LabelSets are the label sets the exporter writes the GPU's series under: one, or one per pod
// sharing it.
func (g FixtureGPU) LabelSets() [][]Label {
	if len(g.SharedBy) == 0 {
		return [][]Label{g.LabelSet()}
	}
	var out [][]Label
	for _, pod := range g.SharedBy {
		c := g.GPU
		c.Labels = pod
		out = append(out, c.LabelSet())
	}
	return out
}

// phaseDef: the GPU shows class until num/den of the window (the last phase until its end).
type phaseDef struct {
	num, den int64
	class    string
}

func whole(class string) []phaseDef { return []phaseDef{{1, 1, class}} }

var fixtureGPUs = func() []FixtureGPU {
	const driverA, driverB = "550.127.05", "470.82.01"
	k8s := func(pod, container string) map[string]string {
		return map[string]string{"pod": pod, "namespace": "inference", "container": container}
	}
	k8sOld := func(pod, container string) map[string]string {
		return map[string]string{"pod_name": pod, "pod_namespace": "inference", "container_name": container}
	}
	a := func(i int, labels map[string]string, shows string, phases []phaseDef) FixtureGPU {
		return FixtureGPU{GPU: NewGPU(FixtureHostA, i, A100SXM480GB, Current, driverA, labels), Shows: shows, phases: phases}
	}
	d := func(i int, pod, shows string, phases []phaseDef, fault func(*Sample, string, time.Time, time.Time, time.Time)) FixtureGPU {
		labels := map[string]string{"pod": pod, "namespace": "inference", "container": "server", "simulated": "true"}
		return FixtureGPU{GPU: NewGPU(FixtureHostD, i, H10080GBHBM3, Current, driverA, labels), Shows: shows, phases: phases, ECC: true, fault: fault}
	}
	b := func(i int, labels map[string]string, shows string, phases []phaseDef) FixtureGPU {
		return FixtureGPU{GPU: NewGPU(FixtureHostB, i, TeslaT4, Old, driverB, labels), Shows: shows, phases: phases}
	}
	return []FixtureGPU{
		a(0, k8s("yolo26-detector-0", "detector"), "compute-bound all window: util 95, SM_ACTIVE 0.92, DRAM_ACTIVE 0.25", whole(ComputeBound)),
		a(1, k8s("nemotron-embedder-0", "embedder"), "memory-bound all window: util 40, mem-copy 85, SM_ACTIVE 0.35, DRAM_ACTIVE 0.75", whole(MemoryBound)),
		a(2, k8s("video-ingest-0", "ingest"), "PCIe-bound all window: util 30, PCIe TX and RX 25.2 GB/s each (0.8 of Gen4 x16)", whole(PCIeBound)),
		a(3, k8s("yolo26-detector-1", "detector"), "thermal-throttled all window: 88 °C, SM clock ~1100 of 1410 MHz, clock events 0x40 (HW thermal)", whole(ThermalThrottled)),
		a(4, k8s("nemotron-llm-0", "llm"), "power-throttled all window: power at its 400 W limit, clock events 0x4 (SW power cap)", whole(PowerThrottled)),
		a(5, nil, "idle all window: util 2, clock events 0x1; no pod (no Kubernetes labels)", whole(Idle)),
		a(6, k8s("yolo26-detector-2", "detector"), "balanced for the first third (util 60, mem-copy 40), compute-bound the second, idle the last",
			[]phaseDef{{1, 3, Balanced}, {2, 3, ComputeBound}, {1, 1, Idle}}),
		b(0, k8sOld("ai-detector-0", "detector"), "compute-bound by utilisation: util 95, mem-copy 30", whole(ComputeBound)),
		b(1, k8sOld("ai-enrichment-0", "enrichment"), "memory-bound by mem-copy: util 40, mem-copy 85", whole(MemoryBound)),
		b(2, k8sOld("ai-detector-1", "detector"), "balanced at 1590 MHz (its maximum) for the first twelfth, then thermal-throttled: 88 °C, SM clock ~900 MHz, no bitmask",
			[]phaseDef{{1, 12, Balanced}, {1, 1, ThermalThrottled}}),
		b(3, k8sOld("nemotron-backend-0", "backend"), "balanced (util 60, mem-copy 40) with no samples at all in the middle third",
			[]phaseDef{{1, 3, Balanced}, {2, 3, NoData}, {1, 1, Balanced}}),
		{GPU: NewGPU(FixtureHostC, 0, A100SXM480GB, Current, driverA, nil),
			Shows:  "compute-bound all window, time-sliced between two pods: every series twice, once per pod (vgpu 0 and 1), same value",
			phases: whole(ComputeBound), SharedBy: []map[string]string{
				{"pod": "triton-shared-0", "namespace": "inference", "container": "triton", "vgpu": "0"},
				{"pod": "embedder-shared-0", "namespace": "inference", "container": "embedder", "vgpu": "1"},
			}},
		d(0, "llm-decode-0", "balanced until 3/4 of the window, then XID 79 (fallen off the bus): DCGM_FI_DEV_XID_ERRORS 79 from then on, util and SM_ACTIVE 0, power at idle",
			[]phaseDef{{3, 4, Balanced}, {1, 1, Idle}}, faultXID),
		d(1, "llm-decode-1", "memory-bound all window; from 7/10: 2 double-bit ECC errors (volatile and aggregate), 1 uncorrectable remapped row, row-remap failure 1, PCIe replays +50/min",
			whole(MemoryBound), faultMemoryErrors),
		d(2, "llm-prefill-0", "compute-bound all window; framebuffer ~64 % used, from 3/5 ~96 % (~78,600 of 81,559 MiB) while its pod's container restarts at 4/5 and 9/10 (kube-state-metrics, reason Error)",
			whole(ComputeBound), faultFramebufferFull),
		d(3, "embedder-0", "compute-bound all window, no fault; its pod's container tokenizer (not on the GPU) is OOM-killed at 17/20 (kube-state-metrics)",
			whole(ComputeBound), nil),
	}
}()

// Host D's faults, at fractions of the window (FixtureIncidents lists them with their times).
var (
	xidAt         = [2]int64{3, 4}
	memErrorsAt   = [2]int64{7, 10}
	fbFullAt      = [2]int64{3, 5}
	restartsAt    = [][2]int64{{4, 5}, {9, 10}}
	oomKillAt     = [2]int64{17, 20}
	replaysPerMin = 50.0
	fbFullMiB     = 78600.0
)

// The XID code of host D's GPU 0: 79, "GPU has fallen off the bus".
const fixtureXID = 79

func after(t, start, end time.Time, at [2]int64) bool {
	return !t.Before(fraction(start, end, at[0], at[1]))
}

// faultXID: from the XID on the GPU does no work (its phase is idle) and reports XID 79.
func faultXID(s *Sample, _ string, t, start, end time.Time) {
	if !after(t, start, end, xidAt) {
		return
	}
	s.XID = fixtureXID
	s.GPUUtil, s.MemCopyUtil, s.SMActive, s.GrEngine, s.Tensor, s.DRAMActive = 0, 0, 0, 0, 0, 0
}

// faultMemoryErrors: two uncorrectable (double-bit) ECC errors, a row remapped for them and a
// failed remap, and a PCIe link replaying fast.
func faultMemoryErrors(s *Sample, _ string, t, start, end time.Time) {
	if !after(t, start, end, memErrorsAt) {
		return
	}
	s.ECCDBEVol, s.ECCDBEAgg = 2, 2
	s.RowsUncorrectable, s.RowRemapFailure = 1, 1
	s.PCIeReplays = math.Round(replaysPerMin * t.Sub(fraction(start, end, memErrorsAt[0], memErrorsAt[1])).Minutes())
}

// faultFramebufferFull: the framebuffer ~96 % used (the class's noise kept, scaled).
func faultFramebufferFull(s *Sample, class string, t, start, end time.Time) {
	if !after(t, start, end, fbFullAt) {
		return
	}
	s.FBUsedMiB = math.Round(s.FBUsedMiB * fbFullMiB / Nominal(class, H10080GBHBM3).FBUsedMiB)
}

// FixtureGPUs lists the fixture GPUs: host A's seven, host B's four, host C's shared one, host
// D's four.
func FixtureGPUs() []FixtureGPU { return slices.Clone(fixtureGPUs) }

// Phase is an interval in which a GPU shows one class: [From, To), the last phase of a window
// including its end.
type Phase struct {
	Class    string
	From, To time.Time
}

// Phases cuts the window [start, end] into the GPU's phases.
func (g FixtureGPU) Phases(start, end time.Time) []Phase {
	w := end.Sub(start).Nanoseconds()
	var out []Phase
	from := start
	for i, p := range g.phases {
		to := end
		if i < len(g.phases)-1 {
			to = start.Add(time.Duration((w*p.num + p.den - 1) / p.den))
		}
		out = append(out, Phase{p.class, from, to})
		from = to
	}
	return out
}

// classAt is the GPU's class at t, NoData in a gap or outside [start, end].
func (g FixtureGPU) classAt(t, start, end time.Time) string {
	if t.Before(start) || t.After(end) {
		return NoData
	}
	d, w := t.Sub(start).Nanoseconds(), end.Sub(start).Nanoseconds()
	for i, p := range g.phases {
		if i == len(g.phases)-1 || d*p.den < w*p.num {
			return p.class
		}
	}
	return NoData
}

// FixtureGPUFor finds a fixture GPU by host and index.
func FixtureGPUFor(host string, gpu int) (FixtureGPU, bool) {
	for _, g := range fixtureGPUs {
		if g.Host == host && g.Index == gpu {
			return g, true
		}
	}
	return FixtureGPU{}, false
}

// FixtureClass is the class (pkg/classify's name) that fixture GPU gpu of host shows at t, for
// fixtures made over [start, end]: "no data" in a gap, outside the window or for a GPU the
// fixtures do not have. A Prometheus query at t sees the sample at or before t, so assert at
// least one step away from a phase boundary (Phases gives them).
func FixtureClass(host string, gpu int, t, start, end time.Time) string {
	g, ok := FixtureGPUFor(host, gpu)
	if !ok {
		return NoData
	}
	return g.classAt(t, start, end)
}

// fixtureMetrics is every series of either flavour, in the order the file lists them.
var fixtureMetrics = []Metric{mSMClock, mMemClock, mMemTemp, mGPUTemp, mPower, mEnergy, mPCIeTxOld, mPCIeRxOld,
	mReplay, mGPUUtil, mMemCopy, mXID, mFBFree, mFBUsed, mFBRsvd, mECCSBEVol, mECCDBEVol, mECCSBEAgg, mECCDBEAgg, mRowsUncorr, mRowsCorr, mRowRemapKO, mClockEvts,
	mGrEngine, mSMActive, mTensor, mDRAM,
	mPCIeTx, mPCIeRx}

// WriteFixtures writes the fixtures' series from start to end, one sample every step, in
// OpenMetrics with timestamps ending in "# EOF": the input of
// `promtool tsdb create-blocks-from openmetrics FILE DIR`. Each series family appears once, its
// series one after another, each series' samples in time order. Same arguments, same bytes.
func WriteFixtures(out io.Writer, start, end time.Time, step time.Duration) error {
	if step <= 0 || end.Before(start) {
		return fmt.Errorf("fixtures: need step > 0 and start <= end (got step %s, %s..%s)", step, start, end)
	}
	var times []time.Time
	for t := start; !t.After(end); t = t.Add(step) {
		times = append(times, t)
	}
	// samples[g][k] is GPU g's sample at times[k]; nil in a gap.
	samples := make([][]*Sample, len(fixtureGPUs))
	for gi, g := range fixtureGPUs {
		samples[gi] = make([]*Sample, len(times))
		energy := 1.5e12 + float64(gi)*3.7e10 // mJ since boot: some weeks at a few hundred watts
		power := 0.0
		for k, t := range times {
			if k > 0 {
				energy += power * float64(step.Milliseconds())
			}
			class := g.classAt(t, start, end)
			if class == NoData {
				continue // the GPU keeps drawing power, nobody records it
			}
			r := Noisy(Nominal(class, g.Model), class, g.Host+"/"+strconv.Itoa(g.Index)+"/"+strconv.FormatInt(t.UnixMilli(), 10))
			power = r.PowerW
			s := newSample(g.GPU, r, energy)
			if g.fault != nil {
				g.fault(&s, class, t, start, end)
			}
			samples[gi][k] = &s
		}
	}
	stamps := make([]string, len(times))
	for k, t := range times {
		stamps[k] = strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64)
	}
	w := bufio.NewWriterSize(out, 1<<16)
	for _, m := range fixtureMetrics {
		header := false
		for gi, g := range fixtureGPUs {
			if !slices.ContainsFunc(g.Metrics(), func(x Metric) bool { return x.Name == m.Name }) {
				continue
			}
			if !header {
				fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", m.Name, m.Help, m.Name, m.Type)
				header = true
			}
			for _, set := range g.LabelSets() {
				labels := append(set, Label{"instance", g.Host + ":9400"}, Label{"job", FixtureJob})
				for k, s := range samples[gi] {
					if s == nil {
						continue
					}
					writeSeries(w, m.Name, labels)
					w.WriteByte(' ')
					w.WriteString(formatValue(m, m.value(s)))
					w.WriteByte(' ')
					w.WriteString(stamps[k])
					w.WriteByte('\n')
				}
			}
		}
	}
	w.WriteString("# EOF\n")
	return w.Flush()
}
