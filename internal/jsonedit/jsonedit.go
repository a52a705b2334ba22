// Package jsonedit makes the random edits of real replies that the readers' agreement tests feed
// a reader and its reference (a byte or a token put in, taken out or replaced, as a broken proxy
// or another writer might): a fixed, seeded share of a fuzzer's work, as Go's fuzzer stalls on
// some packages at times.
package jsonedit

import (
	"math/rand/v2"
	"slices"
)

// Edit is a copy of b with one to three edits at random places: tokens put in, bytes taken out,
// or a few bytes (at most span) replaced by a token.
func Edit(rng *rand.Rand, b []byte, tokens []string, span int) []byte {
	b = slices.Clone(b)
	for range 1 + rng.IntN(3) {
		at := rng.IntN(len(b) + 1)
		tok := []byte(tokens[rng.IntN(len(tokens))])
		switch end := min(len(b), at+1+rng.IntN(span)); rng.IntN(3) {
		case 0:
			b = slices.Insert(b, at, tok...)
		case 1:
			b = slices.Delete(b, at, end)
		default:
			b = slices.Replace(b, at, end, tok...)
		}
	}
	return b
}
