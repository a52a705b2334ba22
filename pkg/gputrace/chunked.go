package gputrace

import "iter"

// chunked is an append-only sequence kept in blocks of chunkLen values: it grows without copying
// what it holds. A slice grown by append copies itself each time it fills, and the garbage
// collector's pacing lets those copies pile up: reading a 200 MB trace, the collector's two
// largest tables (its GPU intervals and host calls) kept a peak heap of twice what it kept.
type chunked[T any] struct {
	blocks [][]T
	n      int
}

const (
	chunkBits = 12
	chunkLen  = 1 << chunkBits
	chunkMask = chunkLen - 1
)

// push appends v.
func (c *chunked[T]) push(v T) {
	if c.n>>chunkBits == len(c.blocks) {
		c.blocks = append(c.blocks, make([]T, chunkLen))
	}
	c.blocks[c.n>>chunkBits][c.n&chunkMask] = v
	c.n++
}

func (c *chunked[T]) len() int { return c.n }

// at is the i-th value, in place.
func (c *chunked[T]) at(i int) *T { return &c.blocks[i>>chunkBits][i&chunkMask] }

// chunkedLess sorts a chunked sequence (sort.Interface) by less.
type chunkedLess[T any] struct {
	c    *chunked[T]
	less func(a, b *T) bool
}

func (s chunkedLess[T]) Len() int           { return s.c.n }
func (s chunkedLess[T]) Less(i, j int) bool { return s.less(s.c.at(i), s.c.at(j)) }
func (s chunkedLess[T]) Swap(i, j int) {
	a, b := s.c.at(i), s.c.at(j)
	*a, *b = *b, *a
}

// all yields each index and value, in order.
func (c *chunked[T]) all() iter.Seq2[int, T] {
	return func(yield func(int, T) bool) {
		for b, block := range c.blocks {
			base := b << chunkBits
			for i := range min(chunkLen, c.n-base) {
				if !yield(base+i, block[i]) {
					return
				}
			}
		}
	}
}
