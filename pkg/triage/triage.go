package triage

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// The GPU health series the triage reads, by catalogue name (pkg/dcgm).
const (
	MetricXID             = "xid_errors"
	MetricECCDBE          = "ecc_dbe"
	MetricRemapFailure    = "row_remap_failure"
	MetricRemappedUncorr  = "remapped_rows_uncorrectable"
	MetricPCIeReplay      = "pcie_replay"
	MetricFramebufferUsed = "fb_used_percent"
)

// GPUMetrics are the catalogue metrics the triage asks the GPU store for.
var GPUMetrics = []string{MetricXID, MetricECCDBE, MetricRemapFailure, MetricRemappedUncorr, MetricPCIeReplay, MetricFramebufferUsed}

// MemoryFullPercent is the framebuffer share above which a GPU is at its memory envelope: the
// symptom alerts' hsi:threshold:gpu_memory_used_percent default.
const MemoryFullPercent = 90

// MaxPCIeReplaysPerMinute is DCGM's health-check limit (DCGM_LIMIT_MAX_PCIREPLAY_RATE, "8 replays
// per minute is the maximum recommended"): above it the link is failing, not merely noisy.
const MaxPCIeReplaysPerMinute = 8

// Read is how one signal was read: Err when its store failed, Missing when the store holds none
// of it (and Detail what would add it), otherwise Detail says what was read.
type Read struct {
	Err     error
	Missing bool
	Detail  string
}

// Evidence is what the stores answered for the range and scope.
type Evidence struct {
	Start, End time.Time
	// Terminations are kube-state-metrics' container restarts of the range, with the reason of
	// each one's last termination; Kube says how they were read.
	Terminations []models.ContainerTermination
	Kube         Read
	// FailedTraces are the traces of the range with a failed span, every span of each; Traces
	// says how they were searched.
	FailedTraces []*models.Trace
	Traces       Read
	// GPU holds the GPU store's answer per metric of GPUMetrics, one series per GPU (and per pod
	// sharing it); GPUErr is why there is none.
	GPU    map[string]*models.GPUMetricResult
	GPUErr error
	// GPUFailed is why a metric of GPU could not be read, while others were.
	GPUFailed map[string]error
	// Join maps spans to hosts and GPUs, as the trace join does.
	Join models.SpanMatch
	// Scope is the query's filter, applied to the spans and terminations the stores cannot filter.
	Scope models.GPUFilter
}

// Failure is one failure of the range: its class, where, when, and why the class was chosen.
type Failure struct {
	At    time.Time
	Class string // models.Class*
	Title string
	// Where: the GPU (host, index, UUID, MIG), the pod, the service.
	Host, GPU, UUID, MIG, Pod, Namespace, Container, Service, Operation string
	// SharedWith are the other pods ("namespace/pod") the failure's GPU series name: a GPU
	// time-sliced or shared between pods, whose failure hits each of them and whose memory they
	// all fill.
	SharedWith []string
	// Count is how many times it happened in the range (requests, restarts, errors).
	Count    int
	Evidence []string
	Runbook  Runbook
	Chain    Chain
	// TraceIDs are the failed requests, newest first.
	TraceIDs []string
}

// Request is one failed request of the range.
type Request struct {
	At                                 time.Time
	TraceID, Service, Operation, Class string
	Error                              string
	Pod, Namespace, Host, GPU          string
	// FramebufferUsed is the GPU's framebuffer share (%) at the failure; NaN when unknown.
	FramebufferUsed float64
}

// Signal says whether one signal a class reads was there.
type Signal struct {
	Class, Signal, Status, Detail string
}

// Signal statuses.
const (
	SignalPresent = "present"
	SignalMissing = "missing"
	SignalFailed  = "failed"
)

// Answer is the triage of a range.
type Answer struct {
	Failures []Failure // newest first
	Requests []Request // newest first
	Signals  []Signal
	Notices  notices.List
}

