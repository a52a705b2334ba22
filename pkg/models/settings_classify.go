package models

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
)

// ClassifySettings holds the thresholds of the GPU workload classification.
//
// jsonData keys (all optional; defaults are classify.DefaultThresholds, the seeds' figures):
//
//	"gpuThresholds": {
//	  "computeBoundPct": 80, "computeBoundMaxMemoryPct": 60,
//	  "memoryBoundPct": 70, "memoryBoundMaxComputePct": 70,
//	  "pcieBoundLinkShare": 0.6, "idleBelowPct": 50,
//	  "thermalTempC": 83, "thermalClockRatio": 0.9, "dramActivePeak": 0.8,
//	  "clockMaxWindow": "24h", "shareWindow": "1h"
//	},
//	"pcieGeneration": 4, "pcieWidth": 16
//
// Numbers may be quoted, as elsewhere in jsonData. The PCIe link is outside gpuThresholds
// because it describes the hardware, not a judgement.
type ClassifySettings struct {
	Thresholds classify.Thresholds
	// Changed lists the keys set to something other than the default, so the gpuClass query can
	// say when it no longer matches the provisioned recording rules (rendered with the defaults).
	Changed []string
}

// loadClassify reads the ClassifySettings keys of jsonData; it returns the first invalid one, naming its key.
// On error the defaults stay in place for every key not yet read.
func loadClassify(j jsonFields, out *ClassifySettings) error {
	out.Thresholds = classify.DefaultThresholds()
	out.Changed = nil
	def := classify.DefaultThresholds()

	if raw, ok := j["gpuThresholds"]; ok && string(raw) != "null" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return fmt.Errorf("jsonData.gpuThresholds must be an object such as {\"computeBoundPct\": 80}, got %s", truncate(string(raw), 40))
		}
		known := map[string]bool{}
		for _, k := range classify.WindowKeys {
			known[k.Key] = true
		}
		for _, k := range classify.NumericThresholdKeys {
			known[k.Key] = true
		}
		for _, key := range sortedJSONKeys(obj) {
			if !known[key] {
				return fmt.Errorf("jsonData.gpuThresholds has no key %q; known keys: %s", truncate(key, 40), strings.Join(thresholdKeyNames(), ", "))
			}
		}
		th := jsonFields(obj)
		for _, k := range classify.NumericThresholdKeys {
			if raw, set := obj[k.Key]; !set || string(raw) == "null" {
				continue // null means the default, as for any jsonData key
			}
			v, err := th.number(k.Key)
			if err != nil {
				return fmt.Errorf("%s", strings.Replace(err.Error(), "jsonData.", "jsonData.gpuThresholds.", 1))
			}
			if err := k.Check(v); err != nil {
				return fmt.Errorf("jsonData.gpuThresholds.%v", err)
			}
			k.Set(&out.Thresholds, v)
		}
		for _, k := range classify.WindowKeys {
			raw, set := obj[k.Key]
			if !set || string(raw) == "null" {
				continue
			}
			s, err := th.str(k.Key)
			if err != nil {
				return fmt.Errorf("jsonData.gpuThresholds.%s must be a duration such as \"1h\" or \"30m\", got %s", k.Key, truncate(string(raw), 40))
			}
			d, err := parseStepDuration(strings.TrimSpace(s))
			if err != nil {
				return fmt.Errorf("jsonData.gpuThresholds.%s must be a duration such as \"1h\" or \"30m\", got %q", k.Key, truncate(s, 40))
			}
			if err := k.Check(d); err != nil {
				return fmt.Errorf("jsonData.gpuThresholds.%v", err)
			}
			k.Set(&out.Thresholds, d)
		}
	}

	for _, p := range []struct {
		key string
		dst *int
	}{{"pcieGeneration", &out.Thresholds.PCIeGeneration}, {"pcieWidth", &out.Thresholds.PCIeWidth}} {
		v, err := j.number(p.key)
		if err != nil {
			return err
		}
		if _, set := j[p.key]; !set || string(j[p.key]) == "null" {
			continue
		}
		if v != float64(int(v)) {
			return fmt.Errorf("jsonData.%s must be a whole number, got %v", p.key, v)
		}
		*p.dst = int(v)
	}
	if err := out.Thresholds.Validate(); err != nil {
		// Only the PCIe keys can still be invalid here: the thresholds were checked one by one.
		out.Thresholds.PCIeGeneration, out.Thresholds.PCIeWidth = def.PCIeGeneration, def.PCIeWidth
		return fmt.Errorf("jsonData.%v", err)
	}

	for _, k := range classify.NumericThresholdKeys {
		if k.Get(&out.Thresholds) != k.Get(&def) {
			out.Changed = append(out.Changed, k.Key)
		}
	}
	for _, k := range classify.WindowKeys {
		if k.Get(&out.Thresholds) != k.Get(&def) {
			out.Changed = append(out.Changed, k.Key)
		}
	}
	if out.Thresholds.PCIeCapacity() != def.PCIeCapacity() {
		out.Changed = append(out.Changed, "pcieGeneration/pcieWidth")
	}
	return nil
}

func thresholdKeyNames() []string {
	var names []string
	for _, k := range classify.NumericThresholdKeys {
		names = append(names, k.Key)
	}
	for _, k := range classify.WindowKeys {
		names = append(names, k.Key)
	}
	return names
}

func sortedJSONKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
