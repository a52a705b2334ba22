//go:build integration

package testbed

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
)

// The failures simulated on fixture-node-d and in the kube-state-metrics fixtures of its pods,
// through Prometheus' API at the times gpusim.FixtureIncidents gives: absent or healthy one step
// before, present from the moment on, every series simulated="true".
func TestFixtureIncidentsInPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start, end := bed.FixtureStart, bed.FixtureEnd
	if start.IsZero() || end.Sub(start) != gpusim.FixtureHistory {
		t.Fatalf("fixture window %s..%s (HSI_TESTBED_FIXTURE_START/END)", start, end)
	}
	incidents := gpusim.FixtureIncidents(start, end)
	if len(incidents) == 0 {
		t.Fatal("no incidents")
	}
	// one runs query at ts and wants a single series with value want, or nothing (want < 0).
	one := func(what, query string, ts time.Time, want float64) {
		t.Helper()
		res := instantQuery(t, ctx, query, ts)
		switch {
		case want < 0 && len(res) != 0:
			t.Errorf("%s: %s at %s: %v, want nothing", what, query, ts.Format(time.TimeOnly), res)
		case want >= 0 && len(res) != 1:
			t.Errorf("%s: %s at %s: %d series, want 1", what, query, ts.Format(time.TimeOnly), len(res))
		case want >= 0 && res[0].value(t) != want:
			t.Errorf("%s: %s at %s: %v, want %v", what, query, ts.Format(time.TimeOnly), res[0].value(t), want)
		case want >= 0 && res[0].Metric["simulated"] != "true":
			t.Errorf("%s: %s: labels %v, want simulated=\"true\"", what, query, res[0].Metric)
		}
	}
	before := func(x gpusim.Incident) time.Time { return x.At.Add(-gpusim.FixtureStep) }
	kinds := map[string]int{}
	for _, x := range incidents {
		kinds[x.Kind]++
		what := x.Kind + " " + x.Pod + "/" + x.Container
		gpu := `{job="dcgm",Hostname="` + x.Host + `",gpu="` + strconv.Itoa(x.GPU) + `",UUID="` + x.UUID + `",pod="` + x.Pod +
			`",namespace="` + x.Namespace + `",container="` + x.Container + `",simulated="true"}`
		ksm := `{job="kube-state-metrics",instance="kube-state-metrics:8080",namespace="` + x.Namespace + `",pod="` + x.Pod +
			`",container="` + x.Container + `",simulated="true"}`
		switch x.Kind {
		case gpusim.IncidentXID:
			one(what, "DCGM_FI_DEV_XID_ERRORS"+gpu, before(x), 0)
			one(what, "DCGM_FI_DEV_XID_ERRORS"+gpu, x.At, 79)
			one(what, "DCGM_FI_DEV_XID_ERRORS"+gpu, end, 79)
			one(what, "DCGM_FI_DEV_GPU_UTIL"+gpu, x.At.Add(5*time.Minute), 0)
			one(what, "DCGM_FI_PROF_SM_ACTIVE"+gpu, x.At.Add(5*time.Minute), 0)
		case gpusim.IncidentECCDoubleBit:
			for _, m := range []string{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL"} {
				one(what, m+gpu, before(x), 0)
				one(what, m+gpu, x.At, x.Value)
				one(what, m+gpu+" - "+m+gpu+" offset 1m", x.At, x.Value)
			}
			one(what, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"+gpu, end, 0)
		case gpusim.IncidentUncorrectableRemappedRows, gpusim.IncidentRowRemapFailure:
			one(what, x.Metric+gpu, before(x), 0)
			one(what, x.Metric+gpu, x.At, x.Value)
			one(what, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS"+gpu, end, 0)
		case gpusim.IncidentPCIeReplays:
			one(what, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"+gpu, before(x), 0)
			one(what, "increase(DCGM_FI_DEV_PCIE_REPLAY_COUNTER"+gpu+"[10m])", before(x), 0)
			one(what, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"+gpu, x.At.Add(10*time.Minute), 10*x.Value)
		case gpusim.IncidentFramebufferFull:
			res := instantQuery(t, ctx, "DCGM_FI_DEV_FB_USED"+gpu+" / (DCGM_FI_DEV_FB_USED"+gpu+" + DCGM_FI_DEV_FB_FREE"+gpu+" + DCGM_FI_DEV_FB_RESERVED"+gpu+")", x.At)
			// About 96.4 %, with the fixture's framebuffer noise of ±0.5 % of the reading.
			if len(res) != 1 || res[0].value(t) < 0.955 || res[0].value(t) > 0.972 {
				t.Errorf("%s: framebuffer share %v at %s, want about 0.96", what, res, x.At.Format(time.TimeOnly))
			}
			if res = instantQuery(t, ctx, "DCGM_FI_DEV_FB_USED"+gpu, before(x)); len(res) != 1 || res[0].value(t) > 0.7*81559 {
				t.Errorf("%s: framebuffer before %v", what, res)
			}
		case gpusim.IncidentContainerRestart, gpusim.IncidentOOMKilled:
			one(what, "kube_pod_container_status_restarts_total"+ksm, before(x), x.Value-1)
			one(what, "kube_pod_container_status_restarts_total"+ksm, x.At, x.Value)
			one(what, "kube_pod_container_status_restarts_total"+ksm+" - kube_pod_container_status_restarts_total"+ksm+" offset 1m", x.At, 1)
			reason := `kube_pod_container_status_last_terminated_reason{reason="` + x.Reason + `",` + ksm[1:]
			if x.Value == 1 {
				one(what, reason, before(x), -1)
				one(what, "kube_pod_container_status_last_terminated_exitcode"+ksm, before(x), -1)
			}
			one(what, reason, x.At, 1)
			one(what, reason, end, 1)
			one(what, "kube_pod_container_status_last_terminated_exitcode"+ksm, x.At, float64(x.ExitCode))
			one(what, "kube_pod_container_status_last_terminated_timestamp"+ksm, x.At, float64(x.At.Unix()))
		default:
			t.Errorf("unknown incident kind %q", x.Kind)
		}
	}
	if kinds[gpusim.IncidentOOMKilled] != 1 || kinds[gpusim.IncidentContainerRestart] != 2 || kinds[gpusim.IncidentXID] != 1 {
		t.Errorf("incidents per kind %v", kinds)
	}

	// The OOM-killed container: its memory limit, its pod on fixture-node-d; healthy pods never
	// restart and have no last termination.
	one("tokenizer memory limit", `kube_pod_container_resource_limits{job="kube-state-metrics",pod="embedder-0",container="tokenizer",resource="memory",unit="byte",simulated="true"}`, end, 2<<30)
	for _, c := range gpusim.KubeStateContainers() {
		one("pod info "+c.Pod, `kube_pod_info{job="kube-state-metrics",namespace="`+c.Namespace+`",pod="`+c.Pod+`",node="`+gpusim.FixtureHostD+`",simulated="true"}`, end, 1)
	}
	for _, pod := range []string{"llm-decode-0", "llm-decode-1"} {
		sel := `{job="kube-state-metrics",pod="` + pod + `",container="server",simulated="true"}`
		one(pod, "kube_pod_container_status_restarts_total"+sel, end, 0)
		one(pod, "kube_pod_container_status_last_terminated_reason"+sel, end, -1)
	}
	// OOMKilled over the window: exactly one container, the tokenizer.
	res := instantQuery(t, ctx, `max_over_time(kube_pod_container_status_last_terminated_reason{reason="OOMKilled",simulated="true"}[125m])`, end)
	if len(res) != 1 || res[0].Metric["pod"] != "embedder-0" || res[0].Metric["container"] != "tokenizer" {
		t.Errorf("OOMKilled containers over the window: %v", res)
	}
	// Healthy hosts: no XID, no uncorrectable remapped rows, no row-remap failure, all window.
	for _, q := range []string{
		`max_over_time(DCGM_FI_DEV_XID_ERRORS{job="dcgm",Hostname=~"fixture-node-[abc]"}[125m]) > 0`,
		`max_over_time(DCGM_FI_DEV_XID_ERRORS{job="dcgm",hostname="fixture-node-b"}[125m]) > 0`,
		`max_over_time(DCGM_FI_DEV_ROW_REMAP_FAILURE{job="dcgm",Hostname=~"fixture-node-[abc]"}[125m]) > 0`,
		`max_over_time(DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{job="dcgm",Hostname=~"fixture-node-[abc]"}[125m]) > 0`,
	} {
		if res := instantQuery(t, ctx, q, end); len(res) != 0 {
			t.Errorf("%s: %v", q, res)
		}
	}
}
