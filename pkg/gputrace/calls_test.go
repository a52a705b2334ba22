package gputrace

import (
	"math/rand/v2"
	"testing"
)

// TestCallStoreAnswersAsAMap puts calls in order, shuffled, in runs (one process after
// another, interleaved processes) and again under the same IDs, and reads every ID back as a Go
// map holding the same puts would answer, before and after the final merge.
func TestCallStoreAnswersAsAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	orders := map[string]func(n int) []int64{
		"in order": func(n int) []int64 {
			ids := make([]int64, n)
			for i := range ids {
				ids[i] = int64(i + 1)
			}
			return ids
		},
		"shuffled": func(n int) []int64 {
			ids := make([]int64, n)
			for i, p := range rng.Perm(n) {
				ids[i] = int64(p + 1)
			}
			return ids
		},
		"two processes interleaved": func(n int) []int64 {
			ids := make([]int64, n)
			for i := range ids {
				ids[i] = int64(i/2+1) | int64(1+i%2)<<32
			}
			return ids
		},
		"mostly in order, some late": func(n int) []int64 {
			ids := make([]int64, n)
			for i := range ids {
				ids[i] = int64(i + 1)
			}
			for range n / 50 {
				i, j := rng.IntN(n), rng.IntN(n)
				ids[i], ids[j] = ids[j], ids[i]
			}
			return ids
		},
	}
	for name, order := range orders {
		for _, n := range []int{1, 100, 3 * minMerge, 50_000} {
			var s callStore
			want := map[int64]hostCall{}
			ids := order(n)
			// Every tenth ID again, with another call: the later one stands.
			ids = append(ids, ids[:n/10]...)
			for i, id := range ids {
				c := hostCall{start: int64(i), end: int64(i) + 5, thread: int32(id % 3), api: int32(i % 4)}
				s.put(id, c)
				want[id] = c
			}
			check := func(when string) {
				if s.len() != len(want) {
					t.Fatalf("%s, %d calls, %s: holds %d, want %d", name, n, when, s.len(), len(want))
				}
				for id, c := range want {
					if got, ok := s.get(id); !ok || got != c {
						t.Fatalf("%s, %d calls, %s: ID %d gives %+v %v, want %+v", name, n, when, id, got, ok, c)
					}
				}
				for _, id := range []int64{0, -1, int64(n) + 7, 3 << 32} {
					if _, ok := want[id]; !ok {
						if got, ok := s.get(id); ok {
							t.Fatalf("%s, %d calls, %s: ID %d absent but gives %+v", name, n, when, id, got)
						}
					}
				}
			}
			check("while reading")
			s.merge()
			if len(s.late) != 0 {
				t.Fatalf("%s: %d calls left late after the merge", name, len(s.late))
			}
			check("merged")
			for id := range want {
				if i := s.index(id); i < 0 || s.sorted.at(int(i)).id != id {
					t.Fatalf("%s: index of %d is %d", name, id, i)
				}
			}
		}
	}
}
