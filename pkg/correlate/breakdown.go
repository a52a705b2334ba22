package correlate

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Serving-engine span attributes, as vLLM's tracing names them (vllm/tracing.py, SpanAttributes),
// each a duration in seconds on the engine's request span (llm_request).
const (
	AttrTimeInQueue    = "gen_ai.latency.time_in_queue"
	AttrTimeToFirst    = "gen_ai.latency.time_to_first_token"
	AttrTimeInPrefill  = "gen_ai.latency.time_in_model_prefill"
	AttrTimeInDecode   = "gen_ai.latency.time_in_model_decode"
	AttrTimeInSchedule = "gen_ai.latency.time_in_scheduler"
	AttrE2E            = "gen_ai.latency.e2e"
)

// Kinds of a breakdown part.
const (
	PartQueue       = "queue"       // waiting in the serving engine's queue (engine attribute)
	PartPrefill     = "prefill"     // the engine's prefill (engine attribute)
	PartDecode      = "decode"      // the engine's decode (engine attribute)
	PartGPUKernels  = "gpu kernels" // GPU kernel time the request's kernel traces give the span
	PartCPU         = "cpu"         // CPU the span profiles saw, up to the service's time on the path
	PartOffCPU      = "off-cpu"     // the rest of a profiled service's time: I/O, locks, untraced calls
	PartUnexplained = "unexplained" // a service's time on the path that no signal explains
)

// partKinds are the kinds in the order the breakdown explains time with them.
var partKinds = []string{PartQueue, PartPrefill, PartDecode, PartGPUKernels, PartCPU, PartOffCPU, PartUnexplained}

// BreakdownPart is one part of the request's duration.
type BreakdownPart struct {
	Kind     string
	Service  string // the service the time was spent in
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
// parts of no time are left out. Rows are JoinTrace's (their CPU and kernel time are used).
func Breakdown(t *models.Trace, rows []SpanRow) (parts []BreakdownPart, total time.Duration) {
	root := RequestRoot(t)
	if root < 0 {
		return nil, 0
	}
	onPath := make([]time.Duration, len(t.Spans))
	for _, seg := range CriticalPath(t, root) {
		onPath[seg.Span] += seg.Duration()
	}
	bySpan := map[string]*SpanRow{}
	for i := range rows {
		bySpan[rows[i].Span.SpanID] = &rows[i]
	}
	// CPU per service: its profiled spans' totals (a span profile covers the service's local
	// subtree), spent against the service's time on the path.
	cpuLeft := map[string]time.Duration{}
	profiled := map[string]bool{}
	for _, r := range rows {
		if r.CPU != nil {
			cpuLeft[r.Span.Service] += time.Duration(*r.CPU)
			profiled[r.Span.Service] = true
		}
	}
	sums := map[[2]string]time.Duration{}
	bySpanOf := map[[2]string]map[int]time.Duration{}
	var order [][2]string
	var span int // the span whose time is being explained
	add := func(kind, service string, d time.Duration) {
		if d <= 0 {
			return
		}
		k := [2]string{kind, service}
		if _, ok := sums[k]; !ok {
			order = append(order, k)
			bySpanOf[k] = map[int]time.Duration{}
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
		add(PartQueue, s.Service, take(attrSeconds(s, AttrTimeInQueue)))
		add(PartPrefill, s.Service, take(attrSeconds(s, AttrTimeInPrefill)))
		add(PartDecode, s.Service, take(attrSeconds(s, AttrTimeInDecode)))
		if r := bySpan[s.SpanID]; r != nil && r.GPUKernelTime != nil {
			add(PartGPUKernels, s.Service, take(time.Duration(*r.GPUKernelTime)))
		}
		if profiled[s.Service] {
			cpu := take(cpuLeft[s.Service])
			cpuLeft[s.Service] -= cpu
			add(PartCPU, s.Service, cpu)
			add(PartOffCPU, s.Service, take(left))
		}
		add(PartUnexplained, s.Service, take(left))
	}
	for _, k := range order {
		top, topD := -1, time.Duration(0)
		for i, d := range bySpanOf[k] {
			if top < 0 || d > topD || d == topD && i < top {
				top, topD = i, d
			}
		}
		parts = append(parts, BreakdownPart{Kind: k[0], Service: k[1], Duration: sums[k], SpanID: t.Spans[top].SpanID, Source: partSource(k[0])})
		total += sums[k]
	}
	// Largest first; ties in the order of partKinds, then by service.
	slices.SortFunc(parts, func(a, b BreakdownPart) int {
		return cmp.Or(cmp.Compare(b.Duration, a.Duration), cmp.Compare(slices.Index(partKinds, a.Kind), slices.Index(partKinds, b.Kind)), cmp.Compare(a.Service, b.Service))
	})
	return parts, total
}

func partSource(kind string) string {
	switch kind {
	case PartQueue:
		return "span attribute " + AttrTimeInQueue
	case PartPrefill:
		return "span attribute " + AttrTimeInPrefill
	case PartDecode:
		return "span attribute " + AttrTimeInDecode
	case PartGPUKernels:
		return "GPU kernel trace"
	case PartCPU:
		return "span profiles (CPU), up to the service's time on the critical path"
	case PartOffCPU:
		return "critical path less the span profiles' CPU"
	}
	return "critical path (no profile, engine attribute or kernel trace for this time)"
}

// attrSeconds reads a duration attribute given in seconds; 0 when absent or not a number.
func attrSeconds(s models.Span, name string) time.Duration {
	v, err := strconv.ParseFloat(s.Attributes[name], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0
	}
	return time.Duration(v * float64(time.Second))
}

// String prints a part as "kind in service: duration".
func (p BreakdownPart) String() string {
	return fmt.Sprintf("%s in %s: %s", p.Kind, p.Service, p.Duration)
}
