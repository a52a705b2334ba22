package triage

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// ReasonOOMKilled is the termination reason the kubelet gives a container the kernel killed for
// its memory limit.
const ReasonOOMKilled = "OOMKilled"

// containerOOMs is one failure per OOM-killed container restart: host memory, whatever its GPU
// shows, so the GPU's framebuffer is given as the evidence that it is not the cause.
func containerOOMs(ev *Evidence, gpus []*gpu) []Failure {
	var out []Failure
	for _, t := range scopedTerminations(ev, gpus) {
		if t.Reason != ReasonOOMKilled {
			continue
		}
		g := podGPU(gpus, t.Namespace, t.Pod, t.Node)
		f := Failure{At: t.At, Class: models.ClassContainerOOM, Runbook: RunbookOf(models.ClassContainerOOM), Count: max(t.Restarts, 1),
			Pod: t.Pod, Namespace: t.Namespace, Container: t.Container, Host: t.Node}
		f.Title = fmt.Sprintf("%s: container %s of %s", f.Runbook.Title, t.Container, qualified(t.Namespace, t.Pod))
		e := fmt.Sprintf("restarted %d time%s at %s, the last termination OOMKilled", max(t.Restarts, 1), plural(max(t.Restarts, 1)), clock(t.At))
		if t.ExitCode >= 0 {
			e += fmt.Sprintf(", exit code %d", t.ExitCode)
		}
		if t.MemoryLimit > 0 {
			e += fmt.Sprintf(", memory limit %s", bytes(t.MemoryLimit))
		}
		f.Evidence = append(f.Evidence, e+" (kube-state-metrics: "+t.Query+")")
		if g != nil {
			f.GPU, f.UUID, f.MIG, f.Host = g.index, g.uuid, g.mig, g.host
			if fb := g.at(MetricFramebufferUsed, t.At); !math.IsNaN(fb) {
				f.Evidence = append(f.Evidence, fmt.Sprintf("the pod's %s had %s of its framebuffer in use then: the kill was for host memory, not GPU memory", g.name(), pct(fb)))
			}
		}
		f.Chain = g.chain(Chain{Pod: qualified(t.Namespace, t.Pod), Container: t.Container, Node: t.Node})
		out = append(out, f)
	}
	return out
}

