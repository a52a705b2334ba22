// Package dcgm is the catalogue of GPU metrics read from dcgm-exporter's series: the names users
// pick, each with its title, unit, how GPUs combine into a host or fleet series, and the DCGM
// metrics that answer it in order of preference. Query and settings validation (pkg/models), the
// Prometheus client and the editors' generated vocabulary all read this one list, so it imports
// nothing of this project.
package dcgm

import "slices"

// Source is one Prometheus metric a catalogue entry can read.
type Source struct {
	Metric string `json:"metric"`
	// Scale turns the metric's unit into the catalogue's (1024 for the deprecated KB/s PCIe
	// series, 0.001 for the energy counter's mJ, 1e-6 for DCGM 4.7's clocks in Hz, 2^-20 for
	// its framebuffer in bytes); 0 means 1.
	Scale float64 `json:"scale,omitempty"`
	// Counter marks a cumulative counter: the catalogue value is its per-second rate.
	Counter bool `json:"counter,omitempty"`
	// UnitFromHelp, when set, says the name alone does not fix the unit (exporter versions
	// write it in different units): the series' own HELP text, from Prometheus' metadata, picks
	// the scale, and Scale is unused. A series whose HELP text says neither unit is not read.
	UnitFromHelp HelpUnit `json:"unitFromHelp,omitempty"`
}

// HelpUnit is a rule that decides a source's scale from its HELP text.
type HelpUnit string

// PercentOrRatio reads a series whose HELP text says a percentage as it is and one whose HELP
// text says a 0..1 ratio × 100, into an entry in percent. dcgm-exporter writes its counters
// CSV's third column as HELP, and DCGM_FI_DEV_GPU_UTIL_RATIO is an integer percentage under
// DCGM 4.6 (field 203) and a 0..1 ratio under DCGM 4.7 (dcgm-exporter 4.9).
const PercentOrRatio HelpUnit = "percentOrRatio"

// BytesPerSecond reads a throughput series in the unit its HELP text says: bytes (as it is),
// KB or KiB (× 1024), MB or MiB (× 2^20) per second, into an entry in bytes per second.
// dcgm-exporter 4.10 renamed the PCIe and NVLink profiling fields to *_BYTES_PER_SECOND; the
// name says bytes, but DCGM's throughput fields have been KB/s before
// (DCGM_FI_DEV_PCIE_TX_THROUGHPUT), so the HELP text decides.
const BytesPerSecond HelpUnit = "bytesPerSecond"

// Factor is what a value of the source is multiplied by: Scale, 1 when unset.
func (s Source) Factor() float64 {
	if s.Scale == 0 {
		return 1
	}
	return s.Scale
}

// Metric is one catalogue entry: a name users pick, the DCGM metrics that can answer it in
// order of preference, and how to show and aggregate it.
type Metric struct {
	Name        string `json:"name"`
	Title       string `json:"title"` // display name: "GPU utilisation"
	Description string `json:"description"`
	// Unit is a Grafana unit id (percent, percentunit, mbytes, celsius, watt, joule, rotmhz,
	// Bps, ops, hex0x, none): values are converted to it.
	Unit string `json:"unit"`
	// Sources are tried together: a GPU's series comes from the first source it exports, so a
	// fleet mixing old and new exporters answers from both (see promql.go).
	Sources []Source `json:"sources,omitempty"`
	// ComputedFrom names the catalogue entries a computed metric combines (fb_used_percent,
	// nvlink_bandwidth); such an entry has no Sources of its own.
	ComputedFrom []string `json:"computedFrom,omitempty"`
	// Combine says how a computed entry combines its parts.
	Combine Combiner `json:"-"`
	// Aggregate combines GPUs into a host or fleet series (and duplicate series of one GPU):
	// avg for shares and clocks, sum for amounts and rates, max for temperatures (the hottest
	// GPU is the one that throttles) and for codes (XID, clock-event mask).
	Aggregate string `json:"aggregate"`
}

// Combiner says how a computed metric combines its parts.
type Combiner int

const (
	NotComputed Combiner = iota
	// PercentOfTotal is part0 / (part0 + part1) × 100.
	PercentOfTotal
	// SumOfParts is part0 + part1.
	SumOfParts
)

