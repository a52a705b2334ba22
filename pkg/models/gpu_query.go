package models

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/dcgm"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// GPU label roles: what a DCGM label means, whatever the exporter calls it (Hostname or
// hostname, pod or pod_name, ...). Results carry the role names, never the exporter's.
const (
	RoleHost      = "host"
	RoleGPU       = "gpu"
	RoleUUID      = "uuid"
	RoleModel     = "model"
	RolePod       = "pod"
	RoleNamespace = "namespace"
	RoleContainer = "container"
	RoleMIG       = "mig"
	// RoleMIGProfile is the MIG instance's profile (GPU_I_PROFILE, "1g.10gb"): it describes the
	// instance RoleMIG names, so it is not one of GPURoles (no filter, picker or override).
	RoleMIGProfile = "mig_profile"
	// RoleDriver is the GPU driver's version (dcgm-exporter's DCGM_FI_DRIVER_VERSION label): like
	// RoleMIGProfile it describes the GPU, so it is not one of GPURoles.
	RoleDriver = "driver"
)

// GPURoles lists the roles in the order labels and messages name them.
var GPURoles = []string{RoleHost, RoleGPU, RoleUUID, RoleModel, RolePod, RoleNamespace, RoleContainer, RoleMIG}

// GPUOf is the GPU that role labels (host, gpu, uuid, model, mig, mig_profile) name: the one
// identity every package keys GPUs by.
func GPUOf(labels map[string]string) classify.GPU {
	return classify.GPU{Host: labels[RoleHost], Index: labels[RoleGPU], UUID: labels[RoleUUID],
		Model: labels[RoleModel], MIG: labels[RoleMIG], MIGProfile: labels[RoleMIGProfile]}
}

// GPURoleLabels are the GPU's role labels, those it has: how every GPU frame of the plugin
// labels its fields.
func GPURoleLabels(g classify.GPU) map[string]string {
	out := map[string]string{}
	for role, v := range map[string]string{RoleHost: g.Host, RoleGPU: g.Index, RoleUUID: g.UUID,
		RoleModel: g.Model, RoleMIG: g.MIG, RoleMIGProfile: g.MIGProfile} {
		if v != "" {
			out[role] = v
		}
	}
	return out
}

// Aggregations of a gpuMetrics query: one series per GPU (the default), per host, or one for
// the whole fleet that matches the filter.
const (
	AggregationGPU   = "gpu"
	AggregationHost  = "host"
	AggregationFleet = "fleet"
)

// GPUFilter selects GPUs by their roles; each list matches any of its values, the lists combine
// with "and". Empty lists match everything. Values are matched exactly (never as regular
// expressions), whatever label name the exporter uses for the role.
//
// Other query types can embed it: its JSON names are prefixed or specific enough not to collide
// with the profile queries' fields (gpuSelector, not labelSelector).
type GPUFilter struct {
	Hosts []string `json:"hosts"`
	// GPUs holds GPU indexes ("0", "3") or UUIDs ("GPU-5fd4…", "MIG-…"), mixed as needed.
	GPUs       []string `json:"gpus"`
	Models     []string `json:"models"`
	Pods       []string `json:"pods"`
	Namespaces []string `json:"namespaces"`
	// GPUSelector adds raw Prometheus matchers to every DCGM selector, e.g. {cluster="prod"},
	// for labels that have no role. Checked with Prometheus' parser.
	GPUSelector string `json:"gpuSelector"`

	// Figures, when set, limits a fetch of every GPU figure (GPUFigures) to these, by their
	// catalogue names ("sm_active", "gpu_utilization"): a join that reads one figure does not
	// fetch the other dozen. Set by the plugin, not a query field.
	Figures []string `json:"-"`
}

// MaxGPUFilterValues bounds each filter list: every value becomes a regex alternative, and a
// dashboard variable with thousands of values is better replaced by a selector.
const MaxGPUFilterValues = 200

