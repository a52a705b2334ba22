// Package pyroscopetest serves a fake Pyroscope query API (querier.v1 over Connect) that holds
// samples and answers as one Pyroscope version does, for the tests of pkg/pyroscope and
// pkg/plugin. The behaviours are read from Pyroscope's source and INTEROP.md §3 and §5: 1.12
// drops trace_id_selector (and span_selector on SelectMergeStacktraces) and answers the
// unfiltered profile; 2.x filters by either, refuses both at once
// (pkg/frontend/readpath/queryfrontend: invalid_argument "span_selector and trace_id_selector
// cannot be combined"), and in its v1-v2 dual mode answers unimplemented ("trace_id_selector is
// only supported with the v2 query backend", the legacy frontend) for a window reaching back
// into its v1 storage.
package pyroscopetest

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Version picks whose answers the fake gives.
type Version int

const (
	// V112 is Pyroscope 1.12: SelectMergeStacktraces ignores trace_id_selector and span_selector;
	// SelectMergeSpanProfile filters by span.
	V112 Version = iota
	// V2 is Pyroscope 2.x: trace IDs and span IDs are per-sample columns, both selectors filter,
	// and together they are refused. It is also the "newer server" of the calls and fields
	// Pyroscope 1.17 (exemplars, profile_id_selector) and 1.19 (SelectHeatmap) brought.
	V2
)

// Sample is one stored stack with its series labels and per-sample IDs.
type Sample struct {
	// Series are the series labels (service_name, ...). An older SDK pushing trace_id through
	// /ingest makes it a series label; otel-profiling-go's trace_id is the TraceID column.
	Series  map[string]string
	TraceID string // 32 hex digits
	SpanID  string // 16 hex digits
	// ProfileType is the profile type ID; empty matches every type asked.
	ProfileType string
	Time        time.Time
	Stack       string // "a;b;c"
	Value       int64
	// ProfileID is the individual profile the sample came in (a UUID): the samples of one ID
	// make one exemplar, and profile_id_selector selects them.
	ProfileID string
	// Annotations are what the distributor noted on the sample's profile (throttling,
	// sampling); the newer server puts them on the series point of the sample.
	Annotations []models.ProfileAnnotation
}

// Server is the fake. Set its fields before serving it; Add is safe while it serves.
type Server struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	Version Version
	// V1Until, with V2, is dual mode's split time: data before it lies in the v1 storage, so a
	// trace_id_selector query whose window starts before it is answered unimplemented (as is
	// SelectHeatmap).
	V1Until time.Time
	// FrameFilter, with V2, makes the server a build of Pyroscope's main branch that applies
	// frame_filter, over ranges its v2 frontend serves alone (after V1Until).
	FrameFilter bool

	mu           sync.Mutex
	samples      []Sample
	calls        []*querierv1.SelectMergeStacktracesRequest
	spanCalls    []*querierv1.SelectMergeSpanProfileRequest
	seriesCalls  []*querierv1.SelectSeriesRequest
	heatmapCalls []*querierv1.SelectHeatmapRequest
}

// Add stores samples.
func (s *Server) Add(samples ...Sample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, samples...)
}

// Calls returns the SelectMergeStacktraces requests received, in order.
func (s *Server) Calls() []*querierv1.SelectMergeStacktracesRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// SpanCalls returns the SelectMergeSpanProfile requests received, in order.
func (s *Server) SpanCalls() []*querierv1.SelectMergeSpanProfileRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.spanCalls)
}

// SeriesCalls returns the SelectSeries requests received, in order.
func (s *Server) SeriesCalls() []*querierv1.SelectSeriesRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.seriesCalls)
}

// HeatmapCalls returns the SelectHeatmap requests received, in order (none on V112, whose
// router has no such path).
func (s *Server) HeatmapCalls() []*querierv1.SelectHeatmapRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.heatmapCalls)
}

