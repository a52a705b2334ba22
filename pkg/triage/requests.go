package triage

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// request is a failed request with what the triage needs beyond its row.
type request struct {
	Request
	gpu       *gpu
	span      models.Span // the span that reports the failure
	model     string      // model[:version] the spans name
	container string
	source    string // where the error text came from
}

// failedRequests finds, in each failed trace, the span that reports the failure (a CUDA OOM
// first, a span with an exception next, the deepest last), classifies it and maps it to its GPU.
// Failures that are not CUDA OOM are kept only when their GPU failed (see gpuHealth): they are
// that failure's requests. The scope drops requests outside it.
func failedRequests(ev *Evidence, gpus []*gpu) []request {
	var out []request
	for _, t := range ev.FailedTraces {
		r, ok := describe(t, ev.Join)
		if !ok || !inScope(r, ev.Scope) {
			continue
		}
		r.gpu = requestGPU(r, t, ev.Join, gpus)
		if r.gpu != nil {
			r.GPU = r.gpu.index
			if r.Host == "" {
				r.Host = r.gpu.host
			}
			r.FramebufferUsed = r.gpu.at(MetricFramebufferUsed, r.At)
			if len(ev.Scope.GPUs) > 0 && !slices.ContainsFunc(ev.Scope.GPUs, r.gpu.id.Matches) {
				continue
			}
		} else if len(ev.Scope.GPUs) > 0 {
			continue
		}
		out = append(out, r)
	}
	return out
}

// describe finds the failure of a trace and classifies it; ok is false when no span failed.
func describe(t *models.Trace, j models.SpanMatch) (request, bool) {
	best, bestRank := -1, -1
	idx := spanIndex(t)
	parent := func(i int) int { return parentOf(t, idx, i) }
	depth := depths(t, parent)
	for i, s := range t.Spans {
		typ, msg, exc := s.Exception()
		if !s.Failed() && !exc {
			continue
		}
		rank := depth[i]
		if exc {
			rank += 1 << 20
		}
		if IsCUDAOOM(typ, msg+" "+s.StatusMessage) {
			rank += 1 << 30
		}
		if rank > bestRank {
			best, bestRank = i, rank
		}
	}
	if best < 0 {
		return request{}, false
	}
	s := t.Spans[best]
	typ, msg, exc := s.Exception()
	r := request{span: s, Request: Request{TraceID: t.TraceID, Service: s.Service, Operation: s.Operation, FramebufferUsed: math.NaN()}}
	r.At = s.Start.Add(s.Duration)
	if exc {
		if at, ok := s.Event(models.ExceptionEvent); ok {
			r.At = at
		}
		r.Error = strings.Join(nonEmpty(typ, msg), ": ")
		r.source = "the span's exception event"
	}
	if r.Error == "" {
		r.Error, r.source = s.StatusMessage, "the span's status message"
	}
	if r.Error == "" {
		r.Error, r.source = "span status ERROR, no message", "the span's status"
	}
	if IsCUDAOOM(typ, msg+" "+s.StatusMessage) {
		r.Class = models.ClassCUDAOOM
		// At load when the failing span, or an ancestor in its service, loads a model: a caller's
		// span elsewhere (a gateway's "POST /models/load") says what it asked, not what failed.
		for i, n := best, 0; i >= 0 && n <= len(t.Spans) && t.Spans[i].Service == s.Service; i, n = parent(i), n+1 {
			if IsModelLoad(t.Spans[i].Operation) {
				r.Class = models.ClassCUDAOOMLoad
				break
			}
		}
	}
	// The pod, host and model: the failing span's, or its ancestors' in the same service.
	for i, n := best, 0; i >= 0 && n <= len(t.Spans); i, n = parent(i), n+1 {
		a := t.Spans[i]
		if a.Service != s.Service {
			break
		}
		r.Pod = cmp.Or(r.Pod, a.Resource[attrPod], a.Attributes[attrPod])
		r.Namespace = cmp.Or(r.Namespace, a.Resource[attrNamespace], a.Attributes[attrNamespace])
		r.container = cmp.Or(r.container, a.Resource[attrContainer], a.Attributes[attrContainer])
		if h := cmp.Or(a.Resource[j.HostAttribute], a.Attributes[j.HostAttribute]); h != "" && r.Host == "" {
			r.Host = j.MapHost(h)
		}
		if r.model == "" {
			r.model = firstAttribute(a, modelAttributes)
			if v := firstAttribute(a, versionAttributes); r.model != "" && v != "" {
				r.model += " version " + v
			}
		}
	}
	return r, true
}

