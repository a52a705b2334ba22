// Package diagnose says why a request was slow from what the request-level join found
// (correlate.TraceAnswer): its critical path, the breakdown of its duration along that path by
// what explains each stretch (the serving engine's figures, GPU kernel traces, span profiles,
// calls), and the verdict ranking the causes with their evidence and remedy. It is pure: it
// asks no store, so it is tested on hand-built answers.
package diagnose

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Attributes naming the service a client span calls when that service sent no spans of its own
// (OpenTelemetry semantic conventions, the newest first).
var peerAttributes = []string{"peer.service", "db.system.name", "db.system", "rpc.service", "server.address", "net.peer.name"}

// Kinds of a breakdown part.
const (
	PartQueue       = "queue"          // waiting in the serving engine's queue (vLLM attribute, Triton events)
	PartPreempted   = "preempted"      // inference time beyond the model's own while the engine preempted requests for KV-cache space
	PartPrefill     = "prefill"        // the engine's prefill (vLLM attribute)
	PartDecode      = "decode"         // the engine's decode (vLLM attribute)
	PartCompute     = "compute"        // the engine's compute (Triton events)
	PartGPUKernels  = "gpu kernels"    // GPU kernel time the request's kernel traces give the span
	PartGPUIdle     = "gpu idle"       // the rest of a span with kernels: launches, syncs, copies
	PartDownstream  = "downstream"     // a call's time its callee's own spans do not cover
	PartCPU         = "cpu"            // CPU the span profiles saw, up to the service's time on the path
	PartThrottled   = "cpu throttled"  // a profiled span's off-CPU time its container's CPU limit throttled (cAdvisor)
	PartOffCPU      = "off-cpu"        // the rest of a profiled service's time: I/O, locks, untraced calls
	PartUnexplained = "unexplained"    // a service's time on the path that no signal explains
	PartFailed      = "failed attempt" // a failed attempt's time on the path (span status ERROR), one part per attempt
	// The GPU idle time of a span with kernel traces, by what the GPU waited for
	// (gputrace.IdleMechanisms).
	PartSharedGPU = "shared gpu"      // gaps with the request's next work already queued: the GPU ran other work
	PartHostSync  = "host sync"       // gaps that began while the host was blocked in a synchronising call
	PartLaunch    = "launch overhead" // gaps while the host was launching or dispatching ops that launch, or the GPU's launch latency
	PartCopies    = "copies"          // copies holding the GPU with no kernel running
	PartHostWork  = "host work"       // gaps while the host neither launched, dispatched nor synchronised
)

// partKinds are the kinds in the order the breakdown explains time with them.
var partKinds = []string{PartFailed, PartQueue, PartPreempted, PartPrefill, PartDecode, PartCompute, PartGPUKernels, PartSharedGPU, PartHostSync, PartLaunch, PartCopies, PartHostWork, PartDownstream, PartCPU, PartThrottled, PartGPUIdle, PartOffCPU, PartUnexplained}

// Diagnosis is why one request was slow.
type Diagnosis struct {
	// Breakdown is the request's duration (Request, its root span's) split into parts along its
	// critical path; empty when the trace could not be read.
	Breakdown []BreakdownPart
	Request   time.Duration
	// Verdict ranks the causes of the request's latency.
	Verdict []Cause
}

// Request diagnoses the joined request: its breakdown, then the verdict drawn from it.
func Request(ans *correlate.TraceAnswer) Diagnosis {
	if ans == nil || ans.Trace == nil {
		return Diagnosis{}
	}
	var d Diagnosis
	sh := shapeOf(ans.Trace, ans.Tree, ans.Rows)
	d.Breakdown, d.Request = breakdown(ans.Trace, ans.Rows, sh)
	d.Verdict = verdict(ans, d.Breakdown, d.Request, sh)
	return d
}

