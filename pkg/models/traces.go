package models

import "time"

// Trace is one request's spans, in the form the rest of the plugin uses whatever API or store answered
// (jaeger.Client reads them; the joins read them without importing the client).
type Trace struct {
	TraceID string // 32 lower-case hex digits
	Spans   []Span
	API     string // which API answered (jaeger.APIv3 or jaeger.APIv1)
}

// Span is one span of a trace. IDs are lower-case hex; attribute values are strings (numbers and
// booleans as Jaeger prints them), since selectors and labels only compare strings.
type Span struct {
	TraceID      string
	SpanID       string // 16 hex digits
	ParentSpanID string // "" for a root span
	Service      string // the resource's service.name (v1: the process's serviceName)
	Operation    string
	Start        time.Time
	Duration     time.Duration
	// Attributes are the span's own attributes (v1: tags), e.g. pyroscope.profile.id.
	Attributes map[string]string
	// Resource holds the resource attributes (v1: process tags), e.g. host.name.
	Resource map[string]string
}

// ProfileIDAttribute is the span attribute otel-profiling-go sets (to the span's own ID) on the
// spans whose samples carry a span_id label: Grafana's trace-to-profile link sends its value as
// the span selector.
const ProfileIDAttribute = "pyroscope.profile.id"

// TraceSearchQuery searches traces, as Jaeger's search page does.
type TraceSearchQuery struct {
	Service     string // required by Jaeger
	Operation   string
	MinDuration time.Duration
	Start, End  time.Time // zero End: now; zero Start: an hour before End
	Limit       int       // 0: the trace store's default (jaeger.DefaultTraceLimit)
}

// TraceSummary is one search hit: enough to list and link a trace.
type TraceSummary struct {
	TraceID       string        `json:"traceId"`
	RootService   string        `json:"rootService"`
	RootOperation string        `json:"rootOperation"`
	Start         time.Time     `json:"start"`
	Duration      time.Duration `json:"-"`
	DurationMs    float64       `json:"durationMs"`
	Spans         int           `json:"spans"`
	Services      []string      `json:"services"`
}
