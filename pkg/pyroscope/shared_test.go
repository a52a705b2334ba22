package pyroscope

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/goroutines"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// heldQuerier answers span profiles and label values, each call held until release is closed,
// and counts the calls that reach it by their request.
type heldQuerier struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	release chan struct{}
	mu      sync.Mutex
	calls   map[string]int
	total   atomic.Int32
	// failNext makes the next span profile fail; empty makes span profiles answer no sample,
	// and broken a flame graph whose levels make no tree.
	failNext, empty, broken atomic.Bool
}

func (q *heldQuerier) count(key string) {
	q.mu.Lock()
	q.calls[key]++
	q.mu.Unlock()
	q.total.Add(1)
}

func (q *heldQuerier) SelectMergeSpanProfile(ctx context.Context, r *connect.Request[querierv1.SelectMergeSpanProfileRequest]) (*connect.Response[querierv1.SelectMergeSpanProfileResponse], error) {
	q.count("span " + r.Msg.GetLabelSelector() + " " + strings.Join(r.Msg.GetSpanSelector(), ","))
	if q.failNext.CompareAndSwap(true, false) {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("ingester unavailable"))
	}
	select {
	case <-q.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if q.broken.Load() {
		return connect.NewResponse(&querierv1.SelectMergeSpanProfileResponse{Flamegraph: &querierv1.FlameGraph{
			Names: []string{"total"}, Total: 10, Levels: []*querierv1.Level{{Values: []int64{0, 10, 0, 4}}}}}), nil
	}
	if q.empty.Load() {
		return connect.NewResponse(&querierv1.SelectMergeSpanProfileResponse{Flamegraph: &querierv1.FlameGraph{Names: []string{"total"}}}), nil
	}
	return connect.NewResponse(&querierv1.SelectMergeSpanProfileResponse{Flamegraph: sampleGraph}), nil
}

func (q *heldQuerier) LabelValues(ctx context.Context, r *connect.Request[typesv1.LabelValuesRequest]) (*connect.Response[typesv1.LabelValuesResponse], error) {
	q.count("values " + r.Msg.GetName())
	select {
	case <-q.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return connect.NewResponse(&typesv1.LabelValuesResponse{Names: []string{"b", "a", "c"}}), nil
}

func newHeldClient(t *testing.T, q *heldQuerier) *Client {
	t.Helper()
	path, h := querierv1connect.NewQuerierServiceHandler(q)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	t.Cleanup(func() {
		select {
		case <-q.release:
		default:
			close(q.release)
		}
	})
	return New(models.Upstream{Name: models.Pyroscope, URL: s.URL}, s.Client())
}

// waitForCalls waits until n calls have reached the server, a minute at most.
func waitForCalls(t *testing.T, q *heldQuerier, n int32) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); q.total.Load() < n; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute %d of %d calls reached the server", q.total.Load(), n)
		}
	}
}

