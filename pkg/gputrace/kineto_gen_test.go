package gputrace

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
)

// kinetoWriter writes traces the way PyTorch's profiler (Kineto's ChromeTraceLogger,
// libkineto/src/output_json.cpp) does, so tests read what production reads:
//
//   - one JSON object: "schemaVersion", "deviceProperties" (one object per GPU), optional
//     "distributedInfo", then "traceEvents", then "traceName" and "displayTimeUnit";
//   - events one per line, fields in Kineto's order: ph, cat, name, pid, tid, ts, dur, args;
//   - ts and dur in microseconds with exactly three decimals, ts since the Unix epoch as CUDA
//     traces have them: 16 integer digits ("1623143089861234.567"), beyond float64's precision;
//   - GPU events: pid = device (dev, 0 unless set), tid = stream; args "External id", "device", "stream",
//     "correlation" (the launching runtime call's), kernel launch geometry, memcpy "bytes" and
//     "memory bandwidth (GB/s)";
//   - runtime calls: cat "cuda_runtime", args "External id", "cbid", "correlation";
//   - a flow pair (ph "s" then "f", cat "ac2g", id = correlation) from each launch to its work;
//   - process/thread name metadata (ph "M") first, and a final "Trace" span.
//
// Old spellings (cat "Kernel", "Runtime", "Memcpy") are written when old is set.
type kinetoWriter struct {
	w     *bufio.Writer
	base  int64 // ns
	n     int
	old   bool
	extID int
	dev   int // the GPU the next kernels, copies and memsets run on
}

// epochBase is a CUDA trace's time base: 2021-06-08 as epoch µs with three decimals, 16 integer
// digits ("1623143089861234.567"), the form real Kineto traces write.
const epochBase = 1_623_143_089_861_234_567

func newKinetoWriter(w io.Writer, baseNs int64, dist map[string]string) *kinetoWriter {
	k := &kinetoWriter{w: bufio.NewWriterSize(w, 1<<20), base: baseNs}
	fmt.Fprintf(k.w, "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\", \"totalGlobalMem\": 84929216512, \"computeMajor\": 9, \"computeMinor\": 0, \"maxThreadsPerBlock\": 1024, \"numSms\": 132, \"regsPerBlock\": 65536, \"sharedMemPerBlock\": 49152}\n  ],\n")
	if dist != nil {
		fmt.Fprintf(k.w, "  \"distributedInfo\": {")
		i := 0
		for key, v := range dist {
			if i > 0 {
				k.w.WriteString(", ")
			}
			fmt.Fprintf(k.w, "%q: %q", key, v)
			i++
		}
		k.w.WriteString("},\n")
	}
	k.w.WriteString("  \"traceEvents\": [\n")
	k.raw(fmt.Sprintf(`{"name": "process_name", "ph": "M", "ts": %s, "pid": 0, "tid": 0, "args": {"name": "python"}}`, us(baseNs)))
	k.raw(fmt.Sprintf(`{"name": "thread_name", "ph": "M", "ts": %s, "pid": 0, "tid": 7, "args": {"name": "stream 7"}}`, us(baseNs)))
	return k
}

// us formats nanoseconds as Kineto's microseconds with three decimals.
func us(ns int64) string {
	neg := ""
	if ns < 0 {
		neg, ns = "-", -ns
	}
	return neg + strconv.FormatInt(ns/1000, 10) + "." + fmt.Sprintf("%03d", ns%1000)
}

func (k *kinetoWriter) raw(ev string) {
	if k.n > 0 {
		k.w.WriteString(",\n")
	}
	k.w.WriteString("  ")
	k.w.WriteString(ev)
	k.n++
}

func (k *kinetoWriter) cat(newName, oldName string) string {
	if k.old && oldName != "" {
		return oldName
	}
	return newName
}

