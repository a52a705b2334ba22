package gpusim

import (
	"bufio"
	"crypto/sha256"
	"fmt"
	"io"
	"strconv"
	"time"
)

// The failures simulated on fixture-node-d and in the kube-state-metrics fixtures of its pods,
// one kind per runbook class the triage lists.
const (
	// IncidentXID: DCGM_FI_DEV_XID_ERRORS (gauge, the last XID) becomes Value and stays.
	IncidentXID = "xid"
	// IncidentECCDoubleBit: DCGM_FI_DEV_ECC_DBE_VOL_TOTAL and DCGM_FI_DEV_ECC_DBE_AGG_TOTAL rise from 0 to Value.
	IncidentECCDoubleBit = "ecc-double-bit"
	// IncidentUncorrectableRemappedRows: DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS rises from 0 to Value.
	IncidentUncorrectableRemappedRows = "uncorrectable-remapped-rows"
	// IncidentRowRemapFailure: DCGM_FI_DEV_ROW_REMAP_FAILURE becomes 1.
	IncidentRowRemapFailure = "row-remap-failure"
	// IncidentPCIeReplays: DCGM_FI_DEV_PCIE_REPLAY_COUNTER, flat at 0 before, climbs Value per minute.
	IncidentPCIeReplays = "pcie-replays"
	// IncidentFramebufferFull: DCGM_FI_DEV_FB_USED at about Value MiB (~96 % of the card) from At on.
	IncidentFramebufferFull = "framebuffer-full"
	// IncidentContainerRestart: kube_pod_container_status_restarts_total becomes Value; Reason is
	// the last termination's reason (kube_pod_container_status_last_terminated_reason), ExitCode its
	// exit code. A container the kernel killed for memory is IncidentOOMKilled instead.
	IncidentContainerRestart = "container-restart"
	// IncidentOOMKilled: the container was OOM-killed and restarted: restarts_total becomes Value,
	// last_terminated_reason{reason="OOMKilled"} 1, exit code 137.
	IncidentOOMKilled = "oom-killed"
)

// Incident is one simulated failure: what, where, when. GPU is the fixture GPU's index, or the
// index of the GPU its pod holds for a container that does not use it (embedder-0's tokenizer),
// with that GPU's UUID.
type Incident struct {
	Kind      string
	Host      string
	GPU       int
	UUID      string
	Pod       string
	Namespace string
	Container string
	// At is the first sample that shows the incident (on the fixtures' 15 s grid for a 2 h window).
	At time.Time
	// Value is the figure the series shows from At (see the kinds).
	Value float64
	// Metric is the series that shows it.
	Metric string
	// Reason and ExitCode are a restart's last termination (restarts only).
	Reason   string
	ExitCode int
}

// The kube-state-metrics fixtures: as kube-state-metrics v2 writes them, scraped as job
// KubeStateJob from KubeStateInstance, plus simulated="true".
const (
	KubeStateJob      = "kube-state-metrics"
	KubeStateInstance = "kube-state-metrics:8080"
	fixtureNamespace  = "inference"
)

// kubeContainer is one container of host D's pods and how it ends.
type kubeContainer struct {
	namespace, node       string // "": the fixtures' (inference, fixture-node-d)
	pod, container, image string
	gpu                   int // the pod's GPU on host D
	usesGPU               bool
	memLimitBytes         float64
	terminations          []termination
}

type termination struct {
	at       [2]int64 // fraction of the window
	reason   string
	exitCode int
}

const gib = 1 << 30

var kubeContainers = []kubeContainer{
	{pod: "llm-decode-0", container: "server", image: "vllm/vllm-openai:v0.8.5", gpu: 0, usesGPU: true, memLimitBytes: 64 * gib},
	{pod: "llm-decode-1", container: "server", image: "vllm/vllm-openai:v0.8.5", gpu: 1, usesGPU: true, memLimitBytes: 64 * gib},
	{pod: "llm-prefill-0", container: "server", image: "vllm/vllm-openai:v0.8.5", gpu: 2, usesGPU: true, memLimitBytes: 64 * gib,
		terminations: []termination{{restartsAt[0], "Error", 1}, {restartsAt[1], "Error", 1}}},
	{pod: "embedder-0", container: "server", image: "nvcr.io/nvidia/tritonserver:25.01-py3", gpu: 3, usesGPU: true, memLimitBytes: 32 * gib},
	{pod: "embedder-0", container: "tokenizer", image: "registry.example.com/inference/tokenizer:1.4.2", gpu: 3, memLimitBytes: 2 * gib,
		terminations: []termination{{oomKillAt, "OOMKilled", 137}}},
}

