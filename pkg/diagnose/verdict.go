package diagnose

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
)

// Kinds of cause a verdict names.
const (
	CauseQueue       = "queue"          // waiting in the serving engine's queue
	CauseModel       = "model"          // the engine's prefill and decode (vLLM) or compute (Triton)
	CauseDownstream  = "downstream"     // a call's time its callee's spans do not cover
	CauseCPU         = "cpu"            // CPU work in a service
	CauseWaiting     = "waiting"        // a profiled service's time off the CPU
	CauseGPUKernels  = "gpu kernels"    // GPU kernels the request's kernel traces show
	CauseGPUIdle     = "gpu idle"       // a span with kernels waiting on neither kernels nor CPU
	CauseFailed      = "failed attempt" // a failed attempt's time on the path, with its failure and retry
	CauseErrors      = "errors"         // failed spans off the request's path (no time of their own)
	CauseUnexplained = "unexplained"    // time no signal explains
	// What the GPU waited for in a span with kernel traces (the parts PartHostSync, ...).
	CauseSharedGPU = PartSharedGPU
	CauseHostSync  = PartHostSync
	CauseLaunch    = PartLaunch
	CauseCopies    = PartCopies
	CauseHostWork  = PartHostWork
)

// minCause is the least time a cause must explain to be named.
const minCause = time.Millisecond

// minSamples is how many profile samples a CPU figure needs before the verdict trusts it.
const minSamples = 10

// Cause is one reason the request took the time it did: how much time it explains, the figures
// behind it and where they come from, what to do, and what limits the conclusion.
type Cause struct {
	Kind     string
	Title    string // in words: "CPU in nemotron-backend (db_query)"
	Service  string
	Peer     string // the service called, for a downstream wait
	SpanID   string // the span holding most of it
	Explains time.Duration
	Share    float64 // of the request
	Evidence []string
	Action   string
	// Caveat says what the evidence cannot tell ("" when nothing limits it): few samples, a
	// coarse GPU sample, a missing signal and what would add it.
	Caveat string
	// What the cause's link opens: the span profile showing a CPU cause (ProfileID), the GPU a
	// GPU cause was read on (Host, GPU), over the cause's span (Start, End).
	ProfileID  string
	Host, GPU  string
	Start, End time.Time
	// KernelDiff is set on a cause read from the request's kernel traces when the store holds
	// other requests' traces to compare them with: its link opens the kernels query's diff of
	// this request against the most recent ones of its service.
	KernelDiff bool
	// HotFunction is a CPU cause's hottest function (its evidence says it in words), and
	// OwnFunction the deepest frame of the service's own code on its heaviest path ("" when none,
	// or when it is the hot function itself).
	HotFunction, OwnFunction string
}

// Verdict ranks the causes of the request's latency by the time each explains, from the
// answer's breakdown (its critical path split by signal) and its rows (profiles, hot functions,
// GPU state, errors). Causes never overlap in time, so their shares add up to at most 1; parts
// under a millisecond are left out.
func Verdict(ans *correlate.TraceAnswer, breakdown []BreakdownPart, request time.Duration) []Cause {
	if ans == nil || ans.Trace == nil || request <= 0 {
		return nil
	}
	return verdict(ans, breakdown, request, shapeOf(ans.Trace, ans.Tree, ans.Rows))
}

