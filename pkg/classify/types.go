// Package classify names what limits a GPU at each moment: compute-bound, memory-bound,
// PCIe-bound, thermal- or power-throttled, idle or balanced, from DCGM (or NVML) figures, with
// the evidence and the seeds' recommended action. Pure functions, no I/O.
package classify

import (
	"cmp"
	"math"
	"strconv"
	"strings"
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

// GPU identifies one GPU, or one MIG instance of one, as DCGM labels it: the one identity
// every package keys GPUs by. It is comparable, so it is its own map key. dcgm-exporter labels a
// MIG instance with its parent's index, UUID and model plus GPU_I_ID and GPU_I_PROFILE, so two
// instances of one GPU differ only in MIG: a key without it would merge them.
type GPU struct {
	Host  string // Hostname (or hostname) label
	Index string // gpu label
	UUID  string // UUID label: the physical GPU's, also on its MIG instances' series
	Model string // modelName label
	// MIG is the GPU instance ID (GPU_I_ID) and MIGProfile its profile (GPU_I_PROFILE, such as
	// "1g.10gb"); both "" for a whole GPU.
	MIG        string
	MIGProfile string
}

// String names the GPU in a sentence: "gpu-node-1 GPU 0 (NVIDIA A100-SXM4-80GB) MIG 1g.10gb #3".
func (g GPU) String() string {
	var b strings.Builder
	b.WriteString(g.Host)
	if id := g.id(); id != "" {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(id)
	}
	if g.Model != "" {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("(" + g.Model + ")")
	}
	if m := g.migName(); m != "" {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(m)
	}
	if b.Len() == 0 {
		return "GPU"
	}
	return b.String()
}

// Name is the short name of table cells and series: "gpu-node-1/0 MIG 1g.10gb #3".
func (g GPU) Name() string {
	switch d := g.Device(); {
	case g.Host == "":
		return d
	case d == "":
		return g.Host
	default:
		return g.Host + "/" + d
	}
}

// Device is the GPU's name on its host: "0 MIG 1g.10gb #3" (the UUID when the index is unknown).
func (g GPU) Device() string {
	id := g.Index
	if id == "" {
		id = g.UUID
	}
	return strings.TrimSpace(id + " " + g.migName())
}

// OnHost names the GPU where its host goes without saying: "GPU 0 MIG 1g.10gb #3".
func (g GPU) OnHost() string {
	return strings.TrimSpace(g.id() + " " + g.migName())
}

func (g GPU) id() string {
	switch {
	case g.Index != "":
		return "GPU " + g.Index
	case g.UUID != "":
		return g.UUID
	}
	return ""
}

// migName is "MIG 1g.10gb #3", "MIG #3" without the profile, "" for a whole GPU.
func (g GPU) migName() string {
	switch {
	case g.MIG == "" && g.MIGProfile == "":
		return ""
	case g.MIG == "":
		return "MIG " + g.MIGProfile
	case g.MIGProfile == "":
		return "MIG #" + g.MIG
	}
	return "MIG " + g.MIGProfile + " #" + g.MIG
}

// Matches says whether a service's name for a GPU (a span attribute, CUDA_VISIBLE_DEVICES-style)
// designates g: its index or UUID name the whole GPU, every MIG instance included; the MIG
// device name "MIG-<GPU UUID>/<GPU instance>[/<compute instance>]" (the form drivers before
// R470 give, and CUDA still accepts) names one instance. The newer "MIG-<uuid>" names have no
// counterpart in DCGM's labels, so they match nothing.
func (g GPU) Matches(name string) bool {
	if name == "" {
		return false
	}
	if name == g.Index || name == g.UUID {
		return true
	}
	rest, ok := strings.CutPrefix(name, "MIG-")
	if !ok || g.MIG == "" || g.UUID == "" {
		return false
	}
	rest, ok = strings.CutPrefix(rest, g.UUID+"/")
	if !ok {
		return false
	}
	gi, _, _ := strings.Cut(rest, "/")
	return gi == g.MIG
}

// Compare orders GPUs by host, index (as numbers), UUID, MIG instance (as numbers), then the rest.
func (g GPU) Compare(o GPU) int {
	return cmp.Or(cmp.Compare(g.Host, o.Host), compareNumeric(g.Index, o.Index), cmp.Compare(g.UUID, o.UUID),
		compareNumeric(g.MIG, o.MIG), cmp.Compare(g.MIGProfile, o.MIGProfile), cmp.Compare(g.Model, o.Model))
}

// compareNumeric orders labels that hold numbers as numbers ("2" before "10"), after "" (a
// whole GPU before its MIG instances) and before other text.
func compareNumeric(a, b string) int {
	if a == "" || b == "" {
		return cmp.Compare(a, b)
	}
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	switch {
	case errA == nil && errB == nil:
		return cmp.Compare(x, y)
	case errA == nil:
		return -1
	case errB == nil:
		return 1
	}
	return cmp.Compare(a, b)
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
	// FBUsed and FBFree are the framebuffer in use and free, MiB (DCGM_FI_DEV_FB_USED,
	// DCGM_FI_DEV_FB_FREE): no class reads them; a request that failed with CUDA out-of-memory
	// quotes them.
	FBUsed, FBFree float64
}

// Missing returns Figures with every reading NaN.
func Missing() Figures {
	n := math.NaN()
	return Figures{n, n, n, n, n, n, n, n, n, n, n, n, n, n}
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
	// Pods are the Kubernetes pods dcgm-exporter mapped the GPU to over the range (its pod and
	// namespace labels), sorted; empty when the exporter maps none or it is not known.
	Pods []Pod
}

// Pod is a Kubernetes pod by namespace and name.
type Pod struct{ Namespace, Name string }

// String is namespace/name, or the name alone when the namespace is not known.
func (p Pod) String() string {
	if p.Namespace == "" {
		return p.Name
	}
	return p.Namespace + "/" + p.Name
}
