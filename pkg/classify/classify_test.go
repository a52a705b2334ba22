package classify

import (
	"math"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// fig builds Figures from the seeds' vocabulary: all missing but what is set.
func fig(set func(f *Figures)) Figures {
	f := Missing()
	set(&f)
	return f
}

func one(f Figures) Result {
	return ClassifySeries(GPUSeries{Samples: []Sample{{Time: t0, Figures: f}}}, DefaultThresholds())[0]
}

func TestSeedExamplesAndFallbacks(t *testing.T) {
	cases := []struct {
		name     string
		f        Figures
		want     Class
		evidence []string // substrings that must appear in the evidence
	}{
		// The Continuous Profiling Guide's examples with the exporter's default metrics (no profiling ratios).
		{"001 compute-bound 95/30", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil = 95, 30 }), ComputeBound,
			[]string{"compute 95.0% (DCGM_FI_DEV_GPU_UTIL) > computeBoundPct 80", "memory bandwidth 30.0% (DCGM_FI_DEV_MEM_COPY_UTIL) < computeBoundMaxMemoryPct 60",
				"fallback: no DCGM_FI_PROF_SM_ACTIVE or DCGM_FI_PROF_GR_ENGINE_ACTIVE, compute from DCGM_FI_DEV_GPU_UTIL",
				"fallback: no DCGM_FI_PROF_DRAM_ACTIVE, memory bandwidth from DCGM_FI_DEV_MEM_COPY_UTIL"}},
		{"001 memory-bound 40/85", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil = 40, 85 }), MemoryBound,
			[]string{"memory bandwidth 85.0% (DCGM_FI_DEV_MEM_COPY_UTIL) > memoryBoundPct 70", "compute 40.0% (DCGM_FI_DEV_GPU_UTIL) < memoryBoundMaxComputePct 70"}},
		{"001 PCIe-bound 30/20 with RX at 80% of Gen4 x16", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.PCIeTx, f.PCIeRx = 30, 20, 2e9, 25.2e9 }), PCIeBound,
			[]string{"PCIe RX 25.2 GB/s = 80% of Gen4 x16 capacity 31.5 GB/s > pcieBoundLinkShare 60%", "compute 30.0% (DCGM_FI_DEV_GPU_UTIL) ≤ computeBoundPct 80"}},
		{"001 PCIe-bound by TX alone (RX not exported)", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.PCIeTx = 30, 20, 20e9 }), PCIeBound,
			[]string{"PCIe TX 20.0 GB/s = 63% of Gen4"}},
		{"001 30/20 with a quiet link is low utilisation", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.PCIeTx, f.PCIeRx = 30, 20, 1e9, 1e9 }), Idle,
			[]string{"compute 30.0% (DCGM_FI_DEV_GPU_UTIL) < idleBelowPct 50 (low utilisation)"}},
		// The TensorRT-LLM Nsight Systems guide's patterns with profiling ratios: they win over GPU_UTIL / MEM_COPY_UTIL.
		{"003 compute-bound SM 0.95, DRAM 0.3 (37.5% of its 0.8 peak)", fig(func(f *Figures) { f.SMActive, f.DRAMActive, f.GPUUtil, f.MemCopyUtil = 0.95, 0.3, 10, 90 }), ComputeBound,
			[]string{"compute 95.0% (DCGM_FI_PROF_SM_ACTIVE 0.950) > computeBoundPct 80", "memory bandwidth 37.5% (DCGM_FI_PROF_DRAM_ACTIVE 0.300 / dramActivePeak 0.80) < computeBoundMaxMemoryPct 60"}},
		{"003 memory-bound: DRAM 0.72 is 90% of the practical peak", fig(func(f *Figures) { f.SMActive, f.DRAMActive = 0.5, 0.72 }), MemoryBound,
			[]string{"memory bandwidth 90.0% (DCGM_FI_PROF_DRAM_ACTIVE 0.720 / dramActivePeak 0.80) > memoryBoundPct 70"}},
		{"GR_ENGINE_ACTIVE when SM_ACTIVE is off (its default)", fig(func(f *Figures) { f.GrEngine, f.DRAMActive, f.GPUUtil = 0.92, 0.2, 40 }), ComputeBound,
			[]string{"compute 92.0% (DCGM_FI_PROF_GR_ENGINE_ACTIVE 0.920) > computeBoundPct 80"}},
		{"003 Pattern 1 low utilisation with SM_ACTIVE", fig(func(f *Figures) { f.SMActive, f.DRAMActive = 0.2, 0.1 }), Idle, nil},
		{"balanced: both in use, no threshold crossed", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil = 75, 65 }), Balanced,
			[]string{"compute 75.0% (DCGM_FI_DEV_GPU_UTIL), memory bandwidth 65.0% (DCGM_FI_DEV_MEM_COPY_UTIL): no class threshold crossed"}},
		{"busy compute and memory is balanced, not compute-bound", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil = 95, 65 }), Balanced, nil},
		{"saturated link with compute high is not PCIe-bound", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.PCIeRx = 95, 30, 30e9 }), ComputeBound, nil},
		// Throttling from the bitmask comes first and needs no temperature.
		{"HW thermal bit 0x40 over compute-bound figures", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.ClockEvents = 95, 30, 0x40 }), ThermalThrottled,
			[]string{"clock-event bitmask 0x40 has HW thermal slowdown (0x40)"}},
		{"SW thermal bit 0x20 among others", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.ClockEvents = 50, 30, 0x1|0x20|0x100 }), ThermalThrottled,
			[]string{"bitmask 0x121 has SW thermal slowdown (0x20)"}},
		{"SW power cap 0x4", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.ClockEvents = 40, 85, 0x4 }), PowerThrottled,
			[]string{"clock-event bitmask 0x4 has SW power cap (0x4)"}},
		{"HW power brake 0x80", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.ClockEvents = 40, 20, 0x80 }), PowerThrottled,
			[]string{"HW power brake (0x80)"}},
		{"thermal wins over power", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.ClockEvents = 40, 20, 0x4|0x40 }), ThermalThrottled, nil},
		{"other bits (idle 0x1, app clocks 0x2, HW slowdown 0x8, sync boost 0x10) are not throttling classes",
			fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.ClockEvents = 95, 30, 0x1|0x2|0x8|0x10|0x100 }), ComputeBound, nil},
		{"bitmask exported without thermal bits: 88 °C alone is not throttling", fig(func(f *Figures) {
			f.GPUUtil, f.MemCopyUtil, f.ClockEvents, f.TempC, f.SMClockMHz = 95, 30, 0, 88, 900
		}), ComputeBound, nil},
		{"no bitmask, hot, but no clock: not thermal", fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.TempC = 95, 30, 90 }), ComputeBound, nil},
		// Missing data.
		{"nothing exported", Missing(), NoData, []string{"no compute figure", "no memory-bandwidth figure"}},
		{"compute only", fig(func(f *Figures) { f.GPUUtil = 95 }), NoData, []string{"no memory-bandwidth figure: DCGM_FI_PROF_DRAM_ACTIVE and DCGM_FI_DEV_MEM_COPY_UTIL both missing"}},
		{"memory only, even throttled", fig(func(f *Figures) { f.MemCopyUtil, f.ClockEvents = 95, 0x40 }), NoData,
			[]string{"no compute figure: DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_GR_ENGINE_ACTIVE and DCGM_FI_DEV_GPU_UTIL all missing"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := one(c.f)
			if r.Class != c.want {
				t.Fatalf("class %s, want %s; evidence %q", r.Class, c.want, r.Evidence)
			}
			if !r.Time.Equal(t0) {
				t.Errorf("time %v", r.Time)
			}
			if len(r.Evidence) == 0 {
				t.Errorf("no evidence")
			}
			joined := strings.Join(r.Evidence, " | ")
			for _, want := range c.evidence {
				if !strings.Contains(joined, want) {
					t.Errorf("evidence %q lacks %q", joined, want)
				}
			}
		})
	}
}