// requestGPU is the GPU the failing span ran on: the one its service's spans name (gpu.index or a
// UUID), else the one whose series name its pod, else its host's only GPU.
func requestGPU(r request, t *models.Trace, j models.SpanMatch, gpus []*gpu) *gpu {
	var named []string
	for _, s := range t.Spans {
		if s.Service != r.Service {
			continue
		}
		for v := range strings.SplitSeq(s.Attributes[j.GPUAttribute], ",") {
			if v = strings.TrimSpace(v); v != "" && !slices.Contains(named, v) {
				named = append(named, v)
			}
		}
	}
	// The failing span's own attribute first.
	if v := strings.TrimSpace(r.span.Attributes[j.GPUAttribute]); v != "" && !strings.Contains(v, ",") {
		named = append([]string{v}, named...)
	}
	for _, v := range named {
		for _, g := range gpus {
			if (r.Host == "" || g.host == r.Host) && g.id.Matches(v) {
				return g
			}
		}
	}
	if r.Pod != "" {
		for _, g := range gpus {
			if g.runsPod(r.Namespace, r.Pod) {
				return g
			}
		}
	}
	var onHost []*gpu
	for _, g := range gpus {
		if r.Host != "" && g.host == r.Host {
			onHost = append(onHost, g)
		}
	}
	if len(onHost) == 1 {
		return onHost[0]
	}
	return nil
}

// inScope applies the query's hosts, pods and namespaces to a request.
func inScope(r request, f models.GPUFilter) bool {
	return (len(f.Hosts) == 0 || slices.Contains(f.Hosts, r.Host)) &&
		(len(f.Pods) == 0 || slices.Contains(f.Pods, r.Pod)) &&
		(len(f.Namespaces) == 0 || slices.Contains(f.Namespaces, r.Namespace))
}

// cudaOOMs groups the CUDA OOM requests by class, service, operation and GPU: one failure each,
// dated by its newest request.
func cudaOOMs(requests []request, gpus []*gpu) []Failure {
	type key struct{ class, service, op, gpu, host string }
	groups := map[key][]request{}
	var order []key
	for _, r := range requests {
		if r.Class != models.ClassCUDAOOM && r.Class != models.ClassCUDAOOMLoad {
			continue
		}
		k := key{r.Class, r.Service, r.Operation, "", r.Host}
		if r.gpu != nil {
			k.gpu = r.gpu.key
		}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	var out []Failure
	for _, k := range order {
		rs := groups[k]
		slices.SortFunc(rs, func(a, b request) int { return b.At.Compare(a.At) })
		newest := rs[0]
		f := Failure{At: newest.At, Class: k.class, Runbook: RunbookOf(k.class), Service: k.service, Operation: k.op, Count: len(rs),
			Host: newest.Host, Pod: newest.Pod, Namespace: newest.Namespace, Container: newest.container}
		for _, r := range rs {
			f.TraceIDs = append(f.TraceIDs, r.TraceID)
		}
		f.Title = fmt.Sprintf("%s in %s (%s)", f.Runbook.Title, k.service, k.op)
		f.Evidence = append(f.Evidence, fmt.Sprintf("%d request%s failed in %s %s with %q (%s), the last at %s",
			len(rs), plural(len(rs)), k.service, k.op, clip(newest.Error, 200), newest.source, clock(newest.At)))
		if g := newest.gpu; g != nil {
			f.GPU, f.UUID, f.MIG, f.Host = g.index, g.uuid, g.mig, g.host
			if fb := newest.FramebufferUsed; !math.IsNaN(fb) {
				f.Evidence = append(f.Evidence, fmt.Sprintf("%s had %s of its framebuffer in use then (%s)", g.name(), pct(fb), "DCGM framebuffer used over used + free"))
			} else {
				f.Evidence = append(f.Evidence, g.name()+" has no framebuffer reading then")
			}
		}
		if k.class == models.ClassCUDAOOMLoad {
			f.Evidence = append(f.Evidence, "the failing span, or one of its ancestors, loads a model ("+k.op+"): the weights did not fit beside what the GPU held")
		}
		f.Chain = newest.gpu.chain(Chain{Request: newest.TraceID, Model: newest.model, Pod: qualified(newest.Namespace, newest.Pod), Container: newest.container, Node: newest.Host})
		out = append(out, f)
	}
	return out
}

// depths is each span's number of ancestors (bounded: a cycle of parent IDs ends it).
func depths(t *models.Trace, parent func(int) int) []int {
	d := make([]int, len(t.Spans))
	for i := range t.Spans {
		n := 0
		for p := parent(i); p >= 0 && n <= len(t.Spans); p = parent(p) {
			n++
		}
		d[i] = n
	}
	return d
}

func spanIndex(t *models.Trace) map[string]int {
	idx := make(map[string]int, len(t.Spans))
	for i, s := range t.Spans {
		idx[s.SpanID] = i
	}
	return idx
}

// parentOf is the index of span i's parent; -1 for a root, a missing parent or a span that is
// its own parent.
func parentOf(t *models.Trace, idx map[string]int, i int) int {
	p := t.Spans[i].ParentSpanID
	if j, ok := idx[p]; ok && p != "" && j != i {
		return j
	}
	return -1
}

func firstAttribute(s models.Span, names []string) string {
	for _, n := range names {
		if v := cmp.Or(s.Attributes[n], s.Resource[n]); v != "" {
			return v
		}
	}
	return ""
}

func nonEmpty(xs ...string) []string {
	var out []string
	for _, x := range xs {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// within reports whether t falls in [from, to].
func within(t, from, to time.Time) bool { return !t.Before(from) && !t.After(to) }