func verdict(ans *correlate.TraceAnswer, breakdown []BreakdownPart, request time.Duration, sh shape) []Cause {
	if ans == nil || ans.Trace == nil || request <= 0 {
		return nil
	}
	attemptAt := map[string]attempt{}
	for _, a := range sh.attempts {
		attemptAt[ans.Trace.Spans[a.span].SpanID] = a
	}
	var out []Cause
	byKey := map[[3]string]int{}
	add := func(c Cause, peer string) {
		c.Peer = peer
		k := [3]string{c.Kind, c.Service, peer}
		if c.Kind == CauseFailed {
			k[2] = c.SpanID // one cause per attempt
		}
		if i, ok := byKey[k]; ok { // prefill and decode make one model cause
			out[i].Explains += c.Explains
			out[i].Evidence = append(out[i].Evidence, c.Evidence...)
			return
		}
		byKey[k] = len(out)
		out = append(out, c)
	}
	for _, p := range breakdown {
		if p.Duration < minCause {
			continue // crumbs of the path's arithmetic, not a cause
		}
		row := sh.row(p.SpanID)
		op := ""
		if sp := sh.span(ans.Trace, p.SpanID); sp != nil {
			op = " (" + sp.Operation + ")"
		}
		c := Cause{Service: p.Service, SpanID: p.SpanID, Explains: p.Duration}
		if sp := sh.span(ans.Trace, p.SpanID); sp != nil {
			c.Start, c.End = sp.Start, sp.Start.Add(sp.Duration)
		}
		switch p.Kind {
		case PartFailed:
			if a, ok := attemptAt[p.SpanID]; ok { // always: the breakdown names the attempt's span
				c = attemptCause(ans, a, p)
			} else {
				c.Kind, c.Title = CauseFailed, "failed attempt in "+p.Service+op
				c.Evidence = []string{fmt.Sprintf("%s of failed work on the path (%s)", p.Duration.Round(time.Millisecond), p.Source)}
			}
		case PartQueue:
			c.Kind, c.Title = CauseQueue, "queued in "+p.Service+op
			c.Evidence = []string{fmt.Sprintf("%s waited %s in the engine's queue (%s)", p.Service, p.Duration.Round(time.Millisecond), p.Source)}
			c.Action = "the engine was full: add replicas or raise its batch capacity (max_num_seqs), or shed load; its queue over time is vllm:num_requests_waiting"
			if strings.Contains(p.Source, "Triton") {
				c.Action = "the model's queue was long: more model instances (instance_group count), dynamic batching with a shorter max_queue_delay_microseconds, or replicas; its queue over time is nv_inference_pending_request_count"
			}
		case PartPreempted:
			c = preemptedCause(c, p, row, op)
		case PartPrefill, PartDecode:
			c.Kind, c.Title = CauseModel, "the model in "+p.Service+op
			c.Evidence = []string{fmt.Sprintf("%s %s (%s)", p.Kind, p.Duration.Round(time.Millisecond), p.Source)}
			c.Action = "the model's own time: shorter prompts cut prefill, fewer output tokens cut decode; a smaller or quantized model, or speculative decoding, cuts both"
		case PartCompute:
			c.Kind, c.Title = CauseModel, "the model in "+p.Service+op
			c.Evidence = []string{fmt.Sprintf("compute %s (%s)", p.Duration.Round(time.Millisecond), p.Source)}
			c.Action = "the model's own compute (input, inference, output): a TensorRT engine, lower precision or a larger batch per execution cut it; the GPU's class says whether the GPU was the limit"
		case PartDownstream:
			c.Kind, c.Title = CauseDownstream, p.Service+" waiting on "+p.Peer+op
			c.Evidence = []string{fmt.Sprintf("%s of %s's call not covered by %s's own spans (%s)", p.Duration.Round(time.Millisecond), p.Service, p.Peer, p.Source)}
			c.Action = "the time between sending the call and " + p.Peer + " handling it: the network, a connection pool, or " + p.Peer + "'s server queue; compare the call's start with the callee's span start"
			if !calleeTraced(ans, p.Peer) {
				c.Action = p.Peer + " sent no spans: the whole call is waiting on it; instrument it (OpenTelemetry) or check its own metrics"
				c.Caveat = "add tracing to " + p.Peer + " to know where its time goes"
			}
		case PartGPUKernels:
			c.Kind, c.Title = CauseGPUKernels, "GPU kernels of "+p.Service+op
			c.Evidence = []string{fmt.Sprintf("kernels ran %s for this span (%s)", p.Duration.Round(time.Millisecond), p.Source)}
			c.Action = "the kernels themselves: see the kernels query for the longest ones"
		case PartSharedGPU, PartHostSync, PartLaunch, PartCopies, PartHostWork:
			c = gpuWaitCause(ans, p, row, op)
		case PartGPUIdle:
			c.Kind, c.Title = CauseGPUIdle, "GPU idle in "+p.Service+op
			c.Evidence = append([]string{fmt.Sprintf("%s of the span had none of its kernels running and was not on the CPU, outside the gaps its kernel traces show (%s)", p.Duration.Round(time.Millisecond), p.Source)},
				kernelIdleEvidence(ans.KernelTraces)...)
			c.Action = "the span's time before its first or after its last GPU work, with the host not on the CPU the profiles saw: what the host waited for then (I/O, a lock, a call no span shows)"
			if row != nil && row.CPU == nil {
				c.Caveat = "no span profile of " + p.Service + ": part of this may be CPU work before or after the GPU's"
			}
		case PartCPU:
			c.Kind, c.Title = CauseCPU, "CPU in "+p.Service+op
			c.Evidence, c.Caveat, c.ProfileID, c.HotFunction, c.OwnFunction = cpuEvidence(ans.Rows, p)
			c.Action = "CPU work in the service: the hot function is where to start (its link opens the span's profile)"
		case PartThrottled:
			c = throttledCause(c, p, row, op)
		case PartOffCPU:
			c.Kind, c.Title = CauseWaiting, "waiting in "+p.Service+op
			c.Evidence = []string{fmt.Sprintf("%s of %s's time on the path was not on the CPU its profiles saw (%s)", p.Duration.Round(time.Millisecond), p.Service, p.Source)}
			c.Action = "the service waited: I/O, a lock, or a call no span shows; instrument the calls it makes"
			if row != nil && row.GPU != nil {
				c.Evidence = append(c.Evidence, gpuEvidence(row)...)
				if len(row.GPU.GPUs) > 0 {
					c.Host, c.GPU = row.GPU.GPUs[0].Host, cmp.Or(row.GPU.GPUs[0].Index, row.GPU.GPUs[0].UUID)
				}
				c.Action = gpuAction(row.GPU.Class, c.Action)
				c.Caveat = gpuCaveat(row)
				if len(ans.KernelTraces) == 0 {
					c.Caveat = strings.TrimPrefix(c.Caveat+"; no kernel trace names this request: capture one (PyTorch profiler, Nsight Systems) to split this wait into GPU kernels and GPU idle", "; ")
				}
			}
			if tc := throttleCaveat(row); tc != "" {
				c.Caveat = strings.TrimPrefix(c.Caveat+"; "+tc, "; ")
			}
		default:
			c.Kind, c.Title = CauseUnexplained, "unexplained in "+p.Service+op
			c.Evidence = []string{fmt.Sprintf("%s of %s's time on the critical path", p.Duration.Round(time.Millisecond), p.Service)}
			c.Action = "nothing says what " + p.Service + " did then"
			c.Caveat = "add span profiles to " + p.Service + " (otel-profiling-go or the Pyroscope SDK with span links) to tell CPU from waiting"
		}
		add(c, p.Peer)
	}
	addEngineEvidence(ans, out)
	if ans.KernelBaselines > 0 {
		linkKernelDiff(out)
	}
	onPath := map[string]bool{}
	for _, c := range out {
		if c.Kind == CauseFailed {
			onPath[c.SpanID] = true
		}
	}
	if c, ok := errorCause(ans, sh, onPath); ok {
		out = append(out, c)
	}
	for i := range out {
		out[i].Share = float64(out[i].Explains) / float64(request)
	}
	slices.SortStableFunc(out, func(a, b Cause) int { return cmp.Compare(b.Explains, a.Explains) })
	return out
}