// Aggregation operators of catalogue entries.
const (
	AggAvg = "avg"
	AggSum = "sum"
	AggMax = "max"
)

// profiling returns a profiling ratio's sources: the classic dcgm-exporter name first, then the
// DCGM 4.6 *_UTIL_RATIO spelling of the same field ID (same value, 0..1), which newer exporter
// CSV files may use.
func profiling(classic, ratio string) []Source {
	return []Source{{Metric: classic}, {Metric: ratio}}
}

func one(metric string) []Source { return []Source{{Metric: metric}} }

// utilisation returns a percentage's sources: the classic name, then DCGM 4.7's *_UTIL_RATIO
// spelling, whose unit its HELP text decides (PercentOrRatio).
func utilisation(classic, ratio string) []Source {
	return []Source{{Metric: classic}, {Metric: ratio, UnitFromHelp: PercentOrRatio}}
}

// throughput returns a profiling throughput's sources: the classic name, dcgm-exporter 4.10's
// *_BYTES_PER_SECOND spelling (unit from its HELP text, BytesPerSecond), then the deprecated
// KB/s field when there is one.
func throughput(classic, renamed, deprecatedKB string) []Source {
	out := []Source{{Metric: classic}, {Metric: renamed, UnitFromHelp: BytesPerSecond}}
	if deprecatedKB != "" {
		out = append(out, Source{Metric: deprecatedKB, Scale: 1024})
	}
	return out
}

// bytesToMiB scales DCGM 4.7's framebuffer fields, in bytes, to the catalogue's MiB (DCGM's
// classic framebuffer fields say "MB" and are MiB).
const bytesToMiB = 1.0 / (1 << 20)

// hzToMHz scales DCGM 4.7's clock fields, in Hz, to the catalogue's MHz.
const hzToMHz = 1e-6

