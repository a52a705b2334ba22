package gputrace

import (
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

// joinID is what an activity joins its launch call (or, for a call, its GPU work) on: the
// correlation ID, qualified by its launcher (Launcher; CUDA's correlation IDs are 32-bit, a
// process ID at most 24), 0 for none.
func joinID(a activity.Activity) int64 {
	if a.Correlation == 0 {
		return 0
	}
	return a.Correlation | a.Launcher<<32
}

// KernelClass splits kernels the way HTA's temporal breakdown does.
type KernelClass uint8

const (
	ClassCompute KernelClass = iota
	ClassCommunication
	ClassMemory
)

func classOf(kind activity.Kind, name string) KernelClass {
	switch {
	case kind == activity.KindMemcpy || kind == activity.KindMemset:
		return ClassMemory
	case isCommunication(name):
		return ClassCommunication
	default:
		return ClassCompute
	}
}

// isCommunication: HTA counts NCCL kernels as communication. It runs on every kernel: it finds
// "nccl" in any case without lowering a copy of the name.
func isCommunication(name string) bool {
	for i := 0; i+4 <= len(name); i++ {
		if strings.EqualFold(name[i:i+4], "nccl") {
			return true
		}
	}
	return false
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
