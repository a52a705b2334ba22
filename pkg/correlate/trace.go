package correlate

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// SpanProfiles are span profiles keyed by the span's pyroscope.profile.id. A key is present when
// its span was asked for and the call succeeded; its tree is empty when the span had no samples.
type SpanProfiles map[string]*flamegraph.Node

// HasSamples reports whether any span of p has samples: only then does an empty span profile
// mean "no CPU spent" rather than "this profile type carries no span labels" (Go's heap
// profiles never do).
func (p SpanProfiles) HasSamples() bool {
	for _, t := range p {
		if !t.Empty() {
			return true
		}
	}
	return false
}

// SpanRow is one span of the trace table: what the span did, what its own profile says, and what
// the GPUs of its host were doing meanwhile.
type SpanRow struct {
	Span  *models.Span // in the trace's spans, not a copy: a row per span of a 2,000-span request
	Depth int          // 0 for a root; rows come depth first, children by start
	// Self is the span's duration minus the union of its children's time inside it.
	Self time.Duration
	// ProfileID is the span's pyroscope.profile.id ("" when the span has no profile of its own).
	ProfileID string
	// CPU and Alloc are the totals of the span's own profiles; nil when the span has none (not
	// profiled, its query failed, or the profile type carries no span labels), never a made-up 0.
	CPU, Alloc *int64
	// HotFunction is the function with the largest self value in the span's CPU profile.
	HotFunction string
	HotSelf     int64
	// OwnFunction is the deepest frame of the service's own code on the hot function's heaviest
	// path (flamegraph.OwnFunction): where to change the code when the hot function is a runtime
	// or library frame; the hot function itself when it is own code, "" when no frame is.
	OwnFunction string
	// Host is the span's host as DCGM labels it ("" when the span names none).
	Host string
	// GPUs are the GPUs the span's service names (attribute JoinSettings.GPUAttribute, matched by
	// classify.GPU.Matches); nil means every GPU of the host.
	GPUs []string
	// GPU holds the GPU figures over the span's window; nil when there are none (no host, no
	// DCGM series for it, or Prometheus not asked).
	GPU *GPUWindow
	// GPUKernelTime is the GPU kernel time (ns) the request's kernel traces attribute to the span
	// (AttributeKernels); nil when no kernel trace names it.
	GPUKernelTime *int64
	// GPUIdle splits the GPU idle time of the request's kernel traces that belongs to the span
	// (attributed as GPUKernelTime is) by what the GPU waited for; nil when no kernel trace
	// names it.
	GPUIdle *gputrace.IdleMechanisms
	// Container is what cAdvisor said of the CPU of the span's container around the trace's
	// profiled spans in it (CFS throttling, usage, quota); nil when it was not read or
	// Prometheus holds no series for it.
	Container *models.ContainerCPU
	// Engine is what a serving engine's metrics said around the span, when the span is one an
	// engine recorded (its preemptions, KV cache, time per output token); nil otherwise.
	Engine *models.EngineFigures
	// Tenants are the other processes NVML lists on the span's GPUs, for a span whose kernels
	// queued behind other work and that ran on the plugin's own host; nil otherwise.
	Tenants *LocalTenants
}

// GPUWindow is what the span's GPUs did over its window.
type GPUWindow struct {
	// GPUs lists the GPUs whose samples were used, in classify.GPU's order: each MIG instance on
	// its own.
	GPUs []classify.GPU
	// Class is the dominant class over the window and ClassShare its share of the samples (0..1).
	Class      classify.Class
	ClassShare float64
	// Evidence says why: the figures and thresholds behind the class at one of its readings.
	Evidence []string
	// Util is the mean GPU utilisation in percent (DCGM_FI_DEV_GPU_UTIL, else the graphics
	// engine's or SMs' activity), MemActivity the mean share of time device memory was busy in
	// percent (DRAM_ACTIVE, else MEM_COPY_UTIL), PCIe the mean PCIe traffic in bytes per second
	// (TX + RX). NaN when no GPU reported the figure.
	Util, MemActivity, PCIe float64
	// FBUsed is the most framebuffer any of the GPUs had in use over the window and FBFree the
	// least it had free, MiB (NaN when DCGM sends neither): what a CUDA out-of-memory met.
	FBUsed, FBFree float64
	// Samples counts the readings used; From and To bound them.
	Samples  int
	From, To time.Time
	// ByPod is true when the span was joined to the GPUs dcgm-exporter maps to its own pod
	// (PodAttribute) rather than to every GPU of its host.
	ByPod bool
	// SharedWith are the other pods dcgm-exporter maps these GPUs to over the range (a GPU
	// time-sliced between pods, or handed from one to another): the figures are the whole
	// GPU's, their work included.
	SharedWith []classify.Pod
}

