package models

import "time"

// What the join asks of a profile store (Pyroscope's querier today) is declared here, so that
// the join reads it without importing its client.

// ProfileSeries is one time series of a profile type's values (Pyroscope's SelectSeries answer,
// pyroscope.Client.Series): its labels (the query's groupBy labels) and points. It is declared
// here, not in the client, so that the frame builders read it without importing a client.
type ProfileSeries struct {
	Labels []LabelPair
	Points []ProfilePoint
}

// LabelPair is one label of a series.
type LabelPair struct {
	Name, Value string
}

// ProfilePoint is one step's value, with the exemplars (individual profiles) and ingestion
// annotations Pyroscope attached to it when asked.
type ProfilePoint struct {
	Timestamp   int64 // Unix milliseconds
	Value       float64
	Exemplars   []ProfileExemplar
	Annotations []ProfileAnnotation
}

// ProfileExemplar is one individual profile (or, in a span heatmap, one span) behind a point or
// a heatmap cell, as Pyroscope's Exemplar message holds it.
type ProfileExemplar struct {
	Timestamp int64 // Unix milliseconds, when the profile was captured
	ProfileID string
	SpanID    string
	TraceID   string
	// Value is the profile's total in the profile type's unit (CPU nanoseconds, bytes, ...).
	Value int64
	// Labels are the exemplar's own labels beyond the series' (pod, node, ...).
	Labels []LabelPair
}

// ProfileAnnotation is what Pyroscope's distributors noted on the profiles of a point (ingestion
// throttled, profiles dropped by sampling): a key and a JSON value.
type ProfileAnnotation struct {
	Key, Value string
}

// HeatmapSeries is one series of Pyroscope's SelectHeatmap answer: how many individual
// profiles (or spans) fell in each value bucket of each time slot.
type HeatmapSeries struct {
	Labels []LabelPair
	Slots  []HeatmapSlot
}

// HeatmapSlot is one time slot of a heatmap: it covers (Timestamp-step, Timestamp]; bucket j
// starts at YMin[j] and holds Counts[j] profiles.
type HeatmapSlot struct {
	Timestamp int64 // Unix milliseconds, the slot's right edge
	YMin      []float64
	Counts    []int64
	Exemplars []ProfileExemplar
}

// Aggregations a series query may ask for; Pyroscope sums the samples within a step unless told
// to average them (Grafana's Pyroscope data source never sets it, so sum it is by default).
const (
	AggregationSum     = "sum"
	AggregationAverage = "average"
)

// ProfileType is one profile type the server has data for.
type ProfileType struct {
	ID         string `json:"id"`         // process_cpu:cpu:nanoseconds:cpu:nanoseconds
	Name       string `json:"name"`       // process_cpu
	SampleType string `json:"sampleType"` // cpu
	SampleUnit string `json:"sampleUnit"` // nanoseconds
}

// SeriesQuery asks for a profile type's values over time, as Grafana's Pyroscope data source
// does (GetSeries in pyroscopeClient.go).
type SeriesQuery struct {
	ProfileTypeID string
	LabelSelector string
	Start, End    time.Time
	// Step is the width of each point; Pyroscope reads it in (fractional) seconds.
	Step    time.Duration
	GroupBy []string
	// Limit keeps the Limit series with the largest totals; 0 keeps them all.
	Limit int64
	// Aggregation is "", AggregationSum or AggregationAverage.
	Aggregation string
	// Exemplars asks for the individual profiles behind each point (exemplar_type): ExemplarsNone
	// or ExemplarsIndividual. Servers before Pyroscope 1.17 answer without them, silently.
	Exemplars ExemplarType
	// StackTraceSelector keeps only the samples of stacks under this call site, root first.
	StackTraceSelector []string
	// FrameFilter keeps only the stacks it keeps, where the server applies frame_filter; whether
	// it did is checked when the answer is not empty (FrameFilterNotice says it).
	FrameFilter FrameFilter
}

// HeatmapQuery asks how many individual profiles (or spans) of each value fell in each time slot,
// as Grafana's Pyroscope data source does (GetHeatmap in pyroscopeClient.go).
type HeatmapQuery struct {
	ProfileTypeID string
	LabelSelector string
	Start, End    time.Time
	// Step is the width of each time slot; Pyroscope reads it in (fractional) seconds.
	Step    time.Duration
	GroupBy []string
	// Limit keeps the Limit series with the largest totals; 0 keeps them all.
	Limit int64
	// Spans counts spans (heatmapType "span") rather than individual profiles ("individual").
	Spans bool
	// Exemplars asks for exemplars of the heatmap's own kind: profiles, or spans.
	Exemplars bool
}

// ExemplarsSince is the first Pyroscope version that answers exemplars on SelectSeries (and
// filters by profile_id_selector, which exemplars' links use); older ones ignore the request.
const ExemplarsSince = "1.17"

// ExemplarType is which exemplars a query asks for: none, individual profiles or spans.
type ExemplarType string

const (
	ExemplarsNone       ExemplarType = ""
	ExemplarsIndividual ExemplarType = "individual"
	ExemplarsSpan       ExemplarType = "span"
)
