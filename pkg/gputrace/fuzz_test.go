package gputrace

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzReadChrome: any input either reads or fails with a *ParseError, never panics, and
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
	// Host and GPU rows, nested annotations, pids and tids of every form, odd launch geometry.
	f.Add([]byte(`{"traceEvents": [{"ph": "M", "name": "process_name", "pid": "7", "args": {"name": "python"}},` +
		`{"ph": "X", "cat": "user_annotation", "name": "a", "pid": 7, "tid": "8", "ts": 1, "dur": 50},` +
		`{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": -8, "ts": 2, "dur": 5, "args": {"correlation": 1}},` +
		`{"ph": "X", "cat": "cuda_driver", "name": "cuLaunchKernel", "pid": 7, "tid": 99999999999999999999, "ts": 3, "dur": 1, "args": {"correlation": 1}},` +
		`{"ph": "X", "cat": "gpu_user_annotation", "name": "a", "pid": 0, "tid": 7, "ts": 4, "dur": 40},` +
		`{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": 3, "args": {"correlation": 1, "grid": [1e99, -1, "x"], "block": 5}},` +
		`{"ph": "X", "cat": "cuda_sync", "name": "Context Sync", "pid": 0, "tid": -1, "ts": 40, "dur": 20, "args": {"stream": 4294967295, "correlation": 1}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewCollector(Limits{MaxIntervals: 1000, MaxLaunches: 1000, MaxSamplesPerKernel: 16, MaxKernelNames: 50, Timeline: true, MaxTimelineActivities: 64})
		err := ReadChrome(bytes.NewReader(data), c)
		var pe *ParseError
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
		checkFuzzedTimeline(t, r.Timeline, 64)
	})
}

// checkFuzzedTimeline: whatever was read, the timeline stays within its cap and its names'
// bound, and its tree is one (parents hold their children on their service, launches are host
// calls of the same correlation).
func checkFuzzedTimeline(t *testing.T, tl *Timeline, limit int) {
	t.Helper()
	if tl == nil || len(tl.Activities) > limit || len(tl.Processes) > maxProcessNames || tl.Dropped < 0 {
		t.Fatalf("unbounded timeline: %+v", tl)
	}
	for _, a := range tl.Activities {
		if len(a.Name) > maxTimelineName || a.End < a.Start {
			t.Fatalf("activity %+v", a)
		}
	}
	checkTree(t, tl)
}

// FuzzReadNsys feeds damaged Nsight Systems exports (a real export's bytes, cut and mutated) to
// the SQLite reader: it must answer with an error or figures, never panic, hang or write.
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
		c := NewCollector(Limits{MaxIntervals: 1000, MaxLaunches: 1000, MaxSamplesPerKernel: 16, MaxKernelNames: 50, Timeline: true, MaxTimelineActivities: 64})
		_ = ReadNsys(ctx, path, c) // any error is fine; a panic or a hang is not
		r := c.Result(AnalysisOptions{})
		checkFuzzedTimeline(t, r.Timeline, 64)
		if tb := r.Temporal; tb.Compute+tb.Communication+tb.Memory+tb.Idle != tb.Span {
			t.Fatalf("breakdown does not add up: %+v", tb)
		}
		after, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(after, data) {
			t.Fatalf("the reader changed the export (%v)", err)
		}
	})
}