// shape is what the breakdown and the verdict both read of the trace's tree, worked out once: a
// request of thousands of spans must not pay for it twice.
type shape struct {
	root      int // models.RequestRoot
	tree      *models.SpanTree
	children  [][]int // childrenOf
	attempts  []attempt
	attemptOf []int // failedAttempts
	rows      []correlate.SpanRow
	rowAt     []int32 // by the position of a span ID (tree.Index): its row in rows (of repeated IDs, the last); -1 for none
}

func shapeOf(t *models.Trace, tree *models.SpanTree, rows []correlate.SpanRow) shape {
	if tree == nil {
		tree = models.NewSpanTree(t.Spans)
	}
	sh := shape{rows: rows, tree: tree}
	sh.children = childrenOf(t, tree)
	sh.root = tree.Root(t)
	sh.attempts, sh.attemptOf = failedAttempts(t, sh.root, sh.children)
	sh.rowAt = make([]int32, len(t.Spans))
	for i := range sh.rowAt {
		sh.rowAt[i] = -1
	}
	for i := range rows {
		if at, ok := tree.Index(rows[i].Span.SpanID); ok {
			sh.rowAt[at] = int32(i)
		}
	}
	return sh
}

// span is the span of an ID (of repeated IDs, the last); nil when the trace has none.
func (sh shape) span(t *models.Trace, id string) *models.Span {
	if i, ok := sh.tree.Index(id); ok {
		return &t.Spans[i]
	}
	return nil
}

// row is the row of a span ID (of repeated IDs, the last); nil when none.
func (sh shape) row(id string) *correlate.SpanRow {
	if i, ok := sh.tree.Index(id); ok && sh.rowAt[i] >= 0 {
		return &sh.rows[sh.rowAt[i]]
	}
	return nil
}

// BreakdownPart is one part of the request's duration.
type BreakdownPart struct {
	Kind    string
	Service string // the service the time was spent in
	// Peer is what a downstream part waited on: the called service, or what the call names
	// (peer.service, db.system, server.address).
	Peer     string
	Duration time.Duration
	// SpanID is the span that holds the most of this part's time (several spans may share it).
	SpanID string
	// Source says where the figure comes from: the critical path, a span attribute, the span
	// profiles, a kernel trace.
	Source string
}

// Breakdown splits the request's duration (its root span's) along its critical path
// (CriticalPath): each stretch goes to the span doing the work then, and each span's time is
// split by what explains it, in this order: the serving engine's own figures (queue, prefill,
// decode, from vLLM's span attributes), the GPU kernel time of the request's kernel traces, the
// CPU its service's span profiles saw, and, for a profiled service, the rest as off-CPU; time in
// a service nothing explains is unexplained. The parts sum to the request's duration exactly;
// parts of no time are left out. Rows are correlate.JoinTrace's (their CPU and kernel time are used).
func Breakdown(t *models.Trace, rows []correlate.SpanRow) (parts []BreakdownPart, total time.Duration) {
	return breakdown(t, rows, shapeOf(t, nil, rows))
}

