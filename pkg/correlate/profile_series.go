package correlate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// MaxHeatmapSlots is Grafana's Pyroscope data source's bound on a heatmap's time slots.
const MaxHeatmapSlots = 64

// ProfileSeriesQuery asks for a profile type's values over time (the metrics half of a query).
type ProfileSeriesQuery struct {
	Profile     *models.ProfileQuery
	Aggregation string // models.AggregationSum (the default) or AggregationAverage
	From, To    time.Time
	// Step is Grafana's rule: the panel's interval, never below the data source's minStep.
	Step time.Duration
}

// ProfileSeriesAnswer is the series, or with includeHeatmap the heatmap, and what to say.
type ProfileSeriesAnswer struct {
	Series  []models.ProfileSeries
	Heatmap []models.HeatmapSeries
	// IsHeatmap: Heatmap answers (the server has SelectHeatmap); Step is then the heatmap's.
	IsHeatmap bool
	Step      time.Duration
	// Empty says why nothing matched; "" when something did.
	Empty   string
	Notices notices.List
}

// HasExemplars says whether any point of the series carries an exemplar.
func (a *ProfileSeriesAnswer) HasExemplars() bool {
	for _, s := range a.Series {
		for _, p := range s.Points {
			if len(p.Exemplars) > 0 {
				return true
			}
		}
	}
	return false
}

// ProfileSeries answers the metrics half of a profile query: the series, or, with
// includeHeatmap, SelectHeatmap's counts of individual profiles (or spans); a server without
// SelectHeatmap gets the series instead of failing the query, with a notice.
func ProfileSeries(ctx context.Context, pyro ProfileStore, q ProfileSeriesQuery) (*ProfileSeriesAnswer, error) {
	pq := q.Profile
	ans := &ProfileSeriesAnswer{Step: q.Step}
	if pq.IncludeHeatmap {
		err := profileHeatmap(ctx, pyro, q, ans)
		switch {
		case err == nil:
			return ans, nil
		case !errors.Is(err, models.ErrUnsupported):
			return nil, err
		}
		ans.Notices.Warn(heatmapFallbackNotice(err))
	}
	sq := models.SeriesQuery{
		ProfileTypeID: pq.ProfileTypeID, LabelSelector: pq.LabelSelector, Start: q.From, End: q.To, Step: q.Step,
		GroupBy: pq.GroupBy, Limit: pq.Limit, Aggregation: q.Aggregation, StackTraceSelector: pq.StackTraceSelector,
		FrameFilter: pq.FrameFilter,
	}
	if pq.IncludeExemplars {
		// Series exemplars are individual profiles, whatever heatmapType says, as in Grafana.
		sq.Exemplars = models.ExemplarsIndividual
	}
	series, err := pyro.Series(ctx, sq)
	if err != nil {
		return nil, err
	}
	ans.Series, ans.IsHeatmap, ans.Step = series, false, q.Step
	if len(series) == 0 {
		ans.Empty = WhyEmpty(ctx, pyro, pq, q.From, q.To)
		return ans, nil
	}
	if pq.IncludeExemplars && !ans.HasExemplars() {
		ans.Notices.Infof("exemplars (includeExemplars) need Pyroscope %s or newer: Pyroscope sent none for this range, which is also how an older server answers, as it ignores the request; the two cannot be told apart", models.ExemplarsSince)
	}
	ans.Notices.Merge(pyro.FrameFilterNotices(pq.FrameFilter, true))
	return ans, nil
}

// profileHeatmap fills the heatmap; its error errors.Is models.ErrUnsupported where the server
// has no SelectHeatmap. The step is Grafana's rule for heatmaps: the series step, but never so
// short that the range holds more than MaxHeatmapSlots slots, which would make cells too thin.
func profileHeatmap(ctx context.Context, pyro ProfileStore, q ProfileSeriesQuery, ans *ProfileSeriesAnswer) error {
	pq := q.Profile
	step := max(q.Step, q.To.Sub(q.From)/MaxHeatmapSlots)
	series, err := pyro.Heatmap(ctx, models.HeatmapQuery{
		ProfileTypeID: pq.ProfileTypeID, LabelSelector: pq.LabelSelector, Start: q.From, End: q.To, Step: step,
		GroupBy: pq.GroupBy, Limit: pq.Limit, Spans: pq.HeatmapType == models.HeatmapSpan, Exemplars: pq.IncludeExemplars,
	})
	if err != nil {
		return err
	}
	ans.Heatmap, ans.IsHeatmap, ans.Step = series, true, step
	if len(pq.StackTraceSelector) > 0 {
		ans.Notices.Warn("the heatmap counts every stack, not only those under the call site (stackTraceSelector): Pyroscope's SelectHeatmap has no such selector")
	}
	if !pq.FrameFilter.Empty() {
		ans.Notices.Warn("the heatmap counts every stack, not only those frameFilter keeps: Pyroscope's SelectHeatmap has no stack-trace selector")
	}
	if len(series) == 0 {
		ans.Empty = WhyEmpty(ctx, pyro, pq, q.From, q.To)
	}
	return nil
}

