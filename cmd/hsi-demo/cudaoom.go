package main

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// A request with ?tokens=N above MaxTokens fails in the detector's model.predict span the way a
// PyTorch server fails when a batch does not fit on its GPU: the span records PyTorch's
// exception (torch.OutOfMemoryError with the caching allocator's message), its status is Error,
// and the detector and then the backend answer HTTP 500. The GPU figures are those of an 80 GB
// H100 that is nearly full (the demo has no GPU: they are simulated, and the message says so
// nowhere, as PyTorch's would not).
const (
	// MaxTokens is the largest ?tokens the detector's GPU holds; OOMTokens is what the traffic
	// generator and the tests send to make a request fail.
	MaxTokens = 16384
	OOMTokens = 32768
	// bytesPerToken: the activation memory one token needs (640 KiB: 32768 tokens ask 20 GiB).
	bytesPerToken = 640 << 10
	// The simulated GPU: total capacity and what is free when the allocation fails, as PyTorch
	// reports them, and what the process holds (allocated by PyTorch, reserved but unallocated).
	gpuTotalBytes       = 79.15 * (1 << 30)
	gpuFreeBytes        = 1.21 * (1 << 30)
	torchAllocatedBytes = 76.52 * (1 << 30)
	torchReservedBytes  = 912.37 * (1 << 20)
	// oomCost is the model's work before the allocation fails.
	oomCost = 5 * time.Millisecond
	// CUDAOOMType is the exception type PyTorch raises (torch.cuda.OutOfMemoryError is its alias).
	CUDAOOMType = "torch.OutOfMemoryError"
)

// formatSize writes a byte count as c10's format_size does (CUDACachingAllocator.cpp):
// bytes, KiB, MiB or GiB with two decimals.
func formatSize(b float64) string {
	switch {
	case b <= 1024:
		return strconv.FormatFloat(b, 'f', 0, 64) + " bytes"
	case b <= 1<<20:
		return fmt.Sprintf("%.2f KiB", b/(1<<10))
	case b <= 1<<30:
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	default:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	}
}

// CUDAOOMMessage is PyTorch's message for a failed allocation of size bytes on GPU gpu, worded as
// its caching allocator words it (c10/cuda/CUDACachingAllocator.cpp, PyTorch 2.x).
func CUDAOOMMessage(gpu int, size float64) string {
	return fmt.Sprintf("CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free. "+
		"Including non-PyTorch memory, this process has %s memory in use. Of the allocated memory %s is allocated by PyTorch, "+
		"and %s is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "+
		"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  "+
		"(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)",
		formatSize(size), gpu, formatSize(gpuTotalBytes), formatSize(gpuFreeBytes), formatSize(gpuTotalBytes-gpuFreeBytes),
		formatSize(torchAllocatedBytes), formatSize(torchReservedBytes))
}

// cudaAllocation is the memory ?tokens asks of the GPU, and whether it fails.
func cudaAllocation(r *http.Request) (tokens int, size float64, oom bool) {
	tokens, _ = strconv.Atoi(r.URL.Query().Get("tokens"))
	size = float64(tokens) * bytesPerToken
	return tokens, size, tokens > MaxTokens
}

// recordCUDAOOM marks span as failed with PyTorch's exception, as OpenTelemetry's Python SDK
// records it (an "exception" event with exception.type, exception.message and
// exception.stacktrace) and returns the message. Not span.RecordError: Go's SDK adds the Go
// error's type as a second exception.type.
func recordCUDAOOM(span trace.Span, gpu int, size float64) string {
	msg := CUDAOOMMessage(gpu, size)
	span.AddEvent(semconv.ExceptionEventName, trace.WithAttributes(
		semconv.ExceptionType(CUDAOOMType),
		semconv.ExceptionMessage(msg),
		semconv.ExceptionStacktrace("Traceback (most recent call last):\n"+
			"  File \"/app/detector/serve.py\", line 88, in predict\n    out = model(batch)\n"+
			"  File \"/app/detector/model.py\", line 141, in forward\n    feats = self.backbone(x)\n"+
			CUDAOOMType+": "+msg),
		attribute.Bool("exception.escaped", true),
	))
	span.SetStatus(codes.Error, CUDAOOMType+": "+msg)
	return msg
}
