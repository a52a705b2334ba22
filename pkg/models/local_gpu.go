package models

import (
	"fmt"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// The GPUs of the host the plugin runs on, as NVML reads them. They are declared here, not in
// the nvml package, so that the join and the frames read them without importing a client, and
// another reader of local GPUs could stand in.

// LocalGPUSource is what the plugin asks of the GPUs of the host it runs on (NVML's sampler,
// nvml.Sampler, implements it). Every method starts the sampler on first use
// (NVML Init and the sampling goroutine); Close stops it and leaves no goroutine.
type LocalGPUSource interface {
	// Status is NVML's driver version and device count, or why NVML is unavailable.
	Status() (NVMLStatus, error)
	// Devices is the latest sample of each GPU, with notices for what could not be read.
	Devices() ([]GPUDevice, notices.List, error)
	// Processes lists the processes using each GPU, read now.
	Processes() ([]GPUProcess, notices.List, error)
	// XIDs lists the XID events seen since the sampler started (the most recent ones).
	XIDs() ([]XIDEvent, notices.List, error)
	// Series is each GPU's samples still in the ring buffer, oldest first.
	Series() ([]GPUDeviceSeries, notices.List, error)
	// Interval is the sampling interval.
	Interval() time.Duration
	// Capacity is how many samples per GPU the series keep at most.
	Capacity() int
	// Close stops the sampler and shuts NVML down; later calls answer an error.
	Close()
}

// NVMLStatus is NVML's state.
type NVMLStatus struct {
	DriverVersion string
	NVMLVersion   string
	DeviceCount   int
}

// GPUDevice is one GPU's reading at one moment. A nil field could not be read (not supported,
// no permission, GPU lost): the notices say which and why.
type GPUDevice struct {
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
func (d GPUDevice) Throttle() string {
	if d.ClockEventReasons == nil {
		return ""
	}
	return strings.Join(ThrottleReasons(*d.ClockEventReasons), ", ")
}

// Figures converts a reading to the classifier's figures (NaN where NVML gave nothing).
// NVML has no profiling metrics: the classifier falls back to GPU and memory utilisation.
func (d GPUDevice) Figures() classify.Figures {
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
func (d GPUDevice) GPU(host string) classify.GPU {
	idx := fmt.Sprint(d.Index)
	return classify.GPU{Host: host, Index: idx, UUID: d.UUID, Model: d.Name}
}

// GPUDeviceSeries is one GPU's samples, oldest first.
type GPUDeviceSeries struct {
	Index   int
	Name    string
	UUID    string
	Samples []GPUDevice
}

// ClassifySeries converts the samples for classify.ClassesOf.
func (s GPUDeviceSeries) ClassifySeries(host string) classify.GPUSeries {
	out := classify.GPUSeries{GPU: GPUDevice{Index: s.Index, Name: s.Name, UUID: s.UUID}.GPU(host)}
	if len(s.Samples) > 0 {
		out.GPU = s.Samples[len(s.Samples)-1].GPU(host)
	}
	for _, d := range s.Samples {
		out.Samples = append(out.Samples, classify.Sample{Time: d.Time, Figures: d.Figures()})
	}
	return out
}

// GPUProcess is one process using a GPU.
type GPUProcess struct {
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
