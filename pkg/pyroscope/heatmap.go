package pyroscope

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// HeatmapSince is the first Pyroscope version that has SelectHeatmap.
const HeatmapSince = "1.19"

// Heatmap runs SelectHeatmap. A server without the call (before Pyroscope 1.19: HTTP 404, which
// Connect reads as unimplemented) gives a *models.UnsupportedError, errors.Is
// models.ErrUnsupported, so the caller can fall back to series.
func (c *Client) Heatmap(ctx context.Context, q models.HeatmapQuery) (series []models.HeatmapSeries, err error) {
	req := &querierv1.SelectHeatmapRequest{
		ProfileTypeID: q.ProfileTypeID,
		LabelSelector: q.LabelSelector,
		Start:         q.Start.UnixMilli(),
		End:           q.End.UnixMilli(),
		Step:          q.Step.Seconds(),
		GroupBy:       q.GroupBy,
		QueryType:     querierv1.HeatmapQueryType_HEATMAP_QUERY_TYPE_INDIVIDUAL,
	}
	kind := models.ExemplarsIndividual
	if q.Spans {
		req.QueryType, kind = querierv1.HeatmapQueryType_HEATMAP_QUERY_TYPE_SPAN, models.ExemplarsSpan
	}
	// The exemplar type must match the query type or be NONE (querier.proto).
	req.ExemplarType = exemplarProto(models.ExemplarsNone)
	if q.Exemplars {
		req.ExemplarType = exemplarProto(kind)
	}
	if q.Limit > 0 {
		limit := q.Limit
		req.Limit = &limit
	}

	ctx, span := upstream.StartSpan(ctx, models.Pyroscope, "SelectHeatmap",
		attribute.String("profile_type", q.ProfileTypeID), attribute.String("label_selector", q.LabelSelector),
		attribute.StringSlice("group_by", q.GroupBy), attribute.Float64("step_seconds", q.Step.Seconds()),
		attribute.Bool("spans", q.Spans), attribute.Bool("exemplars", q.Exemplars))
	defer func() { err = upstream.EndSpan(span, c.wrap(unsupportedOr("SelectHeatmap", HeatmapSince, err))) }()

	res, err := c.querier.SelectHeatmap(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	if sl := badHeatmapSlot(res.Msg); sl != nil {
		return nil, fmt.Errorf("invalid SelectHeatmap reply: the slot at %d has %d counts for %d buckets", sl.GetTimestamp(), len(sl.GetCounts()), len(sl.GetYMin()))
	}
	for _, s := range res.Msg.GetSeries() {
		out := models.HeatmapSeries{Labels: labelPairs(s.GetLabels()), Slots: make([]models.HeatmapSlot, 0, len(s.GetSlots()))}
		for _, sl := range s.GetSlots() {
			counts := make([]int64, len(sl.GetCounts()))
			for i, n := range sl.GetCounts() {
				counts[i] = int64(n)
			}
			out.Slots = append(out.Slots, models.HeatmapSlot{Timestamp: sl.GetTimestamp(), YMin: sl.GetYMin(), Counts: counts, Exemplars: exemplars(sl.GetExemplars())})
		}
		series = append(series, out)
	}
	return series, nil
}

// badHeatmapSlot is the first slot of a SelectHeatmap reply whose counts are not one per bucket,
// or nil when the reply is whole.
func badHeatmapSlot(res *querierv1.SelectHeatmapResponse) *typesv1.HeatmapSlot {
	for _, s := range res.GetSeries() {
		for _, sl := range s.GetSlots() {
			if len(sl.GetCounts()) != len(sl.GetYMin()) {
				return sl
			}
		}
	}
	return nil
}

// unsupportedOr files a server's "no such call" (Connect's unimplemented, which is also how
// Connect reads an HTTP 404 from a server whose router lacks the path) under
// models.ErrUnsupported, naming the call and the version that has it; other errors pass. The
// Connect error is not kept as the cause: upstream.Wrap would then describe it as a URL that is
// no Pyroscope server at all, which a 404 for one call does not mean.
func unsupportedOr(call, since string, err error) error {
	if ce, ok := errors.AsType[*connect.Error](err); ok && ce.Code() == connect.CodeUnimplemented {
		return &models.UnsupportedError{Call: call, Since: since, Answer: ce.Message(), V1Range: strings.Contains(ce.Message(), v1FrontendRefusal)}
	}
	return err
}

// v1FrontendRefusal is how Pyroscope 2.x's legacy (v1) query frontend refuses the calls only its
// v2 frontend has, SelectHeatmap among them (grafana/pyroscope pkg/frontend/frontend_stubs.go:
// errNotAvailableInV1Frontend, unimplemented); in v1-v2 dual mode a range reaching back before
// the split gets it (split.go). Pyroscope 1.x has no such route: its 404 reads "404 Not Found".
const v1FrontendRefusal = "This endpoint is not available in v1 frontend"
