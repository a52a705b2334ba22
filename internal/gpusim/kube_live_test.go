package gpusim

import (
	"bytes"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The live kube-state-metrics simulation parses as Prometheus' text format and OOM-kills the
// first pod's tokenizer KubeOOMKillAfter after it starts, as kube-state-metrics reports it.
func TestKubeStateLiveOOMKillsTheTokenizer(t *testing.T) {
	started := time.Unix(1_790_000_000, 0)
	k := &KubeStateLive{Node: "gpu-node-1", Pods: []string{"inference/ai-detector-0", "inference/nemotron-llm-0"}, Started: started}
	read := func(at time.Time) map[string][]map[string]string {
		var buf bytes.Buffer
		if err := k.WriteMetrics(&buf, at); err != nil {
			t.Fatal(err)
		}
		p := expfmt.NewTextParser(model.LegacyValidation)
		families, err := p.TextToMetricFamilies(&buf)
		if err != nil {
			t.Fatalf("not Prometheus' text format: %v\n%s", err, buf.String())
		}
		out := map[string][]map[string]string{}
		for name, f := range families {
			for _, m := range f.GetMetric() {
				l := map[string]string{}
				for _, p := range m.GetLabel() {
					l[p.GetName()] = p.GetValue()
				}
				if l["simulated"] != "true" {
					t.Errorf("%s without simulated=\"true\": %v", name, l)
				}
				v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
				l[model.MetricNameLabel+"_value"] = model.SampleValue(v).String()
				out[name] = append(out[name], l)
			}
		}
		return out
	}
	before := read(started.Add(KubeOOMKillAfter - time.Second))
	if len(before["kube_pod_container_status_last_terminated_reason"]) != 0 {
		t.Errorf("a last termination before the kill: %v", before["kube_pod_container_status_last_terminated_reason"])
	}
	if n := len(before["kube_pod_container_status_restarts_total"]); n != 3 {
		t.Errorf("%d restart counters, want the two pods' containers and the tokenizer", n)
	}
	after := read(started.Add(KubeOOMKillAfter))
	reasons := after["kube_pod_container_status_last_terminated_reason"]
	if len(reasons) != 1 || reasons[0]["reason"] != "OOMKilled" || reasons[0]["pod"] != "ai-detector-0" || reasons[0]["container"] != KubeLiveTokenizer {
		t.Errorf("after the kill: %v", reasons)
	}
	for _, r := range after["kube_pod_container_status_restarts_total"] {
		want := "0"
		if r["container"] == KubeLiveTokenizer {
			want = "1"
		}
		if r["__name___value"] != want {
			t.Errorf("restarts of %s/%s: %s, want %s", r["pod"], r["container"], r["__name___value"], want)
		}
	}
	if ex := after["kube_pod_container_status_last_terminated_exitcode"]; len(ex) != 1 || ex[0]["__name___value"] != "137" {
		t.Errorf("exit code: %v", ex)
	}
	for _, p := range after["kube_pod_info"] {
		if p["node"] != "gpu-node-1" || p["namespace"] != "inference" {
			t.Errorf("pod info %v", p)
		}
	}
}
