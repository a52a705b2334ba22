package models

import (
	"cmp"
	"slices"
	"testing"
	"time"
)

// The tree answers as the trace reads: a span's children are the spans naming its ID as their
// parent (not themselves), a span reported twice shares them, a span whose parent is missing has
// none, and Sorted orders a copy.
func TestSpanTree(t *testing.T) {
	t0 := time.Unix(1796450000, 0)
	sp := func(id, parent string, startMs int) Span {
		return Span{SpanID: id, ParentSpanID: parent, Start: t0.Add(time.Duration(startMs) * time.Millisecond), Duration: time.Second}
	}
	spans := []Span{
		sp("r", "", 0),
		sp("b", "r", 30), // children of r in the spans' order: b, a, dup
		sp("a", "r", 10),
		sp("s", "s", 5),       // its own parent: a root
		sp("o", "missing", 1), // parent not in the trace: a root
		sp("b", "r", 20),      // b reported twice
		sp("c", "b", 40),
	}
	tree := NewSpanTree(spans)
	if got := tree.Children("r"); !slices.Equal(got, []int{1, 2, 5}) {
		t.Errorf("children of r: %v", got)
	}
	if got := tree.Children("b"); !slices.Equal(got, []int{6}) {
		t.Errorf("children of b (both of its spans): %v", got)
	}
	if i, ok := tree.Index("b"); !ok || i != 5 {
		t.Errorf("b at %d, %v; want the last of its spans, 5", i, ok)
	}
	if _, ok := tree.Index("missing"); ok || len(tree.Children("s")) != 0 {
		t.Errorf("a missing ID is found, or a span is its own child")
	}
	for i, want := range []bool{false, true, true, false, false, true, true} {
		if got := tree.HasParent(&spans[i]); got != want {
			t.Errorf("span %d has a parent: %v, want %v", i, got, want)
		}
	}
	if root := tree.Root(&Trace{Spans: spans}); root != RequestRoot(&Trace{Spans: spans}) || root != 0 {
		t.Errorf("root %d", root)
	}
	byStart := tree.Sorted(func(a, b int) int { return cmp.Compare(spans[a].Start.UnixNano(), spans[b].Start.UnixNano()) })
	if got := byStart.Children("r"); !slices.Equal(got, []int{2, 5, 1}) {
		t.Errorf("children of r by start: %v", got)
	}
	if got := tree.Children("r"); !slices.Equal(got, []int{1, 2, 5}) {
		t.Errorf("sorting a copy changed the tree: %v", got)
	}
}
