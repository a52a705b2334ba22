package classify

import (
	"fmt"
	"math"
	"time"
)

// Thresholds are the figures the classifier compares against. The defaults come from the seeds
// (001 "Identifying Workload Characteristics", 003 "Common Profiling Patterns") and NVIDIA's
// notes on the profiling metrics; each is configurable (jsonData.gpuThresholds, see
// models.ClassifySettings) under the JSON key named in its comment, and evidence strings name the
// same keys so users know which setting decided a class.
//
// "Compute" below is the compute figure in percent: DCGM_FI_PROF_SM_ACTIVE × 100, else
// DCGM_FI_PROF_GR_ENGINE_ACTIVE × 100, else DCGM_FI_DEV_GPU_UTIL. "Memory" is the memory
// bandwidth figure in percent: DCGM_FI_PROF_DRAM_ACTIVE / DRAMActivePeak × 100, else
// DCGM_FI_DEV_MEM_COPY_UTIL.
type Thresholds struct {
	// ComputeBoundPct (computeBoundPct, 80): compute above it, with memory below
	// ComputeBoundMaxMemoryPct, is compute-bound. The Continuous Profiling Guide: GPU util > 80 %; NVIDIA: SM_ACTIVE
	// ≥ 0.8 is necessary for effective use. The TensorRT-LLM Nsight Systems guide asks SM > 90 %:
	// set 90 to follow it.
	ComputeBoundPct float64
	// ComputeBoundMaxMemoryPct (computeBoundMaxMemoryPct, 60): the Nsight Systems guide's "memory bandwidth
	// < 60 %" (the Continuous Profiling Guide's example has 30 %).
	ComputeBoundMaxMemoryPct float64
	// MemoryBoundPct (memoryBoundPct, 70): memory above it, with compute below
	// MemoryBoundMaxComputePct, is memory-bound. The Continuous Profiling Guide: > 70 %; the Nsight
	// Systems guide asks > 90 % (set 90).
	MemoryBoundPct float64
	// MemoryBoundMaxComputePct (memoryBoundMaxComputePct, 70): the Nsight Systems guide's "SM < 70 %"
	// (the Continuous Profiling Guide says util < 50 %; 70 keeps the gap to compute-bound small).
	MemoryBoundMaxComputePct float64
	// PCIeBoundLinkShare (pcieBoundLinkShare, 0.6): the busier PCIe direction above this share of
	// one direction's link capacity is the Continuous Profiling Guide's "PCIe TX/RX very high"; it
	// is PCIe-bound when neither compute (≤ ComputeBoundPct) nor memory (≤ MemoryBoundPct) is
	// high, as in that guide's 30 % / 20 % example.
	PCIeBoundLinkShare float64
	// IdleBelowPct (idleBelowPct, 50): compute below it is low utilisation (the Nsight Systems
	// guide's Pattern 1: GPU utilisation < 50 %; NVIDIA: SM_ACTIVE < 0.5 is ineffective use).
	IdleBelowPct float64
	// ThermalTempC (thermalTempC, 83) and ThermalClockRatio (thermalClockRatio, 0.9): without the
	// clock-event bitmask, a GPU above 83 °C (the Continuous Profiling Guide) whose SM clock is below 0.9 × its observed
	// maximum ("SM clock below expected") is thermal-throttled.
	ThermalTempC      float64
	ThermalClockRatio float64
	// DRAMActivePeak (dramActivePeak, 0.8): DCGM_FI_PROF_DRAM_ACTIVE peaks near 0.8 in practice
	// (NVIDIA), so it is divided by this to read as "memory bandwidth utilisation" in percent.
	DRAMActivePeak float64
	// PCIeGeneration (jsonData.pcieGeneration, 4) and PCIeWidth (jsonData.pcieWidth, 16) give the
	// link capacity; see PCIeCapacity.
	PCIeGeneration int
	PCIeWidth      int
	// ClockMaxWindow (clockMaxWindow, 24h) is the trailing window of the observed SM-clock
	// maximum, the "expected" clock of the thermal fallback: max_over_time(DCGM_FI_DEV_SM_CLOCK[24h])
	// in the rules, the same samples (both ends included, as Prometheus 2.x) here. A day, not an
	// hour: once throttling has lasted a whole window the maximum is the throttled clock itself and
	// the fallback stops seeing it, so the window bounds how long a throttled spell stays detected.
	ClockMaxWindow time.Duration
	// ShareWindow (shareWindow, 1h) is the trailing window of the class shares alerts compare:
	// avg_over_time(hsi:gpu_class:state[1h]) in the rules.
	ShareWindow time.Duration
}

