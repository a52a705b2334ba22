package gputrace

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
)

// batch is a trace shared by two requests served at once on two host threads (11 and 22), the
// way a batching server runs them, with times in µs:
//
//	thread 11: "batch"     [0, 100)  holds "request A" [10, 60) and the call at 80
//	           "request A" [10, 60)  holds "layer" [20, 40)
//	thread 22: "request B" [15, 70)
//
// The calls (correlation: [start, end) on thread → GPU work):
//
//	1: [22, 25) 11 cudaLaunchKernel   → gemm     [30, 50)   in layer, request A, batch
//	2: [18, 20) 22 cudaLaunchKernel   → gemm     [50, 65)   in request B
//	3: [45, 48) 11 cudaGraphLaunch    → relu [66, 70), add [70, 75)  (one call, two kernels)
//	4: [50, 54) 22 cudaMemcpyAsync    → Memcpy HtoD [80, 90)
//	5: [58, 62) 11 cudaLaunchKernel   → gemm [62, 64): ends after request A, inside batch only
//	6: [80, 81) 11 cudaLaunchKernel   → gemm [79, 95): starts before its call returns
//
// Request A's own GPU time is its work's span, [30, 75), not request B's, which ran on the same
// GPU in the middle of it.
func batch() []activity.Activity {
	const us = 1000
	call := func(corr int64, start, end, thread int64, name string) activity.Activity {
		return activity.Activity{Kind: activity.KindRuntime, Name: name, Start: start * us, End: end * us, Thread: thread, Correlation: corr}
	}
	kernel := func(corr int64, start, end int64, name string) activity.Activity {
		return activity.Activity{Kind: activity.KindKernel, Name: name, Start: start * us, End: end * us, Stream: 7, Correlation: corr}
	}
	rng := func(name string, start, end, thread int64) activity.Activity {
		return activity.Activity{Kind: activity.KindAnnotation, Name: name, Start: start * us, End: end * us, Thread: thread}
	}
	return []activity.Activity{
		rng("batch", 0, 100, 11), rng("request A", 10, 60, 11), rng("layer", 20, 40, 11), rng("request B", 15, 70, 22),
		call(1, 22, 25, 11, "cudaLaunchKernel"), kernel(1, 30, 50, "gemm"),
		call(2, 18, 20, 22, "cudaLaunchKernel"), kernel(2, 50, 65, "gemm"),
		call(3, 45, 48, 11, "cudaGraphLaunch"), kernel(3, 66, 70, "relu"), kernel(3, 70, 75, "add"),
		call(4, 50, 54, 22, "cudaMemcpyAsync"), {Kind: activity.KindMemcpy, Name: "Memcpy HtoD", Start: 80 * us, End: 90 * us, Stream: 8, Correlation: 4},
		call(5, 58, 62, 11, "cudaLaunchKernel"), kernel(5, 62, 64, "gemm"),
		call(6, 80, 81, 11, "cudaLaunchKernel"), kernel(6, 79, 95, "gemm"),
	}
}

// kernelsFirst orders the activities as the Nsight Systems export's tables could come: kernels,
// copies, calls, ranges.
func kernelsFirst(acts []activity.Activity) []activity.Activity {
	slices.SortStableFunc(acts, func(a, b activity.Activity) int { return int(a.Kind) - int(b.Kind) })
	return acts
}

func collect(acts []activity.Activity, l Limits) *Result {
	c := NewCollector(l)
	for _, a := range acts {
		c.Add(a)
	}
	return c.Result(AnalysisOptions{})
}

