package models

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
