package models

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"
)

// Trace is one request's spans, in the form the rest of the plugin uses whatever API or store answered
// (jaeger.Client reads them; the joins read them without importing the client).
type Trace struct {
	TraceID string // 32 lower-case hex digits
	Spans   []Span
	API     string // which API answered (jaeger.APIv3 or jaeger.APIv1, tempo.APIv2 or tempo.APIv1)
	// Partial, when set, says the store answered part of the trace, and why (Tempo's partial
	// status: the trace is larger than its limit, or was pruned).
	Partial string
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
	//
	// Both maps are read-only: the readers give spans with the same attributes (or resource) one
	// map.
	Resource map[string]string
	// Kind is OpenTelemetry's span kind in lower case ("server", "client", "internal",
	// "producer", "consumer"; v1: the span.kind tag), "" when unset.
	Kind string
	// Events are the span's events in time order (v1: its logs, named by their "event" field):
	// Triton's request timestamps (QUEUE_START, COMPUTE_START, ...) and recorded exceptions
	// (ExceptionEvent) arrive this way.
	Events []SpanEvent
	// Status is the span's status code, StatusError or StatusOK ("" when unset), and
	// StatusMessage its description (v3: OTLP's status; v1: the otel.status_code and
	// otel.status_description tags, or the error=true tag).
	Status        string
	StatusMessage string
}

// Span status codes, as Status holds them.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// Exception events, as OpenTelemetry's semantic conventions record them (span.RecordError,
// Python's record_exception).
const (
	ExceptionEvent   = "exception"
	ExceptionType    = "exception.type"
	ExceptionMessage = "exception.message"
)

// Failed reports whether the span ended with an error status.
func (s Span) Failed() bool { return s.Status == StatusError }

// Exception is the type and message of the span's last recorded exception; ok is false when the
// span recorded none.
func (s Span) Exception() (typ, message string, ok bool) {
	for i := len(s.Events) - 1; i >= 0; i-- {
		if e := s.Events[i]; e.Name == ExceptionEvent {
			return e.Attributes[ExceptionType], e.Attributes[ExceptionMessage], true
		}
	}
	return "", "", false
}

// SpanEvent is one event of a span: a name at a time, with its attributes.
type SpanEvent struct {
	Name       string
	Time       time.Time
	Attributes map[string]string
}

// Span kinds, as Kind holds them.
const (
	SpanKindServer = "server"
	SpanKindClient = "client"
)

// Event returns the time of the span's first event named name.
func (s Span) Event(name string) (time.Time, bool) {
	for _, e := range s.Events {
		if e.Name == name {
			return e.Time, true
		}
	}
	return time.Time{}, false
}

// ProfileIDAttribute is the span attribute otel-profiling-go sets (to the span's own ID) on the
// spans whose samples carry a span_id label: Grafana's trace-to-profile link sends its value as
// the span selector.
const ProfileIDAttribute = "pyroscope.profile.id"

// ProfileID is the span's ProfileIDAttribute when it is a span ID (16 hex digits, as
// otel-profiling-go writes it); "" when the span has none. malformed reports a value that is not
// a span ID (a store that mangled its attributes, another library's value): Pyroscope refuses
// such a span selector outright, so it is never sent.
func (s Span) ProfileID() (id string, malformed bool) {
	v := s.Attributes[ProfileIDAttribute]
	if v == "" {
		return "", false
	}
	if !isHex(v, 16) {
		return "", true
	}
	return v, false
}

// TraceSearchQuery searches traces, as Jaeger's search page does.
type TraceSearchQuery struct {
	Service     string // required by Jaeger
	Operation   string
	MinDuration time.Duration
	Start, End  time.Time // zero End: now; zero Start: an hour before End
	Limit       int       // 0: the trace store's default (DefaultTraceLimit)
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
	// RootMissing: no stored span lacks a parent, so the trace is still arriving (or its
	// caller is untraced); its duration and root cover only the spans stored so far.
	RootMissing bool `json:"rootMissing,omitempty"`
}

