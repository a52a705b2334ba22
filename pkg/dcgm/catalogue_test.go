package dcgm

import (
	"slices"
	"strings"
	"testing"
)

// grafanaUnits are the Grafana unit ids the catalogue may use (packages/grafana-data/src/
// valueFormats/categories.ts): a typo there would silently show raw numbers.
var grafanaUnits = []string{"percent", "percentunit", "mbytes", "celsius", "watt", "joule", "rotmhz", "Bps", "ops", "hex0x", "none", "short"}

func TestCatalogueEntriesAreComplete(t *testing.T) {
	for _, m := range catalogue {
		if m.Title == "" || m.Description == "" {
			t.Errorf("%s: title %q, description %q", m.Name, m.Title, m.Description)
		}
		if !slices.Contains(grafanaUnits, m.Unit) {
			t.Errorf("%s: unit %q is not a Grafana unit id", m.Name, m.Unit)
		}
		if m.Aggregate != AggAvg && m.Aggregate != AggSum && m.Aggregate != AggMax {
			t.Errorf("%s: aggregate %q", m.Name, m.Aggregate)
		}
		if (len(m.Sources) == 0) == (len(m.ComputedFrom) == 0) || (len(m.ComputedFrom) > 0) != (m.Combine != NotComputed) {
			t.Errorf("%s: needs either sources or parts with a combiner: %+v", m.Name, m)
		}
		for _, part := range m.ComputedFrom {
			p, ok := Lookup(part)
			if !ok || len(p.Sources) == 0 {
				t.Errorf("%s: part %q is not a plain catalogue entry", m.Name, part)
			}
		}
		for _, s := range m.Sources {
			if len(s.Metric) < 8 || s.Metric[:8] != "DCGM_FI_" {
				t.Errorf("%s: source %q is not a DCGM field", m.Name, s.Metric)
			}
		}
	}
}

func TestTheCatalogueIsTheCallersCopy(t *testing.T) {
	ms := Metrics()
	ms[0].Sources[0].Metric = "changed"
	if m, _ := Lookup(ms[0].Name); m.Sources[0].Metric == "changed" {
		t.Error("a change to Metrics' answer reached the catalogue")
	}
	if got := Names(); len(got) != len(catalogue) || got[0] != "gpu_utilization" {
		t.Errorf("Names() = %v", got)
	}
	if (Source{}).Factor() != 1 || (Source{Scale: 0.001}).Factor() != 0.001 {
		t.Error("an unset scale must mean 1")
	}
}

