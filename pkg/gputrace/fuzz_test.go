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
	f.Fuzz(func(t *testing.T, data []byte) {
		c := NewCollector(Limits{MaxIntervals: 1000, MaxLaunches: 1000, MaxSamplesPerKernel: 16, MaxKernelNames: 50})
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
		checkCriticalPath(t, r.CriticalPath)
	})
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
		c := NewCollector(Limits{MaxIntervals: 1000, MaxLaunches: 1000, MaxSamplesPerKernel: 16, MaxKernelNames: 50})
		_ = ReadNsys(ctx, path, c) // any error is fine; a panic or a hang is not
		r := c.Result(AnalysisOptions{})
		if tb := r.Temporal; tb.Compute+tb.Communication+tb.Memory+tb.Idle != tb.Span {
			t.Fatalf("breakdown does not add up: %+v", tb)
		}
		after, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(after, data) {
			t.Fatalf("the reader changed the export (%v)", err)
		}
	})
}