// OpenTelemetry's resource attributes naming a span's Kubernetes pod: where dcgm-exporter maps
// GPUs to pods, a span meets its own pod's GPUs.
const (
	PodAttribute       = "k8s.pod.name"
	NamespaceAttribute = "k8s.namespace.name"
)

// spanPod is the span's pod from its resource (or its own attributes); empty Name when none.
func spanPod(s models.Span) classify.Pod {
	attr := func(name string) string { return cmp.Or(s.Resource[name], s.Attributes[name]) }
	return classify.Pod{Namespace: attr(NamespaceAttribute), Name: attr(PodAttribute)}
}

// runsIn says whether the GPU's pods include pod (a namespace either side does not know matches).
func runsIn(pods []classify.Pod, pod classify.Pod) bool {
	return slices.ContainsFunc(pods, func(p classify.Pod) bool {
		return p.Name == pod.Name && (p.Namespace == "" || pod.Namespace == "" || p.Namespace == pod.Namespace)
	})
}

// ClassifyFunc names the dominant class of a span's GPU samples, its share (0..1) and the
// evidence for it. The plugin passes the classifier with the data source's thresholds; tests
// pass their own.
type ClassifyFunc func(series []classify.GPUSeries) (class classify.Class, share float64, evidence []string)

// TraceJoin is what the trace query knows once its upstream calls are back.
type TraceJoin struct {
	Trace *models.Trace
	// Tree is the trace's tree (models.NewSpanTree), worked out here when nil.
	Tree *models.SpanTree
	// CPU and Alloc are the span profiles of the CPU and allocation types; nil when Pyroscope
	// could not say (its notices tell why).
	CPU, Alloc SpanProfiles
	// GPUSeries are the DCGM series of the trace's hosts around it, at step GPUStep; GPUsKnown is
	// false when Prometheus was not asked or failed, so the GPU cells stay empty.
	GPUSeries []classify.GPUSeries
	GPUStep   time.Duration
	GPUsKnown bool
	Classify  ClassifyFunc
	Join      models.SpanMatch
}

// JoinTrace builds one row per span, depth first. Pure: the caller fetched everything.
func JoinTrace(in TraceJoin) []SpanRow {
	if in.Trace == nil {
		return nil
	}
	spans := in.Trace.Spans
	tree := in.Tree
	if tree == nil {
		tree = models.NewSpanTree(spans)
	}
	var roots []int
	for i := range spans {
		if !tree.HasParent(&spans[i]) {
			// A span whose parent is missing (still arriving, or in another trace) is shown as a
			// root rather than dropped.
			roots = append(roots, i)
		}
	}
	byStart := func(a, b int) int {
		return cmp.Or(spans[a].Start.Compare(spans[b].Start), cmp.Compare(spans[a].SpanID, spans[b].SpanID))
	}
	slices.SortStableFunc(roots, byStart)
	children := tree.Sorted(byStart)
	gpus := ServiceGPUs(in.Trace, in.Join)
	cpuUsable, allocUsable := in.CPU.HasSamples(), in.Alloc.HasSamples()

	rows := make([]SpanRow, 0, len(spans))
	visited := make([]bool, len(spans))
	var visit func(i, depth int)
	visit = func(i, depth int) {
		if visited[i] { // a cycle of parent IDs: each span once
			return
		}
		visited[i] = true
		s := &spans[i]
		row := SpanRow{Span: s, Depth: depth}
		row.ProfileID, _ = s.ProfileID()
		row.Self = selfTime(s, spans, children.Children(s.SpanID))
		if row.ProfileID != "" {
			if t, ok := in.CPU[row.ProfileID]; ok && cpuUsable {
				row.CPU = total(t)
				row.HotFunction, row.HotSelf = HotFunction(t)
				row.OwnFunction, _ = flamegraph.OwnFunction(t, row.HotFunction)
			}
			if t, ok := in.Alloc[row.ProfileID]; ok && allocUsable {
				row.Alloc = total(t)
			}
		}
		row.Host = SpanHost(*s, in.Join)
		row.GPUs = gpus[ServiceHost{s.Service, row.Host}]
		if in.GPUsKnown && row.Host != "" {
			row.GPU = spanGPUWindow(*s, row.Host, row.GPUs, in.GPUSeries, in.GPUStep, in.Classify)
		}
		rows = append(rows, row)
		for _, c := range children.Children(s.SpanID) {
			visit(c, depth+1)
		}
	}
	for _, r := range roots {
		visit(r, 0)
	}
	for i := range spans { // spans only reachable through a cycle
		if !visited[i] {
			visit(i, 0)
		}
	}
	return rows
}