// linkKernelDiff marks the causes read from the request's kernel traces as linking to the
// kernels diff against the service's recent requests.
func linkKernelDiff(causes []Cause) {
	for i := range causes {
		switch causes[i].Kind {
		case CauseGPUKernels:
			causes[i].KernelDiff = true
			causes[i].Action += "; its link compares them with the service's recent requests (the kernels diff)"
		case CauseGPUIdle, CauseSharedGPU, CauseHostSync, CauseLaunch, CauseCopies, CauseHostWork:
			causes[i].KernelDiff = true
		}
	}
}

// addEngineEvidence puts what each engine's metrics said around its span on that span's queue
// cause, or on its model cause when it did not queue.
func addEngineEvidence(ans *correlate.TraceAnswer, causes []Cause) {
	for _, e := range ans.Engines {
		id := ans.Trace.Spans[e.Span].SpanID
		ev := engineEvidence(ans.Engines, ans.Trace, id)
		if len(ev) == 0 {
			continue
		}
		// On the preemption when there is one (its own evidence says the engine's figures it
		// rests on), else the queue, else the model.
		at := -1
		rank := func(kind string) int { return map[string]int{CausePreempted: 3, CauseQueue: 2, CauseModel: 1}[kind] }
		for i, c := range causes {
			if c.SpanID == id && rank(c.Kind) > 0 && (at < 0 || rank(c.Kind) > rank(causes[at].Kind)) {
				at = i
			}
		}
		if at >= 0 && causes[at].Kind == CausePreempted {
			continue
		}
		if at < 0 {
			continue
		}
		causes[at].Evidence = append(causes[at].Evidence, ev...)
		if causes[at].Kind == CauseQueue && causes[at].Caveat == "" {
			causes[at].Caveat = queueGaugeCaveat(ans.Engines, ans.Trace, id, causes[at].Explains)
		}
	}
}