// A source whose name says its unit is converted to its entry's unit: DCGM 4.7's base-unit
// fields (dcgm-exporter 4.9) sit beside the classic names, and a 0..1 ratio is never read as a
// percentage.
func TestUnitsNamedBySourcesAreConverted(t *testing.T) {
	for _, m := range catalogue {
		for _, s := range m.Sources {
			name, f := s.Metric, s.Factor()
			switch {
			case strings.HasSuffix(name, "_HERTZ"):
				if m.Unit != "rotmhz" || f != 1e-6 {
					t.Errorf("%s: %s in Hz read into %s × %g", m.Name, name, m.Unit, f)
				}
			case strings.Contains(name, "_JOULES"):
				if (m.Unit != "joule" && m.Unit != "watt") || f != 1 {
					t.Errorf("%s: %s in J read into %s × %g", m.Name, name, m.Unit, f)
				}
			case s.UnitFromHelp != "":
				// A name whose unit differs between exporter versions: its HELP text decides.
				percent := s.UnitFromHelp == PercentOrRatio && m.Unit == "percent"
				throughput := s.UnitFromHelp == BytesPerSecond && m.Unit == "Bps" && strings.HasSuffix(name, "_BYTES_PER_SECOND")
				if !percent && !throughput || s.Scale != 0 || s == m.Sources[0] {
					t.Errorf("%s: %s is read under %q into %s (scale %g); only a later source in percent, or a *_BYTES_PER_SECOND in Bps, may be", m.Name, name, s.UnitFromHelp, m.Unit, s.Scale)
				}
			case strings.HasSuffix(name, "_RATIO"):
				if !(m.Unit == "percentunit" && f == 1) && !(m.Unit == "percent" && f == 100) {
					t.Errorf("%s: the ratio %s read into %s × %g", m.Name, name, m.Unit, f)
				}
			case strings.HasSuffix(name, "_BYTES"):
				if !(m.Unit == "mbytes" && f*(1<<20) == 1) && !(m.Unit == "Bps" && f == 1) {
					t.Errorf("%s: %s in bytes read into %s × %g", m.Name, name, m.Unit, f)
				}
			case name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":
				if f != 0.001 {
					t.Errorf("%s: the mJ counter × %g", m.Name, f)
				}
			}
			if strings.HasSuffix(name, "_UTIL_RATIO") && strings.HasPrefix(name, "DCGM_FI_DEV_") && s.UnitFromHelp != PercentOrRatio {
				t.Errorf("%s reads %s without its HELP text: DCGM 4.6 gives DCGM_FI_DEV_GPU_UTIL_RATIO to field 203 in percent, DCGM 4.7 to a 0..1 field", m.Name, name)
			}
		}
	}
	sm, _ := Lookup("sm_clock")
	if len(sm.Sources) != 2 || sm.Sources[0].Factor() != 1 || 1.41e9*sm.Sources[1].Factor() != 1410 {
		t.Errorf("sm_clock %+v: MHz first, then 1.41 GHz in Hz is 1410 MHz", sm.Sources)
	}
	mem, _ := Lookup("mem_clock")
	if len(mem.Sources) != 2 || mem.Sources[1] != (Source{Metric: "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ", Scale: 1e-6}) {
		t.Errorf("mem_clock %+v", mem.Sources)
	}
	for _, name := range []string{"energy", "energy_power"} {
		e, _ := Lookup(name)
		if len(e.Sources) != 2 || e.Sources[0].Factor() != 0.001 || e.Sources[1].Metric != "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL" ||
			e.Sources[1].Factor() != 1 || e.Sources[0].Counter != e.Sources[1].Counter {
			t.Errorf("%s %+v: the mJ counter × 0.001 first, then the J counter as it is, both read alike", name, e.Sources)
		}
	}
}

// dcgm-exporter 4.9's utilisation and framebuffer names come after the classic ones: the
// classic name wins where a GPU exports both, and an override is read like the first source.
func TestDCGM47NamesFollowTheClassicOnes(t *testing.T) {
	want := map[string][]string{
		"gpu_utilization":             {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO"},
		"mem_copy_utilization":        {"DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_MEMORY_UTIL_RATIO"},
		"enc_utilization":             {"DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_ENC_UTIL_RATIO"},
		"dec_utilization":             {"DCGM_FI_DEV_DEC_UTIL", "DCGM_FI_DEV_DEC_UTIL_RATIO"},
		"fb_used":                     {"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_USED_BYTES"},
		"fb_free":                     {"DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_FREE_BYTES"},
		"remapped_rows_correctable":   {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_CORRECTABLE_TOTAL"},
		"remapped_rows_uncorrectable": {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_UNCORRECTABLE_TOTAL"},
		"row_remap_failure":           {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_ROW_REMAP_FAILED"},
	}
	for name, metrics := range want {
		m, _ := Lookup(name)
		var got []string
		for _, s := range m.Sources {
			got = append(got, s.Metric)
		}
		if !slices.Equal(got, metrics) {
			t.Errorf("%s reads %v, want %v", name, got, metrics)
		}
		if m.Sources[0] != (Source{Metric: metrics[0]}) {
			t.Errorf("%s: the classic %+v must be read as it is", name, m.Sources[0])
		}
	}
	fb, _ := Lookup("fb_used")
	if mib := 80 * float64(1<<30) * fb.Sources[1].Factor(); mib != 80*1024 {
		t.Errorf("80 GiB in bytes is %g MiB, want 81920", mib)
	}
}
