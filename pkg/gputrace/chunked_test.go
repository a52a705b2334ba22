package gputrace

import (
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// A chunked sequence answers as the slice append would have built, across block boundaries:
// its length, each value in place, the values in order, and a sort by the same order.
func TestChunkedAnswersAsASlice(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{0, 1, chunkLen - 1, chunkLen, chunkLen + 1, 3*chunkLen + 17} {
		var c chunked[interval]
		var want []interval
		for i := range n {
			iv := interval{start: rng.Int64N(1000), end: int64(i), device: int32(rng.IntN(4))}
			c.push(iv)
			want = append(want, iv)
		}
		if c.len() != n {
			t.Fatalf("%d pushed: length %d", n, c.len())
		}
		for i := range n {
			if *c.at(i) != want[i] {
				t.Fatalf("%d pushed: value %d is %+v, want %+v", n, i, *c.at(i), want[i])
			}
		}
		var got []interval
		for i, iv := range c.all() {
			if i != len(got) {
				t.Fatalf("%d pushed: index %d after %d values", n, i, len(got))
			}
			got = append(got, iv)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d pushed: all() gives %d values, not the %d pushed", n, len(got), n)
		}
		// Sorted by start, ties by end (unique): the order is fully determined.
		less := func(a, b *interval) bool { return a.start < b.start || a.start == b.start && a.end < b.end }
		sort.Sort(chunkedLess[interval]{&c, less})
		slices.SortFunc(want, func(a, b interval) int {
			if less(&a, &b) {
				return -1
			}
			if less(&b, &a) {
				return 1
			}
			return 0
		})
		got = got[:0]
		for _, iv := range c.all() {
			got = append(got, iv)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("%d pushed: sorted differently from the slice", n)
		}
		if n > 0 {
			c.at(n - 1).end = -1
			if got := *c.at(n - 1); got.end != -1 {
				t.Fatalf("%d pushed: a value changed in place reads %+v", n, got)
			}
		}
	}
}