// Triage classifies the evidence's failures. classes limits the classes kept (empty: all).
func Triage(ev *Evidence, classes []string) *Answer {
	want := func(c string) bool { return len(classes) == 0 || slices.Contains(classes, c) }
	gpus := gpusOf(ev)
	ans := &Answer{}
	requests := failedRequests(ev, gpus)
	// Newest first, so that each failure's traces are too (its link opens the latest).
	slices.SortStableFunc(requests, func(a, b request) int { return cmp.Or(b.At.Compare(a.At), cmp.Compare(a.TraceID, b.TraceID)) })
	var failures []Failure
	failures = append(failures, containerOOMs(ev, gpus)...)
	failures = append(failures, cudaOOMs(requests, gpus)...)
	health := gpuHealth(ev, gpus)
	requests = attribute(requests, health, &ans.Notices)
	failures = append(failures, health...)
	failures = append(failures, memoryEnvelope(ev, gpus, requests)...)
	shared(failures, gpus)
	for _, f := range failures {
		if want(f.Class) {
			ans.Failures = append(ans.Failures, f)
		}
	}
	for _, r := range requests {
		if want(r.Class) {
			ans.Requests = append(ans.Requests, r.Request)
		}
	}
	slices.SortStableFunc(ans.Failures, func(a, b Failure) int {
		return cmp.Or(b.At.Compare(a.At), cmp.Compare(a.Class, b.Class), cmp.Compare(a.Host, b.Host), cmp.Compare(a.GPU, b.GPU), cmp.Compare(a.Pod, b.Pod))
	})
	ans.Signals = signals(ev, gpus, requests)
	for _, s := range ans.Signals {
		if !want(s.Class) {
			continue
		}
		switch s.Status {
		case SignalFailed:
			ans.Notices.Warnf("%s: %s could not be read, so this class may miss failures: %s", RunbookOf(s.Class).Title, s.Signal, s.Detail)
		case SignalMissing:
			if rb, ok := runbooks[s.Class]; ok {
				ans.Notices.Infof("%s cannot be seen: %s", rb.Title, s.Detail)
			}
		}
	}
	return ans
}

// attribute gives the failed requests that are not a CUDA OOM to the hardware failure of their
// GPU that came before them (XID, ECC, row remap; the latest such), adding them to its count and
// traces; the others are not GPU failures and are left out, which a notice says.
func attribute(requests []request, health []Failure, notes *notices.List) []request {
	var out []request
	other := 0
	for _, r := range requests {
		if r.Class != "" {
			out = append(out, r)
			continue
		}
		best := -1
		for i, f := range health {
			if r.gpu == nil || f.Host != r.gpu.host || f.GPU != r.gpu.index || f.UUID != r.gpu.uuid || f.MIG != r.gpu.mig ||
				f.Class == models.ClassPCIeReplay || f.At.After(r.At) {
				continue
			}
			if best < 0 || f.At.After(health[best].At) {
				best = i
			}
		}
		if best < 0 {
			other++
			continue
		}
		f := &health[best]
		r.Class = f.Class
		f.TraceIDs = append(f.TraceIDs, r.TraceID)
		out = append(out, r)
	}
	for i := range health {
		if n := len(health[i].TraceIDs); n > 0 {
			health[i].Evidence = append(health[i].Evidence, fmt.Sprintf("%d request%s on this GPU failed after it", n, plural(n)))
		}
	}
	if other > 0 {
		notes.Infof("%d other failed request%s of the range %s no CUDA OOM and ran on no failing GPU: not GPU incidents, so not listed", other, plural(other), map[bool]string{true: "shows", false: "show"}[other == 1])
	}
	return out
}

// gpu is one GPU as the health series name it, with the pods whose copies of its series were
// seen (time-sliced GPUs) and its figures by metric.
type gpu struct {
	key                           string
	id                            classify.GPU
	host, index, uuid, mig, model string // id's, for short
	driver                        string
	pods                          []podRef
	series                        map[string][]*models.GPUMetricSeries
}

type podRef struct{ namespace, pod, container string }

func gpuKey(l map[string]string) string {
	return l[models.RoleHost] + "\x00" + l[models.RoleGPU] + "\x00" + l[models.RoleUUID] + "\x00" + l[models.RoleMIG]
}

// gpusOf gathers the GPUs of every health series, sorted by host and index.
func gpusOf(ev *Evidence) []*gpu {
	byKey := map[string]*gpu{}
	var out []*gpu
	for _, name := range GPUMetrics {
		res := ev.GPU[name]
		if res == nil {
			continue
		}
		for i := range res.Series {
			s := &res.Series[i]
			l := s.Labels
			k := gpuKey(l)
			g := byKey[k]
			if g == nil {
				id := models.GPUOf(l)
				g = &gpu{key: k, id: id, host: id.Host, index: id.Index, uuid: id.UUID, mig: id.MIG, model: id.Model,
					series: map[string][]*models.GPUMetricSeries{}}
				byKey[k] = g
				out = append(out, g)
			}
			g.driver = cmp.Or(g.driver, l[models.RoleDriver])
			if p := (podRef{l[models.RoleNamespace], l[models.RolePod], l[models.RoleContainer]}); p.pod != "" && !slices.Contains(g.pods, p) {
				g.pods = append(g.pods, p)
			}
			g.series[name] = append(g.series[name], s)
		}
	}
	slices.SortFunc(out, func(a, b *gpu) int { return a.id.Compare(b.id) })
	return out
}

