package models

import (
	"strings"
	"testing"
)

func TestLoadDCGMDefaultsWithoutKeys(t *testing.T) {
	s := load(t, `{}`, nil)
	if s.bad.GPU != nil {
		t.Fatalf("invalid GPU settings: %v", s.bad.GPU)
	}
	if s.DCGM.MaxSeries != DefaultGPUMaxSeries || s.DCGM.SeriesLimit() != DefaultGPUMaxSeries || len(s.DCGM.MetricNames) != 0 || len(s.DCGM.LabelNames) != 0 {
		t.Errorf("DCGM = %+v", s.DCGM)
	}
	if (DCGMSettings{}).SeriesLimit() != DefaultGPUMaxSeries {
		t.Error("the zero DCGMSettings must use the default series limit")
	}
}

func TestLoadDCGMReadsOverrides(t *testing.T) {
	s := load(t, `{
		"dcgmMetricNames": {"gpu_utilization": " nvidia_gpu_util ", "pcie_tx": "DCGM_FI_DEV_PCIE_TX_THROUGHPUT"},
		"dcgmLabelNames": {"host": "node", "pod": "exported_pod"},
		"gpuMaxSeries": "40"
	}`, nil)
	if s.bad.GPU != nil {
		t.Fatalf("invalid GPU settings: %v", s.bad.GPU)
	}
	d := s.DCGM
	if d.MetricNames["gpu_utilization"] != "nvidia_gpu_util" || d.MetricNames["pcie_tx"] != "DCGM_FI_DEV_PCIE_TX_THROUGHPUT" || len(d.MetricNames) != 2 {
		t.Errorf("MetricNames = %v", d.MetricNames)
	}
	if d.LabelNames["host"] != "node" || d.LabelNames["pod"] != "exported_pod" || len(d.LabelNames) != 2 {
		t.Errorf("LabelNames = %v", d.LabelNames)
	}
	if d.MaxSeries != 40 || d.SeriesLimit() != 40 {
		t.Errorf("MaxSeries = %d", d.MaxSeries)
	}
}

func TestLoadDCGMNamesTheKeyAndTheBadEntry(t *testing.T) {
	cases := []struct{ name, jsonData, want string }{
		{"metric names not an object", `{"dcgmMetricNames": ["x"]}`, `jsonData.dcgmMetricNames must be an object of names, got ["x"]`},
		{"unknown catalogue name", `{"dcgmMetricNames": {"gpu_util": "X"}}`, `jsonData.dcgmMetricNames: unknown GPU metric "gpu_util"; valid keys are gpu_utilization, mem_copy_utilization`},
		{"computed entry", `{"dcgmMetricNames": {"fb_used_percent": "X"}}`, `jsonData.dcgmMetricNames.fb_used_percent: fb_used_percent is computed from fb_used and fb_free; override those instead`},
		{"metric name with a brace", `{"dcgmMetricNames": {"power": "x{a=\"b\"}"}}`, `jsonData.dcgmMetricNames.power must be a Prometheus metric name such as DCGM_FI_DEV_GPU_UTIL, got "x{a=\"b\"}"`},
		{"metric name empty", `{"dcgmMetricNames": {"power": ""}}`, `jsonData.dcgmMetricNames.power must be a Prometheus metric name`},
		{"metric name not a string", `{"dcgmMetricNames": {"power": 3}}`, `jsonData.dcgmMetricNames.power must be a string, got 3`},
		{"unknown role", `{"dcgmLabelNames": {"node": "Hostname"}}`, `jsonData.dcgmLabelNames: unknown role "node"; valid roles are host, gpu, uuid, model, pod, namespace, container, mig`},
		{"label name invalid", `{"dcgmLabelNames": {"host": "host-name"}}`, `jsonData.dcgmLabelNames.host must be a label name such as Hostname, got "host-name"`},
		{"reserved label name", `{"dcgmLabelNames": {"host": "__name__"}}`, `jsonData.dcgmLabelNames.host must be a label name`},
		{"series limit zero", `{"gpuMaxSeries": 0}`, `jsonData.gpuMaxSeries must be a whole number between 1 and 10000, got 0`},
		{"series limit fraction", `{"gpuMaxSeries": 2.5}`, `jsonData.gpuMaxSeries must be a whole number between 1 and 10000, got 2.5`},
		{"series limit too big", `{"gpuMaxSeries": 1e6}`, `jsonData.gpuMaxSeries must be a whole number between 1 and 10000`},
		{"series limit not a number", `{"gpuMaxSeries": "many"}`, `jsonData.gpuMaxSeries must be a number, got "many"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := load(t, c.jsonData, nil)
			if s.bad.GPU == nil || !strings.Contains(s.bad.GPU.Error(), c.want) {
				t.Errorf("invalid GPU settings: %v, want it to contain %q", s.bad.GPU, c.want)
			}
			if s.bad.Upstream(Prometheus) != nil || s.bad.MinStep != nil {
				t.Errorf("a GPU setting broke other settings: %v %v", s.bad.Upstream(Prometheus), s.bad.MinStep)
			}
		})
	}
}
