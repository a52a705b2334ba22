package gputrace

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
)

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeBigTrace writes a Kineto trace of at least size bytes: 4 streams, 300 kernel names, a
// launch call and flow pair per kernel, a memcpy every 20 kernels.
func writeBigTrace(tb testing.TB, path string, size int64) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	cw := &countingWriter{w: f}
	k := kinetogen.NewWriter(cw, kinetogen.EpochBase, map[string]string{"rank": "0"})
	rng := rand.New(rand.NewPCG(7, 7))
	names := make([]string, 300)
	for i := range names {
		names[i] = fmt.Sprintf("void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_%d>(int, Func)", i)
	}
	var at [4]int64
	for corr := 1; ; corr++ {
		if corr%1000 == 0 {
			k.Flush()
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
	if err := k.Close("big", at[0]); err != nil {
		tb.Fatal(err)
	}
}

// peakHeap samples the heap while f runs; the peak is what f needed at once.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	return max(peak.Load(), base.HeapAlloc) - base.HeapAlloc
}

// BenchmarkChrome200MB reads a generated 200 MB trace and, side by side in each iteration, merely
// tokenises it with encoding/json's Decoder.Token: the least any reader of the file must do.
// Metrics: seconds and MB/s of each, their ratio (parse time ÷ tokenise time), the heap each
// needed at its peak, and what the collector keeps after the read.
func BenchmarkChrome200MB(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.pt.trace.json")
	writeBigTrace(b, path, 200<<20)
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	mb := float64(st.Size()) / (1 << 20)
	var parseT, tokT time.Duration
	var parsePeak, tokPeak, retained uint64
	for b.Loop() {
		t0 := time.Now()
		tokPeak = max(tokPeak, peakHeap(func() {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			dec := json.NewDecoder(f)
			for {
				if _, err := dec.Token(); err != nil {
					if err != io.EOF {
						b.Fatal(err)
					}
					return
				}
			}
		}))
		tokT += time.Since(t0)

		t0 = time.Now()
		var c *Collector
		parsePeak = max(parsePeak, peakHeap(func() {
			c = NewCollector(Limits{})
			if err := ReadChromeFile(path, c); err != nil {
				b.Fatal(err)
			}
			c.Result(AnalysisOptions{})
		}))
		parseT += time.Since(t0)
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		retained = m.HeapAlloc
		runtime.KeepAlive(c)
	}
	n := float64(b.N)
	b.ReportMetric(mb, "file-MB")
	b.ReportMetric(parseT.Seconds()/n, "parse-s/op")
	b.ReportMetric(tokT.Seconds()/n, "tokenise-s/op")
	b.ReportMetric(mb*n/parseT.Seconds(), "parse-MB/s")
	b.ReportMetric(mb*n/tokT.Seconds(), "tokenise-MB/s")
	b.ReportMetric(parseT.Seconds()/tokT.Seconds(), "parse/tokenise")
	b.ReportMetric(float64(parsePeak)/(1<<20), "parse-peak-heap-MB")
	b.ReportMetric(float64(tokPeak)/(1<<20), "tokenise-peak-heap-MB")
	b.ReportMetric(float64(retained)/(1<<20), "retained-heap-MB")
}

// BenchmarkChromeMemoryVsSize reads traces of 20 and 80 MB with the interval and launch caps
// at 10 000: the heap needed grows with distinct kernel names, not with the file. Metrics: the
// file's size and the peak heap while reading and analysing it.
func BenchmarkChromeMemoryVsSize(b *testing.B) {
	for _, size := range []int64{20 << 20, 80 << 20} {
		b.Run(fmt.Sprintf("%dMB", size>>20), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "t.json")
			writeBigTrace(b, path, size)
			st, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(st.Size())
			var peak uint64
			for b.Loop() {
				peak = max(peak, peakHeap(func() {
					c := NewCollector(Limits{MaxIntervals: 10_000, MaxLaunches: 10_000})
					if err := ReadChromeFile(path, c); err != nil {
						b.Fatal(err)
					}
					c.Result(AnalysisOptions{})
				}))
			}
			b.ReportMetric(float64(st.Size())/(1<<20), "file-MB")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}
