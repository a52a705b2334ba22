// Package pyroscope talks to Pyroscope through its generated Connect clients and converts the
// replies into the small local types the rest of the plugin uses.
package pyroscope

import (
	"context"
	"errors"
	"net/http"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// Client is one Pyroscope server (or tenant of one).
type Client struct {
	url     string
	querier querierv1connect.QuerierServiceClient // a sharedQuerier
	// traceSelector and profileIDSelector are what this server was seen to do with
	// trace_id_selector and profile_id_selector.
	traceSelector     selectorState
	profileIDSelector selectorState
	// frameFilter is what this server was seen to do with frame_filter (FrameFilterNotice).
	frameFilter selectorState
	// v1Split is where a v1-v2 dual-mode server's v2 storage begins, once found (traceSplit).
	v1Split splitState
}

// New returns a client for the upstream's URL using hc (built by upstream.NewHTTPClient, which
// adds auth and the X-Scope-OrgID tenant header).
func New(u models.Upstream, hc *http.Client) *Client {
	return &Client{url: u.URL, querier: newSharedQuerier(querierv1connect.NewQuerierServiceClient(hc, u.URL)),
		traceSelector: newSelectorState("trace_id_selector"), profileIDSelector: newSelectorState("profile_id_selector"),
		frameFilter: newSelectorState("frame_filter")}
}

// ProfileTypes lists the profile types with data between start and end.
func (c *Client) ProfileTypes(ctx context.Context, start, end time.Time) (types []models.ProfileType, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Pyroscope, "ProfileTypes")
	defer func() { err = upstream.EndSpan(span, c.wrap(err)) }()
	res, err := c.querier.ProfileTypes(ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{
		Start: start.UnixMilli(), End: end.UnixMilli(),
	}))
	if err != nil {
		return nil, err
	}
	for _, t := range res.Msg.GetProfileTypes() {
		types = append(types, models.ProfileType{ID: t.GetID(), Name: t.GetName(), SampleType: t.GetSampleType(), SampleUnit: t.GetSampleUnit()})
	}
	return types, nil
}

// FlameGraph is Pyroscope's level-encoded flame graph: Levels[i] holds 4 numbers per node
// (x offset from the previous sibling's end, total, self, index into Names).
type FlameGraph struct {
	Names   []string
	Levels  [][]int64
	Total   int64
	MaxSelf int64
}

// MergedFlameGraph merges every sample matching q into one flame graph, as a tree (an empty root
// where nothing matched; nil only with an error). The reply passes Check before it is rebuilt.
//
// With a span selector it asks SelectMergeSpanProfile: Pyroscope 1.12 ignores the span selector
// of SelectMergeStacktraces and would answer with the unfiltered profile (INTEROP.md §3). With a
// trace ID or profile IDs it asks SelectMergeStacktraces with trace_id_selector or
// profile_id_selector, and fails with models.ErrTraceSelectorIgnored,
// models.ErrTraceSelectorRefused or models.ErrProfileIDSelectorIgnored where the server cannot
// filter by them. A call site (q.StackTraceSelector) is sent where the call has the field and
// always cut out of the answer here (flamegraph.CallSite): 1.12 drops it from
// SelectMergeStacktraces, and SelectMergeSpanProfile has no such field. A frame filter
// (q.FrameFilter) is sent the same way and applied to the answer too (filterStacks); an answer
// holding stacks it drops tells that the server ignores it (FrameFilterNotice).
func (c *Client) MergedFlameGraph(ctx context.Context, q models.FlameGraphQuery) (*flamegraph.Node, error) {
	var fg *FlameGraph
	var err error
	switch {
	case q.TraceID != "" && len(q.SpanSelector) > 0:
		return nil, errSpanAndTraceSelector
	case len(q.ProfileIDSelector) > 0 && (q.TraceID != "" || len(q.SpanSelector) > 0):
		return nil, errProfileAndSpanSelector
	case q.TraceID != "":
		fg, err = c.traceFlameGraph(ctx, q)
	case len(q.SpanSelector) > 0:
		fg, err = c.spanFlameGraph(ctx, q)
	case len(q.ProfileIDSelector) > 0:
		fg, err = c.profilesFlameGraph(ctx, q)
	default:
		fg, err = c.mergedFlameGraph(ctx, q, selectors{})
	}
	if err != nil {
		return nil, err
	}
	tree := fg.Tree()
	if !q.FrameFilter.Empty() {
		// Before the call site is cut: Pyroscope judges the whole stack, call site included.
		var removed int64
		tree, removed, _ = filterStacks(tree, q.FrameFilter)
		if removed > 0 && len(q.SpanSelector) == 0 {
			c.frameFilter.set(SelectorIgnored) // SelectMergeSpanProfile was never sent one
		}
	}
	return flamegraph.CallSite(tree, q.StackTraceSelector), nil
}