// Panels asking the same span profiles at once (the request-level dashboard's trace panels and
// its flame graph of the request) send Pyroscope one call; a different request is its own call;
// every caller gets the whole answer, and one caller's changes to its tree or its values are
// not another's. Asked again after the reply outside a refresh (a resource call), the call goes
// to Pyroscope again: nothing is kept.
func TestConcurrentIdenticalCallsShareOneRequest(t *testing.T) {
	q := &heldQuerier{release: make(chan struct{}), calls: map[string]int{}}
	c := newHeldClient(t, q)
	ctx := t.Context()
	span := models.FlameGraphQuery{ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="backend"}`,
		SpanSelector: []string{"00f067aa0ba902b7"}, Start: from, End: to, MaxNodes: 1024}
	other := span
	other.SpanSelector = []string{"53995c3f42cd8ad8"}

	const same = 4
	trees := make([]*flamegraph.Node, same+1)
	values := make([][]string, 2)
	errs := make([]error, len(trees)+len(values))
	var wg sync.WaitGroup
	for i := range same {
		wg.Go(func() { trees[i], errs[i] = c.MergedFlameGraph(ctx, span) })
	}
	wg.Go(func() { trees[same], errs[same] = c.MergedFlameGraph(ctx, other) })
	for i := range values {
		wg.Go(func() { values[i], errs[len(trees)+i] = c.LabelValues(ctx, "service_name", "{}", from, to) })
	}
	goroutines.WaitIn(t, "pyroscope.shareCall", len(errs))
	close(q.release)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	want := map[string]int{"span " + span.LabelSelector + " 00f067aa0ba902b7": 1, "span " + span.LabelSelector + " 53995c3f42cd8ad8": 1, "values service_name": 1}
	q.mu.Lock()
	got := q.calls
	q.mu.Unlock()
	if !maps.Equal(got, want) {
		t.Errorf("calls reaching Pyroscope %v, want %v", got, want)
	}
	for i, tree := range trees {
		if tree.Total != sampleGraph.Total || len(tree.Children) != 2 || tree.Children[0].Name != "handle" {
			t.Fatalf("caller %d got %+v, want the reply's graph", i, tree)
		}
	}
	trees[0].Children[0].Name = "changed by one caller"
	values[0][0] = "changed by one caller"
	if trees[1].Children[0].Name != "handle" || !slices.Equal(values[1], []string{"a", "b", "c"}) {
		t.Errorf("one caller's change shows in another's answer: %q, %v", trees[1].Children[0].Name, values[1])
	}

	if _, err := c.MergedFlameGraph(ctx, span); err != nil || q.total.Load() != 4 {
		t.Errorf("asked again after the reply: %v, %d calls in all, want 4", err, q.total.Load())
	}
}

// A panel closed while its call is shared ends only its own wait when it was not the first;
// when it was, the others ask again on their own and get their answer.
func TestASharedCallCancelledByItsFirstCallerIsAskedAgain(t *testing.T) {
	q := &heldQuerier{release: make(chan struct{}), calls: map[string]int{}}
	c := newHeldClient(t, q)
	first, cancel := context.WithCancel(t.Context())
	var firstErr, secondErr error
	var values []string
	var wg sync.WaitGroup
	wg.Go(func() { _, firstErr = c.LabelValues(first, "service_name", "{}", from, to) })
	waitForCalls(t, q, 1)
	wg.Go(func() { values, secondErr = c.LabelValues(t.Context(), "service_name", "{}", from, to) })
	goroutines.WaitIn(t, "pyroscope.shareCall", 2)
	cancel()
	waitForCalls(t, q, 2) // the second caller asks again on its own
	close(q.release)
	wg.Wait()
	if firstErr == nil {
		t.Error("the closed panel's call succeeded")
	}
	if secondErr != nil || !slices.Equal(values, []string{"a", "b", "c"}) {
		t.Errorf("the live panel got %v, %v; want its own answer", values, secondErr)
	}
}

// The panels of one refresh (Grafana sends them one range) that ask the same read one after
// another send Pyroscope one call: the reply is kept for that refresh, a few seconds. The next
// refresh, a resource call (no refresh) and a failed call ask Pyroscope again, and a caller's
// changes to a kept answer are not the next caller's.
func TestARefreshReadsEachReplyOnce(t *testing.T) {
	q := &heldQuerier{release: make(chan struct{}), calls: map[string]int{}}
	close(q.release)
	c := newHeldClient(t, q)
	now := to.Add(30 * time.Second) // the span ended moments ago: samples may still come
	c.querier.(*sharedQuerier).now = func() time.Time { return now }
	span := models.FlameGraphQuery{ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="backend"}`,
		SpanSelector: []string{"00f067aa0ba902b7"}, Start: from, End: to, MaxNodes: 1024}
	refreshAt := func(end time.Time) context.Context {
		return models.WithRefresh(t.Context(), models.Refresh{From: end.Add(-time.Hour), To: end})
	}
	refresh := refreshAt(now)
	calls := func() int32 { return q.total.Load() }

	first, err := c.MergedFlameGraph(refresh, span)
	if err != nil {
		t.Fatal(err)
	}
	first.Children[0].Name = "changed by the first panel"
	second, err := c.MergedFlameGraph(refresh, span)
	if err != nil || calls() != 1 {
		t.Fatalf("the same span profile twice in one refresh: %v, %d calls, want 1", err, calls())
	}
	if second.Total != sampleGraph.Total || second.Children[0].Name != "handle" {
		t.Errorf("the second panel got %+v, want the reply's graph, unchanged", second)
	}
	for range 2 {
		if v, err := c.LabelValues(refresh, "service_name", "{}", from, to); err != nil || !slices.Equal(v, []string{"a", "b", "c"}) {
			t.Fatalf("label values in a refresh: %v, %v", v, err)
		}
	}
	if calls() != 2 {
		t.Errorf("%d calls after label values asked twice in the refresh, want 2 (one each read)", calls())
	}

	if _, err := c.MergedFlameGraph(refreshAt(now.Add(time.Second)), span); err != nil || calls() != 3 {
		t.Errorf("the next refresh: %v, %d calls, want its own call (3)", err, calls())
	}
	for range 2 {
		if _, err := c.MergedFlameGraph(t.Context(), span); err != nil {
			t.Fatal(err)
		}
	}
	if calls() != 5 {
		t.Errorf("%d calls after two reads outside any refresh, want each its own (5)", calls())
	}

	failing := refreshAt(now.Add(2 * time.Second))
	q.failNext.Store(true)
	if _, err := c.MergedFlameGraph(failing, span); err == nil {
		t.Fatal("the failing call succeeded")
	}
	if _, err := c.MergedFlameGraph(failing, span); err != nil || calls() != 7 {
		t.Errorf("asked again after a failure in the same refresh: %v, %d calls, want a call of its own (7)", err, calls())
	}
}

