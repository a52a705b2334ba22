package plugin

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// queryProfile answers the flame graph of a label selector and profile type over the panel's
// range, optionally restricted to some spans or a call site (correlate.FlameGraphOf); with a
// traceId, the whole request's (queryRequestProfile).
func (d *Datasource) queryProfile(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	pq, err := models.ParseProfileQuery(q.JSON)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	return d.profileFrames(ctx, q, pq)
}

// profileFrames is the flame graph half of the profile and both query types.
func (d *Datasource) profileFrames(ctx context.Context, q backend.DataQuery, pq *models.ProfileQuery) (data.Frames, error) {
	pyro, err := d.src.Profiles.Get()
	if err != nil {
		return nil, err
	}
	if len(pq.TraceIDs) > 0 {
		return d.queryRequestProfile(ctx, q, pq, pyro)
	}
	ans, err := correlate.FlameGraphOf(ctx, pyro, pq, q.TimeRange.From, q.TimeRange.To)
	if err != nil {
		return nil, err
	}
	return frames.FlameGraphAnswer(ans, pq.ProfileTypeID), nil
}

// queryRequestProfile answers a profile query with a traceId: the whole request's flame graph,
// one service level under the root, plus one frame per service when perService is set. Notices
// say how the samples were matched (span IDs or the trace_id label) and what is missing. With
// several trace IDs (traceIdSelector), the merged graph of those requests.
func (d *Datasource) queryRequestProfile(ctx context.Context, q backend.DataQuery, pq *models.ProfileQuery, pyro correlate.Profiles) (data.Frames, error) {
	rp, err := correlate.RequestProfileOf(ctx, correlate.TracesOf(d.src.Traces), pyro, correlate.RequestProfileQuery{
		TraceID: pq.TraceID, TraceIDs: pq.TraceIDs, LabelSelector: pq.LabelSelector, ProfileTypeID: pq.ProfileTypeID,
		MaxNodes: pq.MaxNodes, From: q.TimeRange.From, To: q.TimeRange.To, CallSite: pq.StackTraceSelector,
		FrameFilter: pq.FrameFilter, PerService: pq.PerService,
	})
	if err != nil {
		return nil, err
	}
	return frames.RequestProfile(rp, pq.ProfileTypeID, pq.PerService), nil
}
