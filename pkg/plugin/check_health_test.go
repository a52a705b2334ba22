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

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/tempofake"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

func checkHealth(t *testing.T, ds *Datasource) *backend.CheckHealthResult {
	t.Helper()
	res, err := ds.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	if err != nil {
		t.Fatalf("CheckHealth returned a Go error: %v", err)
	}
	return res
}

func TestCheckHealthNamesEachUpstreamWithItsResult(t *testing.T) {
	pyro := newFakePyroscope(t, &fakePyroscope{types: []string{"process_cpu:cpu:nanoseconds:cpu:nanoseconds", "memory:alloc_space:bytes:space:bytes"}}, nil)
	prom := newFakePrometheus(t, "2.53.0", nil)
	jaeger := newFakeJaeger(t, []string{"nemotron-backend"}, nil)
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": pyro.URL, "prometheusUrl": prom.URL, "jaegerUrl": jaeger.URL}, nil)

	res := checkHealth(t, ds)
	want := "Pyroscope: OK (2 profile types) · Prometheus: OK (version 2.53.0) · Jaeger: OK (1 services, API v1) · Tempo: not configured"
	if res.Status != backend.HealthStatusOk || res.Message != want {
		t.Errorf("health = %v %q\nwant OK %q", res.Status, res.Message, want)
	}
}

// Jaeger v2's query server, as configured by default, answers every request with "Connection:
// close": the check says so, and what to set, while Jaeger stays OK; a server that keeps its
// connections gets no such advice.
func TestCheckHealthSaysWhenJaegerClosesEveryConnection(t *testing.T) {
	closing := newFakeJaeger(t, []string{"api"}, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			h.ServeHTTP(w, r)
		})
	})
	keeping := newFakeJaeger(t, []string{"api"}, nil)
	const advice = "set extensions.jaeger_query.http.keep_alives_enabled: true"
	for _, c := range []struct {
		url    string
		advice bool
	}{{closing.URL, true}, {keeping.URL, false}} {
		res := checkHealth(t, newTestDatasource(t, map[string]any{"jaegerUrl": c.url}, nil))
		if res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, "Jaeger: OK (1 services, API v1") {
			t.Errorf("health = %v %q, want Jaeger OK", res.Status, res.Message)
		}
		if strings.Contains(res.Message, advice) != c.advice {
			t.Errorf("closing connections %v, yet the message is %q", c.advice, res.Message)
		}
	}
}

func TestCheckHealthNamesTheDownUpstreamAndFails(t *testing.T) {
	pyro := newFakePyroscope(t, &fakePyroscope{}, nil)
	down := closedURL(t)
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": pyro.URL, "jaegerUrl": down}, nil)

	res := checkHealth(t, ds)
	if res.Status != backend.HealthStatusError {
		t.Errorf("status = %v, want error", res.Status)
	}
	host := strings.TrimPrefix(down, "http://")
	for _, part := range []string{
		"Pyroscope: OK (0 profile types)",
		"Prometheus: not configured",
		"Jaeger: unreachable (dial tcp " + host + ": connect: connection refused)",
	} {
		if !strings.Contains(res.Message, part) {
			t.Errorf("message %q lacks %q", res.Message, part)
		}
	}
}

func TestCheckHealthIsOKWithUnsetUpstreams(t *testing.T) {
	prom := newFakePrometheus(t, "2.42.0", nil)
	res := checkHealth(t, newTestDatasource(t, map[string]any{"prometheusUrl": prom.URL}, nil))
	if res.Status != backend.HealthStatusOk {
		t.Errorf("status = %v (%s), want OK: only configured upstreams count", res.Status, res.Message)
	}
}

func TestCheckHealthWithNothingConfiguredSaysWhatToSet(t *testing.T) {
	res := checkHealth(t, newTestDatasource(t, map[string]any{}, nil))
	if res.Status != backend.HealthStatusError || !strings.Contains(res.Message, "No upstream configured") {
		t.Errorf("health = %v %q", res.Status, res.Message)
	}
}

