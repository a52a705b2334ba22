package classify

import (
	"math"
	"math/rand/v2"
	"time"
)

// Synthetic DCGM figures for the benchmark and the promtool agreement test: values drawn from
// sets that include every threshold exactly (80, 70, 0.7 × 100, 0.56 / 0.8 × 100, ...), so the
// backend and PromQL are compared where float arithmetic could make them differ.

// exporter says which series a synthetic GPU exports.
type exporter struct {
	sm, gr, dram, util, memcopy bool
	pcieBytes, pcieKB           bool
	bitmask                     string // "", MetricClockEvents or MetricClockThrottle
	tempClock                   bool
}

var (
	currentExporter = exporter{sm: true, gr: true, dram: true, util: true, memcopy: true, pcieBytes: true, bitmask: MetricClockEvents, tempClock: true}
	defaultCounters = exporter{gr: true, dram: true, util: true, memcopy: true, pcieBytes: true, tempClock: true} // SM_ACTIVE and the bitmask are off by default
	oldExporter     = exporter{util: true, memcopy: true, pcieKB: true, tempClock: true}
	oldBitmask      = exporter{gr: true, dram: true, util: true, memcopy: true, pcieBytes: true, bitmask: MetricClockThrottle, tempClock: true}
	noMemory        = exporter{util: true, pcieBytes: true, bitmask: MetricClockEvents, tempClock: true}
)

func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// draw returns one step's figures as exporter e would report them.
func draw(r *rand.Rand, e exporter) Figures {
	f := Missing()
	pct := func() float64 {
		return pick(r, 5, 30, 40, 49.99, 50, 60, 65, 69.99, 70, 70.01, 75, 80, 80.01, 85, 90, 95, 100, r.Float64()*100)
	}
	ratio := func() float64 {
		return pick(r, 0.05, 0.3, 0.5, 0.56, 0.6, 0.7, 0.72, 0.8, 0.8000001, 0.9, 0.95, r.Float64())
	}
	if e.sm {
		f.SMActive = ratio()
	}
	if e.gr {
		f.GrEngine = ratio()
	}
	if e.dram {
		f.DRAMActive = ratio() * 0.8
		if r.IntN(4) == 0 {
			f.DRAMActive = pick(r, 0.56, 0.48, 0.64) // 70 %, 60 %, 80 % of the 0.8 peak, as floats see them
		}
	}
	if e.util {
		f.GPUUtil = pct()
	}
	if e.memcopy {
		f.MemCopyUtil = pct()
	}
	link := func() float64 {
		return pick(r, 1e9, 10e9, 18.912e9, 18.912000001e9, 20e9, 25e9, r.Float64()*30e9)
	}
	if e.pcieBytes {
		f.PCIeTx, f.PCIeRx = link(), link()
		if r.IntN(5) == 0 {
			f.PCIeRx = f.PCIeTx
		}
	}
	if e.pcieKB {
		// Figures hold bytes: the deprecated series is KB/s × 1024, exactly as the rule writes it.
		f.PCIeTx, f.PCIeRx = math.Round(link()/1024), math.Round(link()/1024)
		f.PCIeTx, f.PCIeRx = f.PCIeTx*1024, f.PCIeRx*1024
	}
	if e.bitmask != "" {
		f.ClockEvents = pick[float64](r, 0, 0, 0, 0x1, 0x2, 0x4, 0x8, 0x10, 0x20, 0x40, 0x80, 0x24, 0x121, 0x84, 0x1ff)
	}
	if e.tempClock {
		f.TempC = pick[float64](r, 60, 75, 83, 84, 88, 92)
		f.SMClockMHz = pick[float64](r, 1410, 1380, 1269, 1268, 1200, 1100, 900)
	}
	return f
}

// syntheticSeries is one GPU of the current exporter, step 15 s.
func syntheticSeries(n int, seed uint64) GPUSeries {
	r := rand.New(rand.NewPCG(seed, 1))
	s := GPUSeries{GPU: GPU{Host: "bench", Index: "0"}}
	for i := range n {
		s.Samples = append(s.Samples, Sample{Time: t0.Add(time.Duration(i) * 15 * time.Second), Figures: draw(r, currentExporter)})
	}
	return s
}