// The thermal fallback (old exporters, no bitmask) compares the SM clock with its maximum over
// the trailing window: the Continuous Profiling Guide's "temperature > 83 °C, SM clock below expected".
func TestThermalFallbackUsesTheObservedClockMaximumOverTheWindow(t *testing.T) {
	busy := func(at time.Duration, temp, clock float64) Sample {
		return Sample{Time: t0.Add(at), Figures: fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.TempC, f.SMClockMHz = 95, 30, temp, clock })}
	}
	s := GPUSeries{Samples: []Sample{
		busy(0, 70, 1410),                           // cool, full clock: the maximum
		busy(30*time.Minute, 88, 1100),              // 88 °C and 1100 < 0.9 × 1410: throttled
		busy(40*time.Minute, 88, 1300),              // 1300 ≥ 1269: not below expected
		busy(50*time.Minute, 80, 1000),              // slow but 80 °C: not thermal
		busy(60*time.Minute, 88, 1100),              // t0 is exactly one window back: still counted (as Prometheus 2.x)
		busy(60*time.Minute+time.Second, 88, 1100),  // t0 left the window; max is 1300, 1100 < 1170: throttled
		busy(100*time.Minute+time.Second, 88, 1100), // max now 1100 (the 1300 left): not below
		{Time: t0.Add(110 * time.Minute), Figures: fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.TempC = 95, 30, 88 })}, // clock missing
	}}
	want := []Class{ComputeBound, ThermalThrottled, ComputeBound, ComputeBound, ThermalThrottled, ThermalThrottled, ComputeBound, ComputeBound}
	th := DefaultThresholds()
	th.ClockMaxWindow = time.Hour
	got := ClassifySeries(s, th)
	fast := ClassesOf(s, th)
	for i, r := range got {
		if r.Class != want[i] || fast[i] != want[i] {
			t.Errorf("sample %d: ClassifySeries %s, ClassesOf %s, want %s; evidence %q", i, r.Class, fast[i], want[i], r.Evidence)
		}
		if ex := Explain(s, th, i); ex.Class != r.Class || strings.Join(ex.Evidence, "|") != strings.Join(r.Evidence, "|") {
			t.Errorf("sample %d: Explain %s %q differs from ClassifySeries %s %q", i, ex.Class, ex.Evidence, r.Class, r.Evidence)
		}
	}
	ev := strings.Join(got[1].Evidence, " | ")
	// With the default day-long window the 1410 MHz maximum is still there at the end.
	if last := ClassesOf(s, DefaultThresholds())[6]; last != ThermalThrottled {
		t.Errorf("a 24h clock window keeps 1410 MHz as the maximum: %s, want thermal-throttled", last)
	}
	if want := "no clock-event bitmask (DCGM_FI_DEV_CLOCKS_EVENT_REASONS): temperature 88 °C > thermalTempC 83 and SM clock 1100 MHz < thermalClockRatio 0.90 × observed max 1410 MHz (clockMaxWindow 1h)"; !strings.Contains(ev, want) {
		t.Errorf("evidence %q lacks %q", ev, want)
	}
}

