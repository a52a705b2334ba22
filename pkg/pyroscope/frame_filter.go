package pyroscope

import (
	"context"
	"fmt"
	"log/slog"

	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// FrameFilterSince is which Pyroscope applies frame_filter. The field (types.v1.StackFrameFilter,
// field 3 of StackTraceSelector) came to Pyroscope's main branch with its v2 query frontend's
// FrameMatcher (grafana/pyroscope pkg/phlaredb/symdb/frame_filter.go,
// pkg/frontend/readpath/queryfrontend/query_frame_filter_test.go); no release of the API module
// has it (v1.6.0, the newest served, does not), and 1.x servers drop it unread.
const FrameFilterSince = "a 2.x build from Pyroscope's main branch that has frame_filter, on its v2 query backend"

// Field numbers of frame_filter, as Grafana's Pyroscope data source writes them
// (pkg/tsdb/grafana-pyroscope-datasource frame_filter.go: addFrameFilter): the API module this
// plugin builds with predates the field, so it travels as an unknown field of the selector,
// which protobuf keeps when marshaling and a newer server reads as its own.
const (
	stackTraceSelectorFrameFilter = 3 // StackTraceSelector.frame_filter
	// StackFrameFilter: include_function_names = 1, exclude_function_names = 2,
	// include_function_name_regexes = 3, exclude_function_name_regexes = 4.
)

// stackTraceSelector is Pyroscope's stack_trace_selector for a call site (root first) and a
// frame filter; nil when neither is asked, which leaves the field unset.
func stackTraceSelector(callSite []string, f models.FrameFilter) *typesv1.StackTraceSelector {
	sel := callSiteSelector(callSite)
	if f.Empty() {
		return sel
	}
	var encoded []byte
	for field, names := range [][]string{f.IncludeFunctionNames, f.ExcludeFunctionNames, f.IncludeFunctionNameRegexes, f.ExcludeFunctionNameRegexes} {
		for _, name := range names {
			encoded = protowire.AppendTag(encoded, protowire.Number(field+1), protowire.BytesType)
			encoded = protowire.AppendString(encoded, name)
		}
	}
	if sel == nil {
		sel = &typesv1.StackTraceSelector{}
	}
	unknown := sel.ProtoReflect().GetUnknown()
	unknown = protowire.AppendTag(unknown, stackTraceSelectorFrameFilter, protowire.BytesType)
	unknown = protowire.AppendBytes(unknown, encoded)
	sel.ProtoReflect().SetUnknown(unknown)
	return sel
}

// FrameFilterSupport is the current verdict on frame_filter for this server: SelectorIgnored
// once an answer held stacks the filter drops, or its probe was not empty.
func (c *Client) FrameFilterSupport() SelectorSupport { return c.frameFilter.support() }

// FrameFilterNotice is what a panel should say about frameFilter f, given what this server was
// seen to do with it: "" when there is nothing to say. A flame graph is always filtered (the
// plugin drops what Pyroscope should have, filterStacks), so its notice is informational;
// series cannot be filtered here, so theirs is a warning.
func (c *Client) FrameFilterNotice(f models.FrameFilter, series bool) (text string, warning bool) {
	if f.Empty() {
		return "", false
	}
	why := "it needs " + FrameFilterSince
	if c.TraceSelectorSupport() == SelectorIgnored {
		why = "this server ignores trace_id_selector too, so it is Pyroscope 1.x, which predates frame_filter"
	}
	switch c.frameFilter.support() {
	case SelectorIgnored:
		if series {
			return fmt.Sprintf("frameFilter was not applied to the series: this Pyroscope ignores frame_filter (%s), so they count every stack", why), true
		}
		return fmt.Sprintf("this Pyroscope ignores frameFilter (frame_filter: %s); the plugin applied it to the flame graph itself", why), false
	case SelectorUnknown:
		if series {
			return "whether this Pyroscope applied frameFilter to the series could not be checked: they may count every stack", true
		}
	}
	return "", false
}

// checkSeriesFrameFilter settles whether the server applied frame_filter to q's series, which
// cannot be seen in them: the same range asked as a flame graph with a filter that drops every
// stack must come back empty. Pyroscope 1.x (known from trace_id_selector) is not asked.
func (c *Client) checkSeriesFrameFilter(ctx context.Context, q models.SeriesQuery) {
	if c.TraceSelectorSupport() == SelectorIgnored {
		c.frameFilter.set(SelectorIgnored)
		return
	}
	fg, err := c.mergedFlameGraph(ctx, models.FlameGraphQuery{
		ProfileTypeID: q.ProfileTypeID, LabelSelector: q.LabelSelector, Start: q.Start, End: q.End, MaxNodes: 1,
		StackTraceSelector: q.StackTraceSelector,
		FrameFilter:        models.FrameFilter{ExcludeFunctionNameRegexes: []string{"."}},
	}, selectors{})
	if err != nil {
		slog.Warn("could not check whether Pyroscope applies frame_filter", "err", err)
		c.frameFilter.reset()
		return
	}
	if fg.Total != 0 {
		c.frameFilter.set(SelectorIgnored)
	} else {
		c.frameFilter.set(SelectorHonoured)
	}
}

// filterStacks keeps the stacks of root that f keeps, judged as Pyroscope's FrameMatcher does:
// every include matched by a frame of the stack, no frame excluded. removed is the value of the
// stacks it dropped; a server that applied the filter leaves none to drop. A stack through a node
// Pyroscope named "other" (the stacks it merged to keep within maxNodes) has frames that cannot
// be seen: it is dropped only for a frame that can be, and otherwise kept and counted in unsure.
// The root is no function and is not judged. The result shares no node with root.
func filterStacks(root *flamegraph.Node, f models.FrameFilter) (kept *flamegraph.Node, removed, unsure int64) {
	if root == nil {
		return flamegraph.New(), 0, 0
	}
	m := f.Matcher()
	seen := make([]int, m.Includes())
	var hits []int
	var walk func(n *flamegraph.Node, excluded, truncated bool) *flamegraph.Node
	walk = func(n *flamegraph.Node, excluded, truncated bool) *flamegraph.Node {
		hits = m.IncludedBy(hits[:0], n.Name)
		mine := append([]int(nil), hits...)
		for _, i := range mine {
			seen[i]++
		}
		defer func() {
			for _, i := range mine {
				seen[i]--
			}
		}()
		excluded = excluded || m.Excluded(n.Name)
		truncated = truncated || n.Name == "other"
		out := &flamegraph.Node{Name: n.Name}
		switch all := allSeen(seen); {
		case excluded:
			removed += n.Self
		case all:
			out.Self = n.Self
		case truncated:
			out.Self = n.Self
			unsure += n.Self
		default:
			removed += n.Self
		}
		out.Total = out.Self
		for _, c := range n.Children {
			if k := walk(c, excluded, truncated); k.Total > 0 {
				out.Children = append(out.Children, k)
				out.Total += k.Total
			}
		}
		return out
	}
	kept = &flamegraph.Node{Name: root.Name}
	for _, c := range root.Children {
		if k := walk(c, false, false); k.Total > 0 {
			kept.Children = append(kept.Children, k)
			kept.Total += k.Total
		}
	}
	// The root's own self (none in Pyroscope's answers) belongs to no stack of functions.
	if allSeen(seen) {
		kept.Self = root.Self
		kept.Total += root.Self
	} else {
		removed += root.Self
	}
	return kept, removed, unsure
}

func allSeen(seen []int) bool {
	for _, n := range seen {
		if n == 0 {
			return false
		}
	}
	return true
}

// FrameFilterNotices is FrameFilterNotice typed where the fact is known: a warning for series
// that may count every stack, an info for a flame graph the plugin filtered itself.
func (c *Client) FrameFilterNotices(f models.FrameFilter, series bool) notices.List {
	var l notices.List
	switch text, warning := c.FrameFilterNotice(f, series); {
	case text == "":
	case warning:
		l.Warn(text)
	default:
		l.Info(text)
	}
	return l
}
