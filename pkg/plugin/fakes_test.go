package plugin

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope/pyroscopetest"
)

// Wire fakes of the three upstreams, for the tests that check the plugin with its real clients
// (health checks, boundaries, injection, Pyroscope parity, benchmarks); the other unit tests use
// the in-memory stores of fakes_memory_test.go. The integration tests (integration_test.go) run
// the same paths against the real servers of the test bed.

// requestLog records the headers of each request a fake received.
type requestLog struct {
	mu      sync.Mutex
	headers []http.Header
}

func (l *requestLog) add(h http.Header) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.headers = append(l.headers, h.Clone())
}

func (l *requestLog) all() []http.Header {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]http.Header(nil), l.headers...)
}

type fakePyroscope struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	types []string
	graph *querierv1.FlameGraph
}

func (f *fakePyroscope) ProfileTypes(context.Context, *connect.Request[querierv1.ProfileTypesRequest]) (*connect.Response[querierv1.ProfileTypesResponse], error) {
	res := &querierv1.ProfileTypesResponse{}
	for _, id := range f.types {
		res.ProfileTypes = append(res.ProfileTypes, &typesv1.ProfileType{ID: id})
	}
	return connect.NewResponse(res), nil
}

func (f *fakePyroscope) SelectMergeStacktraces(_ context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	if req.Msg.LabelSelector == `{service_name="rejected"}` {
		return nil, connect.NewError(connect.CodeInvalidArgument, errString("parse error: unexpected end of input"))
	}
	return connect.NewResponse(&querierv1.SelectMergeStacktracesResponse{Flamegraph: f.graph}), nil
}

type errString string

func (e errString) Error() string { return string(e) }

// serve starts h on a loopback httptest server whose requests pass through wrap (nil: none).
func serve(t testing.TB, h http.Handler, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	if wrap != nil {
		h = wrap(h)
	}
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

func newFakePyroscope(t *testing.T, f *fakePyroscope, wrap func(http.Handler) http.Handler) *httptest.Server {
	path, h := querierv1connect.NewQuerierServiceHandler(f)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	return serve(t, mux, wrap)
}

func newFakePrometheus(t *testing.T, version string, wrap func(http.Handler) http.Handler) *httptest.Server {
	return serve(t, fakePrometheusBuildinfo(version), wrap)
}

// fakePrometheusBuildinfo answers Prometheus' buildinfo (the health check's call) with version.
func fakePrometheusBuildinfo(version string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/status/buildinfo", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]string{"version": version}})
	})
	return mux
}

// newFakeJaeger serves only the v1 API (an older Jaeger): /api/v3/services is a 404.
func newFakeJaeger(t *testing.T, services []string, wrap func(http.Handler) http.Handler) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/services", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"data": services, "total": len(services)})
	})
	return serve(t, mux, wrap)
}

// closedURL is a loopback URL nothing listens on.
func closedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String()
	l.Close()
	return url
}

func newTestDatasource(t testing.TB, jsonData map[string]any, secure map[string]string) *Datasource {
	t.Helper()
	raw, err := json.Marshal(jsonData)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{JSONData: raw, DecryptedSecureJSONData: secure})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*Datasource)
	t.Cleanup(ds.Dispose)
	return ds
}

// typedPyroscope answers span profiles by profile type: byType[type][span ID] are folded stacks.
// SelectMergeStacktraces answers stacks of selectors containing a key of bySelector (the trace_id
// fallback).
type typedPyroscope struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	byType     map[string]map[string][]string
	bySelector map[string][]string

	mu    sync.Mutex
	calls []string // "type span,span"
}

func (f *typedPyroscope) SelectMergeSpanProfile(_ context.Context, req *connect.Request[querierv1.SelectMergeSpanProfileRequest]) (*connect.Response[querierv1.SelectMergeSpanProfileResponse], error) {
	f.mu.Lock()
	f.calls = append(f.calls, req.Msg.ProfileTypeID+" "+strings.Join(req.Msg.SpanSelector, ","))
	f.mu.Unlock()
	var stacks []string
	for _, id := range req.Msg.SpanSelector {
		stacks = append(stacks, f.byType[req.Msg.ProfileTypeID][id]...)
	}
	return connect.NewResponse(&querierv1.SelectMergeSpanProfileResponse{Flamegraph: folded(stacks...)}), nil
}

func (f *typedPyroscope) SelectMergeStacktraces(_ context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	var stacks []string
	for frag, s := range f.bySelector {
		if strings.Contains(req.Msg.LabelSelector, frag) {
			stacks = append(stacks, s...)
		}
	}
	return connect.NewResponse(&querierv1.SelectMergeStacktracesResponse{Flamegraph: folded(stacks...)}), nil
}

// spanPyroscope is a Pyroscope that knows span profiles: SelectMergeSpanProfile answers the
// merged stacks of the asked span IDs; SelectMergeStacktraces (the trace-ID fallbacks) answers no
// samples. Each call waits delay, as a real server under load.
type spanPyroscope struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	bySpan map[string][]string // span ID → stacks "a;b;c value"
	delay  time.Duration

	mu        sync.Mutex
	spanCalls []*querierv1.SelectMergeSpanProfileRequest
}

func (f *spanPyroscope) SelectMergeSpanProfile(ctx context.Context, req *connect.Request[querierv1.SelectMergeSpanProfileRequest]) (*connect.Response[querierv1.SelectMergeSpanProfileResponse], error) {
	f.mu.Lock()
	f.spanCalls = append(f.spanCalls, req.Msg)
	f.mu.Unlock()
	time.Sleep(f.delay)
	var stacks []string
	for _, id := range req.Msg.SpanSelector {
		stacks = append(stacks, f.bySpan[id]...)
	}
	return connect.NewResponse(&querierv1.SelectMergeSpanProfileResponse{Flamegraph: folded(stacks...)}), nil
}

func (f *spanPyroscope) SelectMergeStacktraces(ctx context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	time.Sleep(f.delay)
	return connect.NewResponse(&querierv1.SelectMergeStacktracesResponse{Flamegraph: folded()}), nil
}

// folded builds Pyroscope's level-encoded flame graph from folded stacks ("a;b;c 10").
func folded(stacks ...string) *querierv1.FlameGraph { return pyroscopetest.FlameGraph(stacks...) }

// serveQuerier serves any Pyroscope querier implementation on a loopback server.
func serveQuerier(t testing.TB, h querierv1connect.QuerierServiceHandler) string {
	return pyroscopetest.Serve(t, h)
}

// forgetKeptReplies drops the Pyroscope replies ds keeps for later reads, so that its next query
// is a dashboard's first refresh: the benchmarks measure that, round after round.
func forgetKeptReplies(tb testing.TB, ds *Datasource) {
	tb.Helper()
	p, err := ds.src.Profiles.Get()
	if err != nil {
		tb.Fatal(err)
	}
	p.(*pyroscope.Client).ForgetReplies()
}
