package correlate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// TailSearch is how the tail query chooses an operation's requests: the endpoint, the search's
// size, and the tail's threshold (exactly one of Percentile, MinDuration, SLO is set).
type TailSearch struct {
	Service, Operation string
	Percentile         float64
	MinDuration        time.Duration
	// SLO is the data source's latency SLO when the query asks for it (its "slo" field).
	SLO       time.Duration
	MaxTraces int
	Limit     int64
}

// TailSample is an operation's requests over a range, split for the tail query.
type TailSample struct {
	// Found is what the trace search read; its Spans are the operation's spans, at most one per
	// trace (the longest), in start order.
	Found *OperationSpans
	// Threshold is the duration a tail request reaches; ThresholdFrom says where it comes from
	// ("p95 of 412 requests", "minDuration", "the SLO (latencyYellowMs)").
	Threshold     time.Duration
	ThresholdFrom string
	// Median is the operation's median duration over the range: the tail's excess is measured
	// from it.
	Median time.Duration
	// Over counts the requests at or over the threshold; Tail holds the newest MaxTraces of them.
	Over int
	Tail []models.Span
	// MedianSample are requests around the median (never in the tail), the newest first: what
	// the tail is compared with.
	MedianSample []models.Span
}

// MedianSampleSize is how many median requests the tail is compared with for a tail of n
// requests: half as many, at least 3 and at most 10 (their causes vary less than the tail's).
func MedianSampleSize(n int) int { return min(max(n/2, 3), 10) }

// FindTail searches the operation's spans over the range once and splits them into the tail
// and a median sample. The operation is one span per request: a trace holding it several times
// counts once, by its longest span.
func FindTail(ctx context.Context, search SpanSearch, q TailSearch, from, to time.Time) (*TailSample, error) {
	found, err := FindOperationSpans(ctx, search, &models.SpanQuery{Service: q.Service, Operation: q.Operation, Limit: q.Limit}, from, to)
	if err != nil {
		return nil, err
	}
	found.Spans = longestPerTrace(found.Spans)
	out := &TailSample{Found: found}
	if len(found.Spans) == 0 {
		return out, nil
	}
	byDuration := slices.Clone(found.Spans)
	slices.SortStableFunc(byDuration, func(a, b models.Span) int { return cmp.Compare(a.Duration, b.Duration) })
	out.Median = Percentile(byDuration, 50)
	switch {
	case q.MinDuration > 0:
		out.Threshold, out.ThresholdFrom = q.MinDuration, "minDuration "+q.MinDuration.String()
	case q.SLO > 0:
		out.Threshold, out.ThresholdFrom = q.SLO, fmt.Sprintf("the data source's latency SLO (latencyYellowMs, %s)", q.SLO)
	default:
		out.Threshold = Percentile(byDuration, q.Percentile)
		out.ThresholdFrom = fmt.Sprintf("p%g of the %d requests found", q.Percentile, len(byDuration))
	}
	var tail []models.Span
	for _, s := range found.Spans {
		if s.Duration >= out.Threshold {
			tail = append(tail, s)
		}
	}
	out.Over = len(tail)
	// Newest first: the tail of now, not of the range's start.
	slices.SortStableFunc(tail, func(a, b models.Span) int { return b.Start.Compare(a.Start) })
	out.Tail = tail[:min(len(tail), max(q.MaxTraces, 1))]
	out.MedianSample = medianSample(byDuration, out.Threshold, MedianSampleSize(len(out.Tail)))
	return out, nil
}

// longestPerTrace keeps each trace's longest span, in start order.
func longestPerTrace(spans []models.Span) []models.Span {
	at := map[string]int{}
	var out []models.Span
	for _, s := range spans {
		i, ok := at[s.TraceID]
		switch {
		case !ok:
			at[s.TraceID] = len(out)
			out = append(out, s)
		case s.Duration > out[i].Duration:
			out[i] = s
		}
	}
	return out
}

// medianSample takes the n requests nearest the median by rank, under the tail's threshold,
// the newest first.
func medianSample(byDuration []models.Span, threshold time.Duration, n int) []models.Span {
	under := byDuration
	for len(under) > 0 && under[len(under)-1].Duration >= threshold {
		under = under[:len(under)-1]
	}
	if len(under) == 0 {
		return nil
	}
	mid := (len(byDuration) - 1) / 2
	lo := min(max(mid-n/2, 0), max(len(under)-n, 0))
	out := slices.Clone(under[lo:min(lo+n, len(under))])
	slices.SortStableFunc(out, func(a, b models.Span) int { return b.Start.Compare(a.Start) })
	return out
}
