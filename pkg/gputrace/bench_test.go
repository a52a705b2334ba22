package gputrace

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/heapwatch"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
)

// writeBigTrace writes kinetogen.WriteBig's trace of at least size bytes to path.
func writeBigTrace(tb testing.TB, path string, size int64) {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := kinetogen.WriteBig(f, size); err != nil {
		f.Close()
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// peakHeap is the heap f needed at once (heapwatch.Peak).
func peakHeap(f func()) uint64 { return heapwatch.Peak(f) }

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
			if err := kineto.ReadFile(path, c); err != nil {
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
					if err := kineto.ReadFile(path, c); err != nil {
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