// kernelIdleEvidence sums what the request's kernel traces say about the GPU's idle time: host
// wait (the GPU idle while the host was busy), launch overhead, synchronisation.
func kernelIdleEvidence(results []*gputrace.Result) []string {
	var idle, hostWait, kernelWait, syncCalls, syncTime, kernels int64
	var shorter float64
	for _, r := range results {
		if r == nil {
			continue
		}
		for _, s := range r.Idle {
			idle += s.Idle
			hostWait += s.HostWait
			kernelWait += s.KernelWait
		}
		syncCalls += r.Sync.Calls
		syncTime += r.Sync.Time
		if r.Launch.Joined > 0 {
			shorter += r.Launch.ShorterThanLaunch * float64(r.Launch.Joined)
			kernels += r.Launch.Joined
		}
	}
	var out []string
	if idle > 0 {
		out = append(out, fmt.Sprintf("kernel trace: streams idle %s, of which host wait %s (GPU idle while the host was busy) and kernel wait %s",
			time.Duration(idle).Round(time.Microsecond), time.Duration(hostWait).Round(time.Microsecond), time.Duration(kernelWait).Round(time.Microsecond)))
	}
	if kernels > 0 {
		out = append(out, fmt.Sprintf("kernel trace: %.0f%% of %d launched kernels ran shorter than their launch call (launch overhead)", 100*shorter/float64(kernels), kernels))
	}
	if syncCalls > 0 {
		out = append(out, fmt.Sprintf("kernel trace: %d synchronising call(s) blocked the host %s", syncCalls, time.Duration(syncTime).Round(time.Microsecond)))
	}
	return out
}

// calleeTraced says whether the trace holds spans of the service peer.
func calleeTraced(ans *correlate.TraceAnswer, peer string) bool {
	for _, s := range ans.Trace.Spans {
		if s.Service == peer {
			return true
		}
	}
	return false
}

// cpuEvidence names the service's hot function and says how many samples the CPU figure rests
// on; profileID is the span profile holding the hot function (else the service's largest).
func cpuEvidence(rows []correlate.SpanRow, p BreakdownPart) (ev []string, caveat, profileID, hotFunction, ownFunction string) {
	ev = []string{fmt.Sprintf("span profiles saw %s of CPU in %s on the critical path (%s)", p.Duration.Round(time.Millisecond), p.Service, p.Source)}
	var hot *correlate.SpanRow
	var cpu, most int64
	for i, r := range rows {
		if r.Span.Service != p.Service || r.CPU == nil {
			continue
		}
		cpu += *r.CPU
		if *r.CPU > most || profileID == "" {
			most, profileID = *r.CPU, r.ProfileID
		}
		if r.HotFunction != "" && (hot == nil || r.HotSelf > hot.HotSelf) {
			hot = &rows[i]
		}
	}
	if hot != nil {
		ev = append(ev, fmt.Sprintf("hot function %s: %s of CPU self time in span %s", hot.HotFunction, time.Duration(hot.HotSelf).Round(time.Millisecond), hot.Span.Operation))
		if hot.OwnFunction != "" && hot.OwnFunction != hot.HotFunction {
			ownFunction = hot.OwnFunction
			ev = append(ev, fmt.Sprintf("in %s's own code: %s, the deepest of its frames on the hot function's heaviest path (the hot function is runtime or library code)", p.Service, hot.OwnFunction))
		}
		profileID, hotFunction = hot.ProfileID, hot.HotFunction
	}
	samples := int(time.Duration(cpu) / correlate.ProfilerSampleInterval)
	if samples < minSamples {
		caveat = fmt.Sprintf("about %d profile samples (%s of CPU at 100 Hz): too few to rank functions reliably", samples, time.Duration(cpu).Round(time.Millisecond))
	}
	return ev, caveat, profileID, hotFunction, ownFunction
}