var (
	errSpanAndTraceSelector   = errors.New("a span selector and a trace ID cannot be asked together: Pyroscope 2.x refuses span_selector with trace_id_selector")
	errProfileAndSpanSelector = errors.New("profile IDs cannot be asked with a span selector or a trace ID: the IDs already name the profiles")
)

// selectors are the per-sample filters of one SelectMergeStacktraces call beyond the query's.
type selectors struct {
	traceID    string   // 32 hex digits
	profileIDs []string // UUIDs
}

// mergedFlameGraph asks SelectMergeStacktraces, with trace_id_selector and profile_id_selector
// when sel has them, and stack_trace_selector when q has a call site.
func (c *Client) mergedFlameGraph(ctx context.Context, q models.FlameGraphQuery, sel selectors) (fg *FlameGraph, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Pyroscope, "SelectMergeStacktraces",
		attribute.String("profile_type", q.ProfileTypeID), attribute.String("label_selector", q.LabelSelector),
		attribute.Bool("trace_id_selector", sel.traceID != ""), attribute.Int("profile_ids", len(sel.profileIDs)),
		attribute.Int("call_site_depth", len(q.StackTraceSelector)), attribute.Bool("frame_filter", !q.FrameFilter.Empty()))
	defer func() { err = upstream.EndSpan(span, c.wrap(err)) }()
	maxNodes := q.MaxNodes
	req := &querierv1.SelectMergeStacktracesRequest{
		ProfileTypeID:      q.ProfileTypeID,
		LabelSelector:      q.LabelSelector,
		Start:              q.Start.UnixMilli(),
		End:                q.End.UnixMilli(),
		MaxNodes:           &maxNodes,
		ProfileIdSelector:  sel.profileIDs,
		StackTraceSelector: stackTraceSelector(q.StackTraceSelector, q.FrameFilter),
	}
	if sel.traceID != "" {
		req.TraceIdSelector = []string{sel.traceID}
	}
	res, err := c.querier.SelectMergeStacktraces(ctx, connect.NewRequest(req))
	if err != nil {
		return nil, err
	}
	fg = FromProto(res.Msg.GetFlamegraph())
	if err := fg.Check(); err != nil {
		return nil, err
	}
	return fg, nil
}

// callSiteSelector is Pyroscope's stack_trace_selector for a call site (root first); nil for
// none, which leaves the field unset.
func callSiteSelector(callSite []string) *typesv1.StackTraceSelector {
	if len(callSite) == 0 {
		return nil
	}
	sel := &typesv1.StackTraceSelector{CallSite: make([]*typesv1.Location, len(callSite))}
	for i, name := range callSite {
		sel.CallSite[i] = &typesv1.Location{Name: name}
	}
	return sel
}

func (c *Client) spanFlameGraph(ctx context.Context, q models.FlameGraphQuery) (fg *FlameGraph, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Pyroscope, "SelectMergeSpanProfile",
		attribute.String("profile_type", q.ProfileTypeID), attribute.String("label_selector", q.LabelSelector),
		attribute.Int("spans", len(q.SpanSelector)))
	defer func() { err = upstream.EndSpan(span, c.wrap(err)) }()
	maxNodes := q.MaxNodes
	res, err := c.querier.SelectMergeSpanProfile(ctx, connect.NewRequest(&querierv1.SelectMergeSpanProfileRequest{
		ProfileTypeID: q.ProfileTypeID,
		LabelSelector: q.LabelSelector,
		SpanSelector:  q.SpanSelector,
		Start:         q.Start.UnixMilli(),
		End:           q.End.UnixMilli(),
		MaxNodes:      &maxNodes,
	}))
	if err != nil {
		return nil, err
	}
	fg = FromProto(res.Msg.GetFlamegraph())
	if err := fg.Check(); err != nil {
		return nil, err
	}
	return fg, nil
}

// FromProto converts the flame graph of a Pyroscope reply into the local type.
func FromProto(f *querierv1.FlameGraph) *FlameGraph {
	fg := &FlameGraph{Names: f.GetNames(), Total: f.GetTotal(), MaxSelf: f.GetMaxSelf()}
	for _, l := range f.GetLevels() {
		fg.Levels = append(fg.Levels, l.GetValues())
	}
	return fg
}

// Tree rebuilds the flame graph as a tree; a nil graph gives an empty root.
func (fg *FlameGraph) Tree() *flamegraph.Node {
	if fg == nil {
		return flamegraph.New()
	}
	return flamegraph.FromLevels(fg.Names, fg.Levels)
}

// ForgetReplies drops the replies kept for later reads (sharedQuerier), as a new data source
// instance starts: a benchmark of a dashboard's first refresh calls it between rounds, with no
// read in flight.
func (c *Client) ForgetReplies() {
	if q, ok := c.querier.(*sharedQuerier); ok {
		q.forget()
	}
}

func (c *Client) wrap(err error) error { return upstream.Wrap(models.Pyroscope, c.url, err) }