func total(t *flamegraph.Node) *int64 {
	v := int64(0)
	if t != nil {
		v = t.Total
	}
	return &v
}

// selfTime is the span's duration minus the union of its children's intervals (children:
// indexes into spans), each clipped to the span: overlapping children (parallel calls) count
// once, and a child outliving its parent (an async call) counts only inside it.
func selfTime(s *models.Span, spans []models.Span, children []int) time.Duration {
	start := s.Start.UnixNano()
	end := start + int64(s.Duration)
	// Children's intervals clipped to the span, in nanoseconds; most spans have a few children,
	// which fit the array on the stack (one slice per span was a large request's many small
	// allocations).
	type iv struct{ a, b int64 }
	var buf [16]iv
	ivs := buf[:0]
	for _, ci := range children {
		c := &spans[ci]
		a := max(c.Start.UnixNano(), start)
		b := min(c.Start.UnixNano()+int64(c.Duration), end)
		if b > a {
			ivs = append(ivs, iv{a, b})
		}
	}
	slices.SortFunc(ivs, func(x, y iv) int { return cmp.Compare(x.a, y.a) })
	var covered int64
	var cur iv
	for i, v := range ivs {
		switch {
		case i == 0:
			cur = v
		case v.a <= cur.b:
			cur.b = max(cur.b, v.b)
		default:
			covered += cur.b - cur.a
			cur = v
		}
	}
	if len(ivs) > 0 {
		covered += cur.b - cur.a
	}
	return max(s.Duration-time.Duration(covered), 0)
}

// HotFunction is the function with the largest self value in t (summed over every call path),
// ties broken by name; "" for an empty profile.
func HotFunction(t *flamegraph.Node) (string, int64) {
	if t.Empty() {
		return "", 0
	}
	best, bestSelf := "", int64(0)
	for name, v := range t.ByFunction() {
		if v.Self > bestSelf || v.Self == bestSelf && v.Self > 0 && name < best {
			best, bestSelf = name, v.Self
		}
	}
	return best, bestSelf
}

// SpanHost is the DCGM host of a span: its resource attribute JoinSettings.HostAttribute (or a span
// attribute of that name), mapped through JoinSettings.HostMap; "" when the span names none.
func SpanHost(s models.Span, j models.SpanMatch) string {
	h := s.Resource[j.HostAttribute]
	if h == "" {
		h = s.Attributes[j.HostAttribute]
	}
	if h == "" {
		return ""
	}
	return j.MapHost(h)
}