func TestRangesProjectOntoTheWorkTheirThreadLaunched(t *testing.T) {
	r := collect(batch(), Limits{})
	const us = 1000
	one := func(d int64) Durations {
		return Durations{Total: d, Avg: float64(d), Median: float64(d), Min: d, Max: d}
	}
	want := []RangeProjection{
		// Calls 1, 3, 5, 6 (not 2 or 4, thread 22's): GPU work from 30 to 95.
		{Name: "batch", Instances: 1, RangeTime: 100 * us, Projected: one(65 * us), GPUOps: 4},
		// Calls 1 and 3 (5 ends after it): gemm at 30 to add's end at 75; the graph launch is one op.
		{Name: "request A", Instances: 1, RangeTime: 50 * us, Projected: one(45 * us), GPUOps: 2},
		// Calls 2 and 4 (the copy counts): 50 to 90.
		{Name: "request B", Instances: 1, RangeTime: 55 * us, Projected: one(40 * us), GPUOps: 2},
		{Name: "layer", Instances: 1, RangeTime: 20 * us, Projected: one(20 * us), GPUOps: 1},
	}
	if !reflect.DeepEqual(r.Ranges, want) {
		t.Errorf("ranges\n%+v\nwant\n%+v", r.Ranges, want)
	}

	// Without threads (a reader that knows none), a range takes every call inside it.
	acts := batch()
	for i := range acts {
		acts[i].Thread = 0
	}
	for _, g := range collect(acts, Limits{}).Ranges {
		if g.Name == "request A" && (g.GPUOps != 4 || g.Projected.Total != 60*us) {
			t.Errorf("request A without threads: %+v, want calls 1-4 from 30 to 90", g)
		}
	}
}

func TestKernelLaunchesAsCudaKernExecSum(t *testing.T) {
	const us = 1000
	r := collect(batch(), Limits{})
	byKey := map[[2]string]LaunchSummary{}
	for _, l := range r.Launches {
		byKey[[2]string{l.Kernel, l.API}] = l
	}
	if len(byKey) != 3 {
		t.Fatalf("rows %+v: want gemm by cudaLaunchKernel, relu and add by cudaGraphLaunch (copies are no kernels)", r.Launches)
	}
	// gemm by cudaLaunchKernel, calls 1, 2, 5, 6: API 3, 2, 4, 1 µs; queue 5, 30, 0 µs and none
	// for call 6 (its kernel started at 79, before the call returned at 81); kernel 20, 15, 2,
	// 16 µs; total to the later of call end and kernel end: 28, 47, 6, 15 µs.
	gemm := byKey[[2]string{"gemm", "cudaLaunchKernel"}]
	wantGemm := LaunchSummary{Kernel: "gemm", API: "cudaLaunchKernel", Count: 4, Queued: 3,
		TotalTime:  Durations{Total: 96 * us, Avg: 24 * us, Median: 21.5 * us, Min: 6 * us, Max: 47 * us},
		APITime:    Durations{Total: 10 * us, Avg: 2.5 * us, Median: 2.5 * us, Min: 1 * us, Max: 4 * us},
		QueueTime:  Durations{Total: 35 * us, Avg: 35.0 / 3 * us, Median: 5 * us, Min: 0, Max: 30 * us},
		KernelTime: Durations{Total: 53 * us, Avg: 13.25 * us, Median: 15.5 * us, Min: 2 * us, Max: 20 * us}}
	if gemm != wantGemm {
		t.Errorf("gemm\n%+v\nwant\n%+v", gemm, wantGemm)
	}
	// The graph launch's two kernels each count, with the call's API time.
	if add := byKey[[2]string{"add", "cudaGraphLaunch"}]; add.Count != 1 || add.APITime.Total != 3*us || add.QueueTime.Total != 22*us || add.TotalTime.Total != 30*us {
		t.Errorf("add %+v", add)
	}
	// Ordered by the total time's average, largest first: add's 30 µs, relu's 25, gemm's 24.
	if got := []string{r.Launches[0].Kernel, r.Launches[1].Kernel, r.Launches[2].Kernel}; !slices.Equal(got, []string{"add", "relu", "gemm"}) {
		t.Errorf("order %v", got)
	}

	// Kernels read before their calls (as the Nsight Systems export lists its tables) join the
	// same.
	acts := kernelsFirst(batch())
	if r2 := collect(acts, Limits{}); !reflect.DeepEqual(r2.Launches, r.Launches) || !reflect.DeepEqual(r2.Ranges, r.Ranges) {
		t.Errorf("kernels first:\n%+v\ncalls first:\n%+v", r2.Launches, r.Launches)
	}
}

