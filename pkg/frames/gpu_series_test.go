package frames

import (
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/prometheus"
)

// gpuMetric names a metric as the catalogue does.
func gpuMetric(t *testing.T, name string) models.GPUMetricInfo {
	t.Helper()
	m, ok := prometheus.NewCatalogue(models.DCGMSettings{}).Lookup(name)
	if !ok {
		t.Fatalf("no catalogue entry %s", name)
	}
	return models.GPUMetricInfo{Name: m.Name, Title: m.Title, Unit: m.Unit}
}

var gpuT0 = time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)

func TestGPUMetricFramesPerGPU(t *testing.T) {
	res := &models.GPUMetricResult{
		Metric: gpuMetric(t, "gpu_utilization"), Aggregation: models.AggregationGPU, Step: 30 * time.Second,
		Query:   `avg by (Hostname, gpu) (DCGM_FI_DEV_GPU_UTIL) and on (Hostname, gpu) topk(501, group by (Hostname, gpu) (last_over_time(DCGM_FI_DEV_GPU_UTIL[10m] @ end())))`,
		Sources: []string{"DCGM_FI_DEV_GPU_UTIL"},
		Series: []models.GPUMetricSeries{
			{Labels: map[string]string{"host": "gpu-node-1", "gpu": "0", "uuid": "GPU-a0", "model": "NVIDIA A100-SXM4-80GB", "pod": "detector-0", "namespace": "inference"},
				Times: []time.Time{gpuT0, gpuT0.Add(30 * time.Second)}, Values: []float64{95, 97}},
			{Labels: map[string]string{"host": "gpu-node-1", "gpu": "1", "uuid": "GPU-a1", "model": "NVIDIA A100-SXM4-80GB"},
				Times: []time.Time{gpuT0}, Values: []float64{2}},
		},
		Notices: notices.Warnings("more than 2 series match; showing 2. Narrow the filter or raise jsonData.gpuMaxSeries"),
	}
	fs := GPUMetricFrames(res)
	if len(fs) != 2 {
		t.Fatalf("%d frames", len(fs))
	}
	checkGolden(t, "gpu_metric_per_gpu_0", fs[0])
	checkGolden(t, "gpu_metric_per_gpu_1", fs[1])
	if got := fs[0].Fields[1].Config.DisplayNameFromDS; got != "GPU utilisation gpu-node-1/0 (inference/detector-0)" {
		t.Errorf("display name %q", got)
	}
	if len(fs[1].Meta.Notices) != 0 {
		t.Errorf("notices repeated on every frame: %v", fs[1].Meta.Notices)
	}
}

func TestGPUMetricFramesPerHostInTheCatalogueUnit(t *testing.T) {
	res := &models.GPUMetricResult{
		Metric: gpuMetric(t, "pcie_tx"), Aggregation: models.AggregationHost, Step: time.Minute,
		Query: `sum by (hostname) (DCGM_FI_DEV_PCIE_TX_THROUGHPUT * 1024) and on (hostname) topk(501, group by (hostname) (last_over_time(DCGM_FI_DEV_PCIE_TX_THROUGHPUT[1h] @ end())))`,
		Series: []models.GPUMetricSeries{{Labels: map[string]string{"host": "fixture-node-b"},
			Times: []time.Time{gpuT0, gpuT0.Add(time.Minute)}, Values: []float64{1.2e9, 1.25e9}}},
	}
	fs := GPUMetricFrames(res)
	checkGolden(t, "gpu_metric_per_host", fs[0])
	if fs[0].Fields[1].Config.Unit != "Bps" || fs[0].Fields[1].Config.DisplayNameFromDS != "PCIe transmit fixture-node-b" {
		t.Errorf("config %+v", fs[0].Fields[1].Config)
	}
}

func TestGPUMetricFramesWithoutSeriesCarryTheNotice(t *testing.T) {
	res := &models.GPUMetricResult{
		Metric: gpuMetric(t, "sm_active"), Aggregation: models.AggregationFleet, Step: time.Minute,
		Notices: notices.Warnings("SM active (sm_active): Prometheus has no series of DCGM_FI_PROF_SM_ACTIVE or DCGM_FI_PROF_SM_UTIL_RATIO in this range; enable the field in the exporter's counters file, or name your metric in jsonData.dcgmMetricNames"),
	}
	fs := GPUMetricFrames(res)
	if len(fs) != 1 || fs[0].Rows() != 0 || len(fs[0].Meta.Notices) != 1 || fs[0].Meta.Notices[0].Severity != data.NoticeSeverityWarning {
		t.Fatalf("frames %v", fs)
	}
	checkGolden(t, "gpu_metric_not_exported", fs[0])
}

func TestGPUSeriesDisplayName(t *testing.T) {
	cases := []struct {
		agg    string
		labels map[string]string
		want   string
	}{
		{models.AggregationGPU, map[string]string{"host": "h", "gpu": "3"}, "T h/3"},
		{models.AggregationGPU, map[string]string{"host": "h", "uuid": "GPU-x"}, "T h/GPU-x"},
		{models.AggregationGPU, map[string]string{"gpu": "3"}, "T 3"},
		{models.AggregationGPU, map[string]string{"host": "h", "gpu": "0", "mig": "2", "pod": "p"}, "T h/0 MIG #2 (p)"},
		{models.AggregationGPU, map[string]string{"host": "h", "gpu": "0", "mig": "2", "mig_profile": "1g.5gb"}, "T h/0 MIG 1g.5gb #2"},
		{models.AggregationGPU, map[string]string{}, "T"},
		{models.AggregationHost, map[string]string{"host": "h", "gpu": "0"}, "T h"},
		{models.AggregationHost, map[string]string{}, "T"},
		{models.AggregationFleet, map[string]string{"host": "h"}, "T, all GPUs"},
	}
	for _, c := range cases {
		if got := GPUSeriesDisplayName("T", c.agg, c.labels); got != c.want {
			t.Errorf("%s %v: %q, want %q", c.agg, c.labels, got, c.want)
		}
	}
}
