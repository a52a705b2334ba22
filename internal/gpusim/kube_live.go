package gpusim

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// KubeStateLive simulates kube-state-metrics for the demo's pods, as the live GPU simulator
// simulates dcgm-exporter: Prometheus' text format on GET /metrics, every series labelled
// simulated="true". Each pod has its main container (the pod's name without its ordinal) and
// the first pod also a "tokenizer" container that the kernel OOM-kills KubeOOMKillAfter after
// Started (its restart count goes 0 → 1, its last termination OOMKilled with exit code 137, and
// stays so), so the triage and the incident dashboard have a live container OOM kill.
type KubeStateLive struct {
	Node    string
	Pods    []string // "namespace/pod"
	Started time.Time
	Now     func() time.Time // nil: time.Now
}

// KubeOOMKillAfter is when, after the simulator starts, its tokenizer container is OOM-killed.
const KubeOOMKillAfter = 20 * time.Second

// KubeLiveTokenizer is the OOM-killed container of the live simulation.
const KubeLiveTokenizer = "tokenizer"

// containers are the simulated containers: each pod's main one, and the first pod's tokenizer.
func (k *KubeStateLive) containers() []kubeContainer {
	var out []kubeContainer
	for i, p := range k.Pods {
		ns, pod, _ := strings.Cut(p, "/")
		out = append(out, kubeContainer{namespace: ns, node: k.Node, pod: pod, container: statefulSet(pod),
			image: "registry.example.com/inference/" + statefulSet(pod) + ":1.0", gpu: i, usesGPU: true, memLimitBytes: 16 * gib})
		if i == 0 {
			out = append(out, kubeContainer{namespace: ns, node: k.Node, pod: pod, container: KubeLiveTokenizer,
				image: "registry.example.com/inference/tokenizer:1.4.2", gpu: i, memLimitBytes: 2 * gib,
				terminations: []termination{{reason: "OOMKilled", exitCode: 137}}})
		}
	}
	return out
}

// WriteMetrics writes the series at t in Prometheus' text format.
func (k *KubeStateLive) WriteMetrics(out io.Writer, t time.Time) error {
	w := bufio.NewWriter(out)
	killed := !t.Before(k.Started.Add(KubeOOMKillAfter))
	for _, f := range kubeFamilies {
		if f.help != "" {
			fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		}
		seenPod := map[string]bool{}
		for _, c := range k.containers() {
			if f.perPod {
				if seenPod[c.pod] {
					continue
				}
				seenPod[c.pod] = true
			}
			restarts, last, lastAt := 0, (*termination)(nil), time.Time{}
			if len(c.terminations) > 0 && killed {
				restarts, last, lastAt = 1, &c.terminations[0], k.Started.Add(KubeOOMKillAfter)
			}
			extra, v, ok := f.sample(c, restarts, last, lastAt)
			if !ok {
				continue
			}
			ls := []Label{{"namespace", c.namespaceName()}, {"pod", c.pod}, {"uid", podUID(c.namespaceName(), c.pod)}}
			if !f.perPod {
				ls = append(ls, Label{"container", c.container})
			}
			ls = append(append(ls, extra...), Label{"simulated", "true"})
			writeSeries(w, f.name, ls)
			w.WriteByte(' ')
			w.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
			w.WriteByte('\n')
		}
	}
	return w.Flush()
}

// ServeHTTP serves /metrics and /health.
func (k *KubeStateLive) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serveExporter(w, r, k.WriteMetrics, k.Now)
}
