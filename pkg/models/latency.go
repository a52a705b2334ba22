package models

import (
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// What the join asks of a metrics store for request latency, declared here so that the join
// reads any store that answers it (Prometheus' histograms today) without importing its client.

// LatencyQuantiles are the percentiles the latency table shows, in its column order.
var LatencyQuantiles = []float64{0.5, 0.95, 0.99}

// LatencyQuery asks for request-latency percentiles by endpoint over [End-Range, End].
type LatencyQuery struct {
	Histograms []LatencyHistogram
	// Service and Endpoint are exact matches; empty matches all. They become label matchers in
	// the PromQL AST, never text in a query string.
	Service, Endpoint string
	End               time.Time
	Range             time.Duration
	// Threshold, when set, asks for goodput: the requests answered within it (from the buckets).
	Threshold time.Duration
}

// EndpointLatency is one endpoint's latency over the range, from one histogram.
type EndpointLatency struct {
	Metric   string // the histogram, without _bucket
	Service  string
	Endpoint string
	// Quantiles hold the seconds at LatencyQuantiles; NaN where Prometheus had no answer.
	Quantiles []float64
	// Requests counts the requests in the range (increase of _count); NaN when unknown.
	Requests float64
	// Good counts the requests answered within LatencyQuery.Threshold (goodput × range); NaN when
	// unknown. GoodExact is false when the threshold is not a bucket boundary: Good is then
	// interpolated linearly inside its bucket, as histogram_quantile does.
	Good      float64
	GoodExact bool
}

// LatencyResult is the latency table's rows, slowest p99 first, and what Prometheus warned about.
type LatencyResult struct {
	Rows []EndpointLatency
	// Notices are Prometheus' warnings and the queries that failed while others answered.
	Notices notices.List
	// Queries are the PromQL expressions asked, for the notice and for users to paste elsewhere.
	Queries []string
	// Range is the window the figures cover (the panel's, at least a minute: rate() needs two scrapes): goodput
	// per second is Good over it.
	Range time.Duration
}
