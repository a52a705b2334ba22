// Package triage tells the GPU fleet's failures of a time range apart by runbook 002's classes
// (classify the failure before fixing it): container OOM kills, CUDA out-of-memory errors in
// requests (while serving or at model load), XID errors, uncorrectable ECC errors, row-remap
// failures, PCIe replays, and GPUs at their framebuffer limit while their pods restart. It reads
// what the stores answered (Evidence) and says, per failure, its evidence, the runbook's first
// checks and fast mitigations, and the request → pod → GPU → node → driver chain as far as the
// signals hold it. Pure: correlate fetches, frames shows.
package triage

import (
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Runbook is what runbook 002 says of a class: its name, what to check first, what to do fast.
type Runbook struct {
	Title       string
	FirstChecks string
	Mitigation  string
}

// runbooks are runbook 002's "classify the OOM" table and GPU health rows, in our words.
var runbooks = map[string]Runbook{
	models.ClassContainerOOM: {
		Title:       "Container OOM kill (host memory, not the GPU)",
		FirstChecks: "kubectl describe pod and logs --previous; the container's host memory: tokenizer, dataloader workers, pinned memory, logs, tmpfs",
		Mitigation:  "raise the container's memory limit or fix the host memory growth; move preprocessing to its own container; do not touch GPU batch sizes for this",
	},
	models.ClassCUDAOOM: {
		Title:       "CUDA out-of-memory while serving",
		FirstChecks: "the failing requests' shapes (batch, prompt and output tokens), concurrency, model instances, KV-cache size, the allocator's stats",
		Mitigation:  "lower batch size, max tokens or context, concurrent sequences or model instances; route large requests to a pool sized for them",
	},
	models.ClassCUDAOOMLoad: {
		Title:       "CUDA out-of-memory at model load",
		FirstChecks: "the model artifact and config change, precision, engine plan, what else the GPU holds, the GPU SKU or MIG slice size",
		Mitigation:  "roll back the artifact or config; use a smaller precision or engine; deploy to a larger GPU or MIG slice",
	},
	models.ClassXID: {
		Title:       "XID error",
		FirstChecks: "dmesg | grep -i xid on the node, DCGM health, ECC and row remapping, thermals, the driver version; whether the node's other GPUs and pods failed together",
		Mitigation:  "cordon and drain the node or quarantine the GPU, shift traffic; escalate on the hardware or driver path",
	},
	models.ClassECC: {
		Title:       "Uncorrectable (double-bit) ECC errors",
		FirstChecks: "nvidia-smi -q -d ECC,ROW_REMAPPER on the node, pending row remaps, the XID log, whether the processes on the GPU crashed",
		Mitigation:  "drain the GPU and reset it so pending remaps apply; replace the GPU when errors repeat or remapping fails",
	},
	models.ClassRowRemap: {
		Title:       "Row-remap failure",
		FirstChecks: "nvidia-smi -q -d ROW_REMAPPER (remap failure, pending remaps, uncorrectable rows), the ECC counters",
		Mitigation:  "take the GPU out of service: a GPU whose rows cannot be remapped must be replaced (RMA)",
	},
	models.ClassPCIeReplay: {
		Title:       "PCIe replays rising",
		FirstChecks: "the link's generation and width (nvidia-smi -q -d PCIE), the riser or slot, other GPUs on the same switch, AER messages in dmesg",
		Mitigation:  "move the workload off the GPU and reseat or replace the link; compare with the node's other GPUs before blaming the model",
	},
	models.ClassMemoryEnvelope: {
		Title:       "GPU memory envelope exceeded",
		FirstChecks: "what the GPU holds (nvidia-smi pmon, per-process memory), batch and sequence sizes, model instances, KV-cache share, fragmentation after reloads",
		Mitigation:  "reduce the envelope (batch, max tokens, instances, inflight sequences) or move the workload to a GPU or MIG profile with more memory",
	},
}

// RunbookOf is the runbook's entry for class c.
func RunbookOf(c string) Runbook { return runbooks[c] }

// oomTypes are the exception types PyTorch raises for a failed CUDA allocation
// (torch.cuda.OutOfMemoryError is an alias of torch.OutOfMemoryError since PyTorch 2.5).
var oomTypes = []string{"torch.OutOfMemoryError", "torch.cuda.OutOfMemoryError"}

// oomTexts are what CUDA, PyTorch and the CUDA runtime say of a failed device allocation, lower
// case: PyTorch's message, the runtime's error name and its printed form.
var oomTexts = []string{"cuda out of memory", "cudaerrormemoryallocation", "cuda error: out of memory"}

// loadWords name the operations that load a model: a failure there is an OOM at load, not while
// serving (lower case).
var loadWords = []string{"load", "from_pretrained", "warmup"}

// IsCUDAOOM reports whether an exception type or a failure's text says a CUDA allocation failed.
func IsCUDAOOM(exceptionType, text string) bool {
	for _, t := range oomTypes {
		if exceptionType == t {
			return true
		}
	}
	text = strings.ToLower(text)
	for _, w := range oomTexts {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

// IsModelLoad reports whether an operation's name says it loads a model.
func IsModelLoad(operation string) bool {
	op := strings.ToLower(operation)
	for _, w := range loadWords {
		if strings.Contains(op, w) {
			return true
		}
	}
	return false
}
