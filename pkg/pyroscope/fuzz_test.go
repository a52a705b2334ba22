package pyroscope

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/proto"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// replyQuerier answers SelectSeries and both flame graph calls with whatever reply it holds.
type replyQuerier struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	mu     sync.Mutex
	series *querierv1.SelectSeriesResponse
	graph  *querierv1.FlameGraph
}

func (q *replyQuerier) set(series *querierv1.SelectSeriesResponse, graph *querierv1.FlameGraph) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.series, q.graph = series, graph
}

func (q *replyQuerier) SelectSeries(context.Context, *connect.Request[querierv1.SelectSeriesRequest]) (*connect.Response[querierv1.SelectSeriesResponse], error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return connect.NewResponse(q.series), nil
}

func (q *replyQuerier) SelectMergeStacktraces(context.Context, *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return connect.NewResponse(&querierv1.SelectMergeStacktracesResponse{Flamegraph: q.graph}), nil
}

func (q *replyQuerier) SelectMergeSpanProfile(context.Context, *connect.Request[querierv1.SelectMergeSpanProfileRequest]) (*connect.Response[querierv1.SelectMergeSpanProfileResponse], error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return connect.NewResponse(&querierv1.SelectMergeSpanProfileResponse{Flamegraph: q.graph}), nil
}

func newReplyClient(tb testing.TB, q *replyQuerier) (*Client, string) {
	path, h := querierv1connect.NewQuerierServiceHandler(q)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	s := httptest.NewServer(mux)
	tb.Cleanup(s.Close)
	return New(models.Upstream{Name: models.Pyroscope, URL: s.URL}, s.Client()), s.URL
}

var sampleGraph = &querierv1.FlameGraph{
	Names: []string{"total", "handle", "db", "serialize", "sha256"},
	Levels: []*querierv1.Level{
		{Values: []int64{0, 100, 0, 0}},
		{Values: []int64{0, 60, 10, 1, 0, 40, 10, 2}},
		{Values: []int64{0, 50, 50, 3, 10, 10, 10, 4, 0, 20, 20, 3}},
	},
	Total: 100, MaxSelf: 50,
}

// A reply whose levels contradict each other is an error naming Pyroscope, its URL and what is
// wrong, on both flame graph calls; a consistent one comes through unchanged.
func TestFlameGraphReplyThatContradictsItselfIsAnError(t *testing.T) {
	q := &replyQuerier{}
	c, url := newReplyClient(t, q)
	ctx := context.Background()
	for name, tc := range map[string]struct {
		graph *querierv1.FlameGraph
		want  string
	}{
		"name out of range": {&querierv1.FlameGraph{Names: []string{"total"}, Levels: []*querierv1.Level{{Values: []int64{0, 10, 10, 4}}}}, "level 0 node 1 names function 4 of 1"},
		"child outside":     {&querierv1.FlameGraph{Names: []string{"a", "b"}, Levels: []*querierv1.Level{{Values: []int64{0, 10, 0, 0}}, {Values: []int64{5, 10, 10, 1}}}}, "level 1 node 1 (5 to 15) lies in no node of level 0"},
		"cut level":         {&querierv1.FlameGraph{Names: []string{"a"}, Levels: []*querierv1.Level{{Values: []int64{0, 10, 10}}}}, "level 0 has 3 numbers, not 4 per node"},
		"negative":          {&querierv1.FlameGraph{Names: []string{"a"}, Levels: []*querierv1.Level{{Values: []int64{0, -10, 0, 0}}}}, "negative offset, total or self"},
		"self above total":  {&querierv1.FlameGraph{Names: []string{"a"}, Levels: []*querierv1.Level{{Values: []int64{0, 1, 2, 0}}}}, "self 2 above its total 1"},
	} {
		q.set(nil, tc.graph)
		for _, spans := range [][]string{nil, {"9a1c2b3d4e5f6a7b"}} {
			_, err := c.MergedFlameGraph(ctx, models.FlameGraphQuery{ProfileTypeID: models.DefaultProfileTypeID, LabelSelector: "{}", SpanSelector: spans, Start: from, End: to})
			if err == nil || !strings.Contains(err.Error(), "Pyroscope ("+url+")") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s (spans %v): error %v, want Pyroscope's URL and %q", name, spans, err, tc.want)
			}
		}
	}
	q.set(nil, sampleGraph)
	fg, err := c.MergedFlameGraph(ctx, models.FlameGraphQuery{ProfileTypeID: models.DefaultProfileTypeID, LabelSelector: "{}", Start: from, End: to})
	if err != nil || fg.Count() != 6 || fg.Total != 100 || fg.Children[1].Name != "db" || len(fg.Children[1].Children) != 2 {
		t.Errorf("consistent graph: %+v, %v; want its 6 nodes as a tree", fg, err)
	}
}