func breakdown(t *models.Trace, rows []correlate.SpanRow, sh shape) (parts []BreakdownPart, total time.Duration) {
	root := sh.root
	if root < 0 {
		return nil, 0
	}
	onPath := make([]time.Duration, len(t.Spans))
	for _, seg := range criticalPath(t, root, sh.tree) {
		onPath[seg.Span] += seg.Duration()
	}
	// CPU per service: its profiled spans' totals (a span profile covers the service's local
	// subtree), spent against the service's time on the path.
	children := sh.children
	// A failed attempt's time is one part, whatever it did: its spans' CPU is not spent again on
	// the service's other spans (its retry's, say).
	attempts, attemptOf := sh.attempts, sh.attemptOf
	cpuLeft := map[string]time.Duration{}
	profiled := map[string]bool{}
	for _, r := range rows {
		if i, ok := sh.tree.Index(r.Span.SpanID); ok && attemptOf[i] >= 0 {
			continue
		}
		if r.CPU != nil {
			cpuLeft[r.Span.Service] += time.Duration(*r.CPU)
			profiled[r.Span.Service] = true
		}
	}
	type key struct{ kind, service, peer, attempt string }
	sums := map[key]time.Duration{}
	sources := map[key]string{}
	bySpanOf := map[key]map[int]time.Duration{}
	var order []key
	var span int // the span whose time is being explained
	add := func(kind, service, peer string, d time.Duration, source string) {
		if d <= 0 {
			return
		}
		k := key{kind, service, peer, ""}
		if a := attemptOf[span]; a >= 0 {
			k.attempt = t.Spans[attempts[a].span].SpanID
		}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
			bySpanOf[k] = map[int]time.Duration{}
			sources[k] = source
		}
		sums[k] += d
		bySpanOf[k][span] += d
	}
	for i, s := range t.Spans {
		span = i
		left := onPath[i]
		if left <= 0 {
			continue
		}
		take := func(d time.Duration) time.Duration {
			d = min(max(d, 0), left)
			left -= d
			return d
		}
		if a := attemptOf[i]; a >= 0 {
			f := t.Spans[attempts[a].span]
			add(PartFailed, f.Service, "", take(left), partSource(PartFailed))
			continue
		}
		for _, f := range engineFigures(t, i, children[i], sh.row(s.SpanID)) {
			add(f.kind, s.Service, "", take(f.d), f.source)
		}
		withKernels := false
		if r := sh.row(s.SpanID); r != nil && r.GPUKernelTime != nil {
			withKernels = true
			add(PartGPUKernels, s.Service, "", take(time.Duration(*r.GPUKernelTime)), partSource(PartGPUKernels))
		}
		// A call's own time on the path is waiting on what it called: the network, the
		// callee's queue before its handler, or the whole call when the callee sent no spans.
		if peer := peerOf(t, i, children[i]); peer != "" {
			add(PartDownstream, s.Service, peer, take(left), partSource(PartDownstream))
		}
		// What the kernel traces say the GPU waited for comes before the profiles: launch calls
		// and host work between kernels are CPU the profile also saw (spent here, not again on
		// the service's other spans), and a spinning synchronisation burns CPU too.
		if r := sh.row(s.SpanID); withKernels && r.GPUIdle != nil {
			for _, m := range idleParts(*r.GPUIdle, left) {
				got := take(m.d)
				add(m.kind, s.Service, "", got, partSource(m.kind))
				if m.kind == PartLaunch || m.kind == PartHostWork {
					cpuLeft[s.Service] -= min(cpuLeft[s.Service], got)
				}
			}
		}
		if profiled[s.Service] {
			cpu := take(cpuLeft[s.Service])
			cpuLeft[s.Service] -= cpu
			add(PartCPU, s.Service, "", cpu, partSource(PartCPU))
			// A container at its CPU limit keeps its runnable threads off the CPU for the
			// throttled seconds it accrues per CPU-second used: the span's CPU here came with
			// that much throttling, out of its off-CPU time.
			if r := sh.row(s.SpanID); r != nil && r.Container != nil {
				if per := r.Container.ThrottledPerCPUSecond(); per > 0 && !math.IsInf(per, 0) {
					add(PartThrottled, s.Service, "", take(time.Duration(float64(cpu)*per)), partSource(PartThrottled))
				}
			}
		}
		// A span that ran kernels and spent the rest neither in kernels nor on the CPU had the GPU
		// and the host both waiting: launches, synchronisation, copies.
		if withKernels {
			add(PartGPUIdle, s.Service, "", take(left), partSource(PartGPUIdle))
		}
		if profiled[s.Service] {
			add(PartOffCPU, s.Service, "", take(left), partSource(PartOffCPU))
		}
		add(PartUnexplained, s.Service, "", take(left), partSource(PartUnexplained))
	}
	for _, k := range order {
		top, topD := -1, time.Duration(0)
		for i, d := range bySpanOf[k] {
			if top < 0 || d > topD || d == topD && i < top {
				top, topD = i, d
			}
		}
		id := t.Spans[top].SpanID
		if k.attempt != "" {
			id = k.attempt // the attempt, not the span inside it that held most of its time
		}
		parts = append(parts, BreakdownPart{Kind: k.kind, Service: k.service, Peer: k.peer, Duration: sums[k], SpanID: id, Source: sources[k]})
		total += sums[k]
	}
	// Largest first; ties in the order of partKinds, then by service.
	slices.SortFunc(parts, func(a, b BreakdownPart) int {
		return cmp.Or(cmp.Compare(b.Duration, a.Duration), cmp.Compare(slices.Index(partKinds, a.Kind), slices.Index(partKinds, b.Kind)),
			cmp.Compare(a.Service, b.Service), cmp.Compare(a.Peer, b.Peer), cmp.Compare(a.SpanID, b.SpanID))
	})
	return parts, total
}

