package correlate

import (
	"fmt"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

// sameTrace compares trace IDs in any case; a 16-digit ID matches the low half of a 32-digit one.
func sameTrace(a, b string) bool {
	a, b = strings.ToLower(a), strings.ToLower(b)
	return a == b || len(a) == 32 && len(b) == 16 && a[16:] == b || len(a) == 16 && len(b) == 32 && b[16:] == a
}

// AttributeKernels sets each row's GPUKernelTime and GPUIdle from the kernel traces that name
// the request: the kernels and GPU idle time of an annotation whose name also carries a span's ID
// go to that span; the rest of the request's (annotations naming only the trace, and
// whole-file figures of a file named for the request) goes to the root span, and the returned
// notice says so. Pure; rows keep nil where nothing is attributed.
func AttributeKernels(rows []SpanRow, traceID string, results []*gputrace.Result) string {
	if len(rows) == 0 {
		return ""
	}
	var total, attributed int64
	var idle, idleAttributed gputrace.IdleMechanisms
	add := func(i int, kernels int64, m gputrace.IdleMechanisms) {
		if rows[i].GPUKernelTime == nil {
			rows[i].GPUKernelTime = new(int64)
			rows[i].GPUIdle = &gputrace.IdleMechanisms{}
		}
		*rows[i].GPUKernelTime += kernels
		rows[i].GPUIdle.Add(m)
	}
	found := false
	for _, r := range results {
		if r == nil {
			continue
		}
		kt := r.KernelTimeFor(traceID)
		requestTime, requestIdle := kt.KernelTime, kt.Idle
		// A file named for the request (file name, traceName, metadata) holds only its work:
		// all of it counts, annotated or not.
		if wholeFileIsRequest(r, traceID) {
			var all int64
			for _, k := range r.Kernels {
				all += k.Total
			}
			requestTime = max(requestTime, all)
			if r.GPUIdle.Total() > requestIdle.Total() {
				requestIdle = r.GPUIdle
			}
		}
		if requestTime > 0 {
			found = true
		}
		total += requestTime
		idle.Add(requestIdle)
		for _, a := range r.Annotations {
			if a.TraceID == "" || !sameTrace(a.TraceID, traceID) {
				continue
			}
			name := strings.ToLower(a.Name)
			for i, row := range rows {
				if id := strings.ToLower(row.Span.SpanID); id != "" && strings.Contains(name, id) {
					add(i, a.KernelTime, a.Idle)
					attributed += a.KernelTime
					idleAttributed.Add(a.Idle)
					break
				}
			}
		}
	}
	if !found {
		return ""
	}
	rest, restIdle := total-attributed, idle.Sub(idleAttributed)
	if rest <= 0 && restIdle.Total() <= 0 {
		return ""
	}
	root := 0
	for i, r := range rows {
		if r.Depth == 0 {
			root = i
			break
		}
	}
	add(root, max(rest, 0), restIdle)
	if rest <= 0 {
		return ""
	}
	return fmt.Sprintf("GPU kernel time: %d ns of the request's kernel traces is not attributed to a span (their annotations name the trace, not a span ID), so it is shown on the root span %s.", rest, rows[root].Span.SpanID)
}

// wholeFileIsRequest reports whether the file itself names the request (not just an annotation
// inside it).
func wholeFileIsRequest(r *gputrace.Result, traceID string) bool {
	for _, id := range r.TraceIDs {
		if id.Source != activity.SourceAnnotation && sameTrace(id.ID, traceID) {
			return true
		}
	}
	return false
}
