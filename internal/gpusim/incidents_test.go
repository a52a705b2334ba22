package gpusim

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
)

func TestFixtureHostsAndGPUs(t *testing.T) {
	perHost := map[string]int{}
	for _, g := range FixtureGPUs() {
		perHost[g.Host]++
		if g.Host == FixtureHostD {
			if g.Model.Name != "NVIDIA H100 80GB HBM3" || g.Exporter != Current || !g.ECC || g.Driver == "" ||
				g.Labels["simulated"] != "true" || g.Labels["namespace"] != "inference" || g.Labels["container"] != "server" {
				t.Errorf("%s gpu %d: %+v", g.Host, g.Index, g.GPU)
			}
			if len(g.Metrics()) != len(Current.Metrics())+4 {
				t.Errorf("%s gpu %d: %d series", g.Host, g.Index, len(g.Metrics()))
			}
		} else if g.ECC || g.Labels["simulated"] != "" {
			t.Errorf("%s gpu %d: ECC %v, labels %v", g.Host, g.Index, g.ECC, g.Labels)
		}
	}
	want := map[string]int{FixtureHostA: 7, FixtureHostB: 4, FixtureHostC: 1, FixtureHostD: 4}
	if len(perHost) != len(want) {
		t.Errorf("GPUs per host %v, want %v", perHost, want)
	}
	for h, n := range want {
		if perHost[h] != n {
			t.Errorf("GPUs per host %v, want %v", perHost, want)
		}
	}
}

// ksmSample is one kube-state-metrics fixture sample.
type ksmSample struct {
	ls labels.Labels
	ts int64
	v  float64
}

func parseKubeState(t *testing.T, data []byte) []ksmSample {
	t.Helper()
	var out []ksmSample
	p := textparse.NewOpenMetricsParser(data, labels.NewSymbolTable())
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the OpenMetrics parser refuses the kube-state-metrics fixtures: %v", err)
		}
		if e == textparse.EntrySeries {
			_, ts, v := p.Series()
			var ls labels.Labels
			p.Labels(&ls)
			if ts == nil {
				t.Fatalf("sample without timestamp: %s", ls)
			}
			out = append(out, ksmSample{ls, *ts, v})
		}
	}
	return out
}

