package kinetogen

import (
	"bufio"
	"fmt"
	"io"
	"sort"
	"strconv"
)

// Writer writes traces the way PyTorch's profiler (Kineto's ChromeTraceLogger,
// libkineto/src/output_json.cpp) does, so tests read what production reads:
//
//   - one JSON object: "schemaVersion", "deviceProperties" (one object per GPU), optional
//     "distributedInfo", then "traceEvents", then "traceName" and "displayTimeUnit";
//   - events one per line, fields in Kineto's order: ph, cat, name, pid, tid, ts, dur, args;
//   - ts and dur in microseconds with exactly three decimals, ts since the Unix epoch as CUDA
//     traces have them: 16 integer digits ("1623143089861234.567"), beyond float64's precision;
//   - GPU events: pid = device (Device, 0 unless set), tid = stream; args "External id", "device",
//     "stream", "correlation" (the launching runtime call's), kernel launch geometry, memcpy
//     "bytes" and "memory bandwidth (GB/s)";
//   - runtime calls: cat "cuda_runtime", args "External id", "cbid", "correlation";
//   - a flow pair (ph "s" then "f", cat "ac2g", id = correlation) from each launch to its work;
//   - process/thread name metadata (ph "M") first, and a final "Trace" span.
//
// Old spellings (cat "Kernel", "Runtime", "Memcpy", "Memset") are written when Old is set.
// Times passed to the methods are nanoseconds after the base given to NewWriter.
type Writer struct {
	// Old writes the old category spellings.
	Old bool
	// Device is the GPU the next kernels, copies and memsets run on.
	Device int

	w     *bufio.Writer
	base  int64 // ns
	n     int
	extID int
}

// EpochBase is a CUDA trace's time base in nanoseconds: 2021-06-08 as epoch µs with three
// decimals, 16 integer digits ("1623143089861234.567"), the form real Kineto traces write.
const EpochBase = 1_623_143_089_861_234_567

// hostPID is the host process and thread id the Writer's host events carry.
const hostPID = 1234

// NewWriter starts a trace whose event times are nanoseconds after baseNs (epoch ns, e.g.
// EpochBase); dist, when not nil, is written as "distributedInfo" (keys sorted).
func NewWriter(w io.Writer, baseNs int64, dist map[string]string) *Writer {
	k := newWriter(w, baseNs)
	k.w.WriteString("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    " + deviceProperties(0) + "\n  ],\n")
	k.distributed(dist)
	k.w.WriteString("  \"traceEvents\": [\n")
	k.raw(fmt.Sprintf(`{"name": "process_name", "ph": "M", "ts": %s, "pid": 0, "tid": 0, "args": {"name": "python"}}`, Micros(baseNs)))
	k.raw(fmt.Sprintf(`{"name": "thread_name", "ph": "M", "ts": %s, "pid": 0, "tid": 7, "args": {"name": "stream 7"}}`, Micros(baseNs)))
	return k
}

func newWriter(w io.Writer, baseNs int64) *Writer {
	return &Writer{w: bufio.NewWriterSize(w, 1<<20), base: baseNs}
}

// deviceProperties is Kineto's description of GPU id (an H100).
func deviceProperties(id int) string {
	return fmt.Sprintf(`{"id": %d, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 84929216512, "computeMajor": 9, "computeMinor": 0, "maxThreadsPerBlock": 1024, "numSms": 132, "regsPerBlock": 65536, "sharedMemPerBlock": 49152}`, id)
}

// distributed writes "distributedInfo", keys sorted so that the output is the same every run.
func (k *Writer) distributed(dist map[string]string) {
	if dist == nil {
		return
	}
	keys := make([]string, 0, len(dist))
	for key := range dist {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	k.w.WriteString("  \"distributedInfo\": {")
	for i, key := range keys {
		if i > 0 {
			k.w.WriteString(", ")
		}
		fmt.Fprintf(k.w, "%q: %q", key, dist[key])
	}
	k.w.WriteString("},\n")
}

// Micros formats nanoseconds as Kineto's microseconds with three decimals.
func Micros(ns int64) string {
	neg := ""
	if ns < 0 {
		neg, ns = "-", -ns
	}
	return neg + strconv.FormatInt(ns/1000, 10) + "." + fmt.Sprintf("%03d", ns%1000)
}

func (k *Writer) raw(ev string) {
	if k.n > 0 {
		k.w.WriteString(",\n")
	}
	k.w.WriteString("  ")
	k.w.WriteString(ev)
	k.n++
}

func (k *Writer) cat(newName, oldName string) string {
	if k.Old && oldName != "" {
		return oldName
	}
	return newName
}

// Runtime writes a runtime call [start, end) with its correlation (and, when corr is not 0, the
// start of its flow), with a new External id and cbid 211 (cudaLaunchKernel's) whatever the name.
func (k *Writer) Runtime(name string, start, end int64, corr int) {
	k.extID++
	k.runtimeCall(name, 211, start, end, corr, k.extID, corr != 0)
}

// runtimeCall writes a runtime call made inside the op of External id ext; outside any op
// (ext 0) Kineto writes no External id.
func (k *Writer) runtimeCall(name string, cbid int, start, end int64, corr, ext int, flow bool) {
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": %q, "name": %q, "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {%s"cbid": %d, "correlation": %d}}`,
		k.cat("cuda_runtime", "Runtime"), name, hostPID, hostPID, Micros(k.base+start), Micros(end-start), externalID(ext), cbid, corr))
	if flow {
		k.raw(fmt.Sprintf(`{"ph": "s", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g"}`, corr, hostPID, hostPID, Micros(k.base+start)))
	}
}

