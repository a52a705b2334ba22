package models

import "slices"

// SpanTree is a trace's tree: where each span ID is, and the children of each, worked out once
// for every reader of the trace (the join, the critical path, the breakdown, the verdict): for a
// request of thousands of spans the index is a large map, and each of them built its own.
//
// A span's parent is any span holding its parent span ID (not itself); the spans repeating an ID
// (a span reported twice) share the ID's children. It is read-only once built, so one tree may
// serve readers in parallel.
type SpanTree struct {
	index map[string]int // a span ID's position: the last span holding it
	start []int32        // the children of the ID at position p are at[start[p]:start[p+1]]
	at    []int
}

// NewSpanTree works out the tree of spans; the children of each ID are in the spans' order.
func NewSpanTree(spans []Span) *SpanTree {
	t := &SpanTree{index: make(map[string]int, len(spans)), start: make([]int32, len(spans)+1)}
	for i, s := range spans {
		t.index[s.SpanID] = i
	}
	for i := range spans {
		if p := t.parent(spans, i); p >= 0 {
			t.start[p+1]++
		}
	}
	for i := 1; i < len(t.start); i++ {
		t.start[i] += t.start[i-1]
	}
	t.at = make([]int, t.start[len(spans)])
	next := slices.Clone(t.start[:len(spans)])
	for i := range spans {
		if p := t.parent(spans, i); p >= 0 {
			t.at[next[p]] = i
			next[p]++
		}
	}
	return t
}

// parent is the position of spans[i]'s parent ID; -1 when the trace has none.
func (t *SpanTree) parent(spans []Span, i int) int {
	s := &spans[i]
	if p, ok := t.index[s.ParentSpanID]; ok && s.ParentSpanID != "" && s.ParentSpanID != s.SpanID {
		return p
	}
	return -1
}

// Index is the position of the last span holding the ID; false when none does.
func (t *SpanTree) Index(spanID string) (int, bool) {
	i, ok := t.index[spanID]
	return i, ok
}

// Has says whether a span holds the ID.
func (t *SpanTree) Has(spanID string) bool {
	_, ok := t.index[spanID]
	return ok
}

// HasParent says whether s's parent is in the trace.
func (t *SpanTree) HasParent(s *Span) bool {
	return s.ParentSpanID != "" && s.ParentSpanID != s.SpanID && t.Has(s.ParentSpanID)
}

// Children are the spans (indexes) whose parent is the ID, in the spans' order unless Sorted
// ordered them; not to be changed.
func (t *SpanTree) Children(spanID string) []int {
	p, ok := t.index[spanID]
	if !ok {
		return nil
	}
	return t.at[t.start[p]:t.start[p+1]]
}

// Sorted is the same tree with each ID's children ordered by cmp (stable: ties keep the spans'
// order); t is left as it is.
func (t *SpanTree) Sorted(cmp func(a, b int) int) *SpanTree {
	s := &SpanTree{index: t.index, start: t.start, at: slices.Clone(t.at)}
	for p := 0; p+1 < len(s.start); p++ {
		slices.SortStableFunc(s.at[s.start[p]:s.start[p+1]], cmp)
	}
	return s
}

// Root is RequestRoot read from the tree.
func (t *SpanTree) Root(tr *Trace) int { return RequestRootIn(tr, t.Has) }
