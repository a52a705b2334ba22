package plugin

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// migUUID is the physical A100 of migA100: dcgm-exporter labels its MIG instances' series with
// this UUID too, never the instances' own MIG-... UUIDs.
const migUUID = "GPU-5fd4a0b2-7c1e-4d2a-9f3b-0123456789ab"

// migA100 is GPU 0 of host split into two MIG instances, as dcgm-exporter exports it: the
// device's readings (temperature, clocks, power, PCIe) on series with the GPU's labels only, the
// profiling readings per instance on series that add GPU_I_PROFILE and GPU_I_ID, keeping the
// parent's gpu, UUID, device and modelName. GPU utilisation is not reported under MIG. Instance
// 1 (3g.20gb) is compute-bound, instance 2 (1g.5gb) idle.
func migA100(host string) []fakeGPU {
	parent := map[string]string{"Hostname": host, "gpu": "0", "UUID": migUUID, "device": "nvidia0",
		"pci_bus_id": "00000000:07:00.0", "modelName": "NVIDIA A100-SXM4-40GB"}
	instance := func(id, profile string) map[string]string {
		l := maps.Clone(parent)
		l["GPU_I_PROFILE"], l["GPU_I_ID"] = profile, id
		return l
	}
	readings := func(labels map[string]string, values map[string]float64) fakeGPU {
		return fakeGPU{Labels: labels, Value: func(metric string, _ time.Time) (float64, bool) {
			v, ok := values[metric]
			return v, ok
		}}
	}
	return []fakeGPU{
		readings(parent, map[string]float64{"DCGM_FI_DEV_GPU_TEMP": 55, "DCGM_FI_DEV_SM_CLOCK": 1410, "DCGM_FI_DEV_POWER_USAGE": 180,
			"DCGM_FI_DEV_CLOCKS_EVENT_REASONS": 0, "DCGM_FI_PROF_PCIE_TX_BYTES": 1e9, "DCGM_FI_PROF_PCIE_RX_BYTES": 2e9}),
		readings(instance("1", "3g.20gb"), map[string]float64{"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.95, "DCGM_FI_PROF_SM_ACTIVE": 0.93,
			"DCGM_FI_PROF_DRAM_ACTIVE": 0.3, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.5}),
		readings(instance("2", "1g.5gb"), map[string]float64{"DCGM_FI_PROF_GR_ENGINE_ACTIVE": 0.01, "DCGM_FI_PROF_SM_ACTIVE": 0.01,
			"DCGM_FI_PROF_DRAM_ACTIVE": 0, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0}),
	}
}

func TestTraceQueryKeepsEachMIGInstanceOfOneGPU(t *testing.T) {
	b := newJoinBed(t, joinBedOptions{})
	b.gpus.gpus = migA100("gpu-node-1")
	// The detector runs on instance 1, the enrichment on instance 2, named as CUDA names MIG
	// devices by their GPU instance (MIG-<GPU UUID>/<GPU instance>/<compute instance>).
	spans := b.traces.traces[0].Spans
	spans[4].Attributes["gpu.index"] = "MIG-" + migUUID + "/1/0"
	spans[5].Attributes["gpu.index"] = "MIG-" + migUUID + "/2/0"
	r := b.query(t, traceModel)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	got := table(t, r.Frames[0], "gpus", "gpuVar", "migVar", "gpuClass", "gpuUtil")
	want := map[string]string{
		"GET /detect":   "gpus=0 MIG 3g.20gb #1 gpuVar=0 migVar=1 gpuClass=compute-bound gpuUtil=95",
		"model.predict": "gpus=0 MIG 3g.20gb #1 gpuVar=0 migVar=1 gpuClass=compute-bound gpuUtil=95",
		"GET /enrich":   "gpus=0 MIG 1g.5gb #2 gpuVar=0 migVar=2 gpuClass=idle gpuUtil=1",
		"enrich":        "gpus=0 MIG 1g.5gb #2 gpuVar=0 migVar=2 gpuClass=idle gpuUtil=1",
	}
	for op, w := range want {
		if got[op] != w {
			t.Errorf("%s:\n got %s\nwant %s", op, got[op], w)
		}
	}
	// The backend names no GPU: the whole GPU's series and both instances, each on its own; the
	// utilisation is the instances' (the parent's series has none).
	if root := got["GET /api/detect"]; !strings.HasPrefix(root, "gpus=0,0 MIG 3g.20gb #1,0 MIG 1g.5gb #2 gpuVar=$__all migVar=$__all ") || !strings.HasSuffix(root, "gpuUtil=48") {
		t.Errorf("backend root: %s", root)
	}
	if ev := table(t, r.Frames[0], "gpuEvidence")["GET /api/detect"]; !strings.HasPrefix(ev, "gpuEvidence=GPU 0 MIG ") {
		t.Errorf("the root's evidence does not name the instance it is about: %s", ev)
	}
}

func TestGPUClassSummaryListsEachMIGInstance(t *testing.T) {
	ds := withSources(t, map[string]any{}, correlate.Sources{GPUs: correlate.Ready[correlate.GPUStore](&memGPUs{gpus: migA100("gpu-node-1")})})
	q := backend.DataQuery{RefID: "A", QueryType: models.QueryTypeGPUClass, JSON: json.RawMessage(`{"queryType":"gpuClass","format":"summary"}`),
		Interval: time.Minute, TimeRange: backend.TimeRange{From: gpuT0, To: gpuT0.Add(30 * time.Minute)}}
	r := run(t, ds, q).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	sum := r.Frames[0]
	gpu, _ := sum.FieldByName("GPU")
	mig, _ := sum.FieldByName("mig")
	dom, _ := sum.FieldByName("dominant class")
	got := map[string]string{}
	for i := range sum.Rows() {
		got[gpu.At(i).(string)] = mig.At(i).(string) + " " + dom.At(i).(string)
	}
	want := map[string]string{
		"gpu-node-1/0":                " no data", // the device's own series: temperature, clocks, power, PCIe
		"gpu-node-1/0 MIG 3g.20gb #1": "1 compute-bound",
		"gpu-node-1/0 MIG 1g.5gb #2":  "2 idle",
	}
	if !maps.Equal(got, want) {
		t.Errorf("summary rows %v, want %v; notices\n%s", got, want, noticeTexts(sum))
	}
}