// Once a read's range ended long enough ago that every profile in it has arrived (two upload
// periods), its answer cannot change: every refresh after that gets the kept reply, for
// settledTTL; a range that ended less long ago is its refresh's only, a resource call is asked
// anew, and so is an empty answer (late samples, a backfill, are what its caller waits for).
func TestASettledReadIsAskedOnce(t *testing.T) {
	q := &heldQuerier{release: make(chan struct{}), calls: map[string]int{}}
	close(q.release)
	c := newHeldClient(t, q)
	sq := c.querier.(*sharedQuerier)
	now := to.Add(settledAfter - time.Second)
	sq.now = func() time.Time { return now }
	span := models.FlameGraphQuery{ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="backend"}`,
		SpanSelector: []string{"00f067aa0ba902b7"}, Start: from, End: to, MaxNodes: 1024}
	refresh := func() context.Context {
		return models.WithRefresh(t.Context(), models.Refresh{From: now.Add(-time.Hour), To: now})
	}
	ask := func(ctx context.Context) {
		t.Helper()
		if g, err := c.MergedFlameGraph(ctx, span); err != nil || g.Total != sampleGraph.Total {
			t.Fatalf("%v, %v", g, err)
		}
	}
	ask(refresh())
	now = now.Add(2 * time.Second) // settled now, but asked first in the refresh before
	ask(refresh())
	ask(refresh())
	if n := q.total.Load(); n != 2 {
		t.Errorf("%d calls: want one before the range settled, one after, then none", n)
	}
	now = now.Add(settledTTL - time.Second)
	ask(refresh())
	ask(t.Context())
	if n := q.total.Load(); n != 3 {
		t.Errorf("%d calls: want the kept reply for %s, and a resource call asked anew (3)", n, settledTTL)
	}
	now = now.Add(2 * time.Second)
	ask(refresh())
	if n := q.total.Load(); n != 4 {
		t.Errorf("%d calls: want the read asked again once kept %s (4)", n, settledTTL)
	}

	q.empty.Store(true)
	other := span
	other.SpanSelector = []string{"53995c3f42cd8ad8"}
	emptyAt := func(refresh context.Context) {
		t.Helper()
		if g, err := c.MergedFlameGraph(refresh, other); err != nil || g.Total != 0 {
			t.Fatalf("an empty answer: %v, %v", g, err)
		}
	}
	first := refresh()
	emptyAt(first)
	emptyAt(first)
	if n := q.total.Load(); n != 5 {
		t.Errorf("%d calls: want a settled read with no sample kept for its refresh (5)", n)
	}
	now = now.Add(time.Second)
	emptyAt(refresh())
	if n := q.total.Load(); n != 6 {
		t.Errorf("%d calls: want a settled read with no sample asked again by the next refresh (6)", n)
	}

	// A reply the client refuses (a proxy cut it, a server bug) is not kept: once Pyroscope
	// answers well, the next read gets the answer.
	q.empty.Store(false)
	q.broken.Store(true)
	third := span
	third.SpanSelector = []string{"4bf92f3577b34da6"}
	same := refresh()
	if _, err := c.MergedFlameGraph(same, third); err == nil || !strings.Contains(err.Error(), "inconsistent") {
		t.Fatalf("a broken reply: %v, want it refused", err)
	}
	q.broken.Store(false)
	if g, err := c.MergedFlameGraph(same, third); err != nil || g.Total != sampleGraph.Total || q.total.Load() != 8 {
		t.Errorf("asked again after a refused reply: %v, %v, %d calls; want Pyroscope's new answer (8 calls)", g, err, q.total.Load())
	}
}