// scopedTerminations are the terminations in the query's scope: hosts by the pod's node, GPUs by
// the GPUs whose series name the pod (the store already kept the pods and namespaces asked for).
func scopedTerminations(ev *Evidence, gpus []*gpu) []models.ContainerTermination {
	var out []models.ContainerTermination
	for _, t := range ev.Terminations {
		if len(ev.Scope.Pods) > 0 && !slices.Contains(ev.Scope.Pods, t.Pod) ||
			len(ev.Scope.Namespaces) > 0 && !slices.Contains(ev.Scope.Namespaces, t.Namespace) {
			continue
		}
		g := podGPU(gpus, t.Namespace, t.Pod, t.Node)
		host := t.Node
		if host == "" && g != nil {
			host = g.host
		}
		if len(ev.Scope.Hosts) > 0 && !slices.Contains(ev.Scope.Hosts, host) {
			continue
		}
		if len(ev.Scope.GPUs) > 0 && (g == nil || !slices.ContainsFunc(ev.Scope.GPUs, g.id.Matches)) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// podGPU is the GPU whose series name the pod (on its node when known), the first in order.
func podGPU(gpus []*gpu, namespace, pod, node string) *gpu {
	for _, g := range gpus {
		if g.runsPod(namespace, pod) && (node == "" || g.host == "" || g.host == node) {
			return g
		}
	}
	return nil
}

// gpuHealth reads the hardware series of every GPU: XID codes, double-bit ECC errors, row-remap
// failures and PCIe replays above DCGM's limit. A value already set when the range began
// happened before it and is dated at the range's first reading, saying so.
func gpuHealth(ev *Evidence, gpus []*gpu) []Failure {
	var out []Failure
	for _, g := range gpus {
		// XID: the gauge holds the last XID code; each change to a non-zero code is one error.
		seen := map[string]bool{}
		for _, s := range g.series[MetricXID] {
			for i, v := range s.Values {
				if v == 0 || math.IsNaN(v) || i > 0 && v == s.Values[i-1] {
					continue
				}
				code := uint64(v)
				k := fmt.Sprint(code, s.Times[i].Unix())
				if seen[k] {
					continue // another pod's copy of the same GPU's series
				}
				seen[k] = true
				meaning, action := classify.XIDMeaning(code)
				f := g.failure(models.ClassXID, s.Times[i])
				f.Title = fmt.Sprintf("XID %d on %s: %s", code, g.name(), meaning)
				f.Runbook.Mitigation = action + "; " + f.Runbook.Mitigation
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s = %d %s (%s)", sourceOf(ev, MetricXID), code, since(i, s.Times[i]), "the last XID the driver reported"))
				out = append(out, f)
			}
		}
		ecc := rise(g, MetricECCDBE)
		rows := rise(g, MetricRemappedUncorr)
		if ecc.found {
			f := g.failure(models.ClassECC, ecc.at)
			f.Title = fmt.Sprintf("Uncorrectable ECC errors on %s", g.name())
			f.Count = int(ecc.to - ecc.from)
			f.Evidence = append(f.Evidence, ecc.say(sourceOf(ev, MetricECCDBE), "double-bit errors"))
			if rows.found {
				f.Evidence = append(f.Evidence, rows.say(sourceOf(ev, MetricRemappedUncorr), "rows remapped for uncorrectable errors (a reset applies pending remaps)"))
			}
			if f.Count == 0 {
				f.Count = int(ecc.to)
			}
			out = append(out, f)
		}
		if remap := rise(g, MetricRemapFailure); remap.found {
			f := g.failure(models.ClassRowRemap, remap.at)
			f.Title = fmt.Sprintf("Row-remap failure on %s", g.name())
			f.Evidence = append(f.Evidence, remap.say(sourceOf(ev, MetricRemapFailure), "(a row could not be remapped: the GPU's spare rows are used up)"))
			if rows.found && !ecc.found {
				f.Evidence = append(f.Evidence, rows.say(sourceOf(ev, MetricRemappedUncorr), "rows remapped for uncorrectable errors"))
			}
			out = append(out, f)
		}
		if f, ok := pcieReplays(ev, g); ok {
			out = append(out, f)
		}
	}
	return out
}

// since says when a reading changed: at its time, or before the range when it is the first.
func since(i int, t time.Time) string {
	if i == 0 {
		return "already when the range began (" + clock(t) + "): it happened before"
	}
	return "from " + clock(t)
}

// change is how a counter or flag of a GPU moved over the range.
type change struct {
	found    bool
	first    bool // already non-zero at the range's first reading
	at       time.Time
	from, to float64
}

// rise finds the first step where the GPU's metric rose above its previous reading (or was
// already above 0 at the first), and how far it went.
func rise(g *gpu, metric string) change {
	var c change
	for _, s := range g.series[metric] {
		for i, v := range s.Values {
			if math.IsNaN(v) {
				continue
			}
			up := i == 0 && v > 0 || i > 0 && v > s.Values[i-1]
			if !up {
				continue
			}
			if !c.found || s.Times[i].Before(c.at) {
				c.found, c.first, c.at = true, i == 0, s.Times[i]
				c.from = 0
				if i > 0 {
					c.from = s.Values[i-1]
				}
			}
			c.to = max(c.to, slices.Max(s.Values))
			break
		}
	}
	return c
}

func (c change) say(source, what string) string {
	if c.first {
		return fmt.Sprintf("%s = %g %s, already when the range began (%s): it happened before", source, c.to, what, clock(c.at))
	}
	return fmt.Sprintf("%s rose from %g to %g %s, from %s", source, c.from, c.to, what, clock(c.at))
}

// pcieReplays is a failure when the GPU's replay rate went above DCGM's limit.
func pcieReplays(ev *Evidence, g *gpu) (Failure, bool) {
	var at time.Time
	peak := 0.0
	for _, s := range g.series[MetricPCIeReplay] {
		for i, v := range s.Values {
			perMin := v * 60 // the catalogue's rate is per second
			if perMin > MaxPCIeReplaysPerMinute {
				if at.IsZero() || s.Times[i].Before(at) {
					at = s.Times[i]
				}
				peak = max(peak, perMin)
			}
		}
	}
	if at.IsZero() {
		return Failure{}, false
	}
	f := g.failure(models.ClassPCIeReplay, at)
	f.Title = fmt.Sprintf("PCIe replays rising on %s", g.name())
	f.Evidence = append(f.Evidence, fmt.Sprintf("rate(%s) up to %.0f replays a minute from %s, above DCGM's health limit of %d a minute",
		sourceOf(ev, MetricPCIeReplay), peak, clock(at), MaxPCIeReplaysPerMinute))
	return f, true
}

// memoryEnvelope is a failure per GPU whose framebuffer was at MemoryFullPercent or more when its
// requests failed with a CUDA OOM or its pods' containers restarted for another reason than an
// OOM kill (a crash: most often the CUDA OOM the logs show).
func memoryEnvelope(ev *Evidence, gpus []*gpu, requests []request) []Failure {
	var out []Failure
	terms := scopedTerminations(ev, gpus)
	for _, g := range gpus {
		if len(g.series[MetricFramebufferUsed]) == 0 {
			continue
		}
		var first time.Time
		peak, count := 0.0, 0
		var evidence []string
		var traces []string
		note := func(at time.Time) bool {
			fb := g.at(MetricFramebufferUsed, at)
			if math.IsNaN(fb) || fb < MemoryFullPercent {
				return false
			}
			peak = max(peak, fb)
			count++
			if first.IsZero() || at.Before(first) {
				first = at
			}
			return true
		}
		ooms := 0
		for _, r := range requests {
			if r.gpu == g && (r.Class == models.ClassCUDAOOM || r.Class == models.ClassCUDAOOMLoad) && note(r.At) {
				ooms++
				traces = append(traces, r.TraceID)
			}
		}
		if ooms > 0 {
			evidence = append(evidence, fmt.Sprintf("%d request%s failed with a CUDA OOM on it while it was full", ooms, plural(ooms)))
		}
		restarts := map[string]int{}
		var pods []string
		for _, t := range terms {
			if t.Reason == ReasonOOMKilled || !g.runsPod(t.Namespace, t.Pod) || !note(t.At) {
				continue
			}
			p := qualified(t.Namespace, t.Pod) + " container " + t.Container + " (reason " + orUnknown(t.Reason) + ")"
			if restarts[p] == 0 {
				pods = append(pods, p)
			}
			restarts[p] += max(t.Restarts, 1)
		}
		for _, p := range pods {
			evidence = append(evidence, fmt.Sprintf("%s restarted %d time%s while it was full (kube_pod_container_status_restarts_total)", p, restarts[p], plural(restarts[p])))
		}
		if count == 0 {
			continue
		}
		f := g.failure(models.ClassMemoryEnvelope, first)
		f.Title = fmt.Sprintf("%s: %s at %s of its framebuffer", f.Runbook.Title, g.name(), pct(peak))
		f.Count = count
		f.TraceIDs = traces
		f.Evidence = append([]string{fmt.Sprintf("framebuffer used up to %s (%s; the limit is %d%%) at the failures", pct(peak), sourceOf(ev, MetricFramebufferUsed), MemoryFullPercent)}, evidence...)
		out = append(out, f)
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// bytes writes a memory size in binary units.
func bytes(b float64) string {
	const gib, mib = 1 << 30, 1 << 20
	if b >= gib {
		return fmt.Sprintf("%.1f GiB", b/gib)
	}
	return fmt.Sprintf("%.0f MiB", b/mib)
}