func TestCheckHealthReportsInvalidSettingsWithoutCallingTheUpstream(t *testing.T) {
	prom := newFakePrometheus(t, "2.42.0", nil)
	ds := newTestDatasource(t, map[string]any{"prometheusUrl": prom.URL, "jaegerUrl": "http://j", "jaegerAuth": "kerberos"}, nil)
	res := checkHealth(t, ds)
	if res.Status != backend.HealthStatusError || !strings.Contains(res.Message, `Jaeger: invalid Jaeger settings: jaegerAuth must be one of none, basic, bearer; got "kerberos"`) ||
		!strings.Contains(res.Message, "Prometheus: OK") {
		t.Errorf("health = %v %q", res.Status, res.Message)
	}
}

// Each fake holds its reply until all three requests have arrived: a sequential health check
// would never get past the first one.
func TestCheckHealthCallsUpstreamsInParallel(t *testing.T) {
	var arrived sync.WaitGroup
	arrived.Add(3)
	allThere := make(chan struct{})
	go func() { arrived.Wait(); close(allThere) }()
	barrier := func(next http.Handler) http.Handler {
		var once sync.Once
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			once.Do(arrived.Done)
			select {
			case <-allThere:
			case <-time.After(10 * time.Second):
				http.Error(w, "the other upstreams were not called concurrently", http.StatusGatewayTimeout)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	pyro := newFakePyroscope(t, &fakePyroscope{}, barrier)
	prom := newFakePrometheus(t, "2.42.0", barrier)
	jaeger := newFakeJaeger(t, nil, barrier)
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": pyro.URL, "prometheusUrl": prom.URL, "jaegerUrl": jaeger.URL}, nil)
	if res := checkHealth(t, ds); res.Status != backend.HealthStatusOk {
		t.Errorf("health = %v %q", res.Status, res.Message)
	}
}

func TestUpstreamRequestsCarryAuthTenantAndTraceContext(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTracerProvider(prevTP); otel.SetTextMapPropagator(prevProp) })

	var pyroLog, promLog, jaegerLog requestLog
	logTo := func(l *requestLog) func(http.Handler) http.Handler {
		return func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { l.add(r.Header); next.ServeHTTP(w, r) })
		}
	}
	pyro := newFakePyroscope(t, &fakePyroscope{}, logTo(&pyroLog))
	prom := newFakePrometheus(t, "2.42.0", logTo(&promLog))
	jaeger := newFakeJaeger(t, nil, logTo(&jaegerLog))
	ds := newTestDatasource(t, map[string]any{
		"pyroscopeUrl": pyro.URL, "pyroscopeTenant": "team-gpu", "pyroscopeAuth": "bearer",
		"prometheusUrl": prom.URL, "prometheusAuth": "basic", "prometheusBasicAuthUser": "grafana",
		"jaegerUrl": jaeger.URL,
	}, map[string]string{"pyroscopeBearerToken": "pyro-token", "prometheusBasicAuthPassword": "prom-pass"})

	ctx, parent := tp.Tracer("test").Start(context.Background(), "health")
	if res, _ := ds.CheckHealth(ctx, &backend.CheckHealthRequest{}); res.Status != backend.HealthStatusOk {
		t.Fatalf("health = %v %q", res.Status, res.Message)
	}
	parent.End()

	check := func(name string, l *requestLog, want map[string]string) {
		hs := l.all()
		if len(hs) == 0 {
			t.Fatalf("%s got no request", name)
		}
		for _, h := range hs {
			for k, v := range want {
				if got := h.Get(k); got != v {
					t.Errorf("%s: header %s = %q, want %q", name, k, got, v)
				}
			}
			tp := h.Get("traceparent")
			if !strings.Contains(tp, parent.SpanContext().TraceID().String()) {
				t.Errorf("%s: traceparent %q does not continue trace %s", name, tp, parent.SpanContext().TraceID())
			}
		}
	}
	check("Pyroscope", &pyroLog, map[string]string{"Authorization": "Bearer pyro-token", "X-Scope-OrgID": "team-gpu"})
	check("Prometheus", &promLog, map[string]string{"Authorization": "Basic Z3JhZmFuYTpwcm9tLXBhc3M="})
	check("Jaeger", &jaegerLog, map[string]string{"Authorization": ""})

	// Every upstream call is a span carrying the upstream's name, and so is each HTTP request.
	calls := map[string]int{}
	for _, s := range rec.Ended() {
		for _, a := range s.Attributes() {
			if string(a.Key) == upstream.SpanAttribute {
				calls[a.Value.AsString()+" / "+s.Name()]++
			}
		}
	}
	for _, want := range []string{
		"Pyroscope / Pyroscope ProfileTypes", "Prometheus / Prometheus Buildinfo", "Jaeger / Jaeger Services",
		"Pyroscope / HTTP Outgoing Request", "Prometheus / HTTP Outgoing Request", "Jaeger / HTTP Outgoing Request",
	} {
		if calls[want] == 0 {
			t.Errorf("no span %q; spans with %s: %v", want, upstream.SpanAttribute, calls)
		}
	}
}

