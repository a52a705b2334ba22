package prometheus

import (
	"slices"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Source is one Prometheus metric a catalogue entry can read.
type Source struct {
	Metric string `json:"metric"`
	// Scale turns the metric's unit into the catalogue's (1024 for the deprecated KB/s PCIe
	// series, 0.001 for the energy counter's mJ); 0 means 1.
	Scale float64 `json:"scale,omitempty"`
	// Counter marks a cumulative counter: the catalogue value is its per-second rate.
	Counter bool `json:"counter,omitempty"`
}

func (s Source) scale() float64 {
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
	combine      combiner
	// Aggregate combines GPUs into a host or fleet series (and duplicate series of one GPU):
	// avg for shares and clocks, sum for amounts and rates, max for temperatures (the hottest
	// GPU is the one that throttles) and for codes (XID, clock-event mask).
	Aggregate string `json:"aggregate"`
}

// combiner says how a computed metric combines its parts.
type combiner int

const (
	notComputed combiner = iota
	// percentOfTotal is part0 / (part0 + part1) × 100.
	percentOfTotal
	// sumOfParts is part0 + part1.
	sumOfParts
)

// Aggregation operators of catalogue entries.
const (
	aggAvg = "avg"
	aggSum = "sum"
	aggMax = "max"
)

// profiling returns a profiling ratio's sources: the classic dcgm-exporter name first, then the
// DCGM 4.6 *_UTIL_RATIO spelling of the same field ID (same value, 0..1), which newer exporter
// CSV files may use.
func profiling(classic, ratio string) []Source {
	return []Source{{Metric: classic}, {Metric: ratio}}
}

func one(metric string) []Source { return []Source{{Metric: metric}} }

// catalogue is every metric the plugin knows, in the editor's order. models.GPUMetricNames and
// the editors' src/generated/vocabulary.ts are generated from it: after a change run
// go generate ./cmd/hsi-gen-ts (internal/tsgen's test fails until then). Sources are from
// dcgm-exporter's default and DCP CSV files and DCGM's field list (dcgm_fields.h): see
// /work/shared/design/GPU.md §1.
//
// Left out on purpose: DCGM_FI_DEV_GPU_UTIL_RATIO (sources disagree whether it is field 203 in
// percent or a new 0..1 field, and a wrong guess is off by 100×) and
// DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL (DCGM documents no unit for it).
var catalogue = []Metric{
	{Name: "gpu_utilization", Title: "GPU utilisation", Unit: "percent", Aggregate: aggAvg,
		Sources:     one("DCGM_FI_DEV_GPU_UTIL"),
		Description: "Share of time one or more kernels ran (DCGM_FI_DEV_GPU_UTIL). Coarse: one small kernel counts as busy; prefer sm_active where profiling metrics are on."},
	{Name: "mem_copy_utilization", Title: "Memory copy utilisation", Unit: "percent", Aggregate: aggAvg,
		Sources:     one("DCGM_FI_DEV_MEM_COPY_UTIL"),
		Description: "Share of time device memory was read or written (DCGM_FI_DEV_MEM_COPY_UTIL); not a bandwidth, and not reported under MIG (use dram_active)."},
	{Name: "sm_active", Title: "SM active", Unit: "percentunit", Aggregate: aggAvg,
		Sources:     profiling("DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_PROF_SM_UTIL_RATIO"),
		Description: "Ratio of cycles an SM had at least one warp assigned, averaged over SMs; below 0.5 the GPU is used ineffectively. Off by default in dcgm-exporter."},
	{Name: "sm_occupancy", Title: "SM occupancy", Unit: "percentunit", Aggregate: aggAvg,
		Sources:     profiling("DCGM_FI_PROF_SM_OCCUPANCY", "DCGM_FI_PROF_SM_OCCUPANCY_RATIO"),
		Description: "Ratio of resident warps to the SMs' maximum. Higher is not always better. Off by default in dcgm-exporter."},
	{Name: "gr_engine_active", Title: "Graphics engine active", Unit: "percentunit", Aggregate: aggAvg,
		Sources:     profiling("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO"),
		Description: "Ratio of time the graphics or compute engine was busy; the MIG-aware counterpart of GPU utilisation."},
	{Name: "tensor_active", Title: "Tensor pipe active", Unit: "percentunit", Aggregate: aggAvg,
		Sources:     profiling("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_TENSOR_UTIL_RATIO"),
		Description: "Ratio of cycles the tensor (HMMA/IMMA) pipes were active."},
	{Name: "dram_active", Title: "DRAM active", Unit: "percentunit", Aggregate: aggAvg,
		Sources:     profiling("DCGM_FI_PROF_DRAM_ACTIVE", "DCGM_FI_PROF_DRAM_UTIL_RATIO"),
		Description: "Ratio of cycles the device memory interface was sending or receiving: memory bandwidth use. Peaks near 0.8 in practice."},
	{Name: "fp64_active", Title: "FP64 pipe active", Unit: "percentunit", Aggregate: aggAvg,
		Sources:     profiling("DCGM_FI_PROF_PIPE_FP64_ACTIVE", "DCGM_FI_PROF_FP64_UTIL_RATIO"),
		Description: "Ratio of cycles the FP64 pipe was active. Off by default in dcgm-exporter."},
	{Name: "fp32_active", Title: "FP32 pipe active", Unit: "percentunit", Aggregate: aggAvg,
		Sources:     profiling("DCGM_FI_PROF_PIPE_FP32_ACTIVE", "DCGM_FI_PROF_FP32_UTIL_RATIO"),
		Description: "Ratio of cycles the FP32 (FMA) pipe was active. Off by default in dcgm-exporter."},
	{Name: "fp16_active", Title: "FP16 pipe active", Unit: "percentunit", Aggregate: aggAvg,
		Sources:     profiling("DCGM_FI_PROF_PIPE_FP16_ACTIVE", "DCGM_FI_PROF_FP16_UTIL_RATIO"),
		Description: "Ratio of cycles the FP16 pipe (not HMMA) was active. Off by default in dcgm-exporter."},
	{Name: "fb_used", Title: "Framebuffer used", Unit: "mbytes", Aggregate: aggSum,
		Sources:     one("DCGM_FI_DEV_FB_USED"),
		Description: "Device memory in use (MiB). Host and fleet series are totals."},
	{Name: "fb_free", Title: "Framebuffer free", Unit: "mbytes", Aggregate: aggSum,
		Sources:     one("DCGM_FI_DEV_FB_FREE"),
		Description: "Device memory free (MiB). Host and fleet series are totals."},
	{Name: "fb_used_percent", Title: "Framebuffer used", Unit: "percent", Aggregate: aggAvg,
		ComputedFrom: []string{"fb_used", "fb_free"}, combine: percentOfTotal,
		Description: "used / (used + free) × 100; near 100 precedes CUDA out-of-memory errors. Host and fleet series average the GPUs."},
	{Name: "temperature", Title: "GPU temperature", Unit: "celsius", Aggregate: aggMax,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_GPU_TEMP"}, {Metric: "DCGM_FI_DEV_GPU_TEMP_CELSIUS"}},
		Description: "GPU temperature (°C); above about 83 °C clocks drop. Host and fleet series show the hottest GPU."},
	{Name: "memory_temperature", Title: "Memory temperature", Unit: "celsius", Aggregate: aggMax,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_MEMORY_TEMP"}, {Metric: "DCGM_FI_DEV_MEMORY_TEMP_CELSIUS"}},
		Description: "HBM temperature (°C). Host and fleet series show the hottest GPU."},
	{Name: "power", Title: "Power draw", Unit: "watt", Aggregate: aggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_POWER_USAGE"}, {Metric: "DCGM_FI_DEV_BOARD_POWER_WATTS"}},
		Description: "Board power (W), sampled at each scrape. Host and fleet series are totals."},
	{Name: "energy", Title: "Energy consumed", Unit: "joule", Aggregate: aggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Scale: 0.001}},
		Description: "Energy used since the driver loaded (J, from the mJ counter)."},
	{Name: "energy_power", Title: "Average power", Unit: "watt", Aggregate: aggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", Scale: 0.001, Counter: true}},
		Description: "Average power (W) over each step from the energy counter's rate: unlike power, which samples one instant per scrape, it misses no spikes."},
	{Name: "sm_clock", Title: "SM clock", Unit: "rotmhz", Aggregate: aggAvg,
		Sources:     one("DCGM_FI_DEV_SM_CLOCK"),
		Description: "SM clock (MHz); below its usual maximum under load means throttling (see clock_events)."},
	{Name: "mem_clock", Title: "Memory clock", Unit: "rotmhz", Aggregate: aggAvg,
		Sources:     one("DCGM_FI_DEV_MEM_CLOCK"),
		Description: "Memory clock (MHz)."},
	{Name: "pcie_tx", Title: "PCIe transmit", Unit: "Bps", Aggregate: aggSum,
		Sources:     []Source{{Metric: "DCGM_FI_PROF_PCIE_TX_BYTES"}, {Metric: "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", Scale: 1024}},
		Description: "PCIe bytes per second sent by the GPU, headers included (DCGM_FI_PROF_PCIE_TX_BYTES; older exporters' deprecated DCGM_FI_DEV_PCIE_TX_THROUGHPUT in KB/s is converted). Gen4 x16 carries about 31.5 GB/s per direction."},
	{Name: "pcie_rx", Title: "PCIe receive", Unit: "Bps", Aggregate: aggSum,
		Sources:     []Source{{Metric: "DCGM_FI_PROF_PCIE_RX_BYTES"}, {Metric: "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", Scale: 1024}},
		Description: "PCIe bytes per second received by the GPU, headers included (DCGM_FI_PROF_PCIE_RX_BYTES; the deprecated KB/s DCGM_FI_DEV_PCIE_RX_THROUGHPUT is converted)."},
	{Name: "pcie_replay", Title: "PCIe replays", Unit: "ops", Aggregate: aggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", Counter: true}, {Metric: "DCGM_FI_DEV_PCIE_REPLAY_TOTAL", Counter: true}},
		Description: "PCIe replays (retries) per second: a rising rate points at a bad link or riser."},
	{Name: "nvlink_tx", Title: "NVLink transmit", Unit: "Bps", Aggregate: aggSum,
		Sources:     one("DCGM_FI_PROF_NVLINK_TX_BYTES"),
		Description: "NVLink bytes per second sent, all links, headers included."},
	{Name: "nvlink_rx", Title: "NVLink receive", Unit: "Bps", Aggregate: aggSum,
		Sources:     one("DCGM_FI_PROF_NVLINK_RX_BYTES"),
		Description: "NVLink bytes per second received, all links, headers included."},
	{Name: "nvlink_bandwidth", Title: "NVLink traffic", Unit: "Bps", Aggregate: aggSum,
		ComputedFrom: []string{"nvlink_tx", "nvlink_rx"}, combine: sumOfParts,
		Description: "NVLink bytes per second sent plus received."},
	{Name: "xid_errors", Title: "Last XID error", Unit: "none", Aggregate: aggMax,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_XID_ERRORS"}, {Metric: "DCGM_FI_DEV_XID_ERROR"}},
		Description: "Code of the last XID error (0: none); 48 (double-bit ECC), 79 (fell off the bus) and 94/95 (contained/uncontained errors) need action. Host and fleet series show the largest code."},
	{Name: "ecc_sbe", Title: "ECC single-bit errors", Unit: "short", Aggregate: aggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"}, {Metric: "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL"}},
		Description: "Single-bit (corrected) ECC errors since the driver loaded (volatile; else the lifetime total). Off in dcgm-exporter's default counters. A rising count warns of failing memory."},
	{Name: "ecc_dbe", Title: "ECC double-bit errors", Unit: "short", Aggregate: aggSum,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"}, {Metric: "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"}},
		Description: "Double-bit (uncorrectable) ECC errors since the driver loaded (volatile; else the lifetime total): any is a reason to drain the GPU. Off in dcgm-exporter's default counters."},
	{Name: "remapped_rows_correctable", Title: "Remapped rows (correctable)", Unit: "short", Aggregate: aggSum,
		Sources:     one("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"),
		Description: "Memory rows remapped after correctable errors (A100 and newer)."},
	{Name: "remapped_rows_uncorrectable", Title: "Remapped rows (uncorrectable)", Unit: "short", Aggregate: aggSum,
		Sources:     one("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS"),
		Description: "Memory rows remapped after uncorrectable errors: the GPU needs a reset for the remap to take effect."},
	{Name: "row_remap_failure", Title: "Row remap failure", Unit: "none", Aggregate: aggMax,
		Sources:     one("DCGM_FI_DEV_ROW_REMAP_FAILURE"),
		Description: "1 when remapping a row failed: the GPU should be replaced."},
	{Name: "clock_events", Title: "Clock event reasons", Unit: "hex0x", Aggregate: aggMax,
		Sources:     []Source{{Metric: "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"}, {Metric: "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"}},
		Description: "Why clocks are held down, a bitmask: 0x1 idle, 0x4 SW power cap, 0x8 HW slowdown, 0x20 SW thermal, 0x40 HW thermal, 0x80 power brake. Host and fleet series show the largest mask, not a union."},
	{Name: "enc_utilization", Title: "Encoder utilisation", Unit: "percent", Aggregate: aggAvg,
		Sources:     one("DCGM_FI_DEV_ENC_UTIL"),
		Description: "Video encoder utilisation (%)."},
	{Name: "dec_utilization", Title: "Decoder utilisation", Unit: "percent", Aggregate: aggAvg,
		Sources:     one("DCGM_FI_DEV_DEC_UTIL"),
		Description: "Video decoder utilisation (%)."},
}

