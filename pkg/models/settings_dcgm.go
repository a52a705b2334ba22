package models

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/dcgm"
)

// DCGMSettings holds the metric and label names of the DCGM series, overridable per data source.
//
// jsonData keys:
//
//	"dcgmMetricNames": {"gpu_utilization": "my_gpu_util", ...}  catalogue name → metric name
//	"dcgmLabelNames":  {"host": "node", "pod": "exported_pod"}  role → label name
//	"gpuMaxSeries":    500                                      series limit of one GPU query
//
// Without overrides the plugin tries each catalogue entry's known DCGM names and detects which
// label aliases the series carry; an override replaces that guess with exactly one name.
type DCGMSettings struct {
	// MetricNames maps catalogue names (pkg/dcgm) to the metric to read instead of the
	// known DCGM names; a custom metric must already be in the catalogue's unit.
	MetricNames map[string]string
	// LabelNames maps roles (GPURoles) to the one label that carries the role.
	LabelNames map[string]string
	// MaxSeries bounds the series one GPU query returns (0: DefaultGPUMaxSeries).
	MaxSeries int
}

// DefaultGPUMaxSeries is the default of jsonData.gpuMaxSeries: a large fleet's per-GPU panel is
// unreadable beyond this anyway, and it bounds the plugin's memory per query.
const DefaultGPUMaxSeries = 500

// MaxGPUMaxSeries is the largest gpuMaxSeries accepted.
const MaxGPUMaxSeries = 10000

// SeriesLimit is MaxSeries with its default applied.
func (s DCGMSettings) SeriesLimit() int {
	if s.MaxSeries <= 0 {
		return DefaultGPUMaxSeries
	}
	return s.MaxSeries
}

// loadDCGM reads the DCGMSettings keys of jsonData; it returns the first invalid one, naming its key.
func loadDCGM(j jsonFields, out *DCGMSettings) error {
	out.MaxSeries = DefaultGPUMaxSeries
	metrics, err := stringMap(j, "dcgmMetricNames")
	if err != nil {
		return err
	}
	for _, k := range sortedMapKeys(metrics) {
		v := strings.TrimSpace(metrics[k])
		m, ok := dcgm.Lookup(k)
		if !ok {
			return fmt.Errorf("jsonData.dcgmMetricNames: unknown GPU metric %q; valid keys are %s", truncate(k, 40), strings.Join(dcgm.Names(), ", "))
		}
		if len(m.ComputedFrom) > 0 {
			return fmt.Errorf("jsonData.dcgmMetricNames.%s: %s is computed from %s; override those instead", k, k, strings.Join(m.ComputedFrom, " and "))
		}
		if !validMetricName(v) {
			return fmt.Errorf("jsonData.dcgmMetricNames.%s must be a Prometheus metric name such as DCGM_FI_DEV_GPU_UTIL, got %q", k, truncate(v, 60))
		}
		metrics[k] = v
	}
	labelNames, err := roleLabels(j, "dcgmLabelNames", GPURoles, func(string) string { return "Hostname" })
	if err != nil {
		return err
	}
	n, err := j.number("gpuMaxSeries")
	if err != nil {
		return fmt.Errorf("%v: set it to a whole number of series such as %d", err, DefaultGPUMaxSeries)
	}
	if _, set := j["gpuMaxSeries"]; set && string(j["gpuMaxSeries"]) != "null" {
		if n != float64(int(n)) || n < 1 || n > MaxGPUMaxSeries {
			return fmt.Errorf("jsonData.gpuMaxSeries must be a whole number between 1 and %d, got %v", MaxGPUMaxSeries, n)
		}
		out.MaxSeries = int(n)
	}
	out.MetricNames, out.LabelNames = metrics, labelNames
	return nil
}

// stringMap reads an object of strings; an absent key or null is an empty map.
func stringMap(j jsonFields, name string) (map[string]string, error) {
	raw, ok := j[name]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var generic map[string]json.RawMessage
	if err := json.Unmarshal(raw, &generic); err != nil {
		return nil, fmt.Errorf("jsonData.%s must be an object of names, got %s", name, truncate(string(raw), 40))
	}
	out := make(map[string]string, len(generic))
	for k, v := range generic {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, fmt.Errorf("jsonData.%s.%s must be a string, got %s", name, truncate(k, 40), truncate(string(v), 40))
		}
		out[k] = s
	}
	return out, nil
}

func sortedMapKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// validMetricName accepts Prometheus' classic metric names ([a-zA-Z_:][a-zA-Z0-9_:]*), which
// every DCGM exporter and recording rule produces.
func validMetricName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// roleLabels reads an object of role → label name (dcgmLabelNames, cadvisorLabelNames): each role
// one of roles, each name a label name (not a reserved __ one), trimmed. example gives the label
// the error message suggests for a role.
func roleLabels(j jsonFields, key string, roles []string, example func(role string) string) (map[string]string, error) {
	labelNames, err := stringMap(j, key)
	if err != nil {
		return nil, err
	}
	for _, k := range sortedMapKeys(labelNames) {
		v := strings.TrimSpace(labelNames[k])
		if !slices.Contains(roles, k) {
			return nil, fmt.Errorf("jsonData.%s: unknown role %q; valid roles are %s", key, truncate(k, 40), strings.Join(roles, ", "))
		}
		if !ValidLabelName(v) || strings.HasPrefix(v, "__") {
			return nil, fmt.Errorf("jsonData.%s.%s must be a label name such as %s, got %q", key, k, example(k), truncate(v, 60))
		}
		labelNames[k] = v
	}
	return labelNames, nil
}