// catalogue is every metric the plugin knows, in the editor's order. The editors'
// src/generated/vocabulary.ts is generated from it: after a change run go generate
// ./cmd/hsi-gen-ts (internal/tsgen's test fails until then). Sources are from
// dcgm-exporter's default and DCP CSV files and DCGM's field list (dcgm_fields.h): see
// /work/shared/design/GPU.md §1.
//
// dcgm-exporter 4.9 writes DCGM 4.7's names, some in base units (docs/sources/gpu.md, "dcgm-exporter
// versions"). Each is read after the classic name, which stays first because a settings
// override is read like the first source (overrideSource in pkg/prometheus) and users' own
// series keep the classic units. A name that says its unit (*_CLOCK_HERTZ,
// *_ENERGY_JOULES_TOTAL, *_BYTES) is scaled by Scale. The utilisation *_UTIL_RATIO names do
// not fix their unit: DCGM 4.6's bindings give DCGM_FI_DEV_GPU_UTIL_RATIO to field 203, an
// integer percentage, DCGM 4.7 to a 0..1 field; those are read under PercentOrRatio, the
// series' HELP text deciding, and not at all when it says neither.
//
// Left out: DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL and its DCGM 4.7 successor (DCGM documents no
// unit for the classic one), and DCGM_FI_DEV_FB_CAPACITY_BYTES (the catalogue has no total).
var catalogue = []Metric{
	{Name: "gpu_utilization", Title: "GPU utilisation", Unit: "percent", Aggregate: AggAvg,
		Sources:     utilisation("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO"),
		Description: "Share of time one or more kernels ran (DCGM_FI_DEV_GPU_UTIL; dcgm-exporter 4.9's DCGM_FI_DEV_GPU_UTIL_RATIO in the unit its HELP text says). Coarse: one small kernel counts as busy; prefer sm_active where profiling metrics are on."},
	{Name: "mem_copy_utilization", Title: "Memory copy utilisation", Unit: "percent", Aggregate: AggAvg,
		Sources:     utilisation("DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_MEMORY_UTIL_RATIO"),
		Description: "Share of time device memory was read or written (DCGM_FI_DEV_MEM_COPY_UTIL; DCGM_FI_DEV_MEMORY_UTIL_RATIO in the unit its HELP text says); not a bandwidth, and not reported under MIG (use dram_active)."},
	{Name: "sm_active", Title: "SM active", Unit: "percentunit", Aggregate: AggAvg,
		Sources:     profiling("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_UTIL_RATIO"),
		Description: "Ratio of cycles an SM had at least one warp assigned, averaged over SMs; below 0.5 the GPU is used ineffectively. Off by default in dcgm-exporter."},
	{Name: "sm_occupancy", Title: "SM occupancy", Unit: "percentunit", Aggregate: AggAvg,
		Sources:     profiling("DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY_RATIO"),
		Description: "Ratio of resident warps to the SMs' maximum. Higher is not always better. Off by default in dcgm-exporter."},
	{Name: "gr_engine_active", Title: "Graphics engine active", Unit: "percentunit", Aggregate: AggAvg,
		Sources:     profiling("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO"),
		Description: "Ratio of time the graphics or compute engine was busy; the MIG-aware counterpart of GPU utilisation."},
	{Name: "tensor_active", Title: "Tensor pipe active", Unit: "percentunit", Aggregate: AggAvg,
		Sources:     profiling("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_TENSOR_UTIL_RATIO"),
		Description: "Ratio of cycles the tensor (HMMA/IMMA) pipes were active."},
	{Name: "dram_active", Title: "DRAM active", Unit: "percentunit", Aggregate: AggAvg,
		Sources:     profiling("DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_UTIL_RATIO"),
		Description: "Ratio of cycles the device memory interface was sending or receiving: memory bandwidth use. Peaks near 0.8 in practice."},
	{Name: "fp64_active", Title: "FP64 pipe active", Unit: "percentunit", Aggregate: AggAvg,
		Sources:     profiling("DCGM_FI_PROF_PIPE_FP64_ACTIVE", "DCGM_FI_PROF_FP64_UTIL_RATIO"),
		Description: "Ratio of cycles the FP64 pipe was active. Off by default in dcgm-exporter."},
	{Name: "fp32_active", Title: "FP32 pipe active", Unit: "percentunit", Aggregate: AggAvg,
		Sources:     profiling("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_FP32_UTIL_RATIO"),
		Description: "Ratio of cycles the FP32 (FMA) pipe was active. Off by default in dcgm-exporter."},
	{Name: "fp16_active", Title: "FP16 pipe active", Unit: "percentunit", Aggregate: AggAvg,
		Sources:     profiling("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "DCGM_FI_PROF_FP16_UTIL_RATIO"),
		Description: "Ratio of cycles the FP16 pipe (not HMMA) was active. Off by default in dcgm-exporter."},
	{Name: "fb_used", Title: "Framebuffer used", Unit: "mbytes", Aggregate: AggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_FB_USED"}, {Metric: "DCGM_FI_DEV_FB_USED_BYTES", Scale: bytesToMiB}},
		Description: "Device memory in use (MiB; dcgm-exporter 4.9's DCGM_FI_DEV_FB_USED_BYTES is converted). Host and fleet series are totals."},
	{Name: "fb_free", Title: "Framebuffer free", Unit: "mbytes", Aggregate: AggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_FB_FREE"}, {Metric: "DCGM_FI_DEV_FB_FREE_BYTES", Scale: bytesToMiB}},
		Description: "Device memory free (MiB; dcgm-exporter 4.9's DCGM_FI_DEV_FB_FREE_BYTES is converted). Host and fleet series are totals."},
	{Name: "fb_used_percent", Title: "Framebuffer used", Unit: "percent", Aggregate: AggAvg,
		ComputedFrom: []string{"fb_used", "fb_free"}, Combine: PercentOfTotal,
		Description: "used / (used + free) × 100; near 100 precedes CUDA out-of-memory errors. Host and fleet series average the GPUs."},
	{Name: "temperature", Title: "GPU temperature", Unit: "celsius", Aggregate: AggMax,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_GPU_TEMP"}, {Metric: "DCGM_FI_DEV_GPU_TEMP_CELSIUS"}},
		Description: "GPU temperature (°C); above about 83 °C clocks drop. Host and fleet series show the hottest GPU."},
	{Name: "memory_temperature", Title: "Memory temperature", Unit: "celsius", Aggregate: AggMax,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_MEMORY_TEMP"}, {Metric: "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS"}},
		Description: "HBM temperature (°C). Host and fleet series show the hottest GPU."},
	{Name: "power", Title: "Power draw", Unit: "watt", Aggregate: AggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_POWER_USAGE"}, {Metric: "DCGM_FI_DEV_BOARD_POWER_WATTS"}},
		Description: "Board power (W), sampled at each scrape. Host and fleet series are totals."},
	{Name: "energy", Title: "Energy consumed", Unit: "joule", Aggregate: AggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Scale: 0.001}, {Metric: "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL"}},
		Description: "Energy used since the driver loaded (J, from the mJ counter, or from dcgm-exporter 4.9's DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL in J)."},
	{Name: "energy_power", Title: "Average power", Unit: "watt", Aggregate: AggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Scale: 0.001, Counter: true}, {Metric: "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL", Counter: true}},
		Description: "Average power (W) over each step from the energy counter's rate: unlike power, which samples one instant per scrape, it misses no spikes."},
	{Name: "sm_clock", Title: "SM clock", Unit: "rotmhz", Aggregate: AggAvg,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_SM_CLOCK"}, {Metric: "DCGM_FI_DEV_SM_CLOCK_HERTZ", Scale: hzToMHz}},
		Description: "SM clock (MHz; dcgm-exporter 4.9's DCGM_FI_DEV_SM_CLOCK_HERTZ in Hz is converted); below its usual maximum under load means throttling (see clock_events)."},
	{Name: "mem_clock", Title: "Memory clock", Unit: "rotmhz", Aggregate: AggAvg,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_MEM_CLOCK"}, {Metric: "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ", Scale: hzToMHz}},
		Description: "Memory clock (MHz; dcgm-exporter 4.9's DCGM_FI_DEV_MEMORY_CLOCK_HERTZ in Hz is converted)."},
	{Name: "pcie_tx", Title: "PCIe transmit", Unit: "Bps", Aggregate: AggSum,
		Sources:     throughput("DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT"),
		Description: "PCIe bytes per second sent by the GPU, headers included (DCGM_FI_PROF_PCIE_TX_BYTES; dcgm-exporter 4.10's DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND in the unit its HELP text says; older exporters' deprecated DCGM_FI_DEV_PCIE_TX_THROUGHPUT in KB/s is converted). Gen4 x16 carries about 31.5 GB/s per direction."},
	{Name: "pcie_rx", Title: "PCIe receive", Unit: "Bps", Aggregate: AggSum,
		Sources:     throughput("DCGM_FI_PROF_PCIE_RX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND", "DCGM_FI_DEV_PCIE_RX_THROUGHPUT"),
		Description: "PCIe bytes per second received by the GPU, headers included (DCGM_FI_PROF_PCIE_RX_BYTES; dcgm-exporter 4.10's DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND in the unit its HELP text says; the deprecated KB/s DCGM_FI_DEV_PCIE_RX_THROUGHPUT is converted)."},
	{Name: "pcie_replay", Title: "PCIe replays", Unit: "ops", Aggregate: AggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Counter: true}, {Metric: "DCGM_FI_DEV_PCIE_REPLAY_TOTAL", Counter: true}},
		Description: "PCIe replays (retries) per second: a rising rate points at a bad link or riser."},
	{Name: "nvlink_tx", Title: "NVLink transmit", Unit: "Bps", Aggregate: AggSum,
		Sources:     throughput("DCGM_FI_PROF_NVLINK_TX_BYTES", "DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND", ""),
		Description: "NVLink bytes per second sent, all links, headers included (dcgm-exporter 4.10's DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND in the unit its HELP text says)."},
	{Name: "nvlink_rx", Title: "NVLink receive", Unit: "Bps", Aggregate: AggSum,
		Sources:     throughput("DCGM_FI_PROF_NVLINK_RX_BYTES", "DCGM_FI_PROF_NVLINK_RX_BYTES_PER_SECOND", ""),
		Description: "NVLink bytes per second received, all links, headers included (dcgm-exporter 4.10's DCGM_FI_PROF_NVLINK_RX_BYTES_PER_SECOND in the unit its HELP text says)."},
	{Name: "nvlink_bandwidth", Title: "NVLink traffic", Unit: "Bps", Aggregate: AggSum,
		ComputedFrom: []string{"nvlink_tx", "nvlink_rx"}, Combine: SumOfParts,
		Description: "NVLink bytes per second sent plus received."},
	{Name: "xid_errors", Title: "Last XID error", Unit: "none", Aggregate: AggMax,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_XID_ERRORS"}, {Metric: "DCGM_FI_DEV_XID_ERROR"}},
		Description: "Code of the last XID error (0: none); 48 (double-bit ECC), 79 (fell off the bus) and 94/95 (contained/uncontained errors) need action. Host and fleet series show the largest code."},
	{Name: "ecc_sbe", Title: "ECC single-bit errors", Unit: "short", Aggregate: AggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"}, {Metric: "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"}},
		Description: "Single-bit (corrected) ECC errors since the driver loaded (volatile; else the lifetime total). Off in dcgm-exporter's default counters. A rising count warns of failing memory."},
	{Name: "ecc_dbe", Title: "ECC double-bit errors", Unit: "short", Aggregate: AggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}, {Metric: "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"}},
		Description: "Double-bit (uncorrectable) ECC errors since the driver loaded (volatile; else the lifetime total): any is a reason to drain the GPU. Off in dcgm-exporter's default counters."},
	{Name: "remapped_rows_correctable", Title: "Remapped rows (correctable)", Unit: "short", Aggregate: AggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"}, {Metric: "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL"}},
		Description: "Memory rows remapped after correctable errors (A100 and newer)."},
	{Name: "remapped_rows_uncorrectable", Title: "Remapped rows (uncorrectable)", Unit: "short", Aggregate: AggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"}, {Metric: "DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL"}},
		Description: "Memory rows remapped after uncorrectable errors: the GPU needs a reset for the remap to take effect."},
	{Name: "row_remap_failure", Title: "Row remap failure", Unit: "none", Aggregate: AggMax,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_ROW_REMAP_FAILURE"}, {Metric: "DCGM_FI_DEV_ROW_REMAP_FAILED"}},
		Description: "1 when remapping a row failed: the GPU should be replaced."},
	{Name: "clock_events", Title: "Clock event reasons", Unit: "hex0x", Aggregate: AggMax,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"}, {Metric: "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"}},
		Description: "Why clocks are held down, a bitmask: 0x1 idle, 0x4 SW power cap, 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 power brake. Host and fleet series show the largest mask, not a union."},
	{Name: "enc_utilization", Title: "Encoder utilisation", Unit: "percent", Aggregate: AggAvg,
		Sources:     utilisation("DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_ENC_UTIL_RATIO"),
		Description: "Video encoder utilisation (%; DCGM_FI_DEV_ENC_UTIL_RATIO in the unit its HELP text says)."},
	{Name: "dec_utilization", Title: "Decoder utilisation", Unit: "percent", Aggregate: AggAvg,
		Sources:     utilisation("DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_DEC_UTIL_RATIO"),
		Description: "Video decoder utilisation (%; DCGM_FI_DEV_DEC_UTIL_RATIO in the unit its HELP text says)."},
}

// Metrics lists the entries in the editor's order; the copy is the caller's.
func Metrics() []Metric {
	out := slices.Clone(catalogue)
	for i := range out {
		out[i].Sources = slices.Clone(out[i].Sources)
		out[i].ComputedFrom = slices.Clone(out[i].ComputedFrom)
	}
	return out
}

// Names lists the catalogue names in the editor's order: what a gpuMetrics query and
// jsonData.dcgmMetricNames accept.
func Names() []string {
	out := make([]string, len(catalogue))
	for i, m := range catalogue {
		out[i] = m.Name
	}
	return out
}

// Lookup finds an entry by catalogue name.
func Lookup(name string) (Metric, bool) {
	for _, m := range catalogue {
		if m.Name == name {
			m.Sources, m.ComputedFrom = slices.Clone(m.Sources), slices.Clone(m.ComputedFrom)
			return m, true
		}
	}
	return Metric{}, false
}
