package nsys

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

// FuzzReadNsys feeds damaged Nsight Systems exports (a real export's bytes, cut and mutated) to
// the SQLite reader: it must answer with an error or figures within the analyses' bounds, never
// panic, hang or write.
func FuzzReadNsys(f *testing.F) {
	seedPath := filepath.Join(f.TempDir(), "seed.sqlite")
	writeNsysFixture(f, seedPath, true)
	seed, err := os.ReadFile(seedPath)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)/2])
	f.Add([]byte("SQLite format 3\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "export.sqlite")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c := gputrace.NewCollector(gputrace.Limits{MaxIntervals: 1000, MaxLaunches: 1000, MaxSamplesPerKernel: 16, MaxKernelNames: 50, MaxPathEvents: 5000, CriticalPath: true, Timeline: true, MaxTimelineActivities: 64})
		_ = Read(ctx, path, c) // any error is fine; a panic or a hang is not
		r := c.Result(gputrace.AnalysisOptions{})
		if tl := r.Timeline; tl == nil || len(tl.Activities) > 64 || len(tl.Processes) > activity.MaxProcessNames || tl.Dropped < 0 {
			t.Fatalf("unbounded timeline: %+v", tl)
		}
		if tb := r.Temporal; tb.Compute+tb.Communication+tb.Memory+tb.Idle != tb.Span {
			t.Fatalf("breakdown does not add up: %+v", tb)
		}
		if len(r.Launches) > 51 || len(r.Ranges) > 51 || len(r.Kernels) > 51 {
			t.Fatalf("unbounded: %d kernels, %d per-launch rows, %d ranges", len(r.Kernels), len(r.Launches), len(r.Ranges))
		}
		after, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(after, data) {
			t.Fatalf("the reader changed the export (%v)", err)
		}
	})
}
