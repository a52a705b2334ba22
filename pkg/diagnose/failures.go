package diagnose

import (
	"cmp"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/triage"
)

// Failure classes, as runbook 002 tells them apart: a CUDA allocation that failed while serving
// (batch, sequence length, KV cache, concurrency), one that failed while loading the model (the
// weights do not fit beside what the GPU already holds), and any other error.
const (
	FailureCUDAOOM     = "CUDA out-of-memory"
	FailureCUDAOOMLoad = "CUDA out-of-memory at model load"
	FailureError       = "error"
)

// attempt is one failed attempt on the request's path: the outermost failed span below the
// request's root (a failed client span and the failed server span under it are one attempt), the
// failure it ended with, and the retry that followed it, if any.
type attempt struct {
	span   int    // the attempt's outermost failed span
	origin int    // the span that reports the failure: the deepest failed span, with an exception if any has one
	class  string // Failure*
	// what says why, in the span's words: "torch.OutOfMemoryError: CUDA out of memory. Tried ..."
	what  string
	retry int // the sibling that repeated the attempt after it ended; -1 when none
}

// failedAttempts finds the failed attempts of the request: attemptOf[i] is the index in
// attempts of the attempt span i belongs to (span i or an ancestor of it is the attempt's span),
// -1 for a span outside any. The root never is an attempt: a request that failed as a whole is
// explained by what it did.
func failedAttempts(t *models.Trace, root int, children [][]int) (attempts []attempt, attemptOf []int) {
	attemptOf = make([]int, len(t.Spans))
	for i := range attemptOf {
		attemptOf[i] = -1
	}
	if root < 0 {
		return nil, attemptOf
	}
	visiting := make([]bool, len(t.Spans))
	var walk func(i, in int)
	walk = func(i, in int) {
		if visiting[i] {
			return // a cycle of parent IDs
		}
		visiting[i] = true
		defer func() { visiting[i] = false }()
		if in < 0 && i != root && t.Spans[i].Failed() {
			in = len(attempts)
			attempts = append(attempts, describeAttempt(t, i, children))
		}
		attemptOf[i] = in
		for _, c := range children[i] {
			walk(c, in)
		}
	}
	walk(root, -1)
	for k := range attempts {
		attempts[k].retry = retryOf(t, attempts[k].span)
	}
	return attempts, attemptOf
}

// describeAttempt finds the span that reports the failure under attempt span a (the deepest
// failed span, preferring one that recorded an exception) and classifies it.
func describeAttempt(t *models.Trace, a int, children [][]int) attempt {
	out := attempt{span: a, origin: a, retry: -1}
	bestDepth, bestException := -1, false
	var visit func(i, depth int)
	visit = func(i, depth int) {
		if depth > len(t.Spans) {
			return
		}
		s := t.Spans[i]
		_, _, exc := s.Exception()
		if s.Failed() || exc {
			if exc && !bestException || exc == bestException && depth > bestDepth {
				out.origin, bestDepth, bestException = i, depth, exc
			}
		}
		for _, c := range children[i] {
			visit(c, depth+1)
		}
	}
	visit(a, 0)
	s := t.Spans[out.origin]
	typ, msg, _ := s.Exception()
	out.what = strings.Join(nonEmpty(typ, msg), ": ")
	if out.what == "" {
		out.what = s.StatusMessage
	}
	if out.what == "" {
		out.what = "span status ERROR, no message"
	}
	out.class = FailureError
	if triage.IsCUDAOOM(typ, msg+" "+s.StatusMessage+" "+t.Spans[a].StatusMessage) {
		out.class = FailureCUDAOOM
		// At load when the failing span, or a span between it and the attempt, is a model load.
		for i := out.origin; i >= 0; i = parentIndex(t, i) {
			if triage.IsModelLoad(t.Spans[i].Operation) {
				out.class = FailureCUDAOOMLoad
			}
			if i == a {
				break
			}
		}
	}
	return out
}

// retryOf is the span that repeated span a: a later sibling (same parent, service and
// operation) that started after a ended, the first such; -1 when none.
func retryOf(t *models.Trace, a int) int {
	f := t.Spans[a]
	best := -1
	for i, s := range t.Spans {
		if i == a || s.ParentSpanID != f.ParentSpanID || f.ParentSpanID == "" || s.Service != f.Service || s.Operation != f.Operation ||
			s.Start.Before(f.Start.Add(f.Duration)) {
			continue
		}
		if best < 0 || s.Start.Before(t.Spans[best].Start) {
			best = i
		}
	}
	return best
}

