// Package activity is the vocabulary every GPU kernel-trace format is read into and every analysis
// reads: an Activity (a kernel, a copy, a host call, an annotation), where a request's trace ID
// was found, and the Sink a reader feeds. Formats (kineto, nsys) and analyses (gputrace) import
// it and not each other.
package activity

import (
	"math"
	"path/filepath"
	"strings"
)

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

// Source says where a trace ID was found.
type Source string

const (
	SourceFileName   Source = "file name"
	SourceTraceName  Source = "traceName"
	SourceMetadata   Source = "metadata"
	SourceAnnotation Source = "annotation"
)

// TraceID is a request trace ID a GPU trace was captured for.
type TraceID struct {
	ID     string // lower-case hex, 16 or 32 digits (Jaeger / W3C)
	Source Source
}

// TraceIDsIn returns the runs of exactly 16 or 32 hex digits in text, lower-cased, that are
// not part of a longer word. A run must hold a letter a–f, so that long decimal numbers
// (timestamps, byte counts) are not taken for IDs.
func TraceIDsIn(text string) []string {
	var out []string
	i := 0
	for i < len(text) {
		if !isHex(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isHex(text[j]) {
			j++
		}
		run := text[i:j]
		bounded := (i == 0 || !isWord(text[i-1])) && (j == len(text) || !isWord(text[j]))
		if bounded && (len(run) == 16 || len(run) == 32) && hasLetter(run) {
			out = append(out, strings.ToLower(run))
		}
		i = j
	}
	return out
}

// TraceIDsInFileName reads IDs from a trace file's base name.
func TraceIDsInFileName(path string) []string { return TraceIDsIn(filepath.Base(path)) }

// MaxTimeNs bounds a parsed ts or dur: end = start + dur and the difference of any two stay
// within int64. Epoch nanoseconds reach it in the year 2116.
const MaxTimeNs = math.MaxInt64 / 2

// OnHost says whether an activity runs on a host thread (the others run on a GPU stream).
func OnHost(k Kind) bool {
	return k == KindRuntime || k == KindDriver || k == KindCPUOp || k == KindAnnotation
}

// MaxProcessNames bounds the process names kept (Kineto writes one per process and GPU; an
// Nsight export lists every process of the machine).
const MaxProcessNames = 1024

// Sink is what a trace reader feeds: the analyses' collector (gputrace.Collector) implements
// it, so that a reader knows no analysis and an analysis no format.
type Sink interface {
	// Add records one activity.
	Add(Activity)
	// Notice records what the reader skipped or found odd, in the user's words.
	Notice(format string, args ...any)
	// ScanTraceIDs records the request trace IDs text names (TraceIDsIn), found where src says.
	ScanTraceIDs(text string, src Source)
	// AddFileName records the trace IDs a file's name holds.
	AddFileName(path string)
	// KeepsTimeline says whether the activities themselves are kept (the timeline view): only
	// then are process names and the epoch worth reading.
	KeepsTimeline() bool
	// NameProcess names a host process for the timeline.
	NameProcess(pid int64, name string)
	// SetEpoch records the Unix time, ns, the trace's times count from.
	SetEpoch(ns int64)
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

func isWord(b byte) bool {
	return isHex(b) || b >= 'g' && b <= 'z' || b >= 'G' && b <= 'Z'
}

func hasLetter(s string) bool {
	return strings.ContainsAny(s, "abcdefABCDEF")
}