// MissingProcedures are the calls the version's router lacks: Serve answers them HTTP 404, as
// the real server does.
func (s *Server) MissingProcedures() []string {
	if s.Version == V112 {
		return []string{querierv1connect.QuerierServiceSelectHeatmapProcedure}
	}
	return nil
}

// TraceSelectorCalls returns the SelectMergeStacktraces requests that carried trace_id_selector.
func (s *Server) TraceSelectorCalls() []*querierv1.SelectMergeStacktracesRequest {
	var out []*querierv1.SelectMergeStacktracesRequest
	for _, c := range s.Calls() {
		if len(c.TraceIdSelector) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func (s *Server) SelectMergeStacktraces(_ context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	m := req.Msg
	s.mu.Lock()
	s.calls = append(s.calls, m)
	s.mu.Unlock()
	traces, spans, profiles, callSite := m.TraceIdSelector, m.SpanSelector, m.ProfileIdSelector, callSiteOf(m.StackTraceSelector)
	if s.Version == V112 {
		traces, spans, profiles, callSite = nil, nil, nil, nil // fields the server drops unread
	}
	if len(traces) > 0 && len(spans) > 0 {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("span_selector and trace_id_selector cannot be combined"))
	}
	for _, id := range traces {
		if !isHex(id, 32) {
			return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("invalid trace_id_selector %q: trace IDs are 32 hex characters", id))
		}
	}
	if len(traces) > 0 && s.dualModeV1(m.Start) {
		// The router (pkg/frontend/readpath/router.go) sends the part before the split to the
		// legacy frontend, which refuses the field
		// (pkg/frontend/frontend_select_merge_stacktraces.go), failing the whole call.
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("trace_id_selector is only supported with the v2 query backend"))
	}
	fg, err := s.merge(m.ProfileTypeID, m.LabelSelector, m.Start, m.End, sampleFilter{traces: traces, spans: spans, profiles: profiles, callSite: callSite,
		frames: s.frameFilterOf(m.StackTraceSelector, m.Start)})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&querierv1.SelectMergeStacktracesResponse{Flamegraph: fg}), nil
}

func (s *Server) SelectMergeSpanProfile(_ context.Context, req *connect.Request[querierv1.SelectMergeSpanProfileRequest]) (*connect.Response[querierv1.SelectMergeSpanProfileResponse], error) {
	m := req.Msg
	s.mu.Lock()
	s.spanCalls = append(s.spanCalls, m)
	s.mu.Unlock()
	fg, err := s.merge(m.ProfileTypeID, m.LabelSelector, m.Start, m.End, sampleFilter{spans: m.SpanSelector})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&querierv1.SelectMergeSpanProfileResponse{Flamegraph: fg}), nil
}

// dualModeV1 says whether a range starting at start (ms) reaches a dual-mode server's v1 storage.
func (s *Server) dualModeV1(start int64) bool {
	return s.Version == V2 && !s.V1Until.IsZero() && start < s.V1Until.UnixMilli()
}

// sampleFilter holds the per-sample selectors of a call; empty ones keep every sample.
type sampleFilter struct {
	traces, spans, profiles []string
	callSite                []string // root first
	frames                  *frameFilter
}

func (f sampleFilter) keeps(smp Sample) bool {
	return f.frames.keeps(smp.Stack) && (len(f.traces) == 0 || slices.Contains(f.traces, smp.TraceID)) &&
		(len(f.spans) == 0 || slices.Contains(f.spans, smp.SpanID)) &&
		(len(f.profiles) == 0 || slices.Contains(f.profiles, smp.ProfileID)) &&
		underCallSite(smp.Stack, f.callSite)
}

// underCallSite says whether the stack ("a;b;c", root first) starts with the call site.
func underCallSite(stack string, callSite []string) bool {
	frames := strings.Split(stack, ";")
	return len(frames) >= len(callSite) && slices.Equal(frames[:len(callSite)], callSite)
}

func callSiteOf(sel *typesv1.StackTraceSelector) []string {
	var out []string
	for _, l := range sel.GetCallSite() {
		out = append(out, l.GetName())
	}
	return out
}