// Dispose must release the upstream connections: Grafana creates a new instance whenever the
// settings change, and the old one's keep-alive connections would otherwise pile up.
func TestDisposeClosesUpstreamConnections(t *testing.T) {
	closed := make(chan struct{}, 16)
	// The hook is set before the server starts: its accept loop reads it.
	prom := httptest.NewUnstartedServer(fakePrometheusBuildinfo("2.42.0"))
	prom.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	prom.Start()
	t.Cleanup(prom.Close)
	raw, _ := json.Marshal(map[string]any{"prometheusUrl": prom.URL})
	inst, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{JSONData: raw})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*Datasource)
	if res := checkHealth(t, ds); res.Status != backend.HealthStatusOk {
		t.Fatalf("health = %q", res.Message)
	}
	select {
	case <-closed:
		t.Fatal("connection closed before Dispose: keep-alive is not in use, the test proves nothing")
	case <-time.After(200 * time.Millisecond):
	}
	ds.Dispose()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the idle upstream connection was not closed by Dispose")
	}
}

// With both trace stores set, both are checked and the one the queries do not read says so.
func TestCheckHealthNamesBothTraceStoresAndWhichIsRead(t *testing.T) {
	jaeger := newFakeJaeger(t, []string{"nemotron-backend"}, nil)
	tempo, err := tempofake.Start(tempofake.Options{HTTPAddr: "127.0.0.1:0", OTLPAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer tempo.Close()
	for _, tc := range []struct{ traceStore, want string }{
		{"", "Jaeger: OK (1 services, API v1) · Tempo: OK (version " + tempofake.Version + ", 0 services; not read: with both URLs set, traces are read from Jaeger unless jsonData.traceStore says tempo)"},
		{"tempo", "Jaeger: OK (1 services, API v1; not read: jsonData.traceStore is tempo) · Tempo: OK (version " + tempofake.Version + ", 0 services)"},
	} {
		ds := newTestDatasource(t, map[string]any{"jaegerUrl": jaeger.URL, "tempoUrl": tempo.URL, "traceStore": tc.traceStore}, nil)
		if res := checkHealth(t, ds); res.Status != backend.HealthStatusOk || !strings.HasSuffix(res.Message, tc.want) {
			t.Errorf("traceStore %q: health = %v %q\nwant it to end in %q", tc.traceStore, res.Status, res.Message, tc.want)
		}
	}
	// A trace store that cannot be chosen fails the health check, with why, though Jaeger answers.
	for traceStore, want := range map[string]string{
		"zipkin": `jsonData.traceStore must be jaeger or tempo, got "zipkin"`,
		"tempo":  "jsonData.traceStore is tempo, but Tempo is not configured",
	} {
		bad := newTestDatasource(t, map[string]any{"jaegerUrl": jaeger.URL, "traceStore": traceStore}, nil)
		r := run(t, bad, query("A", `{"queryType":"trace","traceId":"0af7651916cd43dd8448eb211c80319c"}`)).Responses["A"]
		wantError(t, r, backend.ErrorSourceDownstream, want)
		if res := checkHealth(t, bad); res.Status != backend.HealthStatusError || !strings.Contains(res.Message, "Trace store: "+want) {
			t.Errorf("traceStore %q: health = %v %q", traceStore, res.Status, res.Message)
		}
	}
}
