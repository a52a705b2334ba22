package models

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Every store's spans come out in one order: by start, then span ID, spans equal in both (one
// reported twice) in the order they came; each span whole, none lost or repeated.
func TestSortSpansOrdersByStartThenID(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 4))
		spans := make([]Span, rng.IntN(60))
		for i := range spans {
			spans[i] = Span{SpanID: fmt.Sprintf("%016x", rng.IntN(20)), Start: time.Unix(0, int64(rng.IntN(8))), Operation: fmt.Sprint(i),
				Attributes: map[string]string{"i": fmt.Sprint(i)}}
		}
		want := slices.Clone(spans)
		slices.SortStableFunc(want, func(a, b Span) int { return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.SpanID, b.SpanID)) })
		SortSpans(spans)
		for i := range spans {
			if spans[i].Operation != want[i].Operation || spans[i].Attributes["i"] != want[i].Operation {
				t.Fatalf("seed %d: position %d holds span %s, want %s", seed, i, spans[i].Operation, want[i].Operation)
			}
		}
	}
}