// runtime writes a launch call [start, end) (ns from base) with its correlation.
func (k *kinetoWriter) runtime(name string, start, end int64, corr int) {
	k.extID++
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": %q, "name": %q, "pid": 1234, "tid": 1234, "ts": %s, "dur": %s, "args": {"External id": %d, "cbid": 211, "correlation": %d}}`,
		k.cat("cuda_runtime", "Runtime"), name, us(k.base+start), us(end-start), k.extID, corr))
	if corr != 0 {
		k.raw(fmt.Sprintf(`{"ph": "s", "id": %d, "pid": 1234, "tid": 1234, "ts": %s, "cat": "ac2g", "name": "ac2g"}`, corr, us(k.base+start)))
	}
}

func (k *kinetoWriter) kernel(name string, stream int, start, end int64, corr int) {
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": %q, "name": %q, "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d, "queued": 0, "device": %d, "context": 1, "stream": %d, "correlation": %d, "registers per thread": 32, "shared memory": 0, "blocks per SM": 0.5, "warps per SM": 2, "grid": [66, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %%": 3}}`,
		k.cat("kernel", "Kernel"), name, k.dev, stream, us(k.base+start), us(end-start), k.extID, k.dev, stream, corr))
	k.flowEnd(stream, start, corr)
}

func (k *kinetoWriter) memcpy(name string, stream int, start, end int64, corr int, bytes int64) {
	gbps := float64(bytes) / float64(end-start)
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": %q, "name": %q, "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d, "device": %d, "context": 1, "stream": %d, "correlation": %d, "bytes": %d, "memory bandwidth (GB/s)": %g}}`,
		k.cat("gpu_memcpy", "Memcpy"), name, k.dev, stream, us(k.base+start), us(end-start), k.extID, k.dev, stream, corr, bytes, gbps))
	k.flowEnd(stream, start, corr)
}

func (k *kinetoWriter) memset(stream int, start, end int64, corr int, bytes int64) {
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": %q, "name": "Memset (Device)", "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d, "device": %d, "context": 1, "stream": %d, "correlation": %d, "bytes": %d, "memory bandwidth (GB/s)": 1}}`,
		k.cat("gpu_memset", "Memset"), k.dev, stream, us(k.base+start), us(end-start), k.extID, k.dev, stream, corr, bytes))
	k.flowEnd(stream, start, corr)
}

func (k *kinetoWriter) flowEnd(stream int, start int64, corr int) {
	if corr != 0 {
		k.raw(fmt.Sprintf(`{"ph": "f", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g", "bp": "e"}`, corr, k.dev, stream, us(k.base+start)))
	}
}

// span writes a host-side event of any category (cpu_op, user_annotation, ...).
func (k *kinetoWriter) span(cat, name string, start, end int64) {
	k.extID++
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": %q, "name": %q, "pid": 1234, "tid": 1234, "ts": %s, "dur": %s, "args": {"External id": %d, "Record function id": 0, "Ev Idx": %d}}`,
		cat, name, us(k.base+start), us(end-start), k.extID, k.n))
}

// sync writes what Kineto writes for a host call [start, end) that synchronises: the runtime
// call and, inside it, CUPTI's cuda_sync record of the same correlation, named by its kind
// ("Stream Sync" for cudaStreamSynchronize, "Context Sync", "Event Sync", and "Stream Wait
// Event" for cudaStreamWaitEvent, which does not block the host).
func (k *kinetoWriter) sync(call, kind string, stream int, start, end int64, corr int) {
	k.runtime(call, start, end, corr)
	d := end - start
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": "cuda_sync", "name": %q, "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d, "cuda_sync_kind": %q, "stream": %d, "correlation": %d, "device": %d, "context": 1}}`,
		kind, k.dev, stream, us(k.base+start+d/8), us(d-d/4), k.extID, kind, stream, corr, k.dev))
}

func (k *kinetoWriter) close(traceName string, end int64) error {
	k.raw(fmt.Sprintf(`{"name": "PyTorch Profiler (0)", "ph": "X", "cat": "Trace", "ts": %s, "dur": %s, "pid": "Spans", "tid": "PyTorch Profiler", "args": {"Op count": 0}}`, us(k.base), us(end)))
	fmt.Fprintf(k.w, "\n  ],\n  \"traceName\": %q,\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": %d\n}", traceName, 1700000000000000000)
	return k.w.Flush()
}

func jsonNumber(s string) json.Number { return json.Number(s) }
