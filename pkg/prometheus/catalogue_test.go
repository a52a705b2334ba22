package prometheus

import (
	"slices"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/dcgm"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

func TestCatalogueConvertsDeprecatedAndCounterUnits(t *testing.T) {
	cat := NewCatalogue(models.DCGMSettings{})
	tx, _ := cat.Lookup("pcie_tx")
	if tx.Unit != "Bps" || len(tx.Sources) != 3 || tx.Sources[0] != (Source{Metric: "DCGM_FI_PROF_PCIE_TX_BYTES"}) ||
		tx.Sources[1] != (Source{Metric: "DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND", UnitFromHelp: dcgm.BytesPerSecond}) ||
		tx.Sources[2] != (Source{Metric: "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", Scale: 1024}) {
		t.Errorf("pcie_tx = %+v: bytes/s first, dcgm-exporter 4.10's name in its HELP text's unit, the deprecated KB/s series scaled by 1024", tx)
	}
	ep, _ := cat.Lookup("energy_power")
	if ep.Unit != "watt" || !ep.Sources[0].Counter || ep.Sources[0].Factor() != 0.001 {
		t.Errorf("energy_power = %+v: the mJ counter's rate in W", ep)
	}
	clk, _ := cat.Lookup("clock_events")
	if got := []string{clk.Sources[0].Metric, clk.Sources[1].Metric}; !slices.Equal(got, []string{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"}) {
		t.Errorf("clock_events sources %v", got)
	}
	sm, _ := cat.Lookup("sm_active")
	if sm.Unit != "percentunit" || sm.Sources[1].Metric != "DCGM_FI_PROF_SM_UTIL_RATIO" {
		t.Errorf("sm_active = %+v: a 0..1 ratio with DCGM 4.6's name as alias", sm)
	}
	if (Source{}).Factor() != 1 {
		t.Error("an unset scale must mean 1")
	}
}

func TestCatalogueAppliesSettingsOverrides(t *testing.T) {
	cat := NewCatalogue(models.DCGMSettings{
		MetricNames: map[string]string{
			"gpu_utilization": "nvidia_gpu_util",                // custom: read like DCGM_FI_DEV_GPU_UTIL
			"pcie_rx":         "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", // known: keeps its KB/s scale
			"energy_power":    "gpu_energy_mj_total",            // custom counter stays a counter
		},
		LabelNames: map[string]string{models.RoleHost: "node"},
	})
	util, _ := cat.Lookup("gpu_utilization")
	if len(util.Sources) != 1 || util.Sources[0] != (Source{Metric: "nvidia_gpu_util"}) {
		t.Errorf("gpu_utilization sources %+v", util.Sources)
	}
	rx, _ := cat.Lookup("pcie_rx")
	if len(rx.Sources) != 1 || rx.Sources[0] != (Source{Metric: "DCGM_FI_DEV_PCIE_RX_THROUGHPUT", Scale: 1024}) {
		t.Errorf("pcie_rx sources %+v", rx.Sources)
	}
	ep, _ := cat.Lookup("energy_power")
	if ep.Sources[0] != (Source{Metric: "gpu_energy_mj_total", Scale: 0.001, Counter: true}) {
		t.Errorf("energy_power sources %+v", ep.Sources)
	}
	if got := cat.Aliases(models.RoleHost); !slices.Equal(got, []string{"node"}) {
		t.Errorf("host aliases %v", got)
	}
	if got := cat.Aliases(models.RolePod); !slices.Equal(got, []string{"exported_pod", "pod", "pod_name"}) {
		t.Errorf("pod aliases %v", got)
	}
	names := cat.MetricNames()
	if !slices.IsSorted(names) || !slices.Contains(names, "nvidia_gpu_util") || slices.Contains(names, "DCGM_FI_DEV_GPU_UTIL") ||
		!slices.Contains(names, "DCGM_FI_PROF_PCIE_TX_BYTES") {
		t.Errorf("MetricNames %v", names)
	}
	// The built-in catalogue is not changed by an instance's overrides.
	if u, _ := NewCatalogue(models.DCGMSettings{}).Lookup("gpu_utilization"); u.Sources[0].Metric != "DCGM_FI_DEV_GPU_UTIL" {
		t.Errorf("overrides leaked into the built-in catalogue: %+v", u)
	}
}

// An override is read in its entry's unit, like the entry's first source: the classic MHz clock,
// not dcgm-exporter 4.9's Hz one, unless the override names the Hz series itself.
func TestClockOverridesKeepTheirUnit(t *testing.T) {
	cat := NewCatalogue(models.DCGMSettings{MetricNames: map[string]string{
		"sm_clock":  "node_gpu_sm_clock_mhz",
		"mem_clock": "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ",
	}})
	sm, _ := cat.Lookup("sm_clock")
	if len(sm.Sources) != 1 || sm.Sources[0] != (Source{Metric: "node_gpu_sm_clock_mhz"}) {
		t.Errorf("sm_clock sources %+v: a custom clock is read in MHz", sm.Sources)
	}
	mem, _ := cat.Lookup("mem_clock")
	if len(mem.Sources) != 1 || mem.Sources[0] != (Source{Metric: "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ", Scale: 1e-6}) {
		t.Errorf("mem_clock sources %+v: the known Hz series keeps its scale", mem.Sources)
	}
}