// Kernel writes a kernel on stream [start, end), launched by the call of correlation corr, with
// the External id of the last host event written.
func (k *Writer) Kernel(name string, stream int, start, end int64, corr int) {
	k.kernel(name, stream, start, end, corr, k.extID)
}

func (k *Writer) kernel(name string, stream int, start, end int64, corr, ext int) {
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": %q, "name": %q, "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d, "queued": 0, "device": %d, "context": 1, "stream": %d, "correlation": %d, "registers per thread": 32, "shared memory": 0, "blocks per SM": 0.5, "warps per SM": 2, "grid": [66, 1, 1], "block": [128, 1, 1], "est. achieved occupancy %%": 3}}`,
		k.cat("kernel", "Kernel"), name, k.Device, stream, Micros(k.base+start), Micros(end-start), ext, k.Device, stream, corr))
	k.flowEnd(stream, start, corr)
}

// Memcpy writes a copy (name as CUPTI's, e.g. "Memcpy HtoD (Pageable -> Device)") of bytes.
func (k *Writer) Memcpy(name string, stream int, start, end int64, corr int, bytes int64) {
	k.memcpy(name, stream, start, end, corr, bytes, k.extID)
}

func (k *Writer) memcpy(name string, stream int, start, end int64, corr int, bytes int64, ext int) {
	gbps := float64(bytes) / float64(end-start)
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": %q, "name": %q, "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d, "device": %d, "context": 1, "stream": %d, "correlation": %d, "bytes": %d, "memory bandwidth (GB/s)": %g}}`,
		k.cat("gpu_memcpy", "Memcpy"), name, k.Device, stream, Micros(k.base+start), Micros(end-start), ext, k.Device, stream, corr, bytes, gbps))
	k.flowEnd(stream, start, corr)
}

// Memset writes a "Memset (Device)" of bytes.
func (k *Writer) Memset(stream int, start, end int64, corr int, bytes int64) {
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": %q, "name": "Memset (Device)", "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d, "device": %d, "context": 1, "stream": %d, "correlation": %d, "bytes": %d, "memory bandwidth (GB/s)": 1}}`,
		k.cat("gpu_memset", "Memset"), k.Device, stream, Micros(k.base+start), Micros(end-start), k.extID, k.Device, stream, corr, bytes))
	k.flowEnd(stream, start, corr)
}

func (k *Writer) flowEnd(stream int, start int64, corr int) {
	if corr != 0 {
		k.raw(fmt.Sprintf(`{"ph": "f", "id": %d, "pid": %d, "tid": %d, "ts": %s, "cat": "ac2g", "name": "ac2g", "bp": "e"}`, corr, k.Device, stream, Micros(k.base+start)))
	}
}

// Span writes a host-side event of any category (cpu_op, user_annotation, ...) with a new
// External id.
func (k *Writer) Span(cat, name string, start, end int64) {
	k.extID++
	k.span(cat, name, start, end, k.extID)
}

func (k *Writer) span(cat, name string, start, end int64, ext int) {
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": %q, "name": %q, "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": %d, "Record function id": 0, "Ev Idx": %d}}`,
		cat, name, hostPID, hostPID, Micros(k.base+start), Micros(end-start), ext, k.n))
}

// Sync writes what Kineto writes for a host call [start, end) that synchronises: the runtime
// call and, inside it, CUPTI's cuda_sync record of the same correlation, named by its kind
// ("Stream Sync" for cudaStreamSynchronize, "Context Sync", "Event Sync", and "Stream Wait
// Event" for cudaStreamWaitEvent, which does not block the host).
func (k *Writer) Sync(call, kind string, stream int, start, end int64, corr int) {
	k.Runtime(call, start, end, corr)
	d := end - start
	k.syncRecord(kind, stream, stream, start+d/8, end-d/8, corr, k.extID)
}

// syncRecord writes a cuda_sync record on the GPU's row tid with "stream" streamArg.
func (k *Writer) syncRecord(kind string, tid, streamArg int, start, end int64, corr, ext int) {
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": "cuda_sync", "name": %q, "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {%s"cuda_sync_kind": %q, "stream": %d, "correlation": %d, "device": %d, "context": 1}}`,
		kind, k.Device, tid, Micros(k.base+start), Micros(end-start), externalID(ext), kind, streamArg, corr, k.Device))
}

// externalID is the "External id" arg and its comma, none for 0.
func externalID(ext int) string {
	if ext == 0 {
		return ""
	}
	return fmt.Sprintf(`"External id": %d, `, ext)
}

// Flush writes out what is buffered (the trace is not complete until Close).
func (k *Writer) Flush() error { return k.w.Flush() }

// Close writes the "Trace" span [base, base+end) and the closing keys, and flushes.
func (k *Writer) Close(traceName string, end int64) error {
	k.traceSpan(end)
	fmt.Fprintf(k.w, "\n  ],\n  \"traceName\": %q,\n  \"displayTimeUnit\": \"ms\",\n  \"baseTimeNanoseconds\": %d\n}", traceName, 1700000000000000000)
	return k.w.Flush()
}

func (k *Writer) traceSpan(end int64) {
	k.raw(fmt.Sprintf(`{"name": "PyTorch Profiler (0)", "ph": "X", "cat": "Trace", "ts": %s, "dur": %s, "pid": "Spans", "tid": "PyTorch Profiler", "args": {"Op count": 0}}`, Micros(k.base), Micros(end)))
}
