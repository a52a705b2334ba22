package pyroscope

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope/pyroscopetest"
)

const (
	traceA = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceB = "0af7651916cd43dd8448eb211c80319c"
)

// requestSamples stores, 5 minutes ago, trace A's and trace B's samples of one service, so the
// service's unfiltered profile (what 1.12 answers) holds both.
func requestSamples(srv *pyroscopetest.Server, service string, at time.Time) {
	srv.Add(
		pyroscopetest.Sample{Series: map[string]string{"service_name": service}, TraceID: traceA, Time: at, Stack: "main.handle;main.dbQuery", Value: 300},
		pyroscopetest.Sample{Series: map[string]string{"service_name": service}, TraceID: traceB, Time: at, Stack: "main.handle;main.serialize", Value: 20},
	)
}

func traceQuery(service, traceID string, at time.Time) models.FlameGraphQuery {
	return models.FlameGraphQuery{ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="` + service + `"}`,
		TraceID: traceID, Start: at.Add(-time.Minute), End: at.Add(time.Minute), MaxNodes: 100}
}

func newTraceClient(t *testing.T, srv *pyroscopetest.Server) *Client {
	t.Helper()
	url := pyroscopetest.Serve(t, srv)
	return New(models.Upstream{Name: models.Pyroscope, URL: url}, http.DefaultClient)
}

// probes are the trace_id_selector calls for an ID other than the ones asked.
func probes(srv *pyroscopetest.Server, asked ...string) int {
	n := 0
	for _, c := range srv.TraceSelectorCalls() {
		if !strings.Contains(strings.Join(asked, " "), c.TraceIdSelector[0]) {
			n++
		}
	}
	return n
}

func TestTraceSelectorOnPyroscope2KeepsTheTracesSamplesAndIsTrustedAfterOneProbe(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2}
	at := time.Now().Add(-5 * time.Minute)
	requestSamples(srv, "ai-detector", at)
	c := newTraceClient(t, srv)

	fg, err := c.MergedFlameGraph(t.Context(), traceQuery("ai-detector", traceA, at))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	fg.Walk(func(_ int, n *flamegraph.Node) { names = append(names, n.Name) })
	if fg.Total != 300 || strings.Join(names, ",") != "total,main.handle,main.dbQuery" {
		t.Errorf("trace A's profile: total %d, functions %v", fg.Total, names)
	}
	calls := srv.TraceSelectorCalls()
	if len(calls) != 2 || calls[0].TraceIdSelector[0] != traceA || probes(srv, traceA) != 1 {
		t.Fatalf("want the query and one probe, got %d calls: %v", len(calls), calls)
	}
	if probe := calls[1].TraceIdSelector[0]; len(probe) != 32 || probe == traceA || calls[1].LabelSelector != calls[0].LabelSelector || calls[1].Start != calls[0].Start {
		t.Errorf("probe %q over %s %d–%d, not the same query for another trace ID", probe, calls[1].LabelSelector, calls[1].Start, calls[1].End)
	}
	if got := c.TraceSelectorSupport(); got != SelectorHonoured {
		t.Errorf("support = %v", got)
	}

	// Known now: the next trace is asked without a probe.
	fg, err = c.MergedFlameGraph(t.Context(), traceQuery("ai-detector", traceB, at))
	if err != nil || fg.Total != 20 {
		t.Fatalf("trace B: %v, total %d", err, fg.Total)
	}
	if n := len(srv.TraceSelectorCalls()); n != 3 {
		t.Errorf("%d trace_id_selector calls after the verdict, want 3", n)
	}
}

func TestTraceSelectorOnPyroscope112IsFoundIgnoredAndNotSentAgain(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V112}
	at := time.Now().Add(-5 * time.Minute)
	requestSamples(srv, "ai-detector", at)
	c := newTraceClient(t, srv)

	// 1.12 answers the service's whole profile (320) for trace A: it must never be returned.
	fg, err := c.MergedFlameGraph(t.Context(), traceQuery("ai-detector", traceA, at))
	if !errors.Is(err, models.ErrTraceSelectorIgnored) || fg != nil {
		t.Fatalf("got %v, %v; want models.ErrTraceSelectorIgnored", fg, err)
	}
	if c.TraceSelectorSupport() != SelectorIgnored || probes(srv, traceA) != 1 {
		t.Errorf("support %v after %d probes", c.TraceSelectorSupport(), probes(srv, traceA))
	}
	before := len(srv.Calls())
	if _, err := c.MergedFlameGraph(t.Context(), traceQuery("ai-detector", traceB, at)); !errors.Is(err, models.ErrTraceSelectorIgnored) {
		t.Errorf("second query: %v", err)
	}
	if n := len(srv.Calls()) - before; n != 0 {
		t.Errorf("sent %d calls to a server known to ignore trace_id_selector", n)
	}
	// The label selector way is untouched.
	fg, err = c.MergedFlameGraph(t.Context(), models.FlameGraphQuery{LabelSelector: `{service_name="ai-detector"}`, Start: at.Add(-time.Minute), End: at.Add(time.Minute)})
	if err != nil || fg.Total != 320 {
		t.Errorf("plain query: %v, total %v", err, fg)
	}
}

func TestAnEmptyTraceSelectorAnswerNeedsNoProbeAndSettlesNothing(t *testing.T) {
	for _, v := range []pyroscopetest.Version{pyroscopetest.V112, pyroscopetest.V2} {
		srv := &pyroscopetest.Server{Version: v}
		at := time.Now().Add(-5 * time.Minute)
		requestSamples(srv, "ai-detector", at)
		c := newTraceClient(t, srv)
		// Another service: empty on 1.12 too, and so right whatever the server does.
		fg, err := c.MergedFlameGraph(t.Context(), traceQuery("billing", traceA, at))
		if err != nil || fg.Total != 0 {
			t.Fatalf("version %d: %v, %v", v, fg, err)
		}
		if len(srv.Calls()) != 1 || c.TraceSelectorSupport() != SelectorUnknown {
			t.Errorf("version %d: %d calls, support %v", v, len(srv.Calls()), c.TraceSelectorSupport())
		}
	}
}

func TestA64BitTraceIDIsPaddedTo32DigitsForTheSelector(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2}
	at := time.Now().Add(-5 * time.Minute)
	srv.Add(pyroscopetest.Sample{Series: map[string]string{"service_name": "legacy"}, TraceID: "0000000000000000a3ce929d0e0e4736", Time: at, Stack: "main.work", Value: 7})
	c := newTraceClient(t, srv)
	fg, err := c.MergedFlameGraph(t.Context(), traceQuery("legacy", "A3CE929D0E0E4736", at))
	if err != nil || fg.Total != 7 {
		t.Fatalf("%v, %v", fg, err)
	}
	if got := srv.TraceSelectorCalls()[0].TraceIdSelector; len(got) != 1 || got[0] != "0000000000000000a3ce929d0e0e4736" {
		t.Errorf("sent %v", got)
	}
	if _, err := c.MergedFlameGraph(t.Context(), traceQuery("legacy", "a3ce929d", at)); err == nil || !strings.Contains(err.Error(), "32 hex digits (or 16)") {
		t.Errorf("short ID: %v", err)
	}
}

func TestDualModeRefusesTheTraceSelectorOnlyForWindowsWithV1Data(t *testing.T) {
	at := time.Now().Add(-5 * time.Minute)
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2, V1Until: at.Add(-10 * time.Minute)}
	requestSamples(srv, "ai-detector", at)
	c := newTraceClient(t, srv)

	old := traceQuery("ai-detector", traceA, at)
	old.Start = at.Add(-time.Hour)
	_, err := c.MergedFlameGraph(t.Context(), old)
	if !errors.Is(err, models.ErrTraceSelectorRefused) || !strings.Contains(err.Error(), "trace_id_selector is only supported with the v2 query backend") {
		t.Fatalf("window reaching v1 data: %v", err)
	}
	if c.TraceSelectorSupport() != SelectorUnknown {
		t.Errorf("a refusal for one window settled the verdict: %v", c.TraceSelectorSupport())
	}
	fg, err := c.MergedFlameGraph(t.Context(), traceQuery("ai-detector", traceA, at))
	if err != nil || fg.Total != 300 {
		t.Errorf("window of v2 data: %v, %v", fg, err)
	}
}

func TestSpanAndTraceSelectorsAreNeverSentTogether(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2}
	c := newTraceClient(t, srv)
	q := traceQuery("ai-detector", traceA, time.Now())
	q.SpanSelector = []string{"00f067aa0ba902b7"}
	if _, err := c.MergedFlameGraph(t.Context(), q); err == nil || !strings.Contains(err.Error(), "refuses span_selector with trace_id_selector") {
		t.Errorf("err = %v", err)
	}
	if len(srv.Calls())+len(srv.SpanCalls()) != 0 {
		t.Errorf("the combination reached Pyroscope")
	}
}

func TestTheVerdictIsAskedAgainAfterItsLifetime(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2}
	at := time.Now().Add(-5 * time.Minute)
	requestSamples(srv, "ai-detector", at)
	c := newTraceClient(t, srv)
	now := time.Now()
	c.traceSelector.now = func() time.Time { return now }

	for range 2 {
		if _, err := c.MergedFlameGraph(t.Context(), traceQuery("ai-detector", traceA, at)); err != nil {
			t.Fatal(err)
		}
	}
	if probes(srv, traceA) != 1 {
		t.Fatalf("%d probes within the lifetime", probes(srv, traceA))
	}
	now = now.Add(SelectorVerdictLifetime + time.Second)
	if c.TraceSelectorSupport() != SelectorUnknown {
		t.Errorf("verdict outlived its lifetime")
	}
	if _, err := c.MergedFlameGraph(t.Context(), traceQuery("ai-detector", traceA, at)); err != nil {
		t.Fatal(err)
	}
	if probes(srv, traceA) != 2 {
		t.Errorf("%d probes after the lifetime, want 2", probes(srv, traceA))
	}
}

func TestParallelQueriesShareOneProbe(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V112}
	at := time.Now().Add(-5 * time.Minute)
	services := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, s := range services {
		requestSamples(srv, s, at)
	}
	c := newTraceClient(t, srv)
	errs := make([]error, len(services))
	var wg sync.WaitGroup
	for i, s := range services {
		wg.Go(func() { _, errs[i] = c.MergedFlameGraph(context.Background(), traceQuery(s, traceA, at)) })
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, models.ErrTraceSelectorIgnored) {
			t.Errorf("service %s: %v", services[i], err)
		}
	}
	if n := probes(srv, traceA); n != 1 {
		t.Errorf("%d probes for %d parallel queries, want 1", n, len(services))
	}
}

// failingProbes is a 2.x whose probe calls fail, as a server under load may.
type failingProbes struct{ *pyroscopetest.Server }

func (f failingProbes) SelectMergeStacktraces(ctx context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	if ids := req.Msg.TraceIdSelector; len(ids) > 0 && ids[0] != traceA {
		return nil, connect.NewError(connect.CodeUnavailable, errors.New("ingester unavailable"))
	}
	return f.Server.SelectMergeStacktraces(ctx, req)
}

func TestAnAnswerThatCannotBeCheckedIsNotReturned(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2}
	at := time.Now().Add(-5 * time.Minute)
	requestSamples(srv, "ai-detector", at)
	url := pyroscopetest.Serve(t, failingProbes{srv})
	c := New(models.Upstream{Name: models.Pyroscope, URL: url}, http.DefaultClient)
	fg, err := c.MergedFlameGraph(t.Context(), traceQuery("ai-detector", traceA, at))
	if fg != nil || err == nil || !strings.Contains(err.Error(), "could not tell whether this Pyroscope filters by trace_id_selector") || !strings.Contains(err.Error(), "ingester unavailable") {
		t.Errorf("%v, %v", fg, err)
	}
	if c.TraceSelectorSupport() != SelectorUnknown {
		t.Errorf("a failed probe settled the verdict")
	}
}
