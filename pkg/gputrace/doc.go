// Package gputrace computes, from a GPU kernel trace captured for a request, the analyses
// `nsys stats` and Holistic Trace Analysis (HTA) define. Facts: shared/design/GPU.md §4–§6.
//
// The kernel-trace code is four rooms, one concern each:
//   - activity: the vocabulary. An Activity (a kernel, a copy, a host call, an annotation), where
//     a request's trace ID was found, and the Sink a reader feeds.
//   - kineto, nsys: one reader per format. kineto reads PyTorch profiler (Kineto) Chrome trace
//     JSON, plain or gzipped, streamed event by event (16-digit epoch µs read exactly from their
//     decimal text; malformed input stops with a *kineto.ParseError, what was read stays); nsys
//     reads Nsight Systems SQLite exports read-only through modernc.org/sqlite, in time order
//     whatever order the rows are stored in. A new format is one more package feeding a Sink.
//   - gputrace (this package): the analyses. Readers feed a Collector one Activity at a time;
//     Collector.Result computes a Result: the cuda_gpu_kern_sum kernel summary, HTA's temporal
//     breakdown and per-stream idle breakdown (analyze.go, mechanisms.go), launch statistics,
//     memcpy volume, blocking host calls, advice with its evidence (advice.go), the request trace
//     IDs the trace names (identify.go) and kernel time per annotation (annotations.go), per
//     launch Nsight Systems' cuda_kern_exec_sum and nvtx_gpu_proj_sum (launches.go), with
//     Limits.Timeline the activities themselves (timeline.go), with Limits.CriticalPath HTA's
//     lightweight critical path (criticalpath.go); Diff compares two sides (diff.go). Memory is
//     bounded by Limits, each cap reported in a notice when reached. files.go declares what a
//     store of traces answers (TraceFile, Found, DiffRequest), so the join reads any store.
//   - tracestore: finding and opening. A Store is a data source's trace directories and buckets:
//     it lists their trace files, finds a request's by trace ID (file name, else content), opens
//     them only inside their directory (an os.Root) and analyses them with their format's reader.
package gputrace
