package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Query types of profiles-to-traces from the trace store's own search (Jaeger), which works with
// any Pyroscope: Grafana's span heatmaps need Tempo and a Pyroscope with SelectHeatmap.
const (
	// QueryTypeSpanHeatmap is an operation's span durations over time, as a heatmap whose
	// exemplars (the slowest span of each time bucket) link to the trace and the span's profile.
	QueryTypeSpanHeatmap = "spanHeatmap"
	// QueryTypeSpanProfile is the merged profile of every profiled span of an operation slower
	// than a duration or a percentile: what one short span has too few samples to show.
	QueryTypeSpanProfile = "spanProfile"
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
	// Service is the Jaeger service whose spans are read (required: Jaeger searches one service).
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
		return nil, errors.New(`field "service" is required: the service whose spans to read (Jaeger searches one service at a time)`)
	}
	switch {
	case q.Limit == 0:
		q.Limit = DefaultSpanTraces
	case q.Limit < 0 || q.Limit > MaxSpanTraces:
		return nil, fmt.Errorf("field \"limit\" (traces read from the trace search) must be between 1 and %d, got %d", MaxSpanTraces, q.Limit)
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
		if q.Percentile <= 0 || q.Percentile >= 100 {
			return nil, fmt.Errorf("field \"percentile\" must be above 0 and below 100 (e.g. 95: the slowest 5%% of spans), got %g", q.Percentile)
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
