// Package nvml reads the GPUs of the host the plugin runs on through NVIDIA's NVML
// (github.com/NVIDIA/go-nvml): devices, per-process GPU memory, XID events and short live series
// from one shared sampler per data source instance.
//
// go-nvml needs cgo and dlopens libnvidia-ml.so.1 at Init, so the NVML code builds only on linux
// with cgo (sampler_nvml.go); every other build gets a stub (stub.go) whose every method answers
// NotBuiltMessage. Without a driver Init fails, and any further NVML call would kill the process:
// the sampler never calls NVML unless Init succeeded. This file is cgo-free: the types the plugin
// uses, the throttle-reason words and the XID table.
package nvml

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// NotBuiltMessage is the answer of builds without NVML (not linux, or CGO_ENABLED=0).
const NotBuiltMessage = "NVML is not available on this build (it needs linux and cgo)"

// ErrNotBuilt is returned by every method of the stub.
var ErrNotBuilt = errors.New(NotBuiltMessage)

// Defaults of Options.
const (
	DefaultInterval = time.Second
	DefaultCapacity = 300 // 5 minutes at 1 s
	DefaultXIDs     = 100
	// retryAfter is how long a failed Init is remembered before the next query tries again
	// (a driver installed or a device node made readable later is then picked up).
	retryAfter = 30 * time.Second
)

// Options tune the sampler; zero values take the defaults.
type Options struct {
	Interval time.Duration // between samples
	Capacity int           // samples kept per GPU (the ring buffer's size)
	XIDs     int           // XID events kept
}

func (o Options) withDefaults() Options {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Capacity <= 0 {
		o.Capacity = DefaultCapacity
	}
	if o.XIDs <= 0 {
		o.XIDs = DefaultXIDs
	}
	return o
}

// Source is what the plugin asks of local GPUs. Every method starts the sampler on first use
// (NVML Init and the sampling goroutine); Close stops it and leaves no goroutine.
type Source interface {
	// Status is NVML's driver version and device count, or why NVML is unavailable.
	Status() (Status, error)
	// Devices is the latest sample of each GPU, with notices for what could not be read.
	Devices() ([]Device, notices.List, error)
	// Processes lists the processes using each GPU, read now.
	Processes() ([]Process, notices.List, error)
	// XIDs lists the XID events seen since the sampler started (the most recent ones).
	XIDs() ([]XIDEvent, notices.List, error)
	// Series is each GPU's samples still in the ring buffer, oldest first.
	Series() ([]DeviceSeries, notices.List, error)
	// Interval is the sampling interval.
	Interval() time.Duration
	// Close stops the sampler and shuts NVML down; later calls answer ErrClosed.
	Close()
}

// ErrClosed answers calls after Close.
var ErrClosed = errors.New("NVML sampler is closed (the data source was reloaded)")

// Status is NVML's state.
type Status struct {
	DriverVersion string
	NVMLVersion   string
	DeviceCount   int
}

// Device is one GPU's reading at one moment. A nil field could not be read (not supported,
// no permission, GPU lost): the notices say which and why.
type Device struct {
	Time     time.Time
	Index    int
	Name     string
	UUID     string
	PCIBusID string
	// Lost is set once NVML answered ERROR_GPU_IS_LOST for this GPU: it is no longer read.
	Lost bool

	MemoryTotalBytes, MemoryUsedBytes, MemoryFreeBytes *float64
	GPUUtilPercent, MemoryUtilPercent                  *float64
	PCIeTxBytesPerSec, PCIeRxBytesPerSec               *float64
	PCIeLinkGen, PCIeLinkWidth                         *float64
	SMClockMHz, SMClockMaxMHz                          *float64
	MemClockMHz, MemClockMaxMHz                        *float64
	TemperatureC                                       *float64
	PowerW, PowerLimitW                                *float64
	// ClockEventReasons is the throttle bitmask (GetCurrentClocksEventReasons).
	ClockEventReasons *uint64
	// ECC error counts since the driver loaded (volatile), corrected and uncorrected.
	ECCCorrected, ECCUncorrected *float64
}

// Throttle returns the decoded throttle reasons, or "" when the bitmask is unknown.
func (d Device) Throttle() string {
	if d.ClockEventReasons == nil {
		return ""
	}
	return strings.Join(ThrottleReasons(*d.ClockEventReasons), ", ")
}

// Figures converts a reading to the classifier's figures (NaN where NVML gave nothing).
// NVML has no profiling metrics: the classifier falls back to GPU and memory utilisation.
func (d Device) Figures() classify.Figures {
	f := classify.Missing()
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&f.GPUUtil, d.GPUUtilPercent)
	set(&f.MemCopyUtil, d.MemoryUtilPercent)
	set(&f.PCIeTx, d.PCIeTxBytesPerSec)
	set(&f.PCIeRx, d.PCIeRxBytesPerSec)
	set(&f.TempC, d.TemperatureC)
	set(&f.SMClockMHz, d.SMClockMHz)
	set(&f.PowerW, d.PowerW)
	if d.ClockEventReasons != nil {
		f.ClockEvents = float64(*d.ClockEventReasons)
	}
	return f
}

// GPU is the classifier's identity of a local GPU.
func (d Device) GPU(host string) classify.GPU {
	idx := fmt.Sprint(d.Index)
	return classify.GPU{Host: host, Index: idx, UUID: d.UUID, Model: d.Name}
}

// DeviceSeries is one GPU's samples, oldest first.
type DeviceSeries struct {
	Index   int
	Name    string
	UUID    string
	Samples []Device
}