// DefaultThresholds returns the seeds' figures (see Thresholds), with a PCIe Gen4 x16 link.
func DefaultThresholds() Thresholds {
	return Thresholds{
		ComputeBoundPct:          80,
		ComputeBoundMaxMemoryPct: 60,
		MemoryBoundPct:           70,
		MemoryBoundMaxComputePct: 70,
		PCIeBoundLinkShare:       0.6,
		IdleBelowPct:             50,
		ThermalTempC:             83,
		ThermalClockRatio:        0.9,
		DRAMActivePeak:           0.8,
		PCIeGeneration:           4,
		PCIeWidth:                16,
		ClockMaxWindow:           24 * time.Hour,
		ShareWindow:              time.Hour,
	}
}

// PCIeGen3LaneBytes is PCIe Gen3's usable rate per lane and direction (8 GT/s with 128b/130b
// encoding ≈ 985 MB/s); each later generation doubles it.
const PCIeGen3LaneBytes = 0.985e9

// PCIeCapacity is one direction's link capacity in bytes per second: the per-lane rate of the
// generation (Gen1 250 MB/s, Gen2 500 MB/s, Gen3 985 MB/s, then ×2 per generation) × width.
func (t Thresholds) PCIeCapacity() float64 {
	var lane float64
	switch {
	case t.PCIeGeneration <= 1:
		lane = 0.25e9
	case t.PCIeGeneration == 2:
		lane = 0.5e9
	default:
		lane = PCIeGen3LaneBytes * math.Exp2(float64(t.PCIeGeneration-3))
	}
	return lane * float64(t.PCIeWidth)
}

// ThresholdKey names one threshold as users set it, with its valid range.
type ThresholdKey struct {
	Key      string // JSON key in jsonData.gpuThresholds
	Min, Max float64
	// MinOpen says Min itself is not allowed (a ratio of 0 would divide by zero or match all).
	MinOpen bool
	field   func(*Thresholds) *float64
}

// Get returns the key's value in t.
func (k ThresholdKey) Get(t *Thresholds) float64 { return *k.field(t) }

// Set stores v in t under the key.
func (k ThresholdKey) Set(t *Thresholds, v float64) { *k.field(t) = v }

// Check says why v is out of the key's range, or nil.
func (k ThresholdKey) Check(v float64) error {
	if math.IsNaN(v) || v < k.Min || v > k.Max || (k.MinOpen && v == k.Min) {
		lo := "["
		if k.MinOpen {
			lo = "("
		}
		return fmt.Errorf("%s must be in %s%g, %g], got %g", k.Key, lo, k.Min, k.Max, v)
	}
	return nil
}