// TraceHosts lists the DCGM hosts of the trace's spans, sorted.
func TraceHosts(t *models.Trace, j models.SpanMatch) []string {
	var out []string
	for _, s := range t.Spans {
		if h := SpanHost(s, j); h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}

// TraceWindow is the time the trace's spans cover.
func TraceWindow(t *models.Trace) (start, end time.Time) {
	for _, s := range t.Spans {
		if start.IsZero() || s.Start.Before(start) {
			start = s.Start
		}
		if e := s.Start.Add(s.Duration); e.After(end) {
			end = e
		}
	}
	return start, end
}

// ServiceHost is a service on one host.
type ServiceHost struct{ Service, Host string }

// ServiceGPUs lists, per service and host, the GPUs its spans name in JoinSettings.GPUAttribute
// (an index, a UUID or a MIG device name, see classify.GPU.Matches; several separated by
// commas). Services usually set it on the span that runs the model, not on their local root:
// every span of the service on that host is joined to those GPUs. Services that name none are
// absent (every GPU of the host).
func ServiceGPUs(t *models.Trace, j models.SpanMatch) map[ServiceHost][]string {
	out := map[ServiceHost][]string{}
	for _, s := range t.Spans {
		v := s.Attributes[j.GPUAttribute]
		if v == "" {
			continue
		}
		k := ServiceHost{s.Service, SpanHost(s, j)}
		for g := range strings.SplitSeq(v, ",") {
			if g = strings.TrimSpace(g); g != "" && !slices.Contains(out[k], g) {
				out[k] = append(out[k], g)
			}
		}
	}
	for k := range out {
		slices.Sort(out[k])
	}
	return out
}

// spanGPUWindow cuts the span's GPUs' series to its window and summarises them. The window runs
// from the span's start to one step after its end: a range query's point at t holds the latest
// scrape at or before t, so the first point after the span is the first reading that can include
// it, and a span shorter than a step still gets one reading.
func spanGPUWindow(s models.Span, host string, gpus []string, series []classify.GPUSeries, step time.Duration, classifyFn ClassifyFunc) *GPUWindow {
	from, to := s.Start, s.Start.Add(s.Duration).Add(step)
	var cut []classify.GPUSeries
	// A value until the span is known to meet a GPU: most spans of a large request do not.
	var w GPUWindow
	// A span naming no GPU meets its own pod's GPUs when the exporter maps some GPU of its host
	// to that pod; else every GPU of the host.
	pod := spanPod(s)
	if gpus == nil && pod.Name != "" {
		w.ByPod = slices.ContainsFunc(series, func(sr classify.GPUSeries) bool { return sr.GPU.Host == host && runsIn(sr.Pods, pod) })
	}
	var util, mem, pcie mean
	fbUsed, fbFree := math.NaN(), math.NaN()
	for _, sr := range series {
		if sr.GPU.Host != host || gpus != nil && !slices.ContainsFunc(gpus, sr.GPU.Matches) || w.ByPod && !runsIn(sr.Pods, pod) {
			continue
		}
		part := classify.GPUSeries{GPU: sr.GPU, Samples: window(sr.Samples, from, to)}
		for _, smp := range part.Samples {
			f := smp.Figures
			util.add(first(f.GPUUtil, f.GrEngine*100, f.SMActive*100))
			mem.add(first(f.DRAMActive*100, f.MemCopyUtil))
			pcie.add(nanSum(f.PCIeTx, f.PCIeRx))
			if !math.IsNaN(f.FBUsed) && (math.IsNaN(fbUsed) || f.FBUsed > fbUsed) {
				fbUsed = f.FBUsed
			}
			if !math.IsNaN(f.FBFree) && (math.IsNaN(fbFree) || f.FBFree < fbFree) {
				fbFree = f.FBFree
			}
			if w.From.IsZero() || smp.Time.Before(w.From) {
				w.From = smp.Time
			}
			if smp.Time.After(w.To) {
				w.To = smp.Time
			}
		}
		if len(part.Samples) > 0 {
			cut = append(cut, part)
			w.GPUs = append(w.GPUs, sr.GPU)
			w.Samples += len(part.Samples)
			if len(sr.Pods) > 1 {
				for _, p := range sr.Pods {
					if !runsIn([]classify.Pod{p}, pod) && !slices.Contains(w.SharedWith, p) {
						w.SharedWith = append(w.SharedWith, p)
					}
				}
			}
		}
	}
	if len(cut) == 0 {
		return nil
	}
	slices.SortFunc(w.GPUs, classify.GPU.Compare)
	w.Util, w.MemActivity, w.PCIe = util.value(), mem.value(), pcie.value()
	w.FBUsed, w.FBFree = fbUsed, fbFree
	w.Class, w.ClassShare = classify.NoData, 0
	if classifyFn != nil {
		w.Class, w.ClassShare, w.Evidence = classifyFn(cut)
	}
	out := new(GPUWindow)
	*out = w
	return out
}

// window is the samples in [from, to): a part of samples where they are in time order, as a
// GPU series' are (no copy: a large request's spans each took one of their GPUs' samples), else
// a copy of those in it.
func window(samples []classify.Sample, from, to time.Time) []classify.Sample {
	in := func(smp classify.Sample) bool { return !smp.Time.Before(from) && smp.Time.Before(to) }
	first := slices.IndexFunc(samples, in)
	if first < 0 {
		return nil
	}
	end := first
	for end < len(samples) && in(samples[end]) {
		end++
	}
	if !slices.ContainsFunc(samples[end:], in) {
		return samples[first:end:end]
	}
	var out []classify.Sample
	for _, smp := range samples[first:] {
		if in(smp) {
			out = append(out, smp)
		}
	}
	return out
}

// mean averages the readings that are there (not NaN).
type mean struct {
	sum float64
	n   int
}

func (m *mean) add(v float64) {
	if !math.IsNaN(v) {
		m.sum += v
		m.n++
	}
}

func (m mean) value() float64 {
	if m.n == 0 {
		return math.NaN()
	}
	return m.sum / float64(m.n)
}

// first is the first reading that is there.
func first(vs ...float64) float64 {
	for _, v := range vs {
		if !math.IsNaN(v) {
			return v
		}
	}
	return math.NaN()
}

// nanSum adds the readings that are there; NaN when none is.
func nanSum(a, b float64) float64 {
	switch {
	case math.IsNaN(a):
		return b
	case math.IsNaN(b):
		return a
	}
	return a + b
}