// selected returns the samples of the profile type whose series match selector, stamped in
// [start, end] (ms, both ends included as the v1 read path does).
func (s *Server) selected(profileType, selector string, start, end int64) ([]Sample, error) {
	matchers, err := models.ParseLabelSelector(selector)
	if err != nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Sample
	for _, smp := range s.samples {
		t := smp.Time.UnixMilli()
		if t < start || t > end || smp.ProfileType != "" && smp.ProfileType != profileType || !matches(matchers, smp.Series) {
			continue
		}
		out = append(out, smp)
	}
	return out, nil
}

// merge folds the selected samples that f keeps into one flame graph.
func (s *Server) merge(profileType, selector string, start, end int64, f sampleFilter) (*querierv1.FlameGraph, error) {
	samples, err := s.selected(profileType, selector, start, end)
	if err != nil {
		return nil, err
	}
	var stacks []string
	for _, smp := range samples {
		if f.keeps(smp) {
			stacks = append(stacks, fmt.Sprintf("%s %d", smp.Stack, smp.Value))
		}
	}
	return FlameGraph(stacks...), nil
}

func matches(matchers []*labels.Matcher, series map[string]string) bool {
	for _, m := range matchers {
		if !m.Matches(series[m.Name]) {
			return false
		}
	}
	return true
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	return strings.Trim(s, "0123456789abcdef") == ""
}

// Serve serves any querier implementation on a loopback server and returns its URL. The calls
// its version lacks (MissingProcedures) are answered HTTP 404, as by a real server's router.
func Serve(tb testing.TB, h querierv1connect.QuerierServiceHandler) string {
	tb.Helper()
	path, handler := querierv1connect.NewQuerierServiceHandler(h)
	mux := http.NewServeMux()
	mux.Handle(path, handler)
	if m, ok := h.(interface{ MissingProcedures() []string }); ok {
		for _, p := range m.MissingProcedures() {
			mux.Handle(p, http.NotFoundHandler())
		}
	}
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	return srv.URL
}

// FlameGraph builds Pyroscope's level-encoded flame graph from folded stacks ("a;b;c 10"),
// children in first-seen order, as the real server sends it.
func FlameGraph(stacks ...string) *querierv1.FlameGraph {
	type node struct {
		name        string
		total, self int64
		kids        []*node
	}
	root := &node{name: "total"}
	for _, st := range stacks {
		path, val, _ := strings.Cut(st, " ")
		var v int64
		fmt.Sscan(val, &v)
		n := root
		n.total += v
		for _, fn := range strings.Split(path, ";") {
			i := slices.IndexFunc(n.kids, func(k *node) bool { return k.name == fn })
			if i < 0 {
				n.kids = append(n.kids, &node{name: fn})
				i = len(n.kids) - 1
			}
			n = n.kids[i]
			n.total += v
		}
		n.self += v
	}
	fg := &querierv1.FlameGraph{Total: root.total}
	if len(stacks) == 0 {
		return fg
	}
	names := map[string]int64{}
	name := func(s string) int64 {
		if i, ok := names[s]; ok {
			return i
		}
		names[s] = int64(len(fg.Names))
		fg.Names = append(fg.Names, s)
		return names[s]
	}
	// Breadth first with absolute x positions: children start at their parent's x, one after
	// the other (a parent's self time comes after them); each level stores x as the offset from
	// the previous node's end on that level.
	type placed struct {
		n *node
		x int64
	}
	level := []placed{{root, 0}}
	for len(level) > 0 {
		var vals []int64
		var next []placed
		end := int64(0)
		for _, p := range level {
			vals = append(vals, p.x-end, p.n.total, p.n.self, name(p.n.name))
			end = p.x + p.n.total
			x := p.x
			for _, k := range p.n.kids {
				next = append(next, placed{k, x})
				x += k.total
			}
		}
		fg.Levels = append(fg.Levels, &querierv1.Level{Values: vals})
		level = next
	}
	return fg
}
