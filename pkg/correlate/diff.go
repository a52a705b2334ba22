package correlate

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// DiffSideQuery is one side of a diff flame graph: a label selector over a range, some of its
// spans, or a whole request (TraceID, its range the panel's).
type DiffSideQuery struct {
	LabelSelector string
	SpanSelector  []string
	TraceID       string
	From, To      time.Time
}

// DiffQuery asks for both sides of a diff.
type DiffQuery struct {
	ProfileTypeID        string
	MaxNodes             int64
	Baseline, Comparison DiffSideQuery
	// FrameFilter keeps only the stacks it keeps, on both sides (frameFilter).
	FrameFilter models.FrameFilter
}

// DiffSide is one side's flame graph and what it was, in words ("trace …", "{…} over … to …").
type DiffSide struct {
	Tree     *flamegraph.Node
	Describe string
	Notices  notices.List
}

// DiffSides asks both sides in parallel. A whole request's side has no service level, so its
// stacks line up with a service's. An error names the side it is about.
func DiffSides(ctx context.Context, traces Traces, profiles Profiles, q DiffQuery) (baseline, comparison *DiffSide, err error) {
	names := [2]string{"baseline", "comparison"}
	specs := [2]DiffSideQuery{q.Baseline, q.Comparison}
	var sides [2]*DiffSide
	errs := [2]error{safe.ErrPanicked, safe.ErrPanicked}
	if !q.FrameFilter.Empty() {
		profiles = cutToCallSite{Profiles: profiles, frameFilter: q.FrameFilter}
	}
	fanOut(2, func(i int) {
		sides[i], errs[i] = diffSide(ctx, traces, profiles, q, specs[i])
	})
	for i, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("%s side of the diff: %w", names[i], err)
		}
	}
	return sides[0], sides[1], nil
}

func diffSide(ctx context.Context, traces Traces, profiles Profiles, q DiffQuery, side DiffSideQuery) (*DiffSide, error) {
	if side.TraceID != "" {
		matchers, err := models.ParseLabelSelector(side.LabelSelector)
		if err != nil {
			return nil, err
		}
		rp, err := ProfileOfRequest(ctx, traces, profiles, RequestProfileQuery{
			TraceID: side.TraceID, LabelSelector: side.LabelSelector, Matchers: matchers,
			ProfileTypeID: q.ProfileTypeID, MaxNodes: q.MaxNodes, From: side.From, To: side.To,
		})
		if err != nil {
			return nil, err
		}
		tree := rp.Tree
		if len(rp.Services) > 0 {
			tree = flamegraph.New()
			for _, svc := range slices.Sorted(maps.Keys(rp.Services)) {
				tree.Merge(rp.Services[svc])
			}
		}
		return &DiffSide{Tree: tree, Notices: rp.Notices, Describe: "trace " + side.TraceID}, nil
	}
	from, to := side.From, side.To
	describe := fmt.Sprintf("%s over %s to %s", side.LabelSelector, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	if len(side.SpanSelector) > 0 {
		from, to = from.Add(-SpanWindowPadding), to.Add(SpanWindowPadding)
		describe = fmt.Sprintf("%d span(s) of %s", len(side.SpanSelector), side.LabelSelector)
	}
	tree, err := profiles.MergedFlameGraph(ctx, models.FlameGraphQuery{
		ProfileTypeID: q.ProfileTypeID, LabelSelector: side.LabelSelector, SpanSelector: side.SpanSelector,
		Start: from, End: to, MaxNodes: q.MaxNodes,
	})
	if err != nil {
		return nil, err
	}
	return &DiffSide{Tree: tree, Describe: describe}, nil
}

// DiffQueryOf is the diff of a profile query's baseline and comparison, each side's range
// resolved against the panel's (from, to) and now; the query's own label selector stands in
// for a side's that is empty.
func DiffQueryOf(pq *models.ProfileQuery, from, to, now time.Time) (DiffQuery, error) {
	dq := DiffQuery{ProfileTypeID: pq.ProfileTypeID, MaxNodes: pq.MaxNodes, FrameFilter: pq.FrameFilter}
	if pq.Baseline == nil || pq.Comparison == nil {
		return dq, models.InvalidQueryf(`fields "baseline" and "comparison" are both needed, each with a time range (from, to), a labelSelector, a spanSelector or a traceId`)
	}
	for _, side := range []struct {
		name string
		spec *models.DiffSide
		out  *DiffSideQuery
	}{{"baseline", pq.Baseline, &dq.Baseline}, {"comparison", pq.Comparison, &dq.Comparison}} {
		sideFrom, sideTo, err := side.spec.Range(from, to, now, side.name)
		if err != nil {
			return dq, models.InvalidQuery(err)
		}
		*side.out = DiffSideQuery{LabelSelector: cmp.Or(side.spec.LabelSelector, pq.LabelSelector),
			SpanSelector: side.spec.SpanSelector, TraceID: side.spec.TraceID, From: sideFrom, To: sideTo}
	}
	return dq, nil
}
