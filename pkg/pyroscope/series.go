package pyroscope

import (
	"context"
	"fmt"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// exemplarProto is Pyroscope's exemplar_type for t; NONE for anything else, as the callers validate it.
func exemplarProto(t models.ExemplarType) typesv1.ExemplarType {
	switch t {
	case models.ExemplarsIndividual:
		return typesv1.ExemplarType_EXEMPLAR_TYPE_INDIVIDUAL
	case models.ExemplarsSpan:
		return typesv1.ExemplarType_EXEMPLAR_TYPE_SPAN
	}
	return typesv1.ExemplarType_EXEMPLAR_TYPE_NONE
}

// Series runs SelectSeries. Each point carries the exemplars and annotations Pyroscope attached
// to it (annotations come unasked; exemplars only when q.Exemplars asks and the server has them).
func (c *Client) Series(ctx context.Context, q models.SeriesQuery) (series []models.ProfileSeries, err error) {
	req := &querierv1.SelectSeriesRequest{
		ProfileTypeID:      q.ProfileTypeID,
		LabelSelector:      q.LabelSelector,
		Start:              q.Start.UnixMilli(),
		End:                q.End.UnixMilli(),
		GroupBy:            q.GroupBy,
		Step:               q.Step.Seconds(),
		StackTraceSelector: stackTraceSelector(q.StackTraceSelector, q.FrameFilter),
	}
	switch q.Exemplars {
	case models.ExemplarsNone:
		// Left unset (UNSPECIFIED), as Grafana leaves it when exemplars are off.
	case models.ExemplarsIndividual, models.ExemplarsSpan:
		req.ExemplarType = exemplarProto(q.Exemplars)
	default:
		return nil, fmt.Errorf("series exemplars must be %q or %q, got %q", models.ExemplarsIndividual, models.ExemplarsSpan, q.Exemplars)
	}
	if q.Limit > 0 {
		limit := q.Limit
		req.Limit = &limit
	}
	switch q.Aggregation {
	case "", models.AggregationSum:
		// Left unset, as Grafana leaves it: the server's default is the sum.
	case models.AggregationAverage:
		agg := typesv1.TimeSeriesAggregationType_TIME_SERIES_AGGREGATION_TYPE_AVERAGE
		req.Aggregation = &agg
	default:
		// Callers validate this; checked before the call so it is not blamed on Pyroscope.
		return nil, fmt.Errorf("series aggregation must be %q or %q, got %q", models.AggregationSum, models.AggregationAverage, q.Aggregation)
	}

	ctx, span := upstream.StartSpan(ctx, models.Pyroscope, "SelectSeries",
		attribute.String("profile_type", q.ProfileTypeID), attribute.String("label_selector", q.LabelSelector),
		attribute.StringSlice("group_by", q.GroupBy), attribute.Float64("step_seconds", q.Step.Seconds()),
		attribute.Int64("limit", q.Limit), attribute.String("exemplars", string(q.Exemplars)),
		attribute.Int("call_site_depth", len(q.StackTraceSelector)))
	defer func() { err = upstream.EndSpan(span, c.wrap(err)) }()

	res, err := c.querier.SelectSeries(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	for _, s := range res.Msg.GetSeries() {
		out := models.ProfileSeries{Labels: labelPairs(s.GetLabels()), Points: make([]models.ProfilePoint, 0, len(s.GetPoints()))}
		for _, p := range s.GetPoints() {
			pt := models.ProfilePoint{Timestamp: p.GetTimestamp(), Value: p.GetValue(), Exemplars: exemplars(p.GetExemplars())}
			for _, a := range p.GetAnnotations() {
				pt.Annotations = append(pt.Annotations, models.ProfileAnnotation{Key: a.GetKey(), Value: a.GetValue()})
			}
			out.Points = append(out.Points, pt)
		}
		series = append(series, out)
	}
	if len(series) > 0 && !q.FrameFilter.Empty() {
		c.checkSeriesFrameFilter(ctx, q)
	}
	return series, nil
}

// labelPairs converts Pyroscope's labels; none gives an empty list, not nil.
func labelPairs(ls []*typesv1.LabelPair) []models.LabelPair {
	out := make([]models.LabelPair, 0, len(ls))
	for _, l := range ls {
		out = append(out, models.LabelPair{Name: l.GetName(), Value: l.GetValue()})
	}
	return out
}

// exemplars converts Pyroscope's exemplars; none gives nil.
func exemplars(es []*typesv1.Exemplar) []models.ProfileExemplar {
	var out []models.ProfileExemplar
	for _, e := range es {
		var labels []models.LabelPair
		if len(e.GetLabels()) > 0 {
			labels = labelPairs(e.GetLabels())
		}
		out = append(out, models.ProfileExemplar{
			Timestamp: e.GetTimestamp(), ProfileID: e.GetProfileId(), SpanID: e.GetSpanId(), TraceID: e.GetTraceId(),
			Value: e.GetValue(), Labels: labels,
		})
	}
	return out
}