// idlePart is one mechanism's share of a span's GPU idle time.
type idlePart struct {
	kind string
	d    time.Duration
}

// idleParts are the kernel traces' idle mechanisms of a span, scaled down to the span's time left
// when they hold more (the traces' clock and the span's differ, and the span's time on the path
// may be less than its GPU work), in proportion, summing to at most left.
func idleParts(m gputrace.IdleMechanisms, left time.Duration) []idlePart {
	parts := []idlePart{{PartSharedGPU, time.Duration(m.Queued)}, {PartHostSync, time.Duration(m.Sync)}, {PartLaunch, time.Duration(m.Launch)},
		{PartCopies, time.Duration(m.Copies)}, {PartHostWork, time.Duration(m.HostWork)}}
	sum := time.Duration(m.Total())
	if sum <= left || sum <= 0 {
		return parts
	}
	var given time.Duration
	last := -1
	for i := range parts {
		if parts[i].d > 0 {
			parts[i].d = time.Duration(float64(left) * float64(parts[i].d) / float64(sum))
			given += parts[i].d
			last = i
		}
	}
	if last >= 0 {
		parts[last].d += left - given // the rounding, so the parts fill left exactly
	}
	return parts
}

// engineFigure is one of a serving engine's own figures for a span.
type engineFigure struct {
	kind, source string
	d            time.Duration
}

// engineFigures are what a serving engine says of span i: vLLM's latency attributes on its
// request span, or Triton's timestamps (the model span's QUEUE_START to its compute child's
// COMPUTE_START is the queue; the compute span's COMPUTE_START to COMPUTE_END the compute). When
// the engine preempted requests around the span (its metrics, on the row) and the span's
// inference outlasted the model's own time, the excess is the preemption's, taken from decode
// first (preemptions come when a running request needs a new KV block), then prefill.
func engineFigures(t *models.Trace, i int, children []int, row *correlate.SpanRow) []engineFigure {
	s := t.Spans[i]
	prefill, decode := attrSeconds(s, correlate.AttrTimeInPrefill), attrSeconds(s, correlate.AttrTimeInDecode)
	prefillFrom, decodeFrom := "span attribute "+correlate.AttrTimeInPrefill, "span attribute "+correlate.AttrTimeInDecode
	queue := attrSeconds(s, correlate.AttrTimeInQueue)
	if prefill == 0 && decode == 0 && attrSeconds(s, correlate.AttrTimeInInference) == 0 {
		// TensorRT-LLM writes the queue, the first token and the end only: prefill and decode
		// are their differences, as vLLM computes its own.
		ttft, e2e := attrSeconds(s, correlate.AttrTimeToFirst), attrSeconds(s, correlate.AttrE2E)
		if ttft > queue && e2e >= ttft {
			prefill, decode = ttft-queue, e2e-ttft
			prefillFrom = "span attributes " + correlate.AttrTimeToFirst + " − " + correlate.AttrTimeInQueue
			decodeFrom = "span attributes " + correlate.AttrE2E + " − " + correlate.AttrTimeToFirst
		}
	}
	out := []engineFigure{{PartQueue, "span attribute " + correlate.AttrTimeInQueue, queue}}
	if p, ok := preemptedTime(s, row, prefill, decode); ok {
		out = append(out, engineFigure{PartPreempted, p.source, p.excess})
		fromDecode := min(p.excess, decode)
		decode -= fromDecode
		prefill -= min(p.excess-fromDecode, prefill)
	}
	out = append(out,
		engineFigure{PartPrefill, prefillFrom, prefill},
		engineFigure{PartDecode, decodeFrom, decode},
	)
	if queued, ok := s.Event(correlate.EventQueueStart); ok {
		for _, c := range children {
			if started, ok := t.Spans[c].Event(correlate.EventComputeStart); ok {
				out = append(out, engineFigure{PartQueue, "span events " + correlate.EventQueueStart + " → " + correlate.EventComputeStart + " (Triton)", started.Sub(queued)})
				break
			}
		}
	}
	if started, ok := s.Event(correlate.EventComputeStart); ok {
		if ended, ok := s.Event(correlate.EventComputeEnd); ok {
			out = append(out, engineFigure{PartCompute, "span events " + correlate.EventComputeStart + " → " + correlate.EventComputeEnd + " (Triton)", ended.Sub(started)})
		}
	}
	return out
}