func parentIndex(t *models.Trace, i int) int {
	p := t.Spans[i].ParentSpanID
	if p == "" || p == t.Spans[i].SpanID {
		return -1
	}
	for j, s := range t.Spans {
		if s.SpanID == p {
			return j
		}
	}
	return -1
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

// attemptCause is the cause of a failed attempt's time on the path: what failed and why, the
// retry and its time, and for a CUDA OOM the framebuffer around the failure and the runbook's fast
// mitigations.
func attemptCause(ans *correlate.TraceAnswer, a attempt, p BreakdownPart) Cause {
	t := ans.Trace
	s, origin := t.Spans[a.span], t.Spans[a.origin]
	where := origin.Service + " (" + origin.Operation + ")"
	c := Cause{Kind: CauseFailed, Service: origin.Service, SpanID: s.SpanID, Explains: p.Duration, Start: s.Start, End: s.Start.Add(s.Duration)}
	switch a.class {
	case FailureCUDAOOM, FailureCUDAOOMLoad:
		c.Title = a.class + " in " + where
	default:
		c.Title = "failed attempt in " + where
	}
	c.Evidence = []string{
		fmt.Sprintf("%s %s failed after %s, %s of it on the critical path (span status ERROR)", s.Service, s.Operation,
			s.Duration.Round(time.Millisecond), p.Duration.Round(time.Millisecond)),
		fmt.Sprintf("%s %s: %s (%s)", origin.Service, origin.Operation, a.what, failureSource(origin)),
	}
	if a.retry >= 0 {
		r := t.Spans[a.retry]
		outcome := "succeeded"
		if r.Failed() {
			outcome = "failed too"
		}
		c.Title += ", retried"
		c.Evidence = append(c.Evidence, fmt.Sprintf("retried: the next %s took %s and %s; the failed attempt's %s were lost",
			r.Operation, r.Duration.Round(time.Millisecond), outcome, s.Duration.Round(time.Millisecond)))
	}
	switch a.class {
	case FailureCUDAOOM:
		c.Action = "CUDA ran out of memory while serving: lower the batch size or max tokens per request, cap concurrency (max_num_seqs), keep the KV cache within its envelope (gpu_memory_utilization, max_model_len), and route large requests to their own pool; a retry with a smaller batch only hides the cost"
	case FailureCUDAOOMLoad:
		c.Action = "the model did not fit while loading: check what else holds the GPU (other processes, a previous model not freed), quantise or shard the model (tensor parallelism), or give it a larger GPU or MIG profile"
	default:
		c.Action = "fix the failure first (the exception and the span's events say why), then bound retries with a deadline so a failing attempt costs less"
	}
	if a.class != FailureError {
		if ev, host, gpu := framebufferEvidence(ans, origin); ev != "" {
			c.Evidence = append(c.Evidence, ev)
			c.Host, c.GPU = host, gpu
		} else {
			c.Caveat = "no framebuffer readings (DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_FB_FREE) for the failing span's GPUs: export them to see how full the GPU was"
		}
	}
	return c
}

// failureSource says where the failure's words come from.
func failureSource(s models.Span) string {
	if _, _, ok := s.Exception(); ok {
		return "the span's exception event"
	}
	return "the span's status message"
}

// framebufferEvidence is the framebuffer of the failing span's GPUs around the failure, from the
// row's GPU window; "" when DCGM gave none.
func framebufferEvidence(ans *correlate.TraceAnswer, s models.Span) (ev, host, gpu string) {
	for _, r := range ans.Rows {
		if r.Span.SpanID != s.SpanID || r.GPU == nil || math.IsNaN(r.GPU.FBUsed) && math.IsNaN(r.GPU.FBFree) {
			continue
		}
		g := r.GPU
		var parts []string
		if !math.IsNaN(g.FBUsed) {
			parts = append(parts, fmt.Sprintf("%.1f GiB used at most", g.FBUsed/1024))
		}
		if !math.IsNaN(g.FBFree) {
			parts = append(parts, fmt.Sprintf("%.1f GiB free at least", g.FBFree/1024))
		}
		if !math.IsNaN(g.FBUsed) && !math.IsNaN(g.FBFree) && g.FBUsed+g.FBFree > 0 {
			parts = append(parts, fmt.Sprintf("%.0f%% full", 100*g.FBUsed/(g.FBUsed+g.FBFree)))
		}
		if len(g.GPUs) > 0 {
			host, gpu = g.GPUs[0].Host, cmp.Or(g.GPUs[0].Index, g.GPUs[0].UUID)
		}
		return fmt.Sprintf("framebuffer of %s around the failure: %s (DCGM_FI_DEV_FB_USED/FREE, %d reading(s) over the span's window)",
			gpuNames(g), strings.Join(parts, ", "), g.Samples), host, gpu
	}
	return "", "", ""
}

func gpuNames(g *correlate.GPUWindow) string {
	var names []string
	for _, x := range g.GPUs {
		names = append(names, x.Name())
	}
	if len(names) == 0 {
		return "its GPUs"
	}
	return strings.Join(names, ", ")
}
