// Package kinetogen writes GPU kernel traces the way PyTorch's profiler (Kineto) does, for tests
// and the demo workload: Writer writes them event by event, Write writes the trace of one request's
// GPU work showing one mechanism of GPU idleness, with its ground truth, and WriteBig a large
// trace for the benchmarks. It does not import pkg/gputrace: gputrace's own tests use it, and the
// ground truth is computed here by the rules below, independently of gputrace's analysis, so that
// each checks the other.
//
// # The trace
//
// One host thread (pid = tid = 1234) and one GPU (Scenario.Device), all GPU work on stream 7,
// PyTorch's default stream. The work sits inside one user_annotation [Start, Start+Duration)
// named "request <traceID> span <spanID>" (as record_function writes it), mirrored by a
// gpu_user_annotation over the GPU work. activity.TraceIDsIn takes the first 16- or 32-digit hex
// run of that name for the request's trace ID, so the trace ID comes first and must hold a letter
// a–f; correlate.AttributeKernels gives the annotation's kernels to the span whose ID the name
// contains. Every CUDA call sits in the cpu_op that made it (aten::addmm, aten::item ->
// aten::_local_scalar_dense, aten::to -> aten::_to_copy -> aten::copy_, ...) and carries that op's
// External id and CUPTI's callback ID for its name, except the final cudaDeviceSynchronize
// (torch.cuda.synchronize() records no op, so it has no External id); each launch has its ac2g flow pair; each
// cudaStreamSynchronize / cudaDeviceSynchronize has CUPTI's cuda_sync record ("Stream Sync",
// "Context Sync") inside it. Process and thread metadata, the "Trace" span and the instants come
// last, as Kineto writes them. Timestamps are epoch µs with 16 integer digits and 3 decimals.
//
// Timing follows what CUPTI records: a kernel launched on an idle stream starts around the end
// of its launch call (from 2 µs before it returns to 1 µs after); one launched behind running
// work starts 0.3–1.5 µs after the previous activity ends.
//
// # The mechanisms (what Write generates; counts and durations drawn from Seed)
//
//   - kernels: kernels of 200 µs–2.5 ms (GEMMs, attention, convolutions), each launched by its
//     op in 18–62 µs of host time, so the host runs ahead and the GPU goes from one to the next
//     within 1.5 µs; a final cudaDeviceSynchronize waits for the queue to drain. GPU-bound.
//   - sync: iterations of 1–4 kernels (30–400 µs), then aten::item: cudaMemcpyAsync of a few
//     bytes "Memcpy DtoH (Device -> Pageable)" and cudaStreamSynchronize, which returns 2–6 µs
//     after the copy ends; then 300 µs–2 ms of host CPU work (cpu_ops on CPU tensors, no CUDA
//     call) before the next launch. The GPU idles from each copy's end to the next kernel, and
//     each such gap starts while the host is blocked.
//   - launch: kernels of 1–4 µs, each launched by its own op's cudaLaunchKernel of 5–12 µs,
//     the calls 0–2 µs apart: the GPU idles between kernels while the host is in the next
//     launch call.
//   - copies: iterations of one pageable host-to-device cudaMemcpyAsync of 1–32 MiB at
//     5–12 GB/s ("Memcpy HtoD (Pageable -> Device)", the call lasting as long as the copy, as
//     pageable copies do), then 1–3 kernels of 10–60 µs.
//   - hostwork: iterations of 1–3 kernels (20–150 µs) launched asynchronously, then
//     300 µs–2 ms of host CPU work (cpu_ops only), then the next launch.
//   - dispatch: eager ops, one after another with 1–4 µs of Python between them, each
//     launching one kernel of 1–3 µs with a cudaLaunchKernel of 4–9 µs, the op spending 12–40 µs
//     of dispatch before the call and 3–12 µs after it; one op in three is an aten::addmm
//     (a small GEMM) inside an aten::linear that first runs a metadata op launching nothing
//     (aten::t, aten::view, ...). The GPU idles one op's dispatch per kernel.
//   - shared: kernels of 30–300 µs launched asynchronously by their ops (the host runs ahead and
//     waits in the final cudaDeviceSynchronize), each starting 100–800 µs after the previous
//     one ended, behind work of another process the trace does not hold: the GPU had the
//     request's next kernel queued all along.
//
// Iterations are added while the host and the GPU both finish by Duration (less 30 µs for a
// final synchronisation); at least two must fit, since a mechanism's gap lies between two. So
// that a short request still holds several, the long ranges' upper bounds are capped by
// Duration (kernels of the kernels scenario at Duration/8, of sync, hostwork and shared at
// Duration/32, host work at Duration/10, a copy at Duration/4, the other workload's time at
// Duration/16; lower bounds at half the cap), which changes
// nothing at the default 20 ms.
//
// # Ground truth (Truth), computed from the events written, not by gputrace
//
// The device's timeline is the union of its kernels, copies and memsets (all streams). Window
// is its active span: the last activity's end minus the first one's start. Inside it:
//
//   - KernelTime is the union of the kernel intervals;
//   - Copies is the time copies or memsets run and no kernel does (union of copies and memsets
//     minus KernelTime);
//   - every gap [a, b) between two busy stretches (a = the end of one, b the start of the next
//     activity, a < b) goes to exactly one of Queued, Sync, Launch, HostWork, tested in this
//     order: Queued when the launch call of the activity starting at b had ended by a and the
//     gap is longer than QueueLatency (20 µs: the GPU ran other work); Sync when a blocking host call (cudaStreamSynchronize, cudaDeviceSynchronize,
//     cudaEventSynchronize, blocking cudaMemcpy and their driver forms; not cudaEventQuery, not
//     cudaStreamWaitEvent, not cudaMemcpyAsync) was in progress at a: call start <= a <= call
//     end + SyncSlack (5 µs); Launch when the launch call of the activity starting at b had
//     ended by a (call end <= a: the work was queued), or when launch calls (runtime calls
//     whose correlation is a GPU activity's) cover at least half of the gap (2 × covered >=
//     b − a, the calls' union intersected with [a, b)), or when that activity has a launch call,
//     the gap lasts at most MaxDispatchGap (1 ms) and the ops that launched GPU work (any cpu_op in which a launch call starts) with the
//     launch calls cover at least half of the gap (the host was dispatching ops: DispatchGaps
//     counts these); HostWork otherwise.
//
// So Window = KernelTime + Copies + Queued + Sync + Launch + HostWork exactly. Writing puts the named
// mechanism first: at least 70 % of the time the GPU runs no kernel (Copies + Sync + Launch +
// HostWork) for sync, launch, dispatch, copies, hostwork and shared; for kernels, KernelTime is at least 90 % of
// Window.
package kinetogen