// gpuEvidence is the span's GPU state over its window.
func gpuEvidence(r *correlate.SpanRow) []string {
	g := r.GPU
	ev := []string{fmt.Sprintf("GPU %s %.0f%% of %d reading(s) during %s", g.Class, 100*g.ClassShare, g.Samples, r.Span.Operation)}
	if len(g.Evidence) > 0 {
		ev = append(ev, "GPU: "+strings.Join(g.Evidence, "; "))
	}
	return ev
}

func gpuAction(c classify.Class, otherwise string) string {
	switch c {
	case classify.Idle, classify.NoData:
		return otherwise + " (the GPU was not busy then)"
	}
	return "the GPU was " + string(c) + ": " + classify.Action(c)
}

// gpuCaveat says when DCGM's readings are much coarser than the span, and when the GPU served
// other pods too.
func gpuCaveat(r *correlate.SpanRow) string {
	g := r.GPU
	var out []string
	if g.Samples <= 1 || r.Span.Duration < time.Second {
		out = append(out, fmt.Sprintf("the GPU figures are DCGM's readings around a %s span (DCGM samples every few seconds, 30 s by default): they show the GPU's state at that time, not this request's own use",
			r.Span.Duration.Round(time.Millisecond)))
	}
	if len(g.SharedWith) > 0 {
		names := make([]string, 0, len(g.SharedWith))
		for _, p := range g.SharedWith {
			names = append(names, p.String())
		}
		out = append(out, fmt.Sprintf("dcgm-exporter maps this GPU to other pods too over the range (%s: time-sliced, or handed over): its figures are the whole GPU's, their work included",
			strings.Join(names, ", ")))
	}
	return strings.Join(out, "; ")
}

// errorCause names the failed spans that are not a failed attempt with time on the critical path
// (a failed call in a branch the request did not wait for, or the request's root itself): they
// explain no time of their own and come last. onPath holds the attempts the verdict already
// gave their time.
func errorCause(ans *correlate.TraceAnswer, sh shape, onPath map[string]bool) (Cause, bool) {
	t := ans.Trace
	attempts, attemptOf := sh.attempts, sh.attemptOf
	var failed []string
	var first string
	for i, f := range t.Spans {
		if !f.Failed() || attemptOf[i] >= 0 && onPath[t.Spans[attempts[attemptOf[i]].span].SpanID] {
			continue
		}
		what := f.StatusMessage
		if typ, msg, ok := f.Exception(); ok {
			what = strings.Join(nonEmpty(typ, msg), ": ")
		}
		if what != "" {
			what = ": " + what
		}
		failed = append(failed, fmt.Sprintf("%s %s after %s%s", f.Service, f.Operation, f.Duration.Round(time.Millisecond), what))
		if first == "" {
			first = f.SpanID
		}
	}
	if len(failed) == 0 {
		return Cause{}, false
	}
	return Cause{
		Kind: CauseErrors, Title: fmt.Sprintf("%d failed span(s) off the critical path", len(failed)), SpanID: first,
		Evidence: []string{"failed (span status ERROR): " + strings.Join(failed, "; ")},
		Action:   "the request did not wait for these failures, or failed as a whole: their exceptions and events say why",
		Caveat:   "their time is counted in the causes above, where the request spent it",
	}, true
}