// RequestRoot is the span that stands for the whole request: the longest of the spans without a
// parent in the trace (a span whose parent is missing counts as one), ties to the earliest; -1
// for no span.
func RequestRoot(t *Trace) int {
	if t == nil {
		return -1
	}
	ids := make(map[string]bool, len(t.Spans))
	for _, s := range t.Spans {
		ids[s.SpanID] = true
	}
	return RequestRootIn(t, func(id string) bool { return ids[id] })
}

// RequestRootIn is RequestRoot for a caller that already holds the trace's span IDs (has says
// whether one is in the trace): a 2,000-span request's set need not be built twice.
func RequestRootIn(t *Trace, has func(spanID string) bool) int {
	if t == nil {
		return -1
	}
	best := -1
	for i, s := range t.Spans {
		if s.ParentSpanID != "" && has(s.ParentSpanID) && s.ParentSpanID != s.SpanID {
			continue
		}
		if best < 0 || s.Duration > t.Spans[best].Duration || s.Duration == t.Spans[best].Duration && s.Start.Before(t.Spans[best].Start) {
			best = i
		}
	}
	return best
}

// ErrTraceNotFound is a trace store's answer for a trace it does not hold.
var ErrTraceNotFound = errors.New("trace not found")

// SortSpans orders spans by start, then ID, so that every trace store and API gives the same order.
func SortSpans(spans []Span) {
	// Sorted by index, then moved once: a span is a large value, and a sort moves each many times.
	order := make([]int, len(spans))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Or(spans[a].Start.Compare(spans[b].Start), cmp.Compare(spans[a].SpanID, spans[b].SpanID))
	})
	// Each cycle of the permutation moved in place: position j takes the span at order[j].
	for i := range spans {
		if order[i] == i {
			continue
		}
		first, j := spans[i], i
		for {
			k := order[j]
			order[j] = j
			if k == i {
				spans[j] = first
				break
			}
			spans[j] = spans[k]
			j = k
		}
	}
}

// IsHexTraceID says whether id is a trace ID a store's URL path may carry: 16 or 32 hex digits
// (Jaeger's 64-bit IDs have 16).
func IsHexTraceID(id string) bool {
	if len(id) != 16 && len(id) != 32 {
		return false
	}
	for _, r := range id {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f' || 'A' <= r && r <= 'F') {
			return false
		}
	}
	return true
}

// PadTraceID makes a 64-bit trace ID the 32-digit lower-case form OTLP uses, so that IDs from
// every API compare equal.
func PadTraceID(id string) string {
	id = strings.ToLower(id)
	if len(id) < 32 {
		return strings.Repeat("0", 32-len(id)) + id
	}
	return id
}

// DefaultTraceLimit is how many traces a search returns unless asked otherwise.
const DefaultTraceLimit = 20

// WithDefaults fills what a search left out: up to now, the hour before, DefaultTraceLimit.
func (q TraceSearchQuery) WithDefaults(now time.Time) TraceSearchQuery {
	if q.End.IsZero() {
		q.End = now
	}
	if q.Start.IsZero() {
		q.Start = q.End.Add(-time.Hour)
	}
	if q.Limit <= 0 {
		q.Limit = DefaultTraceLimit
	}
	return q
}

// TraceLatencyQuery asks a trace store for its server spans' latency by service and endpoint
// (span name) over [Start, End]: the latency table where no request-duration histogram has
// them. Service and Endpoint are exact matches; empty matches all.
type TraceLatencyQuery struct {
	Service, Endpoint string
	Start, End        time.Time
	// Quantiles are the percentiles asked for (0.5, 0.95, 0.99), in the answer's order.
	Quantiles []float64
}

// TraceLatency is one service and endpoint's server-span latency from a trace store's metrics.
type TraceLatency struct {
	Service, Endpoint string
	// Quantiles are seconds at TraceLatencyQuery.Quantiles; NaN where the store had no answer.
	Quantiles []float64
	// Requests counts the server spans in the range; NaN when unknown.
	Requests float64
}

// TraceLatencyResult is a trace store's latency table with the queries asked (for the notice).
type TraceLatencyResult struct {
	Rows    []TraceLatency
	Queries []string
	// Partial, when set, says the store answered part of the range, and why.
	Partial string
}
