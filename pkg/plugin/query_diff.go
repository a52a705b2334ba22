package plugin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
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
	sides := []struct {
		name string
		spec *models.DiffSide
		res  diffSide
	}{{name: "baseline", spec: pq.Baseline}, {name: "comparison", spec: pq.Comparison}}
	now := time.Now()
	fanOut(len(sides), func(i int) {
		sides[i].res = d.diffSideProfile(ctx, pyro, q, pq, sides[i].spec, sides[i].name, now)
	})
	var notices []data.Notice
	for _, s := range sides {
		if s.res.err != nil {
			return errorResponse(fmt.Errorf("%s side of the diff: %w", s.name, s.res.err))
		}
		notices = append(notices, s.res.notices...)
	}
	base, comp := sides[0].res.tree, sides[1].res.tree
	tree := flamegraph.Diff(base, comp)
	summary := frames.DiffSummary(tree, DiffSummaryRows) // shares: before scaling, same after
	notices = append(notices, frames.Info(normalise(tree, pq.ProfileTypeID,
		sides[0].res.describe, sides[1].res.describe)))
	frame := frames.DiffFlameGraph(tree, pq.ProfileTypeID)
	frame.Meta.Notices = notices
	return withFrames(frame, summary)
}

// diffSide is one side's profile and what it was.
type diffSide struct {
	tree     *flamegraph.Node
	describe string
	notices  []data.Notice
	err      error
}

func (d *Datasource) diffSideProfile(ctx context.Context, pyro *pyroscope.Client, q backend.DataQuery, pq *models.ProfileQuery, side *models.DiffSide, name string, now time.Time) diffSide {
	from, to, err := side.Range(q.TimeRange.From, q.TimeRange.To, now, name)
	if err != nil {
		return diffSide{err: backend.DownstreamError(err)}
	}
	selector := pq.LabelSelector
	if side.LabelSelector != "" {
		selector = side.LabelSelector
	}
	if side.TraceID != "" {
		rp, err := d.profileOfRequest(ctx, correlate.RequestProfileQuery{
			TraceID: side.TraceID, LabelSelector: selector, ProfileTypeID: pq.ProfileTypeID,
			MaxNodes: pq.MaxNodes, From: from, To: to,
		})
		if err != nil {
			return diffSide{err: err}
		}
		// Without the service level, so the request's stacks line up with a service's.
		tree := flamegraph.New()
		for _, svc := range sortedKeys(rp.Services) {
			tree.Merge(rp.Services[svc])
		}
		if len(rp.Services) == 0 {
			tree = rp.Tree
		}
		return diffSide{tree: tree, notices: frames.JoinNotices(rp.Notices), describe: "trace " + side.TraceID}
	}
	describe := fmt.Sprintf("%s over %s to %s", selector, from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339))
	if len(side.SpanSelector) > 0 {
		from, to = from.Add(-correlate.SpanWindowPadding), to.Add(correlate.SpanWindowPadding)
		describe = fmt.Sprintf("%d span(s) of %s", len(side.SpanSelector), selector)
	}
	tree, err := pyro.MergedFlameGraph(ctx, models.FlameGraphQuery{
		ProfileTypeID: pq.ProfileTypeID, LabelSelector: selector, SpanSelector: side.SpanSelector,
		Start: from, End: to, MaxNodes: pq.MaxNodes,
	})
	if err != nil {
		return diffSide{err: err}
	}
	return diffSide{tree: tree, describe: describe}
}

// normalise scales the side with the smaller total up to the other's and says so.
func normalise(tree *flamegraph.Node, profileTypeID, baseline, comparison string) string {
	unit := frames.ProfileUnit(profileTypeID)
	left, right := tree.Total, tree.TotalRight
	text := fmt.Sprintf("Baseline: %s, total %s. Comparison: %s, total %s.",
		baseline, frames.FormatValue(left, unit), comparison, frames.FormatValue(right, unit))
	switch {
	case left == 0 && right == 0:
		return text + " Neither side has samples."
	case left == 0:
		return text + " The baseline has no samples: everything shows as new."
	case right == 0:
		return text + " The comparison has no samples: everything shows as removed."
	case left < right:
		f := float64(right) / float64(left)
		tree.ScaleLeft(f)
		return text + fmt.Sprintf(" The baseline is scaled ×%.3g to the comparison's total, so widths and colours compare each function's share of its side.", f)
	case right < left:
		f := float64(left) / float64(right)
		tree.ScaleRight(f)
		return text + fmt.Sprintf(" The comparison is scaled ×%.3g to the baseline's total, so widths and colours compare each function's share of its side.", f)
	}
	return text
}
