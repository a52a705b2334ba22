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

// ProfilePoint is one step's value.
type ProfilePoint struct {
	Timestamp int64 // Unix milliseconds
	Value     float64
}
