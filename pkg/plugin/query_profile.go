package plugin

import (
	"context"
	"fmt"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

func (d *Datasource) queryHandlers() map[string]queryHandler {
	return map[string]queryHandler{
		models.QueryTypeProfile: d.queryProfile,
		models.QueryTypeDiff:    d.queryDiff,
		models.QueryTypeMetrics: d.queryMetrics, models.QueryTypeBoth: d.queryBoth,
		models.QueryTypeTrace: d.queryTrace, models.QueryTypeSlowRequests: d.querySlowRequests,
		models.QueryTypeSpanHeatmap: d.querySpanHeatmap, models.QueryTypeSpanProfile: d.querySpanProfile,
		models.QueryTypeGPUMetrics: d.queryGPUMetrics,
		models.QueryTypeGPUClass:   d.queryGPUClass,
		models.QueryTypeGPULocal:   d.queryGPULocal,
		models.QueryTypeKernels:    d.queryKernels,
	}
}

// queryProfile answers the flame graph of a label selector and profile type over the panel's
// range, optionally restricted to some spans.
func (d *Datasource) queryProfile(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	pq, err := models.ParseProfileQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeProfile, err)
	}
	pyro, err := d.pyroscopeClient()
	if err != nil {
		return errorResponse(err)
	}
	if pq.TraceID != "" {
		return d.queryRequestProfile(ctx, q, pq)
	}
	start, end := q.TimeRange.From, q.TimeRange.To
	if len(pq.SpanSelector) > 0 {
		start, end = start.Add(-correlate.SpanWindowPadding), end.Add(correlate.SpanWindowPadding)
	}
	tree, err := pyro.MergedFlameGraph(ctx, models.FlameGraphQuery{
		ProfileTypeID:      pq.ProfileTypeID,
		LabelSelector:      pq.LabelSelector,
		SpanSelector:       pq.SpanSelector,
		ProfileIDSelector:  pq.ProfileIDSelector,
		StackTraceSelector: pq.StackTraceSelector,
		FrameFilter:        pq.FrameFilter,
		Start:              start,
		End:                end,
		MaxNodes:           pq.MaxNodes,
	})
	if err != nil {
		return errorResponse(err)
	}
	f := frames.FlameGraph(tree, pq.ProfileTypeID)
	switch empty := tree == nil || tree.Total == 0; {
	case empty && len(pq.StackTraceSelector) > 0:
		f.AppendNotices(frames.Warning(fmt.Sprintf("Nothing to show: no %s stack matching %s in this range starts with the call site %s (stackTraceSelector names it root first: its first function is a root frame of the flame graph)",
			pq.ProfileTypeID, pq.LabelSelector, callSiteText(pq.StackTraceSelector))))
	case empty:
		f.AppendNotices(frames.Warning(whyEmpty(ctx, pyro, pq, start, end)))
	case len(pq.StackTraceSelector) > 0:
		// A graph rooted at the call site's functions could be read as the whole profile.
		f.AppendNotices(frames.Info(fmt.Sprintf("flame graph cut to the call site %s (stackTraceSelector): only the stacks under it are shown", callSiteText(pq.StackTraceSelector))))
	}
	f.AppendNotices(frameFilterNotices(pyro, pq.FrameFilter, false)...)
	return withFrames(f)
}

// callSiteText writes a call site root first: "main → handle → db".
func callSiteText(callSite []string) string { return strings.Join(callSite, " → ") }

// queryRequestProfile answers a profile query with a traceId: the whole request's flame graph,
// one service level under the root, plus one frame per service when perService is set. Notices
// say how the samples were matched (span IDs or the trace_id label) and what is missing.
func (d *Datasource) queryRequestProfile(ctx context.Context, q backend.DataQuery, pq *models.ProfileQuery) backend.DataResponse {
	rp, err := d.profileOfRequest(ctx, correlate.RequestProfileQuery{
		TraceID: pq.TraceID, LabelSelector: pq.LabelSelector, ProfileTypeID: pq.ProfileTypeID,
		MaxNodes: pq.MaxNodes, From: q.TimeRange.From, To: q.TimeRange.To, CallSite: pq.StackTraceSelector,
		FrameFilter: pq.FrameFilter, PerService: pq.PerService,
	})
	if err != nil {
		return errorResponse(err)
	}
	main := frames.FlameGraphTree(frames.FlameGraphFrameName, rp.Tree, pq.ProfileTypeID)
	main.Meta.Notices = frames.JoinNotices(rp.Notices)
	if len(pq.StackTraceSelector) > 0 {
		main.AppendNotices(frames.Info(fmt.Sprintf("each service's graph cut to the call site %s (stackTraceSelector): only the stacks under it are shown", callSiteText(pq.StackTraceSelector))))
	}
	out := []*data.Frame{main}
	if pq.PerService {
		for _, svc := range sortedKeys(rp.Services) {
			out = append(out, frames.FlameGraphTree(svc, rp.Services[svc], pq.ProfileTypeID))
		}
	}
	return withFrames(out...)
}
