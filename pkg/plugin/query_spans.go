package plugin

import (
	"context"
	"errors"
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// querySpanHeatmap answers an operation's span durations over the panel's range as a heatmap,
// from Jaeger's own search (no Tempo, any Pyroscope), with the slowest span of each time bucket as
// an exemplar linking to its trace and its flame graph.
func (d *Datasource) querySpanHeatmap(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	sq, err := models.ParseSpanQuery(models.QueryTypeSpanHeatmap, q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeSpanHeatmap, err)
	}
	jae, err := d.jaegerClient()
	if err != nil {
		return errorResponse(err)
	}
	found, err := correlate.FindOperationSpans(ctx, jae, sq, q.TimeRange.From, q.TimeRange.To)
	if err != nil {
		return errorResponse(err)
	}
	step := correlate.HeatmapStep(q.TimeRange.From, q.TimeRange.To, q.Interval)
	out := frames.SpanHeatmap(correlate.BuildSpanHeatmap(found.Spans, step), found, sq.ProfileTypeID, d.traceLinks(ctx))
	heat := out[0]
	if len(found.Spans) == 0 {
		heat.AppendNotices(frames.Warning(noSpans(found)))
		return withFrames(heat)
	}
	heat.AppendNotices(frames.Info(fmt.Sprintf("%s, from Jaeger's search, in %s steps; exemplars: the slowest span of each step.", found.Describe(), step)))
	if note := found.LimitNote(); note != "" {
		heat.AppendNotices(frames.Warning(note))
	}
	return withFrames(out...)
}

// querySpanProfile answers the merged profile of an operation's spans slower than a duration or
// a percentile: one Pyroscope call with their span IDs, answering what a single short span has
// too few samples to show.
func (d *Datasource) querySpanProfile(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	sq, err := models.ParseSpanQuery(models.QueryTypeSpanProfile, q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeSpanProfile, err)
	}
	jae, err := d.jaegerClient()
	if err != nil {
		return errorResponse(err)
	}
	pyro, err := d.pyroscopeClient()
	if err != nil {
		return errorResponse(err)
	}
	found, err := correlate.FindOperationSpans(ctx, jae, sq, q.TimeRange.From, q.TimeRange.To)
	if err != nil {
		return errorResponse(err)
	}
	if len(found.Spans) == 0 {
		f := frames.FlameGraph(nil, sq.ProfileTypeID)
		f.AppendNotices(frames.Warning(noSpans(found)))
		return withFrames(f)
	}
	sp, err := correlate.ProfileSpans(ctx, pyro, sq, found)
	if unprofiled, ok := errors.AsType[*correlate.UnprofiledSpansError](err); ok {
		// The user picked an operation without span profiles: their query, not an upstream.
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, unprofiled.Error())
	}
	if err != nil {
		return errorResponse(err)
	}
	f := frames.FlameGraph(sp.Tree, sq.ProfileTypeID)
	f.Meta.Notices = append(f.Meta.Notices, frames.Notices(sp.Notices)...)
	return withFrames(f)
}

// noSpans says why a span query found nothing.
func noSpans(found *correlate.OperationSpans) string {
	return fmt.Sprintf("The trace search found no span of %s in the range (%d trace(s) read): check the service and operation (the editor lists those Jaeger knows) or widen the range.",
		found.Subject(), found.Traces)
}
