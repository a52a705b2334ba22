package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// DefaultAllocTypeID is the allocation profile a trace query reads per span unless allocTypeId
// says otherwise: bytes allocated, the figure that explains GC pressure.
const DefaultAllocTypeID = "memory:alloc_space:bytes:space:bytes"

// TraceQuery is the trace query: the request-level join for one trace.
type TraceQuery struct {
	TraceID string `json:"traceId"`
	// ProfileTypeID is the profile of the CPU column and the flame graph (default CPU time).
	ProfileTypeID string `json:"profileTypeId"`
	// AllocTypeID is the profile of the allocations column.
	AllocTypeID string `json:"allocTypeId"`
	MaxNodes    int64  `json:"maxNodes"`
	// Parts are the parts of the answer to return, one frame each, in TraceParts' order; empty:
	// all. A dashboard panel asks for its own part, so Grafana draws it without a frame picker.
	Parts []string `json:"parts"`
}

// The parts of a trace query's answer, each one frame.
const (
	TracePartSpans      = "spans"      // the span table
	TracePartBreakdown  = "breakdown"  // where the request's time went
	TracePartVerdict    = "verdict"    // why it was slow: the causes, ranked
	TracePartFlameGraph = "flamegraph" // the request's flame graph
)

// TraceParts are the parts in the order the answer holds them.
var TraceParts = []string{TracePartSpans, TracePartBreakdown, TracePartVerdict, TracePartFlameGraph}

// Wants says whether the answer holds part.
func (q *TraceQuery) Wants(part string) bool {
	return len(q.Parts) == 0 || slices.Contains(q.Parts, part)
}

// ParseTraceQuery decodes and validates a trace query, filling defaults.
func ParseTraceQuery(raw json.RawMessage) (*TraceQuery, error) {
	q := &TraceQuery{}
	if err := Decode(raw, q); err != nil {
		return nil, err
	}
	var err error
	if q.TraceID, err = NormalizeTraceID("traceId", q.TraceID); err != nil {
		return nil, err
	}
	if q.TraceID == "" {
		return nil, errors.New(`field "traceId" is required: the trace ID (32 hex digits) of the request to explain, e.g. from the slowRequests query or $trace_id`)
	}
	if q.ProfileTypeID, err = profileTypeField("profileTypeId", q.ProfileTypeID, DefaultProfileTypeID); err != nil {
		return nil, err
	}
	if q.AllocTypeID, err = profileTypeField("allocTypeId", q.AllocTypeID, DefaultAllocTypeID); err != nil {
		return nil, err
	}
	if err := CheckMaxNodes(&q.MaxNodes); err != nil {
		return nil, err
	}
	if err := checkParts(q.Parts, TraceParts); err != nil {
		return nil, err
	}
	return q, nil
}

// checkParts says which part of a parts field is not one of valid.
func checkParts(parts, valid []string) error {
	for _, p := range parts {
		if !slices.Contains(valid, p) {
			return fmt.Errorf(`field "parts": unknown part %q: use some of %s (empty: all)`, truncate(p, 40), strings.Join(valid, ", "))
		}
	}
	return nil
}

// profileTypeField trims and checks a profile type ID field, naming the field when it is wrong.
func profileTypeField(field, id, def string) (string, error) {
	id = strings.TrimSpace(id)
	if id == "" {
		return def, nil
	}
	parts := strings.Split(id, ":")
	if len(parts) != 5 || strings.Contains(id, "::") || parts[0] == "" || parts[4] == "" {
		return "", fmt.Errorf("field %q must have the form name:sample_type:sample_unit:period_type:period_unit (e.g. %s), got %q", field, def, truncate(id, 80))
	}
	return id, nil
}

