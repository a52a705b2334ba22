// Package classify names what limits a GPU at each moment: compute-bound, memory-bound,
// PCIe-bound, thermal- or power-throttled, idle or balanced, from DCGM (or NVML) figures, with
// the evidence and the seeds' recommended action. Pure functions, no I/O.
package classify

import (
	"math"
	"time"
)

// Class is one workload class, as users read it in panels and alerts.
type Class string

// The classes, in the order summaries list them.
const (
	ComputeBound     Class = "compute-bound"
	MemoryBound      Class = "memory-bound"
	PCIeBound        Class = "pcie-bound"
	ThermalThrottled Class = "thermal-throttled"
	PowerThrottled   Class = "power-throttled"
	Idle             Class = "idle"
	Balanced         Class = "balanced"
	NoData           Class = "no data"
)

// Classes lists every class in display order.
var Classes = []Class{ComputeBound, MemoryBound, PCIeBound, ThermalThrottled, PowerThrottled, Idle, Balanced, NoData}

// GPU identifies one GPU as DCGM labels it.
type GPU struct {
	Host  string // Hostname (or hostname) label
	Index string // gpu label
	UUID  string // UUID label
	Model string // modelName label
	// Labels holds every label of the GPU's series (pod, namespace, pci_bus_id, ...).
	Labels map[string]string
}

// Figures are one GPU's readings at one moment. A figure the exporter does not send is NaN;
// the classifier falls back to the next best figure and says which it used.
type Figures struct {
	GPUUtil     float64 // DCGM_FI_DEV_GPU_UTIL, percent 0..100
	MemCopyUtil float64 // DCGM_FI_DEV_MEM_COPY_UTIL, percent 0..100
	SMActive    float64 // DCGM_FI_PROF_SM_ACTIVE, ratio 0..1
	GrEngine    float64 // DCGM_FI_PROF_GR_ENGINE_ACTIVE, ratio 0..1
	DRAMActive  float64 // DCGM_FI_PROF_DRAM_ACTIVE, ratio 0..1
	Tensor      float64 // DCGM_FI_PROF_PIPE_TENSOR_ACTIVE, ratio 0..1
	PCIeTx      float64 // bytes per second (DCGM_FI_PROF_PCIE_TX_BYTES, or the deprecated KB/s series × 1024)
	PCIeRx      float64 // bytes per second
	TempC       float64 // DCGM_FI_DEV_GPU_TEMP
	SMClockMHz  float64 // DCGM_FI_DEV_SM_CLOCK
	PowerW      float64 // DCGM_FI_DEV_POWER_USAGE
	// ClockEvents is DCGM_FI_DEV_CLOCKS_EVENT_REASONS (alias DCGM_FI_DEV_CLOCK_THROTTLE_REASONS),
	// the throttle bitmask; NaN when not exported.
	ClockEvents float64
}

// Missing returns Figures with every reading NaN.
func Missing() Figures {
	n := math.NaN()
	return Figures{n, n, n, n, n, n, n, n, n, n, n, n}
}

// Sample is a GPU's figures at one step.
type Sample struct {
	Time    time.Time
	Figures Figures
}

// GPUSeries is one GPU's samples, at a fixed step, in time order.
type GPUSeries struct {
	GPU     GPU
	Samples []Sample
}
