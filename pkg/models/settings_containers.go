package models

import (
	"fmt"
	"slices"
	"strings"
)

// ContainerSettings names cAdvisor's CPU series where a cluster's Prometheus holds them under
// other names: a recording rule's copy, or series relabelled on the way in.
//
// jsonData keys:
//
//	"cadvisorMetricNames": {"container_cpu_cfs_throttled_periods_total": "k8s:throttled_periods", ...}
//	"cadvisorLabelNames":  {"namespace": "kubernetes_namespace", "pod": "kubernetes_pod_name", "container": "kubernetes_container"}
//
// Without them the plugin reads cAdvisor's own names under the kubelet's label spellings
// (namespace, pod, container; then pod_name, container_name). A label override is tried first,
// then those spellings.
type ContainerSettings struct {
	// MetricNames maps a cAdvisor metric (CadvisorMetrics) to the one read instead; it must be
	// the same kind of series (a counter for the _total names, the spec's gauge for the others).
	MetricNames map[string]string
	// LabelNames maps a role (ContainerRoles) to the label that carries it.
	LabelNames map[string]string
}

// CadvisorMetrics are the cAdvisor series the container join reads, the keys of
// jsonData.cadvisorMetricNames.
var CadvisorMetrics = []string{CadvisorPeriods, CadvisorThrottledPeriods, CadvisorThrottledSeconds, CadvisorUsageSeconds, CadvisorQuota, CadvisorPeriod}

// The roles of jsonData.cadvisorLabelNames.
const (
	ContainerRoleNamespace = "namespace"
	ContainerRolePod       = "pod"
	ContainerRoleContainer = "container"
)

// ContainerRoles lists the roles in the order messages name them.
var ContainerRoles = []string{ContainerRoleNamespace, ContainerRolePod, ContainerRoleContainer}

// Metric is the name read for a cAdvisor metric: the override, else its own.
func (s ContainerSettings) Metric(name string) string {
	if v := s.MetricNames[name]; v != "" {
		return v
	}
	return name
}

// loadContainers reads the ContainerSettings keys of jsonData; an invalid key is returned and
// the defaults kept for it.
func loadContainers(j jsonFields, out *ContainerSettings) error {
	metrics, err := stringMap(j, "cadvisorMetricNames")
	if err != nil {
		return err
	}
	for _, k := range sortedMapKeys(metrics) {
		v := strings.TrimSpace(metrics[k])
		if !slices.Contains(CadvisorMetrics, k) {
			return fmt.Errorf("jsonData.cadvisorMetricNames: unknown cAdvisor metric %q; valid keys are %s", truncate(k, 60), strings.Join(CadvisorMetrics, ", "))
		}
		if !validMetricName(v) {
			return fmt.Errorf("jsonData.cadvisorMetricNames.%s must be a Prometheus metric name such as %s, got %q", k, k, truncate(v, 60))
		}
		metrics[k] = v
	}
	labelNames, err := roleLabels(j, "cadvisorLabelNames", ContainerRoles, func(role string) string { return role })
	if err != nil {
		return err
	}
	out.MetricNames, out.LabelNames = metrics, labelNames
	return nil
}