// FixtureIncidents lists what the fixtures made over [start, end] simulate on fixture-node-d
// and its pods, in time order.
func FixtureIncidents(start, end time.Time) []Incident {
	uuid := func(gpu int) string {
		g, _ := FixtureGPUFor(FixtureHostD, gpu)
		return g.UUID
	}
	inc := func(kind string, gpu int, pod, container string, at [2]int64, value float64, metric string) Incident {
		return Incident{Kind: kind, Host: FixtureHostD, GPU: gpu, UUID: uuid(gpu), Pod: pod, Namespace: fixtureNamespace,
			Container: container, At: fraction(start, end, at[0], at[1]), Value: value, Metric: metric}
	}
	out := []Incident{
		inc(IncidentFramebufferFull, 2, "llm-prefill-0", "server", fbFullAt, fbFullMiB, mFBUsed.Name),
		inc(IncidentECCDoubleBit, 1, "llm-decode-1", "server", memErrorsAt, 2, mECCDBEVol.Name),
		inc(IncidentUncorrectableRemappedRows, 1, "llm-decode-1", "server", memErrorsAt, 1, mRowsUncorr.Name),
		inc(IncidentRowRemapFailure, 1, "llm-decode-1", "server", memErrorsAt, 1, mRowRemapKO.Name),
		inc(IncidentPCIeReplays, 1, "llm-decode-1", "server", memErrorsAt, replaysPerMin, mReplay.Name),
		inc(IncidentXID, 0, "llm-decode-0", "server", xidAt, fixtureXID, mXID.Name),
	}
	for _, c := range kubeContainers {
		for i, term := range c.terminations {
			kind := IncidentContainerRestart
			if term.reason == "OOMKilled" {
				kind = IncidentOOMKilled
			}
			x := inc(kind, c.gpu, c.pod, c.container, term.at, float64(i+1), "kube_pod_container_status_restarts_total")
			x.Reason, x.ExitCode = term.reason, term.exitCode
			out = append(out, x)
		}
	}
	// Time order; the memory errors share a moment and keep the order above.
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].At.Before(out[j-1].At); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// podUID is a pod's uid, derived from its name.
func podUID(namespace, pod string) string {
	sum := sha256.Sum256([]byte(namespace + "/" + pod))
	h := fmt.Sprintf("%x", sum[:16])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// kubeFamily is one kube-state-metrics series family: name (the sample name), HELP, TYPE, and
// per container and moment its extra labels and value (ok false: no sample).
type kubeFamily struct {
	name, help, typ string
	perPod          bool // one series per pod (the first container of each pod), not per container
	sample          func(c kubeContainer, restarts int, last *termination, lastAt time.Time) (extra []Label, v float64, ok bool)
}

var kubeFamilies = []kubeFamily{
	{"kube_pod_info", "[STABLE] Information about pod.", "gauge", true,
		func(c kubeContainer, _ int, _ *termination, _ time.Time) ([]Label, float64, bool) {
			return []Label{{"host_ip", "10.0.4.13"}, {"pod_ip", "10.244.3." + strconv.Itoa(10+c.gpu)}, {"node", c.nodeName()},
				{"created_by_kind", "StatefulSet"}, {"created_by_name", statefulSet(c.pod)}, {"host_network", "false"}}, 1, true
		}},
	{"kube_pod_container_info", "[STABLE] Information about a container in a pod.", "gauge", false,
		func(c kubeContainer, restarts int, _ *termination, _ time.Time) ([]Label, float64, bool) {
			// A restarted container is a new container: a new container_id.
			sum := sha256.Sum256([]byte(c.pod + "/" + c.container + "/" + strconv.Itoa(restarts)))
			return []Label{{"image_spec", c.image}, {"image", c.image}, {"image_id", c.image + "@sha256:" + fmt.Sprintf("%x", sha256.Sum256([]byte(c.image)))},
				{"container_id", "containerd://" + fmt.Sprintf("%x", sum)}}, 1, true
		}},
	{"kube_pod_container_status_restarts_total", "[STABLE] The number of container restarts per container.", "counter", false,
		func(_ kubeContainer, restarts int, _ *termination, _ time.Time) ([]Label, float64, bool) {
			return nil, float64(restarts), true
		}},
	{"kube_pod_container_status_last_terminated_reason", "[EXPERIMENTAL] Describes the last reason the container was in terminated state.", "gauge", false,
		func(_ kubeContainer, _ int, last *termination, _ time.Time) ([]Label, float64, bool) {
			if last == nil {
				return nil, 0, false
			}
			return []Label{{"reason", last.reason}}, 1, true
		}},
	{"kube_pod_container_status_last_terminated_exitcode", "[EXPERIMENTAL] Describes the exit code for the last container in terminated state.", "gauge", false,
		func(_ kubeContainer, _ int, last *termination, _ time.Time) ([]Label, float64, bool) {
			if last == nil {
				return nil, 0, false
			}
			return nil, float64(last.exitCode), true
		}},
	{"kube_pod_container_status_last_terminated_timestamp", "[EXPERIMENTAL] Last terminated time for a pod container in unix timestamp.", "gauge", false,
		func(_ kubeContainer, _ int, last *termination, lastAt time.Time) ([]Label, float64, bool) {
			if last == nil {
				return nil, 0, false
			}
			return nil, float64(lastAt.Unix()), true
		}},
	{"kube_pod_container_resource_limits", "[EXPERIMENTAL] The number of requested limit resource by a container. It is recommended to use the kube_pod_resource_limits metric exposed by kube-scheduler instead, as it is more precise.", "gauge", false,
		func(c kubeContainer, _ int, _ *termination, _ time.Time) ([]Label, float64, bool) {
			return []Label{{"node", c.nodeName()}, {"resource", "memory"}, {"unit", "byte"}}, c.memLimitBytes, true
		}},
	{"kube_pod_container_resource_limits", "", "", false,
		func(c kubeContainer, _ int, _ *termination, _ time.Time) ([]Label, float64, bool) {
			// kube-state-metrics writes the extended resource nvidia.com/gpu sanitised.
			return []Label{{"node", c.nodeName()}, {"resource", "nvidia_com_gpu"}, {"unit", "integer"}}, 1, c.usesGPU
		}},
}

func (c kubeContainer) nodeName() string {
	if c.node == "" {
		return FixtureHostD
	}
	return c.node
}

func (c kubeContainer) namespaceName() string {
	if c.namespace == "" {
		return fixtureNamespace
	}
	return c.namespace
}

// statefulSet is the StatefulSet of a pod named <set>-<ordinal>.
func statefulSet(pod string) string {
	for i := len(pod) - 1; i > 0; i-- {
		if pod[i] == '-' {
			return pod[:i]
		}
	}
	return pod
}

// WriteKubeStateFixtures writes the kube-state-metrics series of fixture-node-d's pods from start
// to end, one sample every step, in OpenMetrics with timestamps ending in "# EOF" (promtool's
// backfill input, as WriteFixtures). Labels are kube-state-metrics v2's (namespace, pod, uid,
// container, then the family's own), plus instance and job as a scrape adds them and
// simulated="true". Same arguments, same bytes.
func WriteKubeStateFixtures(out io.Writer, start, end time.Time, step time.Duration) error {
	if step <= 0 || end.Before(start) {
		return fmt.Errorf("kube-state fixtures: need step > 0 and start <= end (got step %s, %s..%s)", step, start, end)
	}
	w := bufio.NewWriterSize(out, 1<<16)
	for _, f := range kubeFamilies {
		if f.help != "" {
			family := f.name
			if f.typ == "counter" {
				family = family[:len(family)-len("_total")] // OpenMetrics names a counter's family without _total
			}
			fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", family, f.help, family, f.typ)
		}
		seenPod := map[string]bool{}
		for _, c := range kubeContainers {
			if f.perPod {
				if seenPod[c.pod] {
					continue
				}
				seenPod[c.pod] = true
			}
			base := []Label{{"namespace", fixtureNamespace}, {"pod", c.pod}, {"uid", podUID(fixtureNamespace, c.pod)}}
			if !f.perPod {
				base = append(base, Label{"container", c.container})
			}
			// A series' samples one after another: group by label set in order of appearance.
			var order []string
			lines := map[string][]string{}
			labelSets := map[string][]Label{}
			for t := start; !t.After(end); t = t.Add(step) {
				restarts, last, lastAt := 0, (*termination)(nil), time.Time{}
				for i := range c.terminations {
					if at := fraction(start, end, c.terminations[i].at[0], c.terminations[i].at[1]); !t.Before(at) {
						restarts, last, lastAt = i+1, &c.terminations[i], at
					}
				}
				extra, v, ok := f.sample(c, restarts, last, lastAt)
				if !ok {
					continue
				}
				ls := append(append(append([]Label{}, base...), extra...),
					Label{"instance", KubeStateInstance}, Label{"job", KubeStateJob}, Label{"simulated", "true"})
				key := fmt.Sprint(ls)
				if _, seen := lines[key]; !seen {
					order = append(order, key)
					labelSets[key] = ls
				}
				lines[key] = append(lines[key], strconv.FormatFloat(v, 'f', -1, 64)+" "+strconv.FormatFloat(float64(t.UnixMilli())/1000, 'f', -1, 64))
			}
			for _, key := range order {
				for _, l := range lines[key] {
					writeSeries(w, f.name, labelSets[key])
					w.WriteByte(' ')
					w.WriteString(l)
					w.WriteByte('\n')
				}
			}
		}
	}
	w.WriteString("# EOF\n")
	return w.Flush()
}

// KubeStateContainer is a container of the kube-state-metrics fixtures.
type KubeStateContainer struct {
	Namespace, Pod, Container, Node string
	// GPU is the index of the fixture-node-d GPU its pod holds; UsesGPU says whether this
	// container has it (nvidia.com/gpu limit).
	GPU     int
	UsesGPU bool
	// MemoryLimitBytes is its memory limit.
	MemoryLimitBytes float64
}

// KubeStateContainers lists the containers of the kube-state-metrics fixtures.
func KubeStateContainers() []KubeStateContainer {
	var out []KubeStateContainer
	for _, c := range kubeContainers {
		out = append(out, KubeStateContainer{fixtureNamespace, c.pod, c.container, FixtureHostD, c.gpu, c.usesGPU, c.memLimitBytes})
	}
	return out
}
