package prometheus

import (
	"slices"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/dcgm"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Source and Metric are the catalogue's (pkg/dcgm), which this package turns into PromQL.
type (
	Source = dcgm.Source
	Metric = dcgm.Metric
)

// The catalogue's aggregation operators, as PromQL writes them.
const (
	aggAvg = dcgm.AggAvg
	aggSum = dcgm.AggSum
	aggMax = dcgm.AggMax
)

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
	// The driver label dcgm-exporter adds to every series (its counters CSV's "label" rows);
	// dcgm-exporter 4.9 writes DCGM 4.7's name for the same field.
	models.RoleDriver: {"DCGM_FI_DRIVER_VERSION", "DCGM_FI_SYSTEM_DRIVER_VERSION"},
}

// Catalogue is the catalogue (pkg/dcgm) with a data source's overrides applied.
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
	for _, m := range dcgm.Metrics() {
		if name, ok := s.MetricNames[m.Name]; ok && len(m.Sources) > 0 {
			m.Sources = []Source{overrideSource(m, name)}
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