func TestThresholdsAreConfigurable(t *testing.T) {
	th := DefaultThresholds()
	f := fig(func(f *Figures) { f.SMActive, f.DRAMActive = 0.85, 0.3 })
	if c := ClassesOf(GPUSeries{Samples: []Sample{{Time: t0, Figures: f}}}, th)[0]; c != ComputeBound {
		t.Fatalf("SM 0.85 with the default 80%%: %s", c)
	}
	th.ComputeBoundPct = 90 // the Nsight Systems guide's stricter "SM > 90 %"
	if c := ClassesOf(GPUSeries{Samples: []Sample{{Time: t0, Figures: f}}}, th)[0]; c != Balanced {
		t.Fatalf("SM 0.85 with computeBoundPct 90: %s, want balanced", c)
	}
	// A Gen3 x16 link (15.76 GB/s) makes 10 GB/s "very high"; Gen4 x16 does not.
	link := fig(func(f *Figures) { f.GPUUtil, f.MemCopyUtil, f.PCIeRx = 30, 20, 10e9 })
	th = DefaultThresholds()
	if c := ClassesOf(GPUSeries{Samples: []Sample{{Time: t0, Figures: link}}}, th)[0]; c != Idle {
		t.Errorf("10 GB/s on Gen4 x16: %s, want idle", c)
	}
	th.PCIeGeneration = 3
	if c := ClassesOf(GPUSeries{Samples: []Sample{{Time: t0, Figures: link}}}, th)[0]; c != PCIeBound {
		t.Errorf("10 GB/s on Gen3 x16: %s, want pcie-bound", c)
	}
}

