package kinetogen

import (
	"fmt"
	"io"
	"math/rand/v2"
)

// WriteBig writes a large Kineto trace of at least size bytes for the benchmarks: 4 streams, 300
// kernel names, a launch call and flow pair per kernel, a memcpy every 20 kernels. The same size
// gives the same trace (a fixed seed).
func WriteBig(w io.Writer, size int64) error { return WriteBigSeed(w, size, 7) }

// WriteBigSeed is WriteBig with another seed: another request's trace of the same shape (the
// same kernel names and ranges, other picks and durations), e.g. a diff's other side.
func WriteBigSeed(w io.Writer, size int64, seed uint64) error {
	cw := &countingWriter{w: w}
	k := NewWriter(cw, EpochBase, map[string]string{"rank": "0"})
	rng := rand.New(rand.NewPCG(seed, seed))
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprintf("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_%d>(int, Func)", i)
	}
	var at [4]int64
	for corr := 1; ; corr++ {
		if corr%1000 == 0 {
			if err := k.Flush(); err != nil {
				return err
			}
			if cw.n >= size {
				break
			}
		}
		s := corr % 4
		start := at[s] + int64(rng.IntN(3000))
		end := start + 1 + int64(rng.IntN(50_000))
		k.Runtime("cudaLaunchKernel", start-4000, start-1000, corr)
		if corr%20 == 0 {
			k.Memcpy("Memcpy DtoH (Device -> Pinned)", s+7, start, end, corr, 1<<20)
		} else {
			k.Kernel(names[rng.IntN(len(names))], s+7, start, end, corr)
		}
		at[s] = end
	}
	return k.Close("big", at[0])
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
