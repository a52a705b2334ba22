package pyroscope

import (
	"context"
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
}

func (q *heldQuerier) count(key string) {
	q.mu.Lock()
	q.calls[key]++
	q.mu.Unlock()
	q.total.Add(1)
}

func (q *heldQuerier) SelectMergeSpanProfile(ctx context.Context, r *connect.Request[querierv1.SelectMergeSpanProfileRequest]) (*connect.Response[querierv1.SelectMergeSpanProfileResponse], error) {
	q.count("span " + r.Msg.GetLabelSelector() + " " + strings.Join(r.Msg.GetSpanSelector(), ","))
	select {
	case <-q.release:
	case <-ctx.Done():
		return nil, ctx.Err()
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
// not another's. Asked again after the reply, the call goes to Pyroscope again: nothing is kept.
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