func TestPCIeCapacity(t *testing.T) {
	for _, c := range []struct {
		gen, width int
		want       float64
	}{{3, 16, 15.76e9}, {4, 16, 31.52e9}, {5, 16, 63.04e9}, {5, 8, 31.52e9}, {4, 1, 1.97e9}, {1, 16, 4e9}, {2, 4, 2e9}} {
		th := Thresholds{PCIeGeneration: c.gen, PCIeWidth: c.width}
		if got := th.PCIeCapacity(); math.Abs(got-c.want) > 1 {
			t.Errorf("Gen%d x%d = %g B/s, want %g", c.gen, c.width, got, c.want)
		}
	}
}

func TestValidateNamesTheKey(t *testing.T) {
	if err := DefaultThresholds().Validate(); err != nil {
		t.Fatalf("defaults invalid: %v", err)
	}
	for _, c := range []struct {
		set  func(*Thresholds)
		want string
	}{
		{func(t *Thresholds) { t.MemoryBoundPct = 170 }, "memoryBoundPct must be in [0, 100], got 170"},
		{func(t *Thresholds) { t.PCIeBoundLinkShare = 0 }, "pcieBoundLinkShare must be in (0, 1], got 0"},
		{func(t *Thresholds) { t.DRAMActivePeak = math.NaN() }, "dramActivePeak must be in (0, 1]"},
		{func(t *Thresholds) { t.PCIeGeneration = 7 }, "pcieGeneration must be 1 to 6, got 7"},
		{func(t *Thresholds) { t.PCIeWidth = 3 }, "pcieWidth must be one of [1 2 4 8 12 16 32] lanes, got 3"},
		{func(t *Thresholds) { t.ClockMaxWindow = 10 * time.Second }, "clockMaxWindow must be whole seconds between 1m and 1w, got 10s"},
		{func(t *Thresholds) { t.ShareWindow = 8 * 24 * time.Hour }, "shareWindow must be whole seconds between 1m and 1w, got 192h0m0s"},
	} {
		th := DefaultThresholds()
		c.set(&th)
		if err := th.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want %q", err, c.want)
		}
	}
}

func TestDominant(t *testing.T) {
	rs := func(cs ...Class) []Result {
		var out []Result
		for _, c := range cs {
			out = append(out, Result{Class: c})
		}
		return out
	}
	for _, c := range []struct {
		in    []Result
		want  Class
		share float64
	}{
		{nil, NoData, 0},
		{rs(NoData, NoData), NoData, 1},
		{rs(Idle, ComputeBound, ComputeBound, NoData, NoData, NoData), ComputeBound, 2.0 / 6}, // gaps count in the share, never win
		{rs(Idle, MemoryBound), MemoryBound, 0.5},                                             // tie: display order
		{rs(Balanced, Balanced, ThermalThrottled), Balanced, 2.0 / 3},
	} {
		got, share := Dominant(c.in)
		if got != c.want || math.Abs(share-c.share) > 1e-12 {
			t.Errorf("Dominant(%v) = %s %.3f, want %s %.3f", c.in, got, share, c.want, c.share)
		}
	}
}