// shared names, on each failure on a GPU whose series name more than one pod, the pods besides
// the failure's own, with what that means for its class.
func shared(failures []Failure, gpus []*gpu) {
	for i := range failures {
		f := &failures[i]
		if f.Host == "" && f.GPU == "" && f.UUID == "" {
			continue
		}
		var g *gpu
		for _, c := range gpus {
			if c.host == f.Host && c.index == f.GPU && c.uuid == f.UUID && c.mig == f.MIG {
				g = c
				break
			}
		}
		if g == nil || len(g.pods) < 2 {
			continue
		}
		for _, p := range g.pods {
			if p.pod == f.Pod && (f.Namespace == "" || p.namespace == "" || p.namespace == f.Namespace) {
				continue
			}
			f.SharedWith = append(f.SharedWith, qualified(p.namespace, p.pod))
		}
		if len(f.SharedWith) == 0 {
			continue
		}
		switch f.Class {
		case models.ClassCUDAOOM, models.ClassCUDAOOMLoad, models.ClassMemoryEnvelope:
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s is shared with %s (dcgm-exporter's pod mapping): their allocations fill the same framebuffer, so check theirs before this pod's", g.name(), strings.Join(f.SharedWith, ", ")))
		case models.ClassContainerOOM:
			// Host memory: the GPU's other tenants are not the cause.
		default:
			f.Evidence = append(f.Evidence, fmt.Sprintf("%s serves %d pods (%s; dcgm-exporter's pod mapping): each of them is hit", g.name(), len(g.pods), g.podNames()))
		}
	}
}

// name is how messages name the GPU: "GPU 0 (MIG 1) of gpu-node-1".
func (g *gpu) name() string {
	s := "GPU " + cmp.Or(g.index, g.uuid, "?")
	if g.mig != "" {
		s += " (MIG " + g.mig + ")"
	}
	if g.host != "" {
		s += " of " + g.host
	}
	return s
}

// runsPod reports whether the GPU's series name the pod (namespace "" matches any).
func (g *gpu) runsPod(namespace, pod string) bool {
	for _, p := range g.pods {
		if p.pod == pod && (namespace == "" || p.namespace == "" || p.namespace == namespace) {
			return true
		}
	}
	return false
}

// at is the GPU's value of a metric at t: the largest of its copies at the last step at or
// before t; NaN when none.
func (g *gpu) at(metric string, t time.Time) float64 {
	v := math.NaN()
	for _, s := range g.series[metric] {
		i, found := slices.BinarySearchFunc(s.Times, t, func(a, b time.Time) int { return a.Compare(b) })
		if !found {
			i--
		}
		if i >= 0 && i < len(s.Values) && (math.IsNaN(v) || s.Values[i] > v) {
			v = s.Values[i]
		}
	}
	return v
}

// failure starts a failure of class c on the GPU, with its chain.
func (g *gpu) failure(c string, at time.Time) Failure {
	f := Failure{At: at, Class: c, Runbook: RunbookOf(c), Host: g.host, GPU: g.index, UUID: g.uuid, MIG: g.mig, Count: 1}
	if len(g.pods) == 1 {
		f.Pod, f.Namespace, f.Container = g.pods[0].pod, g.pods[0].namespace, g.pods[0].container
	}
	f.Chain = g.chain(Chain{})
	return f
}

// podNames lists the pods the GPU's series name, "namespace/pod".
func (g *gpu) podNames() string {
	var out []string
	for _, p := range g.pods {
		out = append(out, qualified(p.namespace, p.pod))
	}
	return strings.Join(out, ", ")
}

func qualified(namespace, pod string) string {
	if namespace == "" || pod == "" {
		return pod
	}
	return namespace + "/" + pod
}

// sourceOf names the series a metric was read from, for the evidence.
func sourceOf(ev *Evidence, metric string) string {
	if r := ev.GPU[metric]; r != nil && len(r.Sources) > 0 {
		return strings.Join(r.Sources, ", ")
	}
	return metric
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05") }

func pct(v float64) string { return fmt.Sprintf("%.0f%%", v) }