func TestPerLaunchLimitsAreNoticed(t *testing.T) {
	// Two launch calls kept: the others' kernels find no call.
	r := collect(batch(), Limits{MaxLaunches: 2})
	var n int64
	for _, l := range r.Launches {
		n += l.Count
	}
	if n != 2 || !hasNotice(r, "found no launch call to join") {
		t.Errorf("%d launches joined, notices %q", n, r.Notices)
	}
	// Two kernels may wait for their call: the third is left out, and said to be, with the
	// one whose call never came.
	waiting := []activity.Activity{{Kind: activity.KindKernel, Name: "k", Start: 10, End: 20, Correlation: 1}, {Kind: activity.KindKernel, Name: "k", Start: 20, End: 30, Correlation: 2},
		{Kind: activity.KindKernel, Name: "k", Start: 30, End: 40, Correlation: 3}, {Kind: activity.KindRuntime, Name: "cudaLaunchKernel", Start: 0, End: 5, Correlation: 1}}
	if r := collect(waiting, Limits{MaxLaunches: 2}); len(r.Launches) != 1 || r.Launches[0].Count != 1 ||
		!hasNotice(r, "2 kernels found no launch call to join (1 of them past the 2 kept waiting for their call)") {
		t.Errorf("launches %+v, notices %q", r.Launches, r.Notices)
	}
	// Medians from a sample, rows and names past their caps.
	r = collect(batch(), Limits{MaxSamplesPerKernel: 1, MaxKernelNames: 2})
	for _, want := range []string{"per-launch medians are estimated", `launches folded into "(other kernels)"`, `folded into "(other ranges)"`} {
		if !hasNotice(r, want) {
			t.Errorf("no notice %q in %q", want, r.Notices)
		}
	}
	// Kernels without a launch call are left out, as nsys leaves them, and said to be.
	r = collect([]activity.Activity{{Kind: activity.KindKernel, Name: "k", Start: 1, End: 2, Correlation: 9}, {Kind: activity.KindKernel, Name: "k", Start: 3, End: 4}}, Limits{})
	if len(r.Launches) != 0 || !hasNotice(r, "2 kernels have no launch call in the trace") {
		t.Errorf("launches %+v, notices %q", r.Launches, r.Notices)
	}
}

// More ranges open at once than the projection looks at: the rest are left out, with a notice,
// and the work stays bounded.
func TestTooManyOpenRanges(t *testing.T) {
	var acts []activity.Activity
	for i := range int64(maxOpenRanges + 10) {
		acts = append(acts, activity.Activity{Kind: activity.KindAnnotation, Name: "r", Start: i, End: 1_000_000})
	}
	acts = append(acts, activity.Activity{Kind: activity.KindRuntime, Name: "cudaLaunchKernel", Start: 500, End: 600, Correlation: 1},
		activity.Activity{Kind: activity.KindKernel, Name: "k", Start: 700, End: 800, Correlation: 1})
	r := collect(acts, Limits{})
	if len(r.Ranges) != 1 || r.Ranges[0].Instances != maxOpenRanges || !hasNotice(r, "10 ranges left out of the GPU projection") {
		t.Errorf("ranges %+v, notices %q", r.Ranges, r.Notices)
	}
}

// Kineto's host events carry their thread (kineto's TestThreadIDs reads them); a range holds
// only its own thread's calls.
func TestRangesHoldTheirThreadsCalls(t *testing.T) {
	// Kineto's host events carry their thread; a trace without tids projects by time alone.
	c := NewCollector(Limits{})
	trace := `{"traceEvents": [
	  {"ph": "X", "cat": "user_annotation", "name": "step", "pid": 1, "tid": "5", "ts": 0, "dur": 100},
	  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 6, "ts": 10, "dur": 5, "args": {"correlation": 1}},
	  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 20, "dur": 5, "args": {"correlation": 1, "stream": 7}},
	  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 5, "ts": 30, "dur": 5, "args": {"correlation": 2}},
	  {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 40, "dur": 5, "args": {"correlation": 2, "stream": 7}}]}`
	if err := kineto.Read(strings.NewReader(trace), c); err != nil {
		t.Fatal(err)
	}
	if r := c.Result(AnalysisOptions{}); len(r.Ranges) != 1 || r.Ranges[0].GPUOps != 1 || r.Ranges[0].Projected.Total != 5000 {
		t.Errorf("ranges %+v: want the one call of thread 5", r.Ranges)
	}
}
