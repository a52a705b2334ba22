package gpusim

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Metric is one DCGM series as dcgm-exporter writes it: name, HELP text and TYPE from its
// counter files (etc/default-counters.csv, etc/dcp-metrics-included.csv), and whether the DCGM
// field is a double (written with %f, "0.920000") or an integer (written with %d).
type Metric struct {
	Name   string
	Help   string
	Type   string // gauge or counter
	Double bool
	value  func(s *Sample) float64
}

// Sample is everything the series of one GPU show at one moment.
type Sample struct {
	Reading
	EnergyMJ    float64 // DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ since boot
	PCIeReplays float64 // DCGM_FI_DEV_PCIE_REPLAY_COUNTER
	XID         float64 // DCGM_FI_DEV_XID_ERRORS, last XID
	FBTotalMiB  float64
	FBReserved  float64
	// Memory errors: the ECC counters (volatile since the driver loaded, aggregate over the
	// GPU's life) and the row remapper's state. Zero on a healthy GPU.
	ECCSBEVol, ECCDBEVol, ECCSBEAgg, ECCDBEAgg float64
	RowsUncorrectable, RowsCorrectable         float64
	RowRemapFailure                            float64 // 1 when a row could not be remapped
}

// The series, in the order of dcgm-exporter's counter files.
var (
	mSMClock   = Metric{"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", "gauge", false, func(s *Sample) float64 { return s.SMClock }}
	mMemClock  = Metric{"DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", "gauge", false, func(s *Sample) float64 { return s.MemClock }}
	mMemTemp   = Metric{"DCGM_FI_DEV_MEMORY_TEMP", "Memory temperature (in C).", "gauge", false, func(s *Sample) float64 { return s.MemTempC }}
	mGPUTemp   = Metric{"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", "gauge", false, func(s *Sample) float64 { return s.TempC }}
	mPower     = Metric{"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge", true, func(s *Sample) float64 { return s.PowerW }}
	mEnergy    = Metric{"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", "counter", false, func(s *Sample) float64 { return s.EnergyMJ }}
	mPCIeTxOld = Metric{"DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "Total number of bytes transmitted through PCIe TX (in KB) via NVML.", "counter", false, func(s *Sample) float64 { return s.PCIeTx / 1024 }}
	mPCIeRxOld = Metric{"DCGM_FI_DEV_PCIE_RX_THROUGHPUT", "Total number of bytes received through PCIe RX (in KB) via NVML.", "counter", false, func(s *Sample) float64 { return s.PCIeRx / 1024 }}
	mReplay    = Metric{"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "Total number of PCIe retries.", "counter", false, func(s *Sample) float64 { return s.PCIeReplays }}
	mGPUUtil   = Metric{"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge", false, func(s *Sample) float64 { return s.GPUUtil }}
	mMemCopy   = Metric{"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", "gauge", false, func(s *Sample) float64 { return s.MemCopyUtil }}
	mXID       = Metric{"DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", "gauge", false, func(s *Sample) float64 { return s.XID }}
	// Remapped rows: on by default in dcgm-exporter (A100 and later); zero unless a fixture fault
	// sets them.
	mRowsUncorr = Metric{"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for uncorrectable errors.", "counter", false, func(s *Sample) float64 { return s.RowsUncorrectable }}
	mRowsCorr   = Metric{"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "Number of remapped rows for correctable errors.", "counter", false, func(s *Sample) float64 { return s.RowsCorrectable }}
	mRowRemapKO = Metric{"DCGM_FI_DEV_ROW_REMAP_FAILURE", "whether remapping of rows has failed.", "gauge", false, func(s *Sample) float64 { return s.RowRemapFailure }}
	// ECC counters: commented out in dcgm-exporter's etc/default-counters.csv, so only an exporter
	// whose counters file enables them sends them (fixture-node-d's).
	mECCSBEVol = Metric{"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Total number of single-bit volatile ECC errors.", "counter", false, func(s *Sample) float64 { return s.ECCSBEVol }}
	mECCDBEVol = Metric{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total number of double-bit volatile ECC errors.", "counter", false, func(s *Sample) float64 { return s.ECCDBEVol }}
	mECCSBEAgg = Metric{"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "Total number of single-bit persistent ECC errors.", "counter", false, func(s *Sample) float64 { return s.ECCSBEAgg }}
	mECCDBEAgg = Metric{"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "Total number of double-bit persistent ECC errors.", "counter", false, func(s *Sample) float64 { return s.ECCDBEAgg }}
	mFBFree    = Metric{"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", "gauge", false, func(s *Sample) float64 { return s.FBTotalMiB - s.FBReserved - s.FBUsedMiB }}
	mFBUsed    = Metric{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge", false, func(s *Sample) float64 { return s.FBUsedMiB }}
	mFBRsvd    = Metric{"DCGM_FI_DEV_FB_RESERVED", "Framebuffer memory reserved (in MiB).", "gauge", false, func(s *Sample) float64 { return s.FBReserved }}
	mClockEvts = Metric{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "Current clock event reasons.", "gauge", false, func(s *Sample) float64 { return s.ClockEvents }}
	mGrEngine  = Metric{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.", "gauge", true, func(s *Sample) float64 { return s.GrEngine }}
	mSMActive  = Metric{"DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned.", "gauge", true, func(s *Sample) float64 { return s.SMActive }}
	mTensor    = Metric{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", "gauge", true, func(s *Sample) float64 { return s.Tensor }}
	mDRAM      = Metric{"DCGM_FI_PROF_DRAM_ACTIVE", "Ratio of cycles the device memory interface is active sending or receiving data.", "gauge", true, func(s *Sample) float64 { return s.DRAMActive }}
	mPCIeTx    = Metric{"DCGM_FI_PROF_PCIE_TX_BYTES", "The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", "gauge", false, func(s *Sample) float64 { return s.PCIeTx }}
	mPCIeRx    = Metric{"DCGM_FI_PROF_PCIE_RX_BYTES", "The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", "gauge", false, func(s *Sample) float64 { return s.PCIeRx }}
)

// ECCMetrics are the ECC counters an exporter sends when its counters file enables them
// (dcgm-exporter's default counters file has them commented out).
var ECCMetrics = []Metric{mECCSBEVol, mECCDBEVol, mECCSBEAgg, mECCDBEAgg}

// Exporter is a dcgm-exporter flavour: which series it sends and how it names labels.
type Exporter int

const (
	// Current is dcgm-exporter 4.x with the profiling (DCP) counters and the clock-events
	// bitmask enabled: label Hostname, Kubernetes labels pod/namespace/container.
	Current Exporter = iota
	// Old is an old exporter as still found in clusters: label hostname (lower case), no
	// DCGM_FI_PROF_* series, no clock-events bitmask, the deprecated PCIe throughput series in
	// KB/s, Kubernetes labels pod_name/pod_namespace/container_name.
	Old
)

// Metrics lists the series the flavour sends, in the order it writes them.
func (e Exporter) Metrics() []Metric {
	if e == Old {
		return []Metric{mSMClock, mMemClock, mMemTemp, mGPUTemp, mPower, mEnergy, mPCIeTxOld, mPCIeRxOld, mReplay,
			mGPUUtil, mMemCopy, mXID, mFBFree, mFBUsed, mFBRsvd}
	}
	return []Metric{mSMClock, mMemClock, mMemTemp, mGPUTemp, mPower, mEnergy, mReplay, mGPUUtil, mMemCopy, mXID,
		mFBFree, mFBUsed, mFBRsvd, mRowsUncorr, mRowsCorr, mRowRemapKO, mClockEvts, mGrEngine, mSMActive, mTensor, mDRAM, mPCIeTx, mPCIeRx}
}

// HostLabel is the name of the label carrying the host name.
func (e Exporter) HostLabel() string {
	if e == Old {
		return "hostname"
	}
	return "Hostname"
}

// GPU is one simulated GPU and how its exporter labels it.
type GPU struct {
	Host     string
	Index    int
	Model    Model
	Exporter Exporter
	UUID     string // GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, derived from host and index
	PCIBusID string
	Driver   string // DCGM_FI_DRIVER_VERSION
	// Labels are the labels after the DCGM ones: Kubernetes mapping, simulated="true".
	Labels map[string]string
}

// NewGPU derives a GPU's UUID and PCI bus ID from its host and index.
func NewGPU(host string, index int, m Model, e Exporter, driver string, labels map[string]string) GPU {
	sum := sha256.Sum256([]byte(host + "/" + strconv.Itoa(index)))
	h := fmt.Sprintf("%x", sum[:16])
	return GPU{
		Host: host, Index: index, Model: m, Exporter: e, Driver: driver, Labels: labels,
		UUID:     "GPU-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32],
		PCIBusID: pciBusID(m, index),
	}
}

// pciBusID follows real machines: a DGX A100's SXM4 slots, a DGX H100's, an AWS g4dn.12xlarge's T4s.
func pciBusID(m Model, index int) string {
	if m.Name == TeslaT4.Name {
		return fmt.Sprintf("00000000:00:%02X.0", 0x1B+index)
	}
	if m.Name == H10080GBHBM3.Name { // a DGX H100's SXM5 slots
		buses := []int{0x18, 0x2A, 0x3A, 0x5D, 0x9A, 0xAB, 0xBA, 0xDB}
		return fmt.Sprintf("00000000:%02X:00.0", buses[index%len(buses)]+0x100*(index/len(buses)))
	}
	buses := []int{0x07, 0x0F, 0x47, 0x4E, 0x87, 0x90, 0xB7, 0xBD}
	return fmt.Sprintf("00000000:%02X:00.0", buses[index%len(buses)]+0x100*(index/len(buses)))
}

// Label is one label name and value.
type Label struct{ Name, Value string }

// LabelSet lists the GPU's labels in dcgm-exporter's order: gpu, UUID, pci_bus_id, device,
// modelName, Hostname (hostname for Old), then DCGM_FI_DRIVER_VERSION and the other labels sorted
// by name, as its template ranges over one map of them.
func (g GPU) LabelSet() []Label {
	ls := []Label{
		{"gpu", strconv.Itoa(g.Index)}, {"UUID", g.UUID}, {"pci_bus_id", g.PCIBusID},
		{"device", "nvidia" + strconv.Itoa(g.Index)}, {"modelName", g.Model.Name},
		{g.Exporter.HostLabel(), g.Host},
	}
	extra := map[string]string{"DCGM_FI_DRIVER_VERSION": g.Driver}
	for k, v := range g.Labels {
		extra[k] = v
	}
	names := make([]string, 0, len(extra))
	for k := range extra {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		ls = append(ls, Label{k, extra[k]})
	}
	return ls
}

// newSample completes a reading with the GPU's fixed figures.
func newSample(g GPU, r Reading, energyMJ float64) Sample {
	return Sample{Reading: r, EnergyMJ: math.Round(energyMJ), FBTotalMiB: g.Model.FBTotalMiB, FBReserved: g.Model.FBReservedMiB}
}

func formatValue(m Metric, v float64) string {
	if m.Double {
		return strconv.FormatFloat(v, 'f', 6, 64) // %f, as dcgm-exporter
	}
	return strconv.FormatInt(int64(math.Round(v)), 10)
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func writeSeries(w *bufio.Writer, name string, labels []Label) {
	w.WriteString(name)
	w.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			w.WriteByte(',')
		}
		w.WriteString(l.Name)
		w.WriteString(`="`)
		labelEscaper.WriteString(w, l.Value)
		w.WriteByte('"')
	}
	w.WriteByte('}')
}

// WriteText writes one scrape in the Prometheus text format, as dcgm-exporter does: per series a
// HELP and a TYPE line, then one line per GPU. All GPUs must share one exporter flavour.
func WriteText(out io.Writer, gpus []GPU, samples []Sample) error {
	if len(gpus) == 0 {
		return nil
	}
	w := bufio.NewWriter(out)
	labelSets := make([][]Label, len(gpus))
	for i, g := range gpus {
		labelSets[i] = g.LabelSet()
	}
	for _, m := range gpus[0].Exporter.Metrics() {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", m.Name, m.Help, m.Name, m.Type)
		for i := range gpus {
			writeSeries(w, m.Name, labelSets[i])
			w.WriteByte(' ')
			w.WriteString(formatValue(m, m.value(&samples[i])))
			w.WriteByte('\n')
		}
	}
	return w.Flush()
}
