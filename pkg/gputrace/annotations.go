package gputrace

import (
	"fmt"
	"sort"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

// maxAnnotations bounds the host annotations kept for attributing kernels; traces of a
// single request have a handful.
const maxAnnotations = 100_000

// maxNestingWalk bounds how far back attribution looks for an enclosing annotation.
const maxNestingWalk = 256

type annotation struct {
	name               string
	traceID            string
	start, end, thread int64
}

// AnnotationKernels is the GPU work launched inside one host annotation (user_annotation,
// NVTX range): kernels whose launch call started within it, counted for the innermost one.
type AnnotationKernels struct {
	Name       string
	TraceID    string // the request trace ID the annotation names, if any
	Start, End int64
	Kernels    int64
	KernelTime int64 // summed kernel durations, ns
	// Idle is the GPU idle (and copy-only) time that began after work launched in the
	// annotation, by mechanism.
	Idle IdleMechanisms
}

// TraceKernelTime is the GPU kernel time launched inside annotations naming a request.
type TraceKernelTime struct {
	TraceID    string
	Kernels    int64
	KernelTime int64
	Idle       IdleMechanisms
}

func (c *Collector) addAnnotation(a activity.Activity) {
	id := a.TraceID
	if id == "" {
		if ids := activity.TraceIDsIn(a.Name); len(ids) > 0 {
			id = ids[0]
		}
	}
	if id != "" {
		c.ids.add(id, activity.SourceAnnotation)
	}
	if a.Kind != activity.KindAnnotation {
		return // GPU-side annotations mirror the host ones
	}
	if len(c.annots) >= maxAnnotations {
		c.dropped.annotations++
		return
	}
	c.annots = append(c.annots, annotation{name: a.Name, traceID: id, start: a.Start, end: a.End, thread: a.Thread})
}

// attribute needs c.ivals; it sorts c.annots by start. Each GPU activity belongs to the innermost
// annotation its launch call started in (inner) and to the nearest enclosing one that names a
// request (traced); -1 when none. Kernels count there; idle time goes where its gap began
// (idleMechanisms).
func (c *Collector) attribute() (out []AnnotationKernels, traces []TraceKernelTime, inner, traced []int32) {
	inner, traced = make([]int32, c.ivals.len()), make([]int32, c.ivals.len())
	for i := range inner {
		inner[i], traced[i] = -1, -1
	}
	if len(c.annots) == 0 {
		return nil, nil, inner, traced
	}
	sort.SliceStable(c.annots, func(i, j int) bool { return c.annots[i].start < c.annots[j].start })
	out = make([]AnnotationKernels, len(c.annots))
	for i, a := range c.annots {
		out[i] = AnnotationKernels{Name: a.name, TraceID: a.traceID, Start: a.start, End: a.end}
	}
	for k, iv := range c.ivals.all() {
		ln, ok := c.callOf(iv)
		if !ok {
			continue
		}
		// The last annotation starting at or before the launch, then back to enclosing ones.
		i := sort.Search(len(c.annots), func(i int) bool { return c.annots[i].start > ln.start }) - 1
		for steps := 0; i >= 0 && steps < maxNestingWalk && traced[k] < 0; i, steps = i-1, steps+1 {
			a := c.annots[i]
			if a.end < ln.start {
				continue
			}
			if inner[k] < 0 {
				inner[k] = int32(i)
			}
			if a.traceID != "" {
				traced[k] = int32(i)
			}
		}
	}
	byTrace := map[string]*TraceKernelTime{}
	for k, iv := range c.ivals.all() {
		if iv.class == ClassMemory {
			continue
		}
		if i := inner[k]; i >= 0 {
			out[i].Kernels++
			out[i].KernelTime += iv.end - iv.start
		}
		if i := traced[k]; i >= 0 {
			id := c.annots[i].traceID
			t := byTrace[id]
			if t == nil {
				t = &TraceKernelTime{TraceID: id}
				byTrace[id] = t
			}
			t.Kernels++
			t.KernelTime += iv.end - iv.start
		}
	}
	traces = make([]TraceKernelTime, 0, len(byTrace))
	for _, t := range byTrace {
		traces = append(traces, *t)
	}
	sort.Slice(traces, func(i, j int) bool { return traces[i].TraceID < traces[j].TraceID })
	return out, traces, inner, traced
}

// KernelTimeFor returns the kernels launched inside annotations naming traceID (any case,
// 16-digit IDs matching the low half of 32-digit ones), and the GPU idle time that began after
// their work.
func (r *Result) KernelTimeFor(traceID string) TraceKernelTime {
	sum := TraceKernelTime{TraceID: traceID}
	for _, t := range r.ByTraceID {
		if sameTraceID(t.TraceID, traceID) {
			sum.Kernels += t.Kernels
			sum.KernelTime += t.KernelTime
			sum.Idle.Add(t.Idle)
		}
	}
	return sum
}

func annotationNotice(dropped int64) string {
	return fmt.Sprintf("more than %d annotations: %d left out of kernel attribution and the GPU projection", maxAnnotations, dropped)
}
