package gputrace

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
)

// FuzzReadChrome: any input either reads or fails with a *kineto.ParseError, never panics, and
// what was read still analyses. Inputs the fuzzer found are kept in testdata/fuzz.
func FuzzReadChrome(f *testing.F) {
	fixture := writeFixture(f, false)
	f.Add(fixture)
	f.Add(fixture[:len(fixture)/2])
	f.Add(writeFixture(f, true))
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(fixture[:2000])
	zw.Close()
	f.Add(z.Bytes())
	f.Add([]byte(`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": -1e300, "dur": 1e300}]}`))
	f.Add([]byte(`[{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH", "ts": 1, "dur": 0, "args": {"bytes": 1e30}}]`))
	f.Add([]byte(`{"distributedInfo": {"a": [[[{"b": "4bf92f3577b34da6a3ce929d0e0e4736"}]]]}, "traceName": 5}`))
	// Long and odd numbers: 16-digit epoch µs with decimals, more digits than int64 holds,
	// exponents, negative zero, values at the edge of the range.
	f.Add([]byte(`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1623143089861234.567, "dur": 0.0004999999999999999999, "args": {"stream": 7}},` +
		`{"ph": "X", "cat": "kernel", "name": "k", "ts": 1623143089861234.5675, "dur": 1E+2, "args": {"stream": 7}},` +
		`{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "ts": 000000000000000000000000000001623143089861235, "dur": -0.0, "args": {"stream": 7}},` +
		`{"ph": "X", "cat": "kernel", "name": "k", "ts": 4611686018427387.903, "dur": 4611686018427387.903},` +
		`{"ph": "X", "cat": "kernel", "name": "k", "ts": 123456789012345678901234567890.123456789, "dur": 1e-99999999999},` +
		`{"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "ts": 1.6231430898612345e15, "dur": 9, "args": {"correlation": 3}}]}`))
	// The critical path's inputs: nested host calls on a thread, launches, a kernel, syncs on
	// events that were or were not recorded, a stream wait event, odd tids.
	f.Add([]byte(`{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "op", "tid": 1, "ts": 0, "dur": 50},` +
		`{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 1, "dur": 5, "args": {"correlation": 1}},` +
		`{"ph": "X", "cat": "kernel", "name": "k", "tid": "stream 7", "ts": 7, "dur": 20, "args": {"correlation": 1, "stream": 7}},` +
		`{"ph": "X", "cat": "cuda_runtime", "name": "cudaEventRecord", "tid": 1, "ts": 8, "dur": 1, "args": {"correlation": 2}},` +
		`{"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamWaitEvent", "tid": 1, "ts": 9, "dur": 1, "args": {"correlation": 3}},` +
		`{"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "tid": 8, "ts": 9, "dur": 1, "args": {"correlation": 3, "stream": 8, "wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": 2}},` +
		`{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 10, "dur": 5, "args": {"correlation": 4}},` +
		`{"ph": "X", "cat": "kernel", "name": "k2", "tid": 8, "ts": 28, "dur": 2, "args": {"correlation": 4, "stream": 8}},` +
		`{"ph": "X", "cat": "cuda_runtime", "name": "cudaEventSynchronize", "tid": 1, "ts": 16, "dur": 20, "args": {"correlation": 5}},` +
		`{"ph": "X", "cat": "cuda_sync", "name": "Event Sync", "tid": -1, "ts": 30, "dur": 5, "args": {"correlation": 5, "wait_on_stream": 7, "wait_on_cuda_event_record_corr_id": 2}},` +
		`{"ph": "X", "cat": "cuda_runtime", "name": "cudaDeviceSynchronize", "tid": 1, "ts": 37, "dur": 10, "args": {"correlation": 6}},` +
		`{"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "tid": -1, "ts": 40, "dur": 5, "args": {"correlation": 6, "device": -1}},` +
		`{"ph": "X", "cat": "cuda_sync", "name": "Stream Sync", "tid": 7, "ts": 40, "dur": 5, "args": {"correlation": 4, "stream": 7}}]}`))
	// Host and GPU rows, nested annotations, pids and tids of every form, odd launch geometry.
	f.Add([]byte(`{"traceEvents": [{"ph": "M", "name": "process_name", "pid": "7", "args": {"name": "python"}},` +
		`{"ph": "X", "cat": "user_annotation", "name": "a", "pid": 7, "tid": "8", "ts": 1, "dur": 50},` +
		`{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": -8, "ts": 2, "dur": 5, "args": {"correlation": 1}},` +
		`{"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 7, "tid": 99999999999999999999, "ts": 3, "dur": 1, "args": {"correlation": 1}},` +
		`{"ph": "X", "cat": "gpu_user_annotation", "name": "a", "pid": 0, "tid": 7, "ts": 4, "dur": 40},` +
		`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 3, "args": {"correlation": 1, "grid": [1e99, -1, "x"], "block": 5}},` +
		`{"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": -1, "ts": 40, "dur": 20, "args": {"stream": 4294967295, "correlation": 1}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewCollector(Limits{MaxIntervals: 1000, MaxLaunches: 1000, MaxSamplesPerKernel: 16, MaxKernelNames: 50, MaxPathEvents: 5000, CriticalPath: true, Timeline: true, MaxTimelineActivities: 64})
		err := kineto.Read(bytes.NewReader(data), c)
		var pe *kineto.ParseError
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error %v is not a ParseError", err)
		}
		r := c.Result(AnalysisOptions{})
		if len(r.Notices) > 120 || len(r.TraceIDs) > maxTraceIDs || len(r.Kernels) > 51 {
			t.Fatalf("unbounded result: %d notices %d ids %d kernels", len(r.Notices), len(r.TraceIDs), len(r.Kernels))
		}
		if tb := r.Temporal; tb.Compute+tb.Communication+tb.Memory+tb.Idle != tb.Span {
			t.Fatalf("breakdown does not add up: %+v", tb)
		}
		for _, k := range r.Kernels {
			if k.Instances <= 0 || math.IsNaN(k.StdDev) || math.IsNaN(k.TimePercent) {
				t.Fatalf("bad row %+v", k)
			}
		}
		checkPerLaunch(t, r, 50)
		checkCriticalPath(t, r.CriticalPath)
		checkFuzzedTimeline(t, r.Timeline, 64)
	})
}

// checkPerLaunch: the per-launch rows and the ranges stay within the name cap and hold together.
func checkPerLaunch(t *testing.T, r *Result, maxNames int) {
	t.Helper()
	if len(r.Launches) > maxNames+1 || len(r.Ranges) > maxNames+1 {
		t.Fatalf("unbounded: %d per-launch rows, %d ranges", len(r.Launches), len(r.Ranges))
	}
	sane := func(d Durations, n int64) bool {
		if n == 0 {
			return d == Durations{}
		}
		return d.Min <= d.Max && float64(d.Min) <= d.Median && d.Median <= float64(d.Max) && !math.IsNaN(d.Avg)
	}
	for _, l := range r.Launches {
		if l.Count <= 0 || l.Queued < 0 || l.Queued > l.Count || l.APITime.Min < 0 || l.KernelTime.Min < 0 || l.QueueTime.Min < 0 ||
			!sane(l.TotalTime, l.Count) || !sane(l.APITime, l.Count) || !sane(l.KernelTime, l.Count) || !sane(l.QueueTime, l.Queued) {
			t.Fatalf("bad per-launch row %+v", l)
		}
	}
	for _, g := range r.Ranges {
		if g.Instances <= 0 || g.GPUOps < g.Instances || !sane(g.Projected, g.Instances) {
			t.Fatalf("bad range %+v", g)
		}
	}
}

// checkCriticalPath: a path's shares add up to its length, and it has at most 10 segments.
func checkCriticalPath(t *testing.T, cp *CriticalPath) {
	if cp == nil {
		return
	}
	if cp.CPU+cp.GPU+cp.Sync+cp.Copies != cp.Length || cp.Length < 0 || len(cp.Segments) > 10 {
		t.Fatalf("bad critical path %+v", cp)
	}
}

// checkFuzzedTimeline: whatever was read, the timeline stays within its cap and its names'
// bound, and its tree is one (parents hold their children on their service, launches are host
// calls of the same correlation).
func checkFuzzedTimeline(t *testing.T, tl *Timeline, limit int) {
	t.Helper()
	if tl == nil || len(tl.Activities) > limit || len(tl.Processes) > activity.MaxProcessNames || tl.Dropped < 0 {
		t.Fatalf("unbounded timeline: %+v", tl)
	}
	for _, a := range tl.Activities {
		if len(a.Name) > maxTimelineName || a.End < a.Start {
			t.Fatalf("activity %+v", a)
		}
	}
	checkTree(t, tl)
}

// FuzzPerLaunch feeds the collector activities made from the fuzzer's bytes, in any order, on
// several threads, and checks the per-launch rows and the ranges' projection against a direct
// computation of their definitions (launches.go): each kernel joined to the call of its
// correlation wherever it comes in the stream, each range given every operation whose call lies
// within it on its thread. Six bytes make one activity.
func FuzzPerLaunch(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 1, 1, 0, 5, 0, 2, 1, 0, 8, 3, 1, 4, 0, 1, 0, 40, 0})
	f.Add([]byte{2, 1, 0, 8, 3, 1, 0, 1, 1, 0, 5, 0, 4, 0, 1, 0, 40, 0, 3, 1, 0, 9, 2, 0})
	f.Add([]byte{4, 0, 1, 250, 49, 1, 4, 0, 2, 0, 49, 0, 0, 3, 1, 2, 4, 2, 1, 4, 2, 3, 4, 1, 2, 3, 0, 1, 2, 2, 2, 3, 0, 9, 1, 0, 2, 4, 0, 4, 49, 1})
	f.Fuzz(checkPerLaunchOf)
}

func checkPerLaunchOf(t *testing.T, data []byte) {
	if len(data) > 6*400 {
		data = data[:6*400]
	}
	var acts []activity.Activity
	calls := map[int64]activity.Activity{}
	for i := 0; i+6 <= len(data); i += 6 {
		b := data[i : i+6]
		a := activity.Activity{Correlation: int64(b[1] % 16), Thread: int64(b[2] % 3), Start: int64(int8(b[3])) * 10}
		a.End = a.Start + int64(b[4]%50)
		switch b[0] % 5 {
		case 0, 1:
			if _, dup := calls[a.Correlation]; dup || a.Correlation == 0 {
				continue // one call per correlation, as CUPTI writes them
			}
			a.Kind, a.Name = activity.KindRuntime, []string{"cudaLaunchKernel", "cuLaunchKernel", "cudaGraphLaunch"}[b[5]%3]
			if b[0]%5 == 1 {
				a.Kind = activity.KindDriver
			}
			calls[a.Correlation] = a
		case 2:
			a.Kind, a.Name, a.Thread = activity.KindKernel, fmt.Sprintf("k%d", b[5]%3), 0
		case 3:
			a.Kind, a.Name, a.Thread = activity.KindMemcpy, "Memcpy HtoD", 0
		case 4:
			a.Kind, a.Name, a.Correlation = activity.KindAnnotation, fmt.Sprintf("r%d", b[5]%3), 0
		}
		acts = append(acts, a)
	}
	r := collect(acts, Limits{})

	want := map[[2]string]*phases{}
	type proj struct {
		first, last int64
		corrs       map[int64]bool
	}
	for _, k := range acts {
		c, ok := calls[k.Correlation]
		if k.Kind != activity.KindKernel || !ok {
			continue
		}
		key := [2]string{k.Name, c.Name}
		if want[key] == nil {
			want[key] = &phases{}
		}
		want[key].add(c.Start, c.End, k.Start, k.End)
	}
	got := map[[2]string]LaunchSummary{}
	for _, l := range r.Launches {
		got[[2]string{l.Kernel, l.API}] = l
	}
	if len(got) != len(want) {
		t.Fatalf("%d per-launch rows, want %d", len(got), len(want))
	}
	for key, p := range want {
		if w := p.summary(key[0], key[1]); got[key] != w {
			t.Fatalf("%v:\n got %+v\nwant %+v", key, got[key], w)
		}
	}

	type agg struct {
		n, rangeTime, ops int64
		durs              []int64
	}
	byName := map[string]*agg{}
	for _, rg := range acts {
		if rg.Kind != activity.KindAnnotation {
			continue
		}
		p := proj{corrs: map[int64]bool{}}
		for _, op := range acts {
			c, ok := calls[op.Correlation]
			if op.Kind != activity.KindKernel && op.Kind != activity.KindMemcpy || !ok ||
				c.Start < rg.Start || c.End > rg.End || rg.Thread != 0 && c.Thread != 0 && rg.Thread != c.Thread {
				continue
			}
			if len(p.corrs) == 0 || op.Start < p.first {
				p.first = op.Start
			}
			if len(p.corrs) == 0 || op.End > p.last {
				p.last = op.End
			}
			p.corrs[op.Correlation] = true
		}
		if len(p.corrs) == 0 {
			continue
		}
		g := byName[rg.Name]
		if g == nil {
			g = &agg{}
			byName[rg.Name] = g
		}
		g.n++
		g.rangeTime += rg.End - rg.Start
		g.ops += int64(len(p.corrs))
		g.durs = append(g.durs, p.last-p.first)
	}
	if len(r.Ranges) != len(byName) {
		t.Fatalf("ranges %+v, want %d names", r.Ranges, len(byName))
	}
	for _, g := range r.Ranges {
		w := byName[g.Name]
		if w == nil || g != (RangeProjection{Name: g.Name, Instances: w.n, RangeTime: w.rangeTime, Projected: durationsOf(w.durs), GPUOps: w.ops}) {
			t.Fatalf("range %+v, want %+v", g, w)
		}
	}
}