// roleAliases are the label names each role goes by across exporter versions and Prometheus
// relabelling, in order of preference when a series carries several. The exported_* names come
// first: Prometheus renames a target's pod/namespace/container to exported_* only when service
// discovery set its own (the exporter's pod) over them, so there the exported_* label is the
// workload's and the plain one the exporter's.
var roleAliases = map[string][]string{
	models.RoleHost:      {"Hostname", "hostname"},
	models.RoleGPU:       {"gpu"},
	models.RoleUUID:      {"UUID"},
	models.RoleModel:     {"modelName"},
	models.RolePod:       {"exported_pod", "pod", "pod_name"},
	models.RoleNamespace: {"exported_namespace", "namespace", "pod_namespace"},
	models.RoleContainer: {"exported_container", "container", "container_name"},
	models.RoleMIG:       {"GPU_I_ID"},
	// dcgm-exporter labels a MIG instance's series with its parent's gpu and UUID plus these two.
	models.RoleMIGProfile: {"GPU_I_PROFILE"},
}

// Catalogue is the catalogue with a data source's overrides applied.
type Catalogue struct {
	metrics []Metric
	aliases map[string][]string
}

// NewCatalogue applies the settings' metric and label name overrides (models.DCGMSettings,
// already validated) to the built-in catalogue.
func NewCatalogue(s models.DCGMSettings) *Catalogue {
	c := &Catalogue{aliases: map[string][]string{}}
	for role, names := range roleAliases {
		if fixed, ok := s.LabelNames[role]; ok {
			names = []string{fixed}
		}
		c.aliases[role] = slices.Clone(names)
	}
	for _, m := range catalogue {
		if name, ok := s.MetricNames[m.Name]; ok && len(m.Sources) > 0 {
			m.Sources = []Source{overrideSource(m, name)}
		} else {
			m.Sources = slices.Clone(m.Sources)
		}
		c.metrics = append(c.metrics, m)
	}
	return c
}

// overrideSource reads an overriding name like the known source of that name, or else like the
// entry's first source: a renamed DCGM_FI_DEV_GPU_UTIL is still a percentage, a renamed energy
// counter still a counter in mJ.
func overrideSource(m Metric, name string) Source {
	for _, s := range m.Sources {
		if s.Metric == name {
			return s
		}
	}
	s := m.Sources[0]
	s.Metric = name
	return s
}

// Metrics lists the entries in the editor's order.
func (c *Catalogue) Metrics() []Metric { return slices.Clone(c.metrics) }

// Lookup finds an entry by catalogue name.
func (c *Catalogue) Lookup(name string) (Metric, bool) {
	for _, m := range c.metrics {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// Aliases are the label names the role may carry, in order of preference.
func (c *Catalogue) Aliases(role string) []string { return c.aliases[role] }

// MetricNames lists every Prometheus metric name the catalogue may read, sorted: what label
// detection and the label-values lookups restrict themselves to.
func (c *Catalogue) MetricNames() []string {
	var out []string
	for _, m := range c.metrics {
		for _, s := range m.Sources {
			if !slices.Contains(out, s.Metric) {
				out = append(out, s.Metric)
			}
		}
	}
	slices.Sort(out)
	return out
}
