package gputrace

import "strings"

// Kind is what an activity is, whichever trace format named it.
type Kind uint8

const (
	KindOther Kind = iota
	KindKernel
	KindMemcpy
	KindMemset
	KindRuntime // CUDA runtime API call on the host (cudaLaunchKernel, cudaMemcpyAsync, ...)
	KindDriver  // CUDA driver API call on the host (cuLaunchKernel, ...)
	KindCPUOp
	KindAnnotation    // user_annotation / NVTX range on the host
	KindGPUAnnotation // gpu_user_annotation
	KindSync          // cuda_sync: CUPTI's record of a synchronisation, beside the host call
)

// Activity is one interval of a trace, in nanoseconds since the trace's own epoch.
type Activity struct {
	Kind        Kind
	Name        string
	Start, End  int64
	Device      int32
	Stream      int32
	Correlation int64
	Bytes       int64 // memcpy / memset only; 0 when unknown
	// Thread is the host thread of a host activity: a runtime or driver call, an annotation, a
	// CPU operator, a cuda_sync record (Kineto's tid, nsys's globalTid); 0 when the reader does
	// not know it. A range contains only the calls of its own thread (RangeProjection).
	Thread int64
	// TraceID is the request trace ID an annotation names in its args; the name is also
	// searched, so readers leave it empty when they have no args.
	TraceID string
	// WaitStream and WaitCorrelation are a cuda_sync record's wait_on_stream and
	// wait_on_cuda_event_record_corr_id (the stream an event was recorded on and the correlation
	// of its cudaEventRecord call); -1 or 0 when the record has none.
	WaitStream      int32
	WaitCorrelation int64
	// Process is the host process of a host activity (Kineto's pid, Nsight's globalTid's
	// process part); 0 when unknown. The timeline shows each thread as a service.
	Process int64
	// Launcher is the process whose correlation IDs Correlation counts in, where the export
	// says so for both the calls and the GPU work (Nsight: the calls' globalTid and the GPU
	// activities' globalPid); 0 for a trace of one process (Kineto). CUDA numbers correlations
	// per process: a multi-process export repeats them.
	Launcher int64
	// Grid and Block are a kernel's launch geometry (x, y, z); zeros when unknown.
	Grid, Block [3]int32
}

// joinID is what an activity joins its launch call (or, for a call, its GPU work) on: the
// correlation ID, qualified by its launcher (Launcher; CUDA's correlation IDs are 32-bit, a
// process ID at most 24), 0 for none.
func (a Activity) joinID() int64 {
	if a.Correlation == 0 {
		return 0
	}
	return a.Correlation | a.Launcher<<32
}

// onHost says whether an activity runs on a host thread (the others run on a GPU stream).
func onHost(k Kind) bool {
	return k == KindRuntime || k == KindDriver || k == KindCPUOp || k == KindAnnotation
}

// chromeCategories maps Kineto's `cat` values, old and new spellings, to kinds. Categories
// absent here are counted in a notice; the ones mapped to KindOther are known and ignored.
var chromeCategories = map[string]Kind{
	"kernel":              KindKernel,
	"Kernel":              KindKernel,
	"gpu_memcpy":          KindMemcpy,
	"Memcpy":              KindMemcpy,
	"gpu_memset":          KindMemset,
	"Memset":              KindMemset,
	"cuda_runtime":        KindRuntime,
	"Runtime":             KindRuntime,
	"cuda_driver":         KindDriver,
	"cpu_op":              KindCPUOp,
	"Operator":            KindCPUOp,
	"user_annotation":     KindAnnotation,
	"gpu_user_annotation": KindGPUAnnotation,
	"cuda_sync":           KindSync,
	"python_function":     KindOther,
	"ac2g":                KindOther, // flow arrows between a launch and its kernel
	"fwdbwd":              KindOther,
	"Trace":               KindOther,
	"overhead":            KindOther,
	"cuda_profiler_range": KindOther,
	"gpu_op":              KindOther,
	"kineto":              KindOther,
	"cpu_instant_event":   KindOther,
	"python_function_ev":  KindOther,
	"Ev":                  KindOther,
}

// KernelClass splits kernels the way HTA's temporal breakdown does.
type KernelClass uint8

const (
	ClassCompute KernelClass = iota
	ClassCommunication
	ClassMemory
)

func classOf(kind Kind, name string) KernelClass {
	switch {
	case kind == KindMemcpy || kind == KindMemset:
		return ClassMemory
	case isCommunication(name):
		return ClassCommunication
	default:
		return ClassCompute
	}
}

// isCommunication: HTA counts NCCL kernels as communication.
func isCommunication(name string) bool {
	return strings.Contains(strings.ToLower(name), "nccl")
}

// isSyncCall names the runtime and driver calls that make the host wait for the GPU.
func isSyncCall(name string) bool {
	return strings.Contains(name, "Synchronize") || strings.HasPrefix(name, "cudaMemcpy") && !strings.Contains(name, "Async")
}

// isLaunchCall names the runtime and driver calls that launch a kernel (cudaLaunchKernel,
// cudaLaunchKernelExC, cudaLaunchCooperativeKernel, cuLaunchKernel, cuLaunchKernelEx, ...), or a
// CUDA graph of them (cudaGraphLaunch, cuGraphLaunch).
func isLaunchCall(name string) bool {
	return strings.Contains(name, "LaunchKernel") || strings.Contains(name, "LaunchCooperativeKernel") || strings.Contains(name, "GraphLaunch")
}

// blocksHost tells the cuda_sync records that mirror a blocking host call (Kineto names them
// after CUPTI's synchronisation types) from "Stream Wait Event", which makes a stream wait for
// an event on the GPU while the host carries on, and "Unknown".
func blocksHost(syncName string) bool {
	switch syncName {
	case "Event Sync", "Stream Sync", "Context Sync":
		return true
	}
	return false
}
