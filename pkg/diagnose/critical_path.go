package diagnose

import (
	"cmp"
	"slices"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// PathSegment is a stretch of the request's critical path and the span that was doing the work
// then: the deepest span on the path, with no child of its own running on the path.
type PathSegment struct {
	Span     int // index into the trace's spans
	From, To time.Time
}

// Duration is the segment's length.
func (s PathSegment) Duration() time.Duration { return s.To.Sub(s.From) }

// CriticalPath is the chain of work the request's end waited for, as Jaeger's UI draws it: from
// the root's end backwards, the child that finished last before the cursor is on the path (the
// parent waited for it), recursively, then the cursor moves to that child's start; the time no
// such child covers is the span's own. Children are
// clipped to their parent (an async child outliving it counts only inside). The segments, in time
// order, cover the root span exactly: their durations sum to the request's. root is the index of
// the root span (RequestRoot); -1 gives no segment.
func CriticalPath(t *models.Trace, root int) []PathSegment {
	if t == nil || root < 0 || root >= len(t.Spans) {
		return nil
	}
	return criticalPath(t, root, models.NewSpanTree(t.Spans))
}

// criticalPath is CriticalPath with the trace's tree already worked out.
func criticalPath(t *models.Trace, root int, tree *models.SpanTree) []PathSegment {
	var out []PathSegment
	visiting := make([]bool, len(t.Spans)) // a cycle of parent IDs ends the walk
	var walk func(i int, from, to time.Time)
	walk = func(i int, from, to time.Time) {
		visiting[i] = true
		defer func() { visiting[i] = false }()
		// The children of the span's ID: of spans repeating an ID, every one has them all.
		kids := tree.Children(t.Spans[i].SpanID)
		cursor := to
		for cursor.After(from) {
			// The child that finished last at or before the cursor, clipped to this span's window.
			// A sibling still running at the cursor ran in parallel with the path: skipped, as
			// in Jaeger's critical path.
			best, bestEnd := -1, time.Time{}
			for _, c := range kids {
				cs := t.Spans[c]
				start, end := maxTime(cs.Start, from), minTime(cs.Start.Add(cs.Duration), to)
				if visiting[c] || !end.After(start) || end.After(cursor) {
					continue
				}
				if best < 0 || end.After(bestEnd) || end.Equal(bestEnd) && cmp.Compare(t.Spans[c].SpanID, t.Spans[best].SpanID) < 0 {
					best, bestEnd = c, end
				}
			}
			if best < 0 {
				out = append(out, PathSegment{Span: i, From: from, To: cursor})
				return
			}
			if cursor.After(bestEnd) {
				out = append(out, PathSegment{Span: i, From: bestEnd, To: cursor})
			}
			childStart := maxTime(t.Spans[best].Start, from)
			walk(best, childStart, bestEnd)
			cursor = childStart
		}
	}
	r := t.Spans[root]
	walk(root, r.Start, r.Start.Add(r.Duration))
	slices.SortFunc(out, func(a, b PathSegment) int { return a.From.Compare(b.From) })
	return out
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
