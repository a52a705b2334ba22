package plugin

import (
	"cmp"
	"context"
	"errors"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// DiffSummaryRows is how many functions the diff summary table lists: the biggest movers.
const DiffSummaryRows = 25

// queryDiff answers a diff flame graph: a baseline against a comparison, each a time range, a
// label selector, a span selector or a whole request. The side with the smaller total is scaled
// up to the other's, so widths compare each function's share of its side: "this slow request"
// against "this service over the last hour" would otherwise be all baseline.
func (d *Datasource) queryDiff(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	pq, err := models.ParseProfileQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeDiff, err)
	}
	if pq.Baseline == nil || pq.Comparison == nil {
		return badQuery(models.QueryTypeDiff, errors.New(`fields "baseline" and "comparison" are both needed, each with a time range (from, to), a labelSelector, a spanSelector or a traceId`))
	}
	pyro, err := d.pyroscopeClient()
	if err != nil {
		return errorResponse(err)
	}
	dq := correlate.DiffQuery{ProfileTypeID: pq.ProfileTypeID, MaxNodes: pq.MaxNodes, FrameFilter: pq.FrameFilter}
	now := time.Now()
	for _, side := range []struct {
		name string
		spec *models.DiffSide
		out  *correlate.DiffSideQuery
	}{{"baseline", pq.Baseline, &dq.Baseline}, {"comparison", pq.Comparison, &dq.Comparison}} {
		from, to, err := side.spec.Range(q.TimeRange.From, q.TimeRange.To, now, side.name)
		if err != nil {
			return badQuery(models.QueryTypeDiff, err)
		}
		*side.out = correlate.DiffSideQuery{LabelSelector: cmp.Or(side.spec.LabelSelector, pq.LabelSelector),
			SpanSelector: side.spec.SpanSelector, TraceID: side.spec.TraceID, From: from, To: to}
	}
	base, comp, err := correlate.DiffSides(ctx, correlate.TracesFunc(d.traceFromJaeger), pyro, dq)
	if err != nil {
		return errorResponse(requestProfileError(err))
	}
	tree := flamegraph.Diff(base.Tree, comp.Tree)
	summary := frames.DiffSummary(tree, DiffSummaryRows) // shares: before scaling, same after
	notices := frames.JoinNotices(append(base.Notices, comp.Notices...))
	if few := frames.DiffFewSamples(tree, pq.ProfileTypeID); few != "" { // before scaling: real totals
		notices = append(notices, frames.Warning(few))
	}
	notices = append(notices, frames.Info(frames.NormaliseDiff(tree, pq.ProfileTypeID, base.Describe, comp.Describe)))
	notices = append(notices, frameFilterNotices(pyro, pq.FrameFilter, false)...)
	frame := frames.DiffFlameGraph(tree, pq.ProfileTypeID)
	frame.Meta.Notices = notices
	return withFrames(frame, summary)
}
