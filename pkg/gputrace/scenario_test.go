package gputrace

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
)

// TestScenarioFilesMatchTheirTruth reads each mechanism's scenario from a file, as the kernels
// query does, and checks the figures against the truth kinetogen computed from the events it
// wrote: the kernel count and time, their attribution to the request and its span, the temporal
// breakdown, and the idle split (the same rules, implemented twice).
func TestScenarioFilesMatchTheirTruth(t *testing.T) {
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	dir := t.TempDir()
	for _, m := range kinetogen.Mechanisms {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/%d", m, seed), func(t *testing.T) {
				// The file's name names no trace ID: the annotation is what ties it to the request.
				path := filepath.Join(dir, fmt.Sprintf("%s_%d.pt.trace.json", m, seed))
				f, err := os.Create(path)
				if err != nil {
					t.Fatal(err)
				}
				truth, err := kinetogen.Write(f, kinetogen.Scenario{Mechanism: m, TraceID: traceID, SpanID: spanID, Seed: seed,
					Start: time.Date(2025, 6, 1, 12, 0, 0, 123_456_789, time.UTC), Duration: 15 * time.Millisecond})
				if cerr := f.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					t.Fatal(err)
				}
				c := NewCollector(Limits{})
				if err := kineto.ReadFile(path, c); err != nil {
					t.Fatal(err)
				}
				r := c.Result(AnalysisOptions{})
				if len(r.Notices) > 0 {
					t.Errorf("notices: %q", r.Notices)
				}

				var kernels, kernelTime int64
				for _, k := range r.Kernels {
					kernels += k.Instances
					kernelTime += k.Total
				}
				if kernels != truth.Kernels || kernelTime != truth.KernelTime {
					t.Errorf("kernel summary: %d kernels, %d ns; truth %d, %d ns", kernels, kernelTime, truth.Kernels, truth.KernelTime)
				}
				if kt := r.KernelTimeFor(traceID); kt.Kernels != truth.Kernels || kt.KernelTime != truth.KernelTime {
					t.Errorf("request's kernels: %d, %d ns; truth %d, %d ns", kt.Kernels, kt.KernelTime, truth.Kernels, truth.KernelTime)
				}
				if !r.Matches(traceID) || r.Matches(spanID) {
					t.Errorf("trace IDs %+v: want the request's, not the span's", r.TraceIDs)
				}
				spans := 0
				for _, a := range r.Annotations {
					if strings.Contains(a.Name, spanID) && a.TraceID == traceID {
						spans++
						if a.Kernels != truth.Kernels || a.KernelTime != truth.KernelTime {
							t.Errorf("span's annotation: %d kernels, %d ns; truth %d, %d ns", a.Kernels, a.KernelTime, truth.Kernels, truth.KernelTime)
						}
					}
				}
				if spans != 1 {
					t.Errorf("%d annotations name the trace and the span, want 1: %+v", spans, r.Annotations)
				}

				tb := r.Temporal
				if tb.Start != truth.WindowStart || tb.End != truth.WindowEnd || tb.Span != truth.Window ||
					tb.Compute != truth.KernelTime || tb.Memory != truth.Copies || tb.Idle != truth.Idle() {
					t.Errorf("temporal breakdown %+v, truth %+v", tb, truth)
				}
				if r.Sync.Calls != truth.SyncCalls {
					t.Errorf("%d blocking calls, truth %d", r.Sync.Calls, truth.SyncCalls)
				}
				want := IdleMechanisms{Sync: truth.Sync, Launch: truth.Launch, HostWork: truth.HostWork, Copies: truth.Copies, Queued: truth.Queued,
					SyncGaps: truth.SyncGaps, LaunchGaps: truth.LaunchGaps, HostWorkGaps: truth.HostWorkGaps, QueuedGaps: truth.QueuedGaps,
					DispatchGaps: truth.DispatchGaps}
				if r.GPUIdle != want {
					t.Errorf("idle mechanisms %+v, truth %+v", r.GPUIdle, want)
				}

				checkLaunchTruth(t, r.Launches, truth.KernelLaunches)
				// One range, the request's, launched every GPU activity: its projection is the
				// GPU's window, its GPU ops the activities (one call each).
				name := "request " + traceID + " span " + spanID
				wantRange := RangeProjection{Name: name, Instances: 1, RangeTime: (15 * time.Millisecond).Nanoseconds(),
					Projected: Durations{Total: truth.Window, Avg: float64(truth.Window), Median: float64(truth.Window), Min: truth.Window, Max: truth.Window},
					GPUOps:    truth.Kernels + truth.Transfers}
				if len(r.Ranges) != 1 || r.Ranges[0] != wantRange {
					t.Errorf("ranges %+v, truth %+v", r.Ranges, wantRange)
				}
			})
		}
	}
}

// checkLaunchTruth compares cuda_kern_exec_sum's rows with kinetogen's, exactly: counts, sums,
// minima, maxima and medians of each phase, averages as the sums over the counts.
func checkLaunchTruth(t *testing.T, got []LaunchSummary, truth []kinetogen.LaunchTruth) {
	t.Helper()
	rows := map[[2]string]LaunchSummary{}
	for _, l := range got {
		rows[[2]string{l.Kernel, l.API}] = l
	}
	if len(rows) != len(truth) {
		t.Errorf("%d per-launch rows, truth %d", len(rows), len(truth))
	}
	same := func(d Durations, s kinetogen.Spread, n int64) bool {
		if n == 0 {
			return d == Durations{}
		}
		return d.Total == s.Sum && d.Min == s.Min && d.Max == s.Max && d.Median == s.Median && d.Avg == float64(s.Sum)/float64(n)
	}
	for _, w := range truth {
		g, ok := rows[[2]string{w.Kernel, w.Call}]
		if !ok || g.Count != w.Count || g.Queued != w.Queued || g.MedianEstimated ||
			!same(g.APITime, w.API, w.Count) || !same(g.QueueTime, w.Queue, w.Queued) ||
			!same(g.KernelTime, w.Exec, w.Count) || !same(g.TotalTime, w.Total, w.Count) {
			t.Errorf("%s by %s: %+v, truth %+v", w.Kernel, w.Call, g, w)
		}
	}
	for i := 1; i < len(got); i++ {
		if got[i].TotalTime.Avg > got[i-1].TotalTime.Avg {
			t.Errorf("rows not ordered by the total time's average: %v after %v", got[i].TotalTime.Avg, got[i-1].TotalTime.Avg)
		}
	}
}