func TestActionsQuoteTheSeeds(t *testing.T) {
	for c, want := range map[Class]string{
		ComputeBound:     "quantization, pruning, smaller models",
		MemoryBound:      "smaller batch sizes, memory pooling, pinned memory",
		PCIeBound:        "batch more data, reduce CPU-GPU transfers",
		ThermalThrottled: "improve cooling, reduce workload",
		Idle:             "enable CUDA graphs",
		PowerThrottled:   "power limit",
		Balanced:         "no single bottleneck",
		NoData:           "dcgm-exporter",
	} {
		if !strings.Contains(Action(c), want) {
			t.Errorf("Action(%s) = %q, want it to contain %q", c, Action(c), want)
		}
	}
	if !strings.Contains(Action("bogus"), "unknown class") {
		t.Errorf("unknown class: %q", Action("bogus"))
	}
}

func TestCodesRoundTrip(t *testing.T) {
	seen := map[int]bool{}
	for _, c := range Classes {
		if ClassOfCode(c.Code()) != c {
			t.Errorf("%s: code %d maps back to %s", c, c.Code(), ClassOfCode(c.Code()))
		}
		if seen[c.Code()] {
			t.Errorf("code %d used twice", c.Code())
		}
		seen[c.Code()] = true
	}
	if len(ClassOrder) != len(Classes)-1 {
		t.Errorf("ClassOrder %v misses a class", ClassOrder)
	}
}

func TestTrailingSharesCountClassifiedStepsInTheWindow(t *testing.T) {
	var times []time.Time
	for i := range 7 {
		times = append(times, t0.Add(time.Duration(i)*30*time.Second))
	}
	classes := []Class{ComputeBound, NoData, Idle, ComputeBound, NoData, NoData, NoData}
	shares := TrailingShares(times, classes, time.Minute) // [t-60s, t]: three steps
	want := map[Class][]float64{
		ComputeBound: {1, 1, 0.5, 0.5, 0.5, 1, math.NaN()},
		Idle:         {0, 0, 0.5, 0.5, 0.5, 0, math.NaN()},
		Balanced:     {0, 0, 0, 0, 0, 0, math.NaN()},
	}
	for c, w := range want {
		for i := range w {
			if got := shares[c][i]; got != w[i] && !(math.IsNaN(got) && math.IsNaN(w[i])) {
				t.Errorf("%s at step %d: %v, want %v", c, i, got, w[i])
			}
		}
	}
	if _, ok := shares[NoData]; ok {
		t.Errorf("no data has no share series (the rules record none)")
	}
}

// BenchmarkClassifySeries classifies 24 h of one GPU at 15 s, with the evidence text and, side by
// side in each iteration, classes only (the gpuClass query formats evidence for one step per GPU
// only). Reported: ns per sample of each, their ratio, and samples per second of each.
func BenchmarkClassifySeries(b *testing.B) {
	s := syntheticSeries(5760, 1)
	th := DefaultThresholds()
	var evidence, classesOnly time.Duration
	for b.Loop() {
		t0 := time.Now()
		r := ClassifySeries(s, th)
		t1 := time.Now()
		c := ClassesOf(s, th)
		classesOnly += time.Since(t1)
		evidence += t1.Sub(t0)
		if len(r) != len(s.Samples) || len(c) != len(s.Samples) {
			b.Fatalf("%d results and %d classes for %d samples", len(r), len(c), len(s.Samples))
		}
	}
	samples := float64(len(s.Samples) * b.N)
	b.ReportMetric(float64(evidence.Nanoseconds())/samples, "evidence-ns/sample")
	b.ReportMetric(float64(classesOnly.Nanoseconds())/samples, "classes-ns/sample")
	b.ReportMetric(float64(evidence)/float64(classesOnly), "evidence/classes")
	b.ReportMetric(samples/evidence.Seconds(), "evidence-samples/s")
	b.ReportMetric(samples/classesOnly.Seconds(), "classes-samples/s")
}