// minPreemptedExcess is the least inference beyond the model's time taken for a preemption.
const minPreemptedExcess = time.Millisecond

// preemption is what a preempted request lost: its inference time beyond the model's own.
type preemption struct {
	excess, inference, model time.Duration
	preemptions              float64
	modelFrom, source        string
}

// preemptedTime is the span's inference time (prefill + decode, else the inference attribute)
// beyond the model's own time for it (vLLM's detailed-trace attributes, execute else forward;
// else the engine's time per output token × the span's output tokens, after prefill), when the
// engine's metrics say it preempted requests around the span. ok is false when it did not, or
// when nothing gives the model's own time.
func preemptedTime(s models.Span, row *correlate.SpanRow, prefill, decode time.Duration) (preemption, bool) {
	var p preemption
	if row == nil {
		return p, false
	}
	n, metric, known := correlate.Preemptions(row.Engine)
	if !known || n <= 0 {
		return p, false
	}
	p.preemptions = n
	p.inference = prefill + decode
	if p.inference <= 0 {
		p.inference = attrSeconds(s, correlate.AttrTimeInInference)
	}
	switch {
	case attrSeconds(s, correlate.AttrTimeInExecute) > 0:
		p.model, p.modelFrom = attrSeconds(s, correlate.AttrTimeInExecute), "span attribute "+correlate.AttrTimeInExecute
	case attrSeconds(s, correlate.AttrTimeInForward) > 0:
		p.model, p.modelFrom = attrSeconds(s, correlate.AttrTimeInForward), "span attribute "+correlate.AttrTimeInForward
	default:
		tokens, err := strconv.ParseFloat(s.Attributes[correlate.AttrCompletionTokens], 64)
		tpot := engineFigure0(row.Engine, correlate.FigureTPOT)
		if err != nil || tokens <= 0 || tpot == nil || tpot.Mean <= 0 {
			return p, false
		}
		p.model = prefill + time.Duration(tokens*tpot.Mean*float64(time.Second))
		p.modelFrom = fmt.Sprintf("prefill + the engine's mean time per output token (%s, Prometheus) × %s output tokens (%s)",
			tpot.Metric, s.Attributes[correlate.AttrCompletionTokens], correlate.AttrCompletionTokens)
	}
	// An engine's decode wall time exceeds its model time by its own work between steps
	// (scheduling, sampling, detokenising: a few percent): less than a tenth is no preemption.
	if p.inference-p.model < max(minPreemptedExcess, p.model/10) {
		return p, false
	}
	p.excess = p.inference - p.model
	p.source = "the span's inference time (" + correlate.AttrTimeInPrefill + " + " + correlate.AttrTimeInDecode + ") less the model's own (" + p.modelFrom + "), while the engine preempted requests (" + metric + ")"
	return p, true
}

