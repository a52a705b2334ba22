package dcgm

import (
	"slices"
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