// FuzzFlameGraphReply sends arbitrary FlameGraph messages through the Connect client: the answer
// is a consistent tree, or an error naming Pyroscope's URL and its reply.
func FuzzFlameGraphReply(f *testing.F) {
	for _, m := range []*querierv1.FlameGraph{sampleGraph, {}, {Names: []string{"a"}, Levels: []*querierv1.Level{{Values: []int64{0, 10, 10, 4}}}}} {
		b, _ := proto.Marshal(m)
		f.Add(b)
	}
	q := &replyQuerier{}
	c, url := newReplyClient(f, q)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m querierv1.FlameGraph
		if proto.Unmarshal(data, &m) != nil {
			return // not a message the client could decode: the garbage faults cover those replies
		}
		q.set(nil, &m)
		fg, err := c.MergedFlameGraph(context.Background(), models.FlameGraphQuery{ProfileTypeID: models.DefaultProfileTypeID, LabelSelector: "{}", Start: from, End: to, MaxNodes: 100})
		if err != nil {
			if !strings.Contains(err.Error(), "Pyroscope ("+url+")") || !strings.Contains(err.Error(), "Pyroscope's reply") {
				t.Fatalf("error %q names neither Pyroscope's URL nor its reply", err)
			}
			return
		}
		// What Check guarantees, as the tree shows it: no negative numbers, no node holding less
		// than its self time or its children.
		fg.Walk(func(_ int, n *flamegraph.Node) {
			var children int64
			for _, c := range n.Children {
				children += c.Total
			}
			if n.Self < 0 || n.Self > n.Total || children > n.Total {
				t.Fatalf("the client passed on an inconsistent graph: node %q total %d self %d children %d", n.Name, n.Total, n.Self, children)
			}
		})
	})
}

// FuzzSeriesReply sends arbitrary SelectSeries replies through the client: every series and
// point comes through, values bit for bit (NaN and infinities included), labels in order.
func FuzzSeriesReply(f *testing.F) {
	for _, m := range []*querierv1.SelectSeriesResponse{
		{Series: []*typesv1.Series{{Labels: []*typesv1.LabelPair{{Name: "service_name", Value: "ai-detector"}}, Points: []*typesv1.Point{{Timestamp: 1000, Value: 1.5}, {Timestamp: 16000, Value: 2}}}}},
		{Series: []*typesv1.Series{{Points: []*typesv1.Point{{Timestamp: -1, Value: math.NaN()}, {Timestamp: math.MaxInt64, Value: math.Inf(-1)}}}, nil}},
		{},
	} {
		b, _ := proto.Marshal(m)
		f.Add(b)
	}
	q := &replyQuerier{}
	c, _ := newReplyClient(f, q)
	f.Fuzz(func(t *testing.T, data []byte) {
		var m querierv1.SelectSeriesResponse
		if proto.Unmarshal(data, &m) != nil {
			return // not a message the client could decode: the garbage faults cover those replies
		}
		q.set(&m, nil)
		series, err := c.Series(context.Background(), models.SeriesQuery{ProfileTypeID: models.DefaultProfileTypeID, Start: from, End: to, Step: 15 * time.Second})
		if err != nil {
			t.Fatalf("a well-formed reply failed: %v", err)
		}
		if len(series) != len(m.GetSeries()) {
			t.Fatalf("%d series of %d", len(series), len(m.GetSeries()))
		}
		for i, s := range m.GetSeries() {
			if len(series[i].Labels) != len(s.GetLabels()) || len(series[i].Points) != len(s.GetPoints()) {
				t.Fatalf("series %d: %d labels %d points, want %d and %d", i, len(series[i].Labels), len(series[i].Points), len(s.GetLabels()), len(s.GetPoints()))
			}
			for j, p := range s.GetPoints() {
				got := series[i].Points[j]
				if got.Timestamp != p.GetTimestamp() || math.Float64bits(got.Value) != math.Float64bits(p.GetValue()) {
					t.Fatalf("series %d point %d: %+v, want %v at %d", i, j, got, p.GetValue(), p.GetTimestamp())
				}
			}
		}
	})
}
