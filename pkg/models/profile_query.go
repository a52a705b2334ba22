package models

import (
	"errors"
	"time"
)

// FlameGraphQuery selects the samples merged into one flame graph.
type FlameGraphQuery struct {
	ProfileTypeID string
	LabelSelector string
	// SpanSelector keeps only the samples of these span IDs (16 hex digits each).
	SpanSelector []string
	// TraceID keeps only the samples of this trace (16 or 32 hex digits), by trace_id_selector
	// (pyroscope.Client checks that the server filters by it). It excludes SpanSelector,
	// as Pyroscope 2.x refuses both at once.
	TraceID    string
	Start, End time.Time
	MaxNodes   int64
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
