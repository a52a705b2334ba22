// Package gputrace reads GPU kernel traces captured for a request and computes the analyses
// `nsys stats` and Holistic Trace Analysis (HTA) define. Facts: shared/design/GPU.md §4–§6.
//
// Readers feed a Collector one Activity at a time:
//   - ReadChrome / ReadChromeFile: PyTorch profiler (Kineto) Chrome trace JSON, plain or
//     gzipped (detected by magic bytes), streamed event by event with encoding/json's Decoder.
//     Old and new `cat` spellings are accepted; ts/dur are converted from µs to ns exactly,
//     from their decimal text (16-digit epoch µs are beyond float64).
//     Malformed input stops the read with a *ParseError (byte offset, event index, cause);
//     what was read before stays in the Collector. Unknown categories, wrongly typed fields,
//     negative timestamps and overlaps become notices.
//   - ReadNsys: Nsight Systems SQLite export, read-only, through modernc.org/sqlite (pure Go).
//     Absent tables mean no such activity.
//
// Collector.Result computes a Result: the cuda_gpu_kern_sum kernel summary, HTA's temporal
// breakdown (per GPU, and for the file as their sum) and per-stream idle breakdown (HTA's
// effective rules), launch statistics, memcpy volume and bandwidth by direction, blocking host
// calls counted once, advice with its evidence, the request trace IDs the trace
// names (file name, traceName, metadata, annotations), kernel time per annotation and per
// trace ID, and per launch (launches.go) Nsight Systems' cuda_kern_exec_sum (API, queue and
// kernel time per kernel and launch call) and nvtx_gpu_proj_sum (ranges projected onto the GPU
// work their thread launched). Memory is bounded by Limits: per kernel name (and per kernel
// and launch call) aggregates plus capped samples, and capped intervals and launches, each cap
// reported in a notice when reached. With
// Limits.Timeline it also keeps the earliest MaxTimelineActivities activities themselves
// (Result.Timeline: host threads, streams, launch geometry), which Timeline.Tree nests by time
// and joins to their launch calls: the kernels query's timeline view; with
// Limits.CriticalPath, the events of HTA's lightweight critical path (criticalpath.go).
//
// AnalyzeOpened does all of it for one opened file. A Store is a data source's trace directories: it
// lists their trace files, finds a request's by trace ID (file name, else content), and opens
// and analyses them only inside their directory, through an os.Root.
package gputrace