// ClassifySeries converts the samples for classify.ClassesOf.
func (s DeviceSeries) ClassifySeries(host string) classify.GPUSeries {
	out := classify.GPUSeries{GPU: Device{Index: s.Index, Name: s.Name, UUID: s.UUID}.GPU(host)}
	if len(s.Samples) > 0 {
		out.GPU = s.Samples[len(s.Samples)-1].GPU(host)
	}
	for _, d := range s.Samples {
		out.Samples = append(out.Samples, classify.Sample{Time: d.Time, Figures: d.Figures()})
	}
	return out
}

// Process is one process using a GPU.
type Process struct {
	GPU       int
	GPUUUID   string
	PID       uint32
	Name      string // /proc/PID/comm, "" when unreadable
	Cmdline   string // /proc/PID/cmdline with spaces, "" when unreadable
	Type      string // compute or graphics
	UsedBytes *float64
}

// XIDEvent is one XID reported by the driver.
type XIDEvent struct {
	Time    time.Time
	GPU     int
	GPUUUID string
	XID     uint64
	Meaning string
	Action  string
}

// throttleWords names the bits of nvmlClocksEventReasons (nvml.h).
var throttleWords = []struct {
	bit  uint64
	word string
}{
	{0x1, "GPU idle"},
	{0x2, "applications clocks setting"},
	{0x4, "software power cap"},
	{0x8, "hardware slowdown"},
	{0x10, "sync boost"},
	{0x20, "software thermal slowdown"},
	{0x40, "hardware thermal slowdown"},
	{0x80, "hardware power brake slowdown"},
	{0x100, "display clock setting"},
}

// ThrottleReasons decodes the clock-event bitmask into words, lowest bit first: "none" when no
// bit is set, "unknown bits 0x…" for bits nvml.h does not name.
func ThrottleReasons(mask uint64) []string {
	if mask == 0 {
		return []string{"none"}
	}
	var out []string
	rest := mask
	for _, w := range throttleWords {
		if mask&w.bit != 0 {
			out = append(out, w.word)
			rest &^= w.bit
		}
	}
	if rest != 0 {
		out = append(out, fmt.Sprintf("unknown bits 0x%x", rest))
	}
	return out
}

// xidInfo is what NVIDIA's XID catalogue says of an XID, shortened.
type xidInfo struct{ meaning, action string }

var xids = map[uint64]xidInfo{
	8:   {"GPU stopped processing (channel timeout)", "check the application; reset the GPU if it repeats"},
	13:  {"graphics engine exception (illegal instruction, out-of-range address)", "usually an application bug: run it under compute-sanitizer"},
	31:  {"GPU memory page fault (illegal address)", "usually an application bug: run it under compute-sanitizer"},
	32:  {"invalid or corrupted push buffer stream", "check the PCIe link and driver; reset the GPU if it repeats"},
	38:  {"driver firmware error", "update the driver; reset the GPU"},
	43:  {"GPU stopped processing (user application fault)", "the faulting application was stopped; others keep running"},
	44:  {"graphics engine fault during context switch", "reset the GPU"},
	45:  {"preemptive cleanup after previous errors (process killed)", "look for the XID before it"},
	48:  {"double-bit ECC error", "uncorrectable memory error: drain and reset the GPU"},
	61:  {"internal micro-controller breakpoint/warning", "reset the GPU; report if it repeats"},
	62:  {"internal micro-controller halt", "reset the GPU"},
	63:  {"ECC page retirement or row remapping recorded", "reset the GPU to apply the remap when convenient"},
	64:  {"ECC page retirement or row remapping failed", "reset the GPU; replace it if it repeats"},
	68:  {"video processor (NVDEC/NVENC) exception", "reset the GPU"},
	69:  {"graphics engine class error", "usually an application or driver bug"},
	74:  {"NVLink error", "check the NVLink and fabric manager; reset the GPU"},
	79:  {"GPU has fallen off the bus", "the GPU is unreachable: reboot the host, check power and PCIe"},
	92:  {"high single-bit ECC error rate", "watch the ECC counts; plan a reset"},
	94:  {"contained ECC error", "only the affected application must restart"},
	95:  {"uncontained ECC error", "every application on the GPU is affected: drain and reset the GPU"},
	109: {"context switch timeout", "check the application; reset the GPU if it repeats"},
	119: {"GSP RPC timeout", "reset the GPU; update the driver if it repeats"},
	120: {"GSP error", "reset the GPU; update the driver if it repeats"},
}

// XIDMeaning returns the meaning and recommended action of an XID, or "unlisted XID" with a
// pointer to NVIDIA's catalogue.
func XIDMeaning(xid uint64) (meaning, action string) {
	if i, ok := xids[xid]; ok {
		return i.meaning, i.action
	}
	return "unlisted XID", "see NVIDIA's XID catalogue (docs.nvidia.com/deploy/xid-errors)"
}

// ring is a bounded buffer of the last n items.
type ring[T any] struct {
	items []T
	next  int
	full  bool
}

func newRing[T any](n int) *ring[T] { return &ring[T]{items: make([]T, n)} }

func (r *ring[T]) push(v T) {
	r.items[r.next] = v
	r.next = (r.next + 1) % len(r.items)
	if r.next == 0 {
		r.full = true
	}
}

// all returns the items oldest first.
func (r *ring[T]) all() []T {
	if !r.full {
		return append([]T(nil), r.items[:r.next]...)
	}
	return append(append([]T(nil), r.items[r.next:]...), r.items[:r.next]...)
}

func (r *ring[T]) last() (T, bool) {
	var zero T
	if !r.full && r.next == 0 {
		return zero, false
	}
	return r.items[(r.next-1+len(r.items))%len(r.items)], true
}
