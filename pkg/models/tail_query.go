package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Limits of the tail query: each diagnosed request is one request-level join (its trace read,
// its spans' profiles, its GPUs' and engines' series), so the requests are bounded.
const (
	DefaultTailTraces     = 20
	MaxTailTraces         = 100
	DefaultTailPercentile = 95
)

// TailQuery asks why an operation's slow tail is slow: its requests over a threshold in the
// panel's range (a percentile of the operation's durations, a duration, or the data source's
// SLO), each diagnosed as the trace query does, and their causes added up against the same
// causes in the operation's median requests.
type TailQuery struct {
	// Service and Operation are the endpoint: the operation's spans are the requests (an
	// operation is needed: a service's operations differ too much to share a tail). Without
	// them the answer is empty, saying what to choose (NoEndpoint), as a dashboard's panel gets
	// it while its variables list nothing yet.
	Service   string `json:"service"`
	Operation string `json:"operation"`
	// Percentile is the tail's threshold as a percentile of the operation's durations over the
	// range (default 95); MinDuration a duration instead; SLO the data source's latency SLO
	// (latencyYellowMs). At most one of the three.
	Percentile  float64  `json:"percentile"`
	MinDuration Duration `json:"minDuration"`
	SLO         bool     `json:"slo"`
	// MaxTraces is how many tail requests are diagnosed, the newest first (default 20).
	MaxTraces int64 `json:"maxTraces"`
	// Limit is how many traces the trace search reads over the range (default DefaultSpanTraces).
	Limit int64 `json:"limit"`
	// ProfileTypeID is the CPU profile the verdicts read.
	ProfileTypeID string `json:"profileTypeId"`
	// Parts are the frames to answer (TailParts); empty: all. A panel asks for its own.
	Parts []string `json:"parts"`
}

// The frames of a tail answer.
const (
	TailPartSummary  = "summary"  // the answer in words, with the tail's figures
	TailPartCauses   = "causes"   // the causes ranked by the time they add to the tail
	TailPartRequests = "requests" // each request diagnosed, tail and median, with its top cause
)

// TailParts are the frames in the order the answer holds them.
var TailParts = []string{TailPartSummary, TailPartCauses, TailPartRequests}

// NoEndpoint is what an answer says when the query names no endpoint, or "" when it names one.
func (q *TailQuery) NoEndpoint() string {
	if q.Service != "" && q.Operation != "" {
		return ""
	}
	return `No endpoint to diagnose: set "service" and "operation" to the endpoint whose slow tail to explain (e.g. service "api-gateway", operation "POST /v1/chat"); on the overview dashboard, pick them in Service and Endpoint, which list the trace store's services and operations`
}

// Wants says whether the answer holds part.
func (q *TailQuery) Wants(part string) bool {
	return len(q.Parts) == 0 || slices.Contains(q.Parts, part)
}

// ParseTailQuery decodes and validates a tail query, filling defaults.
func ParseTailQuery(raw json.RawMessage) (*TailQuery, error) {
	q := &TailQuery{}
	if err := Decode(raw, q); err != nil {
		return nil, err
	}
	q.Service, q.Operation = strings.TrimSpace(q.Service), strings.TrimSpace(q.Operation)
	for field, v := range map[string]string{"service": q.Service, "operation": q.Operation} {
		if err := CheckName(v); err != nil {
			return nil, fmt.Errorf("field %q %w", field, err)
		}
	}
	given := 0
	if q.Percentile != 0 {
		given++
		if b := percentileBound; q.Percentile <= float64(b.Min) || q.Percentile >= float64(b.Max) {
			return nil, fmt.Errorf("field \"percentile\" must be above %d and below %d (e.g. 95: the slowest 5%% of requests), got %g", b.Min, b.Max, q.Percentile)
		}
	}
	if q.MinDuration < 0 {
		return nil, fmt.Errorf("field \"minDuration\" must not be negative, got %s", time.Duration(q.MinDuration))
	}
	if q.MinDuration > 0 {
		given++
	}
	if q.SLO {
		given++
	}
	if given > 1 {
		return nil, errors.New(`fields "percentile", "minDuration" and "slo" exclude each other: choose the tail by one of them`)
	}
	if given == 0 {
		q.Percentile = DefaultTailPercentile
	}
	switch b := tailTracesBound; {
	case q.MaxTraces == 0:
		q.MaxTraces = b.Default
	case q.MaxTraces < b.Min || q.MaxTraces > b.Max:
		return nil, fmt.Errorf("field \"maxTraces\" (tail requests diagnosed) must be between %d and %d, got %d", b.Min, b.Max, q.MaxTraces)
	}
	switch b := spanLimitBound; {
	case q.Limit == 0:
		q.Limit = b.Default
	case q.Limit < b.Min || q.Limit > b.Max:
		return nil, fmt.Errorf("field \"limit\" (traces read from the trace search) must be between %d and %d, got %d", b.Min, b.Max, q.Limit)
	}
	var err error
	if q.ProfileTypeID, err = profileTypeField("profileTypeId", q.ProfileTypeID, DefaultProfileTypeID); err != nil {
		return nil, err
	}
	if err := checkParts(q.Parts, TailParts); err != nil {
		return nil, err
	}
	return q, nil
}