// SlowRequestsQuery is the slowRequests query: latency percentiles by endpoint and the slowest
// recent traces.
type SlowRequestsQuery struct {
	// Service and Endpoint narrow both halves; empty means all.
	Service  string `json:"service"`
	Endpoint string `json:"endpoint"`
	// Limit is how many slow traces to list (default 20, at most MaxSlowTraces).
	Limit int64 `json:"limit"`
	// MinDuration keeps traces at least this long: a duration ("500ms", "1.5s") or milliseconds.
	MinDuration Duration `json:"minDuration"`
	// Parts are the halves to answer, one frame each (SlowRequestsParts); empty: both. A panel
	// asks for its own, so Grafana draws it without a frame picker and the other is not read.
	Parts []string `json:"parts"`
}

// The halves of a slowRequests answer, each one frame.
const (
	SlowRequestsPartLatency = "latency" // percentiles by endpoint
	SlowRequestsPartTraces  = "traces"  // the slowest recent traces
)

// SlowRequestsParts are the halves in the order the answer holds them.
var SlowRequestsParts = []string{SlowRequestsPartLatency, SlowRequestsPartTraces}

// Wants says whether the answer holds part.
func (q *SlowRequestsQuery) Wants(part string) bool {
	return len(q.Parts) == 0 || slices.Contains(q.Parts, part)
}

// Limits of the slowRequests query.
const (
	DefaultSlowTraces = 20
	MaxSlowTraces     = 500
)

// CheckName checks a service, operation or endpoint name a user typed: one line of at most 512
// characters. No real name is longer or holds a newline or NUL; such a value is a mistake or an
// attempt to smuggle something into a search. The error reads after the field's name.
func CheckName(v string) error {
	if len(v) > 512 || strings.ContainsAny(v, "\x00\r\n") {
		return fmt.Errorf("must be a single line of at most 512 characters, got %q", truncate(v, 40))
	}
	return nil
}

// ParseSlowRequestsQuery decodes and validates a slowRequests query, filling defaults.
func ParseSlowRequestsQuery(raw json.RawMessage) (*SlowRequestsQuery, error) {
	q := &SlowRequestsQuery{}
	if err := Decode(raw, q); err != nil {
		return nil, err
	}
	q.Service, q.Endpoint = strings.TrimSpace(q.Service), strings.TrimSpace(q.Endpoint)
	for field, v := range map[string]string{"service": q.Service, "endpoint": q.Endpoint} {
		if err := CheckName(v); err != nil {
			return nil, fmt.Errorf("field %q %w", field, err)
		}
	}
	switch b := slowLimitBound; {
	case q.Limit == 0:
		q.Limit = b.Default
	case q.Limit < b.Min || q.Limit > b.Max:
		return nil, fmt.Errorf("field \"limit\" must be between %d and %d, got %d", b.Min, b.Max, q.Limit)
	}
	if q.MinDuration < 0 {
		return nil, fmt.Errorf("field \"minDuration\" must not be negative, got %s", time.Duration(q.MinDuration))
	}
	if err := checkParts(q.Parts, SlowRequestsParts); err != nil {
		return nil, err
	}
	return q, nil
}

// Duration reads a JSON duration as Go writes it ("500ms", "2s") or a number of milliseconds.
type Duration time.Duration

// UnmarshalJSON accepts "500ms", "1.5s", 500 (milliseconds), "500" (milliseconds) and "".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var ms float64
	if err := json.Unmarshal(b, &ms); err == nil {
		*d = Duration(ms * float64(time.Millisecond))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("field \"minDuration\" must be a duration such as \"500ms\" or a number of milliseconds, got %s", truncate(string(b), 40))
	}
	s = strings.TrimSpace(s)
	if s == "" {
		*d = 0
		return nil
	}
	if _, err := fmt.Sscanf(s, "%g", &ms); err == nil && fmt.Sprint(ms) == s {
		*d = Duration(ms * float64(time.Millisecond))
		return nil
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("field \"minDuration\" must be a duration such as \"500ms\" or \"1.5s\", got %q", truncate(s, 40))
	}
	*d = Duration(v)
	return nil
}