// engineFigure0 is the engine's figure of that name, nil when its metrics lack it.
func engineFigure0(f *models.EngineFigures, name string) *models.EngineFigure {
	if f == nil {
		return nil
	}
	for i := range f.Figures {
		if f.Figures[i].Name == name {
			return &f.Figures[i]
		}
	}
	return nil
}

// peerOf names what client span i waits on: the service of a child in another service, else
// what the span's attributes name; "" when span i is not a client span.
func peerOf(t *models.Trace, i int, children []int) string {
	s := t.Spans[i]
	if s.Kind != models.SpanKindClient {
		return ""
	}
	for _, c := range children {
		if t.Spans[c].Service != s.Service {
			return t.Spans[c].Service
		}
	}
	for _, a := range peerAttributes {
		if v := s.Attributes[a]; v != "" {
			return v
		}
	}
	return "an untraced service"
}

// childrenOf lists each span's children (indexes into t.Spans): of spans repeating an ID, the
// last holds the ID's children, the others none.
func childrenOf(t *models.Trace, tree *models.SpanTree) [][]int {
	out := make([][]int, len(t.Spans))
	for i := range t.Spans {
		if last, _ := tree.Index(t.Spans[i].SpanID); last == i {
			out[i] = tree.Children(t.Spans[i].SpanID)
		}
	}
	return out
}

func partSource(kind string) string {
	switch kind {
	case PartDownstream:
		return "critical path: the call's time not covered by its callee's spans (network, the callee's queue, or an untraced callee)"
	case PartGPUIdle:
		return "kernel trace: the span's time on the path with none of its kernels running and not on the CPU"
	case PartGPUKernels:
		return "GPU kernel trace"
	case PartCPU:
		return "span profiles (CPU), up to the service's time on the critical path"
	case PartThrottled:
		return "cAdvisor: the container's throttled seconds per CPU-second used (container_cpu_cfs_throttled_seconds_total ÷ container_cpu_usage_seconds_total) times the span's CPU, out of its off-CPU time"
	case PartOffCPU:
		return "critical path less the span profiles' CPU"
	case PartFailed:
		return "critical path: the failed attempt's time (span status ERROR), whatever it did"
	case PartHostSync:
		return "kernel trace: GPU idle gaps that began while the host was blocked in a synchronising call"
	case PartSharedGPU:
		return "kernel trace: GPU idle gaps with the request's next work already launched and waiting longer than a free GPU takes to start it"
	case PartLaunch:
		return "kernel trace: GPU idle gaps while the host was launching or dispatching the ops that launch (or the GPU's launch latency between queued work)"
	case PartCopies:
		return "kernel trace: copies holding the GPU with no kernel running"
	case PartHostWork:
		return "kernel trace: GPU idle gaps while the host neither launched, dispatched an op that launches, nor synchronised"
	}
	return "critical path (no profile, engine attribute or kernel trace for this time)"
}

// attrSeconds reads a duration attribute given in seconds; 0 when absent or not a number.
func attrSeconds(s models.Span, name string) time.Duration {
	text, ok := s.Attributes[name]
	if !ok {
		return 0 // most spans: no error to build (a refused parse allocates one)
	}
	v, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0
	}
	return time.Duration(v * float64(time.Second))
}

// String prints a part as "kind in service: duration" ("downstream in service (peer): ...").
func (p BreakdownPart) String() string {
	if p.Peer != "" {
		return fmt.Sprintf("%s in %s (%s): %s", p.Kind, p.Service, p.Peer, p.Duration)
	}
	return fmt.Sprintf("%s in %s: %s", p.Kind, p.Service, p.Duration)
}
