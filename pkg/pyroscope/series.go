package pyroscope

import (
	"context"
	"fmt"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// Aggregations a series query may ask for; Pyroscope sums the samples within a step unless told
// to average them (Grafana's Pyroscope data source never sets it, so sum it is by default).
const (
	AggregationSum     = "sum"
	AggregationAverage = "average"
)

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
}

// Series runs SelectSeries.
func (c *Client) Series(ctx context.Context, q SeriesQuery) (series []models.ProfileSeries, err error) {
	req := &querierv1.SelectSeriesRequest{
		ProfileTypeID: q.ProfileTypeID,
		LabelSelector: q.LabelSelector,
		Start:         q.Start.UnixMilli(),
		End:           q.End.UnixMilli(),
		GroupBy:       q.GroupBy,
		Step:          q.Step.Seconds(),
	}
	if q.Limit > 0 {
		limit := q.Limit
		req.Limit = &limit
	}
	switch q.Aggregation {
	case "", AggregationSum:
		// Left unset, as Grafana leaves it: the server's default is the sum.
	case AggregationAverage:
		agg := typesv1.TimeSeriesAggregationType_TIME_SERIES_AGGREGATION_TYPE_AVERAGE
		req.Aggregation = &agg
	default:
		// Callers validate this; checked before the call so it is not blamed on Pyroscope.
		return nil, fmt.Errorf("series aggregation must be %q or %q, got %q", AggregationSum, AggregationAverage, q.Aggregation)
	}

	ctx, span := upstream.StartSpan(ctx, models.Pyroscope, "SelectSeries",
		attribute.String("profile_type", q.ProfileTypeID), attribute.String("label_selector", q.LabelSelector),
		attribute.StringSlice("group_by", q.GroupBy), attribute.Float64("step_seconds", q.Step.Seconds()),
		attribute.Int64("limit", q.Limit))
	defer func() { err = upstream.EndSpan(span, c.wrap(err)) }()

	res, err := c.querier.SelectSeries(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	for _, s := range res.Msg.GetSeries() {
		out := models.ProfileSeries{Labels: make([]models.LabelPair, 0, len(s.GetLabels())), Points: make([]models.ProfilePoint, 0, len(s.GetPoints()))}
		for _, l := range s.GetLabels() {
			out.Labels = append(out.Labels, models.LabelPair{Name: l.GetName(), Value: l.GetValue()})
		}
		for _, p := range s.GetPoints() {
			out.Points = append(out.Points, models.ProfilePoint{Timestamp: p.GetTimestamp(), Value: p.GetValue()})
		}
		series = append(series, out)
	}
	return series, nil
}
