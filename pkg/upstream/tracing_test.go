package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend/tracing"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Requests inside a recorded span get the SDK's span; the others carry the trace context alone,
// so an upstream's logs keep Grafana's trace ID whether the plugin traces or not.
func TestUpstreamRequestsCarryTheTraceContextAndASpanWhereOneRecords(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prevProp, prevTracer := otel.GetTextMapPropagator(), tracing.DefaultTracer()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	tracing.InitDefaultTracer(tp.Tracer("test"))
	t.Cleanup(func() {
		otel.SetTextMapPropagator(prevProp)
		tracing.InitDefaultTracer(prevTracer)
	})

	var mu sync.Mutex
	var parents []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		parents = append(parents, r.Header.Get("traceparent"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	c, err := NewHTTPClient(models.Upstream{Name: "Jaeger", URL: srv.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	get := func(ctx context.Context) {
		t.Helper()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/services", nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}

	// Grafana's trace, not sampled here: the plugin's spans are not recorded.
	remote := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{0x4b, 0xf9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14},
		SpanID:  trace.SpanID{1, 2, 3, 4, 5, 6, 7, 8}, Remote: true,
	})
	get(trace.ContextWithSpanContext(context.Background(), remote))
	if n := len(rec.Ended()); n != 0 {
		t.Errorf("a request outside a recorded span made %d span(s), want none", n)
	}

	// A recorded span: the request gets the SDK's span, a child of it, named after the upstream.
	ctx, parent := tp.Tracer("test").Start(context.Background(), "Jaeger Services")
	get(ctx)
	parent.End()

	mu.Lock()
	defer mu.Unlock()
	if len(parents) != 2 {
		t.Fatalf("the server got %d requests, want 2", len(parents))
	}
	for i, want := range []trace.TraceID{remote.TraceID(), parent.SpanContext().TraceID()} {
		carrier := propagation.HeaderCarrier{"Traceparent": {parents[i]}}
		got := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier))
		if got.TraceID() != want {
			t.Errorf("request %d: traceparent %q does not continue trace %s", i+1, parents[i], want)
		}
	}
	var outgoing []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "HTTP Outgoing Request" {
			outgoing = append(outgoing, s)
		}
	}
	if len(outgoing) != 1 {
		t.Fatalf("%d HTTP Outgoing Request span(s), want 1 (the traced request's)", len(outgoing))
	}
	if outgoing[0].Parent().SpanID() != parent.SpanContext().SpanID() {
		t.Errorf("the request's span is not a child of the call's span")
	}
	named := false
	for _, a := range outgoing[0].Attributes() {
		named = named || (string(a.Key) == SpanAttribute && a.Value.AsString() == "Jaeger")
	}
	if !named {
		t.Errorf("the request's span lacks %s=Jaeger: %v", SpanAttribute, outgoing[0].Attributes())
	}
}