func TestFixtureIncidents(t *testing.T) {
	end := time.Unix(1_780_000_000, 0)
	start := end.Add(-FixtureHistory)
	at := func(minutes int) time.Time { return start.Add(time.Duration(minutes) * time.Minute) }
	incidents := FixtureIncidents(start, end)
	type key struct {
		kind, pod, container string
		gpu                  int
		at                   time.Time
		value                float64
	}
	want := []key{
		{IncidentFramebufferFull, "llm-prefill-0", "server", 2, at(72), 78600},
		{IncidentECCDoubleBit, "llm-decode-1", "server", 1, at(84), 2},
		{IncidentUncorrectableRemappedRows, "llm-decode-1", "server", 1, at(84), 1},
		{IncidentRowRemapFailure, "llm-decode-1", "server", 1, at(84), 1},
		{IncidentPCIeReplays, "llm-decode-1", "server", 1, at(84), 50},
		{IncidentXID, "llm-decode-0", "server", 0, at(90), 79},
		{IncidentContainerRestart, "llm-prefill-0", "server", 2, at(96), 1},
		{IncidentOOMKilled, "embedder-0", "tokenizer", 3, at(102), 1},
		{IncidentContainerRestart, "llm-prefill-0", "server", 2, at(108), 2},
	}
	if len(incidents) != len(want) {
		t.Fatalf("%d incidents, want %d: %+v", len(incidents), len(want), incidents)
	}
	for i, x := range incidents {
		g, _ := FixtureGPUFor(FixtureHostD, x.GPU)
		if got := (key{x.Kind, x.Pod, x.Container, x.GPU, x.At, x.Value}); got != want[i] || x.Host != FixtureHostD ||
			x.Namespace != "inference" || x.UUID != g.UUID || x.Metric == "" {
			t.Errorf("incident %d: %+v, want %+v", i, x, want[i])
		}
		switch x.Kind {
		case IncidentOOMKilled:
			if x.Reason != "OOMKilled" || x.ExitCode != 137 {
				t.Errorf("OOM kill: reason %q exit %d", x.Reason, x.ExitCode)
			}
		case IncidentContainerRestart:
			if x.Reason != "Error" || x.ExitCode != 1 {
				t.Errorf("restart: reason %q exit %d", x.Reason, x.ExitCode)
			}
		}
	}

	// The DCGM fixtures show them: one step before, the healthy value; from At on, the fault.
	var buf bytes.Buffer
	if err := WriteFixtures(&buf, start, end, FixtureStep); err != nil {
		t.Fatal(err)
	}
	samples, _, _ := parseFixtures(t, buf.Bytes())
	fig := func(gpu int, ts time.Time) figures {
		f := samples[fixtureKey{FixtureHostD, strconv.Itoa(gpu), ts.UnixMilli()}]
		if f == nil {
			t.Fatalf("no samples of %s gpu %d at %s", FixtureHostD, gpu, ts)
		}
		return f
	}
	for _, c := range []struct {
		gpu            int
		metric         string
		at             time.Time
		before, after_ float64
	}{
		{0, "DCGM_FI_DEV_XID_ERRORS", at(90), 0, 79},
		{1, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", at(84), 0, 2},
		{1, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", at(84), 0, 2},
		{1, "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", at(84), 0, 1},
		{1, "DCGM_FI_DEV_ROW_REMAP_FAILURE", at(84), 0, 1},
		{1, "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", at(84), 0, 0},
		{1, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", at(84), 0, 0},
		{1, "DCGM_FI_DEV_PCIE_REPLAY_COUNTER", at(84), 0, 0},
	} {
		if b := fig(c.gpu, c.at.Add(-FixtureStep))[c.metric]; b != c.before {
			t.Errorf("gpu %d %s before %s: %v, want %v", c.gpu, c.metric, c.at.Format(time.TimeOnly), b, c.before)
		}
		for _, d := range []time.Duration{0, 10 * time.Minute, end.Sub(c.at)} {
			got := fig(c.gpu, c.at.Add(d))[c.metric]
			want := c.after_
			if c.metric == "DCGM_FI_DEV_PCIE_REPLAY_COUNTER" {
				want = 50 * d.Minutes()
			}
			if got != want {
				t.Errorf("gpu %d %s at +%s after the incident: %v, want %v", c.gpu, c.metric, d, got, want)
			}
		}
	}
	// Healthy GPUs and hosts: all memory-error series and XIDs 0, replays flat, all window.
	for _, g := range FixtureGPUs() {
		for k := 0; k <= int(FixtureHistory/FixtureStep); k++ {
			ts := start.Add(time.Duration(k) * FixtureStep)
			f := samples[fixtureKey{g.Host, strconv.Itoa(g.Index), ts.UnixMilli()}]
			if f == nil {
				continue
			}
			for _, m := range []string{"DCGM_FI_DEV_XID_ERRORS", "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
				"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
				"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_ROW_REMAP_FAILURE", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"} {
				gpu1Faults := map[string]bool{"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": true, "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": true,
					"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": true, "DCGM_FI_DEV_ROW_REMAP_FAILURE": true,
					"DCGM_FI_DEV_PCIE_REPLAY_COUNTER": ts.After(at(84))}
				faulty := g.Host == FixtureHostD && (g.Index == 0 && m == "DCGM_FI_DEV_XID_ERRORS" && !ts.Before(at(90)) ||
					g.Index == 1 && !ts.Before(at(84)) && gpu1Faults[m])
				if v, ok := f[m]; ok && (v != 0) != faulty {
					t.Errorf("%s gpu %d at %s: %s %v", g.Host, g.Index, ts.Format(time.TimeOnly), m, v)
				}
			}
		}
	}
	// After the XID, GPU 0 does nothing and draws idle power.
	f := fig(0, at(100))
	if f["DCGM_FI_DEV_GPU_UTIL"] != 0 || f["DCGM_FI_PROF_SM_ACTIVE"] != 0 || f["DCGM_FI_DEV_POWER_USAGE"] > 1.1*H10080GBHBM3.IdlePowerW {
		t.Errorf("gpu 0 after its XID: %v", f)
	}
	if f := fig(0, at(80)); f["DCGM_FI_DEV_GPU_UTIL"] < 50 {
		t.Errorf("gpu 0 before its XID: %v", f)
	}
	// GPU 2's framebuffer: ~64 % used, then ~96 % from 72 min.
	for _, c := range []struct {
		at       time.Time
		min, max float64
	}{{at(71), 0.60, 0.66}, {at(72), 0.96, 0.97}, {end, 0.96, 0.97}} {
		f := fig(2, c.at)
		share := f["DCGM_FI_DEV_FB_USED"] / H10080GBHBM3.FBTotalMiB
		if share < c.min || share > c.max || f["DCGM_FI_DEV_FB_USED"]+f["DCGM_FI_DEV_FB_FREE"]+f["DCGM_FI_DEV_FB_RESERVED"] != 81559 {
			t.Errorf("gpu 2 at %s: framebuffer %.3f used (%v)", c.at.Format(time.TimeOnly), share, f)
		}
	}

	// The kube-state-metrics fixtures.
	buf.Reset()
	if err := WriteKubeStateFixtures(&buf, start, end, FixtureStep); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	_ = WriteKubeStateFixtures(&again, start, end, FixtureStep)
	if !bytes.Equal(buf.Bytes(), again.Bytes()) || !bytes.HasSuffix(buf.Bytes(), []byte("\n# EOF\n")) {
		t.Fatal("kube-state-metrics fixtures differ between runs or do not end in # EOF")
	}
	ksm := parseKubeState(t, buf.Bytes())
	// value finds the sample of name for pod/container at ts with the extra label matchers.
	value := func(name, pod, container string, ts time.Time, extra ...string) (float64, bool) {
		for _, s := range ksm {
			if s.ts != ts.UnixMilli() || s.ls.Get("__name__") != name || s.ls.Get("pod") != pod || s.ls.Get("container") != container {
				continue
			}
			ok := true
			for i := 0; i < len(extra); i += 2 {
				ok = ok && s.ls.Get(extra[i]) == extra[i+1]
			}
			if ok {
				return s.v, true
			}
		}
		return 0, false
	}
	for _, s := range ksm {
		ls := s.ls
		if ls.Get("job") != KubeStateJob || ls.Get("instance") != KubeStateInstance || ls.Get("simulated") != "true" ||
			ls.Get("namespace") != "inference" || ls.Get("pod") == "" || ls.Get("uid") == "" {
			t.Fatalf("labels %s", ls)
		}
	}
	type ksmCase struct {
		name, pod, container string
		ts                   time.Time
		extra                []string
		want                 float64 // -1: no sample
	}
	cases := []ksmCase{
		{"kube_pod_container_status_restarts_total", "embedder-0", "tokenizer", at(102).Add(-FixtureStep), nil, 0},
		{"kube_pod_container_status_restarts_total", "embedder-0", "tokenizer", at(102), nil, 1},
		{"kube_pod_container_status_restarts_total", "embedder-0", "tokenizer", end, nil, 1},
		{"kube_pod_container_status_last_terminated_reason", "embedder-0", "tokenizer", at(102).Add(-FixtureStep), nil, -1},
		{"kube_pod_container_status_last_terminated_reason", "embedder-0", "tokenizer", at(102), []string{"reason", "OOMKilled"}, 1},
		{"kube_pod_container_status_last_terminated_reason", "embedder-0", "tokenizer", end, []string{"reason", "OOMKilled"}, 1},
		{"kube_pod_container_status_last_terminated_exitcode", "embedder-0", "tokenizer", at(102), nil, 137},
		{"kube_pod_container_status_last_terminated_timestamp", "embedder-0", "tokenizer", end, nil, float64(at(102).Unix())},
		{"kube_pod_container_resource_limits", "embedder-0", "tokenizer", at(10), []string{"resource", "memory", "unit", "byte"}, 2 << 30},
		{"kube_pod_container_resource_limits", "embedder-0", "tokenizer", at(10), []string{"resource", "nvidia_com_gpu"}, -1},
		{"kube_pod_container_resource_limits", "embedder-0", "server", at(10), []string{"resource", "nvidia_com_gpu"}, 1},
		{"kube_pod_container_status_restarts_total", "embedder-0", "server", end, nil, 0},
		{"kube_pod_container_status_restarts_total", "llm-prefill-0", "server", at(96).Add(-FixtureStep), nil, 0},
		{"kube_pod_container_status_restarts_total", "llm-prefill-0", "server", at(96), nil, 1},
		{"kube_pod_container_status_restarts_total", "llm-prefill-0", "server", at(108).Add(-FixtureStep), nil, 1},
		{"kube_pod_container_status_restarts_total", "llm-prefill-0", "server", at(108), nil, 2},
		{"kube_pod_container_status_last_terminated_reason", "llm-prefill-0", "server", at(96), []string{"reason", "Error"}, 1},
		{"kube_pod_container_status_last_terminated_exitcode", "llm-prefill-0", "server", end, nil, 1},
		{"kube_pod_container_status_last_terminated_timestamp", "llm-prefill-0", "server", end, nil, float64(at(108).Unix())},
		{"kube_pod_info", "llm-prefill-0", "", at(1), []string{"node", FixtureHostD}, 1},
		{"kube_pod_info", "embedder-0", "", end, []string{"node", FixtureHostD}, 1},
	}
	for _, pod := range []string{"llm-decode-0", "llm-decode-1"} {
		cases = append(cases,
			ksmCase{"kube_pod_container_status_restarts_total", pod, "server", end, nil, 0},
			ksmCase{"kube_pod_container_status_last_terminated_reason", pod, "server", end, nil, -1},
			ksmCase{"kube_pod_container_info", pod, "server", start, []string{"image", "vllm/vllm-openai:v0.8.5"}, 1})
	}
	for _, c := range cases {
		got, ok := value(c.name, c.pod, c.container, c.ts, c.extra...)
		if c.want < 0 && ok || c.want >= 0 && (!ok || got != c.want) {
			t.Errorf("%s{pod=%q,container=%q,%v} at %s: %v (present %v), want %v", c.name, c.pod, c.container, c.extra, c.ts.Format(time.TimeOnly), got, ok, c.want)
		}
	}
	// A restarted container is a new container: its container_id changes.
	ids := map[string]bool{}
	for _, s := range ksm {
		if s.ls.Get("__name__") == "kube_pod_container_info" && s.ls.Get("pod") == "llm-prefill-0" {
			ids[s.ls.Get("container_id")] = true
		}
	}
	if len(ids) != 3 {
		t.Errorf("llm-prefill-0's container had %d ids, want 3 (two restarts)", len(ids))
	}
}