// GPUIndexOrUUID splits a gpus entry: digits are an index, anything else a UUID.
func GPUIndexOrUUID(v string) (index bool) {
	if v == "" {
		return false
	}
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Normalize trims and de-duplicates the filter's values and checks them; errors name the field
// (prefix + its JSON name, so an embedding query can say "gpu.hosts").
func (f *GPUFilter) Normalize(prefix string) error {
	for _, l := range []struct {
		name string
		vals *[]string
	}{{"hosts", &f.Hosts}, {"gpus", &f.GPUs}, {"models", &f.Models}, {"pods", &f.Pods}, {"namespaces", &f.Namespaces}} {
		out, err := normalizeValues(prefix+l.name, *l.vals)
		if err != nil {
			return err
		}
		*l.vals = out
	}
	f.GPUSelector = strings.TrimSpace(f.GPUSelector)
	if _, err := f.Matchers(prefix); err != nil {
		return err
	}
	return nil
}

// Matchers parses GPUSelector; the error names the field and, through Prometheus' parser, the
// position of the mistake.
func (f *GPUFilter) Matchers(prefix string) ([]*labels.Matcher, error) {
	if f.GPUSelector == "" || f.GPUSelector == "{}" {
		return nil, nil
	}
	ms, err := ParseLabelSelector(f.GPUSelector)
	if err != nil {
		return nil, fmt.Errorf("field %q is not a label selector such as {cluster=\"prod\"}: %v", prefix+"gpuSelector", err)
	}
	for _, m := range ms {
		if m.Name == labels.MetricName {
			// The metric is the catalogue's choice; a __name__ matcher would silently empty or
			// widen every query.
			return nil, fmt.Errorf("field %q must not match the metric name (%s); pick metrics with \"metrics\"", prefix+"gpuSelector", m)
		}
	}
	return ms, nil
}

// Empty says whether the filter selects every GPU.
func (f *GPUFilter) Empty() bool {
	return len(f.Hosts)+len(f.GPUs)+len(f.Models)+len(f.Pods)+len(f.Namespaces) == 0 && (f.GPUSelector == "" || f.GPUSelector == "{}")
}

func normalizeValues(field string, in []string) ([]string, error) {
	if len(in) > int(filterValuesBound.Max) {
		return nil, fmt.Errorf("field %q has %d values, at most %d are allowed: narrow it or use gpuSelector", field, len(in), filterValuesBound.Max)
	}
	out := make([]string, 0, len(in))
	for i, v := range in {
		v = strings.TrimSpace(v)
		if v == "" {
			return nil, fmt.Errorf("field %q item %d is empty", field, i+1)
		}
		if len(v) > 256 {
			return nil, fmt.Errorf("field %q item %d is longer than 256 characters", field, i+1)
		}
		if !utf8.ValidString(v) {
			// Prometheus label values are UTF-8; the regex of several values would not compile.
			return nil, fmt.Errorf("field %q item %d is not valid UTF-8 text", field, i+1)
		}
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

// ParseGPUFilter decodes and normalises a GPUFilter from a query's JSON (other fields ignored).
func ParseGPUFilter(raw json.RawMessage) (*GPUFilter, error) {
	f := &GPUFilter{}
	if err := Decode(raw, f); err != nil {
		return nil, err
	}
	if err := f.Normalize(""); err != nil {
		return nil, err
	}
	return f, nil
}

// GPUMetricsQuery is the query of the gpuMetrics type:
//
//	{"queryType":"gpuMetrics","metrics":["gpu_utilization","fb_used_percent"],
//	 "hosts":["gpu-node-1"],"gpus":["0"],"aggregation":"gpu"}
type GPUMetricsQuery struct {
	GPUFilter
	// Metrics are catalogue names (pkg/dcgm); default gpu_utilization.
	Metrics []string `json:"metrics"`
	// Aggregation is gpu (default), host or fleet.
	Aggregation string `json:"aggregation"`
}

// DefaultGPUMetric is what a gpuMetrics query without metrics shows, so a new panel is useful.
const DefaultGPUMetric = "gpu_utilization"

// ParseGPUMetricsQuery decodes and validates a gpuMetrics query, filling defaults.
func ParseGPUMetricsQuery(raw json.RawMessage) (*GPUMetricsQuery, error) {
	// The filter and the rest are decoded apart so that type errors name "gpus", not the
	// embedded struct's path "GPUFilter.gpus".
	f, err := ParseGPUFilter(raw)
	if err != nil {
		return nil, err
	}
	var rest struct {
		Metrics     []string `json:"metrics"`
		Aggregation string   `json:"aggregation"`
	}
	if err := Decode(raw, &rest); err != nil {
		return nil, err
	}
	q := &GPUMetricsQuery{GPUFilter: *f, Metrics: rest.Metrics, Aggregation: rest.Aggregation}
	var metrics []string
	for i, m := range q.Metrics {
		m = strings.TrimSpace(m)
		if _, ok := dcgm.Lookup(m); !ok {
			return nil, fmt.Errorf("field \"metrics\" item %d: unknown GPU metric %q; valid metrics are %s", i+1, truncate(m, 40), strings.Join(dcgm.Names(), ", "))
		}
		if !slices.Contains(metrics, m) {
			metrics = append(metrics, m)
		}
	}
	if len(metrics) == 0 {
		metrics = []string{DefaultGPUMetric}
	}
	q.Metrics = metrics
	q.Aggregation = strings.TrimSpace(q.Aggregation)
	switch q.Aggregation {
	case "":
		q.Aggregation = AggregationGPU
	case AggregationGPU, AggregationHost, AggregationFleet:
	default:
		return nil, fmt.Errorf("field \"aggregation\" must be %q (the default, one series per GPU), %q or %q, got %q",
			AggregationGPU, AggregationHost, AggregationFleet, truncate(q.Aggregation, 40))
	}
	return q, nil
}

// GPUMetricInfo names a catalogue metric as panels show it.
type GPUMetricInfo struct {
	Name  string // catalogue name: gpu_utilization
	Title string // display name: GPU utilisation
	Unit  string // Grafana unit id: percent
}

// GPUMetricSeries is one series of a catalogue metric: its labels by role (host, gpu, uuid,
// model, mig, mig_profile, pod, namespace, container; absent roles left out) and its values in the
// catalogue's unit, at the steps where Prometheus had a value.
type GPUMetricSeries struct {
	Labels map[string]string
	Times  []time.Time
	Values []float64
}

// GPUMetricResult is one catalogue metric's answer (prometheus.Client.GPUMetric), declared here so
// that the frame builders read it without importing the client.
type GPUMetricResult struct {
	Metric      GPUMetricInfo
	Aggregation string
	Step        time.Duration
	// Query is the PromQL sent; empty when Prometheus holds none of the metric's sources.
	Query string
	// Sources are the metric names Prometheus holds and the query read.
	Sources []string
	Series  []GPUMetricSeries
	// Notices explain gaps: the metric not exported (and which names were tried), a role's
	// label not found, the series limit reached, Prometheus' warnings.
	Notices notices.List
}
