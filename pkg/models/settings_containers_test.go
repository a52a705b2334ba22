package models

import (
	"strings"
	"testing"
)

func TestLoadContainerNames(t *testing.T) {
	s := load(t, `{}`, nil)
	if s.bad.Containers != nil || len(s.Containers.MetricNames) != 0 || s.Containers.Metric(CadvisorQuota) != CadvisorQuota {
		t.Fatalf("defaults: %+v, %v", s.Containers, s.bad.Containers)
	}
	s = load(t, `{
		"cadvisorMetricNames": {"container_cpu_cfs_throttled_seconds_total": " k8s:throttled_seconds "},
		"cadvisorLabelNames": {"pod": "kubernetes_pod_name"}
	}`, nil)
	c := s.Containers
	if s.bad.Containers != nil || c.Metric(CadvisorThrottledSeconds) != "k8s:throttled_seconds" || c.Metric(CadvisorPeriods) != CadvisorPeriods ||
		c.LabelNames["pod"] != "kubernetes_pod_name" || len(c.LabelNames) != 1 {
		t.Errorf("overrides: %+v, %v", c, s.bad.Containers)
	}
}

// A bad cAdvisor name says which key and entry; the defaults stay, nothing else breaks.
func TestLoadContainerNamesNamesTheBadEntry(t *testing.T) {
	cases := []struct{ name, jsonData, want string }{
		{"not an object", `{"cadvisorMetricNames": "x"}`, `jsonData.cadvisorMetricNames must be an object of names, got "x"`},
		{"unknown metric", `{"cadvisorMetricNames": {"container_cpu_throttled": "x"}}`, `jsonData.cadvisorMetricNames: unknown cAdvisor metric "container_cpu_throttled"; valid keys are container_cpu_cfs_periods_total, `},
		{"bad metric name", `{"cadvisorMetricNames": {"container_spec_cpu_quota": "quota{pod}"}}`, `jsonData.cadvisorMetricNames.container_spec_cpu_quota must be a Prometheus metric name such as container_spec_cpu_quota, got "quota{pod}"`},
		{"unknown role", `{"cadvisorLabelNames": {"node": "instance"}}`, `jsonData.cadvisorLabelNames: unknown role "node"; valid roles are namespace, pod, container`},
		{"bad label", `{"cadvisorLabelNames": {"pod": "pod-name"}}`, `jsonData.cadvisorLabelNames.pod must be a label name such as pod, got "pod-name"`},
	}
	for _, c := range cases {
		s := load(t, c.jsonData, nil)
		if s.bad.Containers == nil || !strings.Contains(s.bad.Containers.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, s.bad.Containers, c.want)
		}
		if len(s.Containers.MetricNames) != 0 || len(s.Containers.LabelNames) != 0 || s.bad.GPU != nil || s.bad.Upstream(Prometheus) != nil {
			t.Errorf("%s: kept %+v, other settings %v %v", c.name, s.Containers, s.bad.GPU, s.bad.Upstream(Prometheus))
		}
	}
}
