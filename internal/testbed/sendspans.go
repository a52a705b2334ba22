package testbed

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// SentSpan is one span SendSpans exports, with the times relative to the request's start.
type SentSpan struct {
	Service    string
	Name       string
	Kind       trace.SpanKind
	Parent     int // index of the parent in the list, -1 for the root; parents come first
	Start, End time.Duration
	Attributes []attribute.KeyValue
	Resource   []attribute.KeyValue // besides service.name
	Events     []SentEvent
	// Status is the span's status code (codes.Error for a failed span) with its description.
	Status        codes.Code
	StatusMessage string
}

// SentEvent is one span event, At after the request's start.
type SentEvent struct {
	Name       string
	At         time.Duration
	Attributes []attribute.KeyValue
}

// SendSpans exports one request made of spans, starting at start, through OTLP gRPC (insecure)
// to otlpEndpoint (host:port) with the OpenTelemetry SDK, as an instrumented service would, and
// returns its trace ID. start is truncated to the microsecond, the resolution of Jaeger's v1 API.
func SendSpans(ctx context.Context, otlpEndpoint string, start time.Time, spans []SentSpan) (traceID string, err error) {
	return SendTenantSpans(ctx, otlpEndpoint, "", start, spans)
}

// SendTenantSpans is SendSpans with the tenant a multi-tenant receiver (Tempo) files the spans
// under, sent as X-Scope-OrgID; "" sends none.
func SendTenantSpans(ctx context.Context, otlpEndpoint, tenant string, start time.Time, spans []SentSpan) (traceID string, err error) {
	if otlpEndpoint == "" {
		return "", errors.New("no OTLP endpoint (HSI_TESTBED_JAEGER_OTLP is empty)")
	}
	start = start.Truncate(time.Microsecond)
	// One provider per service: the resource names the service, as each process's SDK does.
	providers := map[string]*sdktrace.TracerProvider{}
	defer func() {
		for _, tp := range providers {
			if shutdownErr := tp.Shutdown(ctx); err == nil && shutdownErr != nil {
				err = shutdownErr
			}
		}
	}()
	started := make([]trace.Span, len(spans))
	ctxs := make([]context.Context, len(spans))
	for i, s := range spans {
		tp := providers[s.Service]
		if tp == nil {
			opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(otlpEndpoint), otlptracegrpc.WithInsecure()}
			if tenant != "" {
				opts = append(opts, otlptracegrpc.WithHeaders(map[string]string{"X-Scope-OrgID": tenant}))
			}
			exp, err := otlptracegrpc.New(ctx, opts...)
			if err != nil {
				return "", err
			}
			attrs := append([]attribute.KeyValue{attribute.String("service.name", s.Service)}, s.Resource...)
			tp = sdktrace.NewTracerProvider(sdktrace.WithResource(resource.NewSchemaless(attrs...)),
				sdktrace.WithSampler(sdktrace.AlwaysSample()), sdktrace.WithBatcher(exp))
			providers[s.Service] = tp
		}
		parent := ctx
		if s.Parent >= 0 {
			if s.Parent >= i {
				return "", fmt.Errorf("span %d (%s) names parent %d, which does not come before it", i, s.Name, s.Parent)
			}
			parent = ctxs[s.Parent]
		}
		var sp trace.Span
		ctxs[i], sp = tp.Tracer("hsi-testbed").Start(parent, s.Name, trace.WithSpanKind(s.Kind),
			trace.WithTimestamp(start.Add(s.Start)), trace.WithAttributes(s.Attributes...))
		for _, ev := range s.Events {
			sp.AddEvent(ev.Name, trace.WithTimestamp(start.Add(ev.At)), trace.WithAttributes(ev.Attributes...))
		}
		if s.Status != codes.Unset {
			sp.SetStatus(s.Status, s.StatusMessage)
		}
		started[i] = sp
	}
	traceID = started[0].SpanContext().TraceID().String()
	for i := len(started) - 1; i >= 0; i-- {
		started[i].End(trace.WithTimestamp(start.Add(spans[i].End)))
	}
	// ForceFlush reports the export's failure; Shutdown alone would only log it.
	for svc, tp := range providers {
		if err := tp.ForceFlush(ctx); err != nil {
			return "", fmt.Errorf("exporting %s's spans to %s: %w", svc, otlpEndpoint, err)
		}
	}
	return traceID, nil
}

// A request whose first attempt at the model failed with CUDA out-of-memory and was retried
// with a smaller batch, as a PyTorch service records it (span.record_exception, then an error
// status): FailedAttemptSpans, the exception's type and message.
const (
	OOMExceptionType    = "torch.OutOfMemoryError"
	OOMExceptionMessage = "CUDA out of memory. Tried to allocate 2.50 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.12 GiB is free."
	OOMStatusMessage    = "torch.OutOfMemoryError: CUDA out of memory"
)

// FailedAttemptSpans: a gateway calls a model server twice; the first call's server span fails
// with CUDA OOM (exception event and error status, the client span an error status too), the
// second succeeds.
var FailedAttemptSpans = []SentSpan{
	{Service: "hsi-gateway", Name: "POST /v1/embed", Kind: trace.SpanKindServer, Parent: -1, Start: 0, End: 900 * time.Millisecond},
	{Service: "hsi-gateway", Name: "POST", Kind: trace.SpanKindClient, Parent: 0, Start: 10 * time.Millisecond, End: 410 * time.Millisecond,
		Status: codes.Error, StatusMessage: "HTTP 500"},
	{Service: "hsi-embedder", Name: "embed_batch", Kind: trace.SpanKindServer, Parent: 1, Start: 15 * time.Millisecond, End: 405 * time.Millisecond,
		Attributes: []attribute.KeyValue{attribute.Int("batch.size", 64)},
		Events: []SentEvent{{Name: "exception", At: 400 * time.Millisecond, Attributes: []attribute.KeyValue{
			attribute.String("exception.type", OOMExceptionType), attribute.String("exception.message", OOMExceptionMessage),
		}}},
		Status: codes.Error, StatusMessage: OOMStatusMessage},
	{Service: "hsi-gateway", Name: "POST", Kind: trace.SpanKindClient, Parent: 0, Start: 420 * time.Millisecond, End: 880 * time.Millisecond},
	{Service: "hsi-embedder", Name: "embed_batch", Kind: trace.SpanKindServer, Parent: 3, Start: 425 * time.Millisecond, End: 875 * time.Millisecond,
		Attributes: []attribute.KeyValue{attribute.Int("batch.size", 16)}, Status: codes.Ok},
}
