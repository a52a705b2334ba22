package models

import (
	"errors"
	"fmt"
	"time"
)

// MaxUploadPeriod is the longest a profiler holds its samples before it uploads them: profilers
// upload in periods of 10 to 60 s (15 s by default in Pyroscope's Go SDK and Alloy's scrapes),
// so a sample reaches Pyroscope at most this long after it was taken, in a profile stamped at
// most this long before or after it.
const MaxUploadPeriod = 60 * time.Second

// FlameGraphQuery selects the samples merged into one flame graph.
type FlameGraphQuery struct {
	ProfileTypeID string
	LabelSelector string
	// SpanSelector keeps only the samples of these span IDs (16 hex digits each).
	SpanSelector []string
	// TraceID keeps only the samples of this trace (16 or 32 hex digits), by trace_id_selector
	// (pyroscope.Client checks that the server filters by it). It excludes SpanSelector,
	// as Pyroscope 2.x refuses both at once.
	TraceID string
	// ProfileIDSelector keeps only these individual profiles (UUIDs, from exemplars), by
	// profile_id_selector (pyroscope.Client checks that the server filters by it). It excludes
	// SpanSelector and TraceID: the IDs already name the profiles.
	ProfileIDSelector []string
	// StackTraceSelector keeps only the stacks under this call site, root first. It is sent to
	// Pyroscope (stack_trace_selector) where the call has the field, and always applied to the
	// answer too (flamegraph.CallSite), since Pyroscope 1.12 drops it without a word.
	StackTraceSelector []string
	// FrameFilter keeps only the stacks it keeps (Pyroscope's frame_filter); pyroscope.Client
	// sends it and applies it to the answer too, since older servers drop it.
	FrameFilter FrameFilter
	Start, End  time.Time
	MaxNodes    int64
}

// Why a profile store could not filter by trace ID: the whole-request join then matches the
// samples another way.
var (
	// ErrTraceSelectorIgnored: this server drops trace_id_selector, so its answer would be the
	// profile of every request; nothing it answered is returned.
	ErrTraceSelectorIgnored = errors.New("this Pyroscope ignores trace_id_selector and answers the unfiltered profile, as Pyroscope 1.x does")
	// ErrTraceSelectorRefused: the server answered unimplemented to trace_id_selector for this
	// window; Pyroscope 2.x in its v1-v2 dual mode does where the window holds data of its v1
	// storage. Another window may be served.
	ErrTraceSelectorRefused = errors.New("Pyroscope refused trace_id_selector for this time range, as Pyroscope 2.x in v1-v2 dual mode does where the range holds data of its v1 storage")
)

// TraceSelectorSplitError is a refusal of trace_id_selector (errors.Is ErrTraceSelectorRefused)
// for a range that the server serves from From on: Pyroscope 2.x in v1-v2 dual mode refuses the
// selector for the part of a range before its v2 storage begins (its split), and From is that
// split, found by narrowing the range. Ask the selector over [From, end] and the part before
// another way.
type TraceSelectorSplitError struct {
	From time.Time
	Err  error // the refusal
}

func (e *TraceSelectorSplitError) Error() string {
	return fmt.Sprintf("%v; it serves trace_id_selector from %s on", e.Err, e.From.UTC().Format(time.RFC3339))
}

func (e *TraceSelectorSplitError) Unwrap() error { return e.Err }

// ErrProfileIDSelectorIgnored: this server drops profile_id_selector, so its answer would be the
// profile of every process in the range, not the individual profiles asked; nothing it answered
// is returned.
var ErrProfileIDSelectorIgnored = errors.New("this Pyroscope ignores profileIdSelector and would answer every profile: individual profiles (from exemplars) need Pyroscope 1.17 or newer")

// ErrUnsupported is what every UnsupportedError is (errors.Is): the Pyroscope server lacks a
// call, being older than the version that has it. Callers degrade to what the server has.
var ErrUnsupported = errors.New("this Pyroscope does not have the call")

// UnsupportedError says which Pyroscope call a server lacks and from which version it has it.
type UnsupportedError struct {
	Call   string // SelectHeatmap
	Since  string // 1.19
	Answer string // what the server answered, for the curious ("404 Not Found")
	// V1Range: the server has the call but refused it for this range, as Pyroscope 2.x in v1-v2
	// dual mode does where the range holds data of its v1 storage; a later range may be served.
	V1Range bool
}

func (e *UnsupportedError) Error() string {
	msg := fmt.Sprintf("%s needs Pyroscope %s or newer; this server does not have it", e.Call, e.Since)
	if e.V1Range {
		msg = fmt.Sprintf("this Pyroscope (2.x in v1-v2 dual mode) serves %s only over its v2 storage, and this time range reaches back into its v1 storage", e.Call)
	}
	if e.Answer != "" {
		msg += " (it answered: " + e.Answer + ")"
	}
	return msg
}

// Is makes errors.Is(err, ErrUnsupported) true for every UnsupportedError.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }
