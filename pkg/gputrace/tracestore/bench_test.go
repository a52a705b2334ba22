package tracestore

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/heapwatch"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
)

func peakHeap(f func()) uint64 { return heapwatch.Peak(f) }

// BenchmarkDiff200MB diffs two generated 200 MB traces of two requests (kinetogen.WriteBigSeed,
// two seeds) through Store.Diff, as the kernels query's diff view does, and, side by side in each
// iteration, reads one of them through Store.TracesOf, as its summary view does. A side keeps
// per-kernel-name aggregates and one file's analysis at a time, so the diff should take about
// twice the time of one read and about its peak heap. Metrics: seconds and peak heap
// (heapwatch.Peak) of each.
func BenchmarkDiff200MB(b *testing.B) {
	dir := b.TempDir()
	target, baseline := strings.Repeat("a", 32), strings.Repeat("b", 32)
	for seed, id := range map[uint64]string{7: target, 11: baseline} {
		path := filepath.Join(dir, "infer", "infer_"+id+".pt.trace.json")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		if err := kinetogen.WriteBigSeed(f, 200<<20, seed); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
	s := NewStore([]string{dir}, 100, 1<<31)
	ctx := context.Background()
	var diffT, readT time.Duration
	var diffPeak, readPeak uint64
	for b.Loop() {
		t0 := time.Now()
		diffPeak = max(diffPeak, peakHeap(func() {
			d, err := s.Diff(ctx, gputrace.DiffRequest{TraceID: target, Baseline: gputrace.DiffBaseline{TraceID: baseline}})
			if err != nil || d.Baseline.Requests != 1 || d.Target.Requests != 1 || len(d.Kernels) != 300 {
				b.Fatalf("diff: %v %+v", err, d)
			}
		}))
		diffT += time.Since(t0)

		t0 = time.Now()
		readPeak = max(readPeak, peakHeap(func() {
			files, _, err := s.TracesOf(ctx, "", target)
			if err != nil || len(files) != 1 || files[0].Err != nil || len(files[0].Result.Kernels) != 300 {
				b.Fatalf("read: %v %+v", err, files)
			}
		}))
		readT += time.Since(t0)
	}
	n := float64(b.N)
	b.ReportMetric(diffT.Seconds()/n, "diff-s/op")
	b.ReportMetric(readT.Seconds()/n, "read-one-s/op")
	b.ReportMetric(float64(diffPeak)/(1<<20), "diff-peak-heap-MB")
	b.ReportMetric(float64(readPeak)/(1<<20), "read-one-peak-heap-MB")
}