// NumericThresholdKeys lists the numeric thresholds by their JSON key, in documentation order
// (the windows, PCIeGeneration and PCIeWidth are read separately: they are not plain numbers).
// The settings page's defaults and ranges are generated from these, DefaultThresholds, WindowKeys
// and the PCIe bounds: run go generate ./cmd/hsi-gen-ts after changing any of them.
var NumericThresholdKeys = []ThresholdKey{
	{Key: "computeBoundPct", Min: 0, Max: 100, field: func(t *Thresholds) *float64 { return &t.ComputeBoundPct }},
	{Key: "computeBoundMaxMemoryPct", Min: 0, Max: 100, field: func(t *Thresholds) *float64 { return &t.ComputeBoundMaxMemoryPct }},
	{Key: "memoryBoundPct", Min: 0, Max: 100, field: func(t *Thresholds) *float64 { return &t.MemoryBoundPct }},
	{Key: "memoryBoundMaxComputePct", Min: 0, Max: 100, field: func(t *Thresholds) *float64 { return &t.MemoryBoundMaxComputePct }},
	{Key: "pcieBoundLinkShare", Min: 0, Max: 1, MinOpen: true, field: func(t *Thresholds) *float64 { return &t.PCIeBoundLinkShare }},
	{Key: "idleBelowPct", Min: 0, Max: 100, field: func(t *Thresholds) *float64 { return &t.IdleBelowPct }},
	{Key: "thermalTempC", Min: 0, Max: 150, field: func(t *Thresholds) *float64 { return &t.ThermalTempC }},
	{Key: "thermalClockRatio", Min: 0, Max: 1, MinOpen: true, field: func(t *Thresholds) *float64 { return &t.ThermalClockRatio }},
	{Key: "dramActivePeak", Min: 0, Max: 1, MinOpen: true, field: func(t *Thresholds) *float64 { return &t.DRAMActivePeak }},
}

// MinWindow and MaxWindow bound both windows: under a minute holds too few DCGM samples
// (collected every 30 s by default); over a week makes every rule evaluation scan 20,000 samples
// per GPU at that interval.
const (
	MinWindow = time.Minute
	MaxWindow = 7 * 24 * time.Hour
)

// WindowKey names a window threshold by its JSON key.
type WindowKey struct {
	Key   string
	field func(*Thresholds) *time.Duration
}

// Get returns the window in t.
func (k WindowKey) Get(t *Thresholds) time.Duration { return *k.field(t) }

// Set stores d in t.
func (k WindowKey) Set(t *Thresholds, d time.Duration) { *k.field(t) = d }

// Check says why d is not a valid window, or nil.
func (k WindowKey) Check(d time.Duration) error {
	if d < MinWindow || d > MaxWindow || d%time.Second != 0 {
		return fmt.Errorf("%s must be whole seconds between %s and %s, got %s", k.Key, PromDuration(MinWindow), PromDuration(MaxWindow), d)
	}
	return nil
}

// WindowKeys lists the window thresholds by JSON key.
var WindowKeys = []WindowKey{
	{Key: "clockMaxWindow", field: func(t *Thresholds) *time.Duration { return &t.ClockMaxWindow }},
	{Key: "shareWindow", field: func(t *Thresholds) *time.Duration { return &t.ShareWindow }},
}

// ValidPCIeWidths are the link widths PCIe defines.
var ValidPCIeWidths = []int{1, 2, 4, 8, 12, 16, 32}

// MinPCIeGeneration and MaxPCIeGeneration bound pcieGeneration: Gen1 to Gen6, the generations
// PCIeCapacity knows the per-lane rate of.
const (
	MinPCIeGeneration = 1
	MaxPCIeGeneration = 6
)

// Validate checks every threshold and names the first invalid one by its JSON key.
func (t Thresholds) Validate() error {
	for _, k := range NumericThresholdKeys {
		if err := k.Check(k.Get(&t)); err != nil {
			return err
		}
	}
	if t.PCIeGeneration < MinPCIeGeneration || t.PCIeGeneration > MaxPCIeGeneration {
		return fmt.Errorf("pcieGeneration must be %d to %d, got %d", MinPCIeGeneration, MaxPCIeGeneration, t.PCIeGeneration)
	}
	validWidth := false
	for _, w := range ValidPCIeWidths {
		validWidth = validWidth || w == t.PCIeWidth
	}
	if !validWidth {
		return fmt.Errorf("pcieWidth must be one of %v lanes, got %d", ValidPCIeWidths, t.PCIeWidth)
	}
	for _, k := range WindowKeys {
		if err := k.Check(k.Get(&t)); err != nil {
			return err
		}
	}
	return nil
}