// FlameGraphAnswer is a profile query's flame graph and what to say about it.
type FlameGraphAnswer struct {
	Tree    *flamegraph.Node
	Notices notices.List
}

// FlameGraphOf answers a profile query without traceId: the flame graph of a label selector
// and profile type over [from, to], restricted to some spans (the range then padded by
// SpanWindowPadding) or to the stacks under a call site when the query says so.
func FlameGraphOf(ctx context.Context, pyro ProfileStore, pq *models.ProfileQuery, from, to time.Time) (*FlameGraphAnswer, error) {
	if len(pq.SpanSelector) > 0 {
		from, to = from.Add(-SpanWindowPadding), to.Add(SpanWindowPadding)
	}
	tree, err := pyro.MergedFlameGraph(ctx, models.FlameGraphQuery{
		ProfileTypeID: pq.ProfileTypeID, LabelSelector: pq.LabelSelector, SpanSelector: pq.SpanSelector,
		ProfileIDSelector: pq.ProfileIDSelector, StackTraceSelector: pq.StackTraceSelector, FrameFilter: pq.FrameFilter,
		Start: from, End: to, MaxNodes: pq.MaxNodes,
	})
	if err != nil {
		return nil, err
	}
	ans := &FlameGraphAnswer{Tree: tree}
	switch empty := tree == nil || tree.Total == 0; {
	case empty && len(pq.StackTraceSelector) > 0:
		ans.Notices.Warnf("Nothing to show: no %s stack matching %s in this range starts with the call site %s (stackTraceSelector names it root first: its first function is a root frame of the flame graph)",
			pq.ProfileTypeID, pq.LabelSelector, CallSiteText(pq.StackTraceSelector))
	case empty:
		ans.Notices.Warn(WhyEmpty(ctx, pyro, pq, from, to))
	case len(pq.StackTraceSelector) > 0:
		// A graph rooted at the call site's functions could be read as the whole profile.
		ans.Notices.Infof("flame graph cut to the call site %s (stackTraceSelector): only the stacks under it are shown", CallSiteText(pq.StackTraceSelector))
	}
	ans.Notices.Merge(pyro.FrameFilterNotices(pq.FrameFilter, false))
	return ans, nil
}

// CallSiteText writes a call site root first: "main → handle → db".
func CallSiteText(callSite []string) string { return strings.Join(callSite, " → ") }

// RequestProfileOf answers a profile query with a traceId (ProfileOfRequest) once the user's
// selector parses: the whole request's flame graph, one service level under the root. With
// several trace IDs (q.TraceIDs: Grafana's traceIdSelector), the merged graph of those requests
// (profileOfRequests).
func RequestProfileOf(ctx context.Context, traces Traces, pyro Profiles, q RequestProfileQuery) (*RequestProfile, error) {
	matchers, err := models.ParseLabelSelector(q.LabelSelector)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	q.Matchers = matchers
	var rp *RequestProfile
	if len(q.TraceIDs) > 1 {
		rp, err = profileOfRequests(ctx, traces, pyro, q)
	} else {
		rp, err = ProfileOfRequest(ctx, traces, pyro, q)
	}
	if err != nil {
		return nil, err
	}
	if len(q.CallSite) > 0 {
		rp.Notices.Infof("each service's graph cut to the call site %s (stackTraceSelector): only the stacks under it are shown", CallSiteText(q.CallSite))
	}
	return rp, nil
}

// heatmapFallbackNotice is what a panel says when its heatmap (includeHeatmap) could not be had
// and series are shown instead: err is the *models.UnsupportedError the profile store returned.
func heatmapFallbackNotice(err error) string {
	ue, ok := errors.AsType[*models.UnsupportedError](err)
	if !ok {
		return fmt.Sprintf("heatmap (includeHeatmap) could not be had (%v): series shown", err)
	}
	if ue.V1Range {
		return fmt.Sprintf("heatmap (includeHeatmap): this Pyroscope (2.x in v1-v2 dual mode) serves %s only over its v2 storage, and this time range reaches back into its v1 storage: series shown; a range starting after the server's v1/v2 split gets the heatmap", ue.Call)
	}
	return fmt.Sprintf("heatmap (includeHeatmap) needs Pyroscope %s or newer (%s); this server does not have it: series shown", ue.Since, ue.Call)
}
