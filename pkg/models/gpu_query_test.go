package models

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
)

func TestParseGPUMetricsQueryFillsDefaults(t *testing.T) {
	q, err := ParseGPUMetricsQuery(json.RawMessage(`{"queryType":"gpuMetrics","refId":"A"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q.Metrics, []string{DefaultGPUMetric}) || q.Aggregation != AggregationGPU || !q.Empty() {
		t.Errorf("query = %+v", q)
	}
}

func TestParseGPUMetricsQueryNormalisesTheFilter(t *testing.T) {
	q, err := ParseGPUMetricsQuery(json.RawMessage(`{"metrics":[" power ","power","fb_used_percent"],"aggregation":"host",
		"hosts":[" gpu-node-1","gpu-node-1","node\"2"],"gpus":["0","GPU-abc"],"models":["NVIDIA A100-SXM4-80GB"],
		"pods":["p"],"namespaces":["ns"],"gpuSelector":" {cluster=\"prod\"} "}`))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(q.Metrics, []string{"power", "fb_used_percent"}) || q.Aggregation != AggregationHost {
		t.Errorf("metrics %v aggregation %q", q.Metrics, q.Aggregation)
	}
	if !slices.Equal(q.Hosts, []string{"gpu-node-1", `node"2`}) || !slices.Equal(q.GPUs, []string{"0", "GPU-abc"}) ||
		q.GPUSelector != `{cluster="prod"}` || q.Empty() {
		t.Errorf("filter = %+v", q.GPUFilter)
	}
	ms, err := q.Matchers("")
	if err != nil || len(ms) != 1 || ms[0].Name != "cluster" || ms[0].Value != "prod" {
		t.Errorf("matchers %v, %v", ms, err)
	}
}

func TestParseGPUMetricsQueryNamesTheField(t *testing.T) {
	cases := []struct{ json, want string }{
		{`{"metrics":["gpu_util"]}`, `field "metrics" item 1: unknown GPU metric "gpu_util"; valid metrics are gpu_utilization, mem_copy_utilization, sm_active`},
		{`{"metrics":"power"}`, `field "metrics" must be a list, got string`},
		{`{"aggregation":"node"}`, `field "aggregation" must be "gpu" (the default, one series per GPU), "host" or "fleet", got "node"`},
		{`{"hosts":["a",""]}`, `field "hosts" item 2 is empty`},
		{`{"gpus":[3]}`, `field "gpus" must be a string`},
		{`{"pods":["` + strings.Repeat("p", 300) + `"]}`, `field "pods" item 1 is longer than 256 characters`},
		{`{"gpuSelector":"{cluster=\"prod\""}`, `field "gpuSelector" is not a label selector such as {cluster="prod"}: 1:16: parse error`},
		{`{"gpuSelector":"{__name__=\"up\"}"}`, `field "gpuSelector" must not match the metric name (__name__="up")`},
	}
	for _, c := range cases {
		_, err := ParseGPUMetricsQuery(json.RawMessage(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.json, err, c.want)
		}
	}
	many := make([]string, MaxGPUFilterValues+1)
	for i := range many {
		many[i] = "h"
	}
	raw, _ := json.Marshal(map[string]any{"hosts": many})
	if _, err := ParseGPUMetricsQuery(raw); err == nil || !strings.Contains(err.Error(), `field "hosts" has 201 values, at most 200`) {
		t.Errorf("too many hosts: %v", err)
	}
}

func TestParseGPUFilterIgnoresOtherFieldsAndPrefixesEmbeddedNames(t *testing.T) {
	f, err := ParseGPUFilter(json.RawMessage(`{"queryType":"gpuClass","thresholds":{"x":1},"hosts":["a"]}`))
	if err != nil || !slices.Equal(f.Hosts, []string{"a"}) {
		t.Fatalf("filter %+v, %v", f, err)
	}
	bad := GPUFilter{Namespaces: []string{" "}}
	if err := bad.Normalize("gpu."); err == nil || !strings.Contains(err.Error(), `field "gpu.namespaces" item 1 is empty`) {
		t.Errorf("prefixed error = %v", err)
	}
}

func TestGPUIndexOrUUID(t *testing.T) {
	for v, want := range map[string]bool{"0": true, "12": true, "GPU-1a": false, "MIG-x": false, "": false, "1a": false} {
		if got := GPUIndexOrUUID(v); got != want {
			t.Errorf("GPUIndexOrUUID(%q) = %v", v, got)
		}
	}
}

func TestGPUIdentityRoundTripsThroughRoleLabels(t *testing.T) {
	mig := classify.GPU{Host: "gpu-node-1", Index: "0", UUID: "GPU-5fd4", Model: "NVIDIA A100-SXM4-40GB", MIG: "2", MIGProfile: "1g.5gb"}
	labels := GPURoleLabels(mig)
	if len(labels) != 6 || labels[RoleMIG] != "2" || labels[RoleMIGProfile] != "1g.5gb" || labels[RoleHost] != "gpu-node-1" {
		t.Errorf("labels %v", labels)
	}
	if got := GPUOf(labels); got != mig {
		t.Errorf("GPUOf(GPURoleLabels(g)) = %+v, want %+v", got, mig)
	}
	// Roles a GPU lacks are left out, and labels of other roles (pod) do not change its identity.
	whole := classify.GPU{Host: "h", Index: "1"}
	if l := GPURoleLabels(whole); len(l) != 2 {
		t.Errorf("labels %v", l)
	}
	if GPUOf(map[string]string{RoleHost: "h", RoleGPU: "1", RolePod: "p"}) != whole {
		t.Error("a pod label changed the GPU")
	}
}
