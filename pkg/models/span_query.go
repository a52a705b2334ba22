package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Bounds of the span queries. Jaeger's own search page offers at most 1500 traces; the spans
// merged go to Pyroscope in one request, a few hundred kilobytes at most.
const (
	DefaultSpanTraces = 500
	MaxSpanTraces     = 1500
	MaxMergedSpans    = 2000
)

// SpanQuery is the query of the spanHeatmap and spanProfile types.
type SpanQuery struct {
	// Service is the service whose spans are read (required: the trace store is searched one
	// service at a time).
	Service string `json:"service"`
	// Operation is the span name; empty: every operation of the service.
	Operation string `json:"operation"`
	// MinDuration keeps spans at least this long: a duration ("20ms") or milliseconds.
	MinDuration Duration `json:"minDuration"`
	// Percentile keeps spans at or above this percentile of the operation's durations over the
	// range (spanProfile; 0: not used), e.g. 95.
	Percentile float64 `json:"percentile"`
	// Limit is how many traces Jaeger's search is asked for (default DefaultSpanTraces).
	Limit int64 `json:"limit"`
	// ProfileTypeID is the profile merged (spanProfile) or linked to (spanHeatmap exemplars).
	ProfileTypeID string `json:"profileTypeId"`
	MaxNodes      int64  `json:"maxNodes"`
}

// ParseSpanQuery decodes and validates a spanHeatmap or spanProfile query, filling defaults.
func ParseSpanQuery(queryType string, raw json.RawMessage) (*SpanQuery, error) {
	q := &SpanQuery{}
	if err := Decode(raw, q); err != nil {
		return nil, err
	}
	q.Service, q.Operation = strings.TrimSpace(q.Service), strings.TrimSpace(q.Operation)
	for field, v := range map[string]string{"service": q.Service, "operation": q.Operation} {
		if err := CheckName(v); err != nil {
			return nil, fmt.Errorf("field %q %w", field, err)
		}
	}
	if q.Service == "" {
		return nil, errors.New(`field "service" is required: the service whose spans to read (the trace store is searched one service at a time)`)
	}
	switch b := spanLimitBound; {
	case q.Limit == 0:
		q.Limit = b.Default
	case q.Limit < b.Min || q.Limit > b.Max:
		return nil, fmt.Errorf("field \"limit\" (traces read from the trace search) must be between %d and %d, got %d", b.Min, b.Max, q.Limit)
	}
	if q.MinDuration < 0 {
		return nil, fmt.Errorf("field \"minDuration\" must not be negative, got %s", time.Duration(q.MinDuration))
	}
	if queryType != QueryTypeSpanProfile {
		// Left over from a span profile when the editor switched the type, as other types'
		// fields are: a heatmap shows every span, the slow ones as its upper cells.
		q.Percentile = 0
	}
	if q.Percentile != 0 {
		if b := percentileBound; q.Percentile <= float64(b.Min) || q.Percentile >= float64(b.Max) {
			return nil, fmt.Errorf("field \"percentile\" must be above %d and below %d (e.g. 95: the slowest 5%% of spans), got %g", b.Min, b.Max, q.Percentile)
		}
		if q.MinDuration > 0 {
			return nil, errors.New(`fields "minDuration" and "percentile" exclude each other: give the slowest spans by one or the other`)
		}
	}
	var err error
	if q.ProfileTypeID, err = profileTypeField("profileTypeId", q.ProfileTypeID, DefaultProfileTypeID); err != nil {
		return nil, err
	}
	if err := CheckMaxNodes(&q.MaxNodes); err != nil {
		return nil, err
	}
	return q, nil
}
