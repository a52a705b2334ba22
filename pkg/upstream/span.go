package upstream

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/backend/tracing"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// StartSpan opens the span of one logical upstream call ("Pyroscope ProfileTypes"); the HTTP
// request(s) it makes become its children through the SDK's tracing middleware.
func StartSpan(ctx context.Context, name, operation string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	attrs = append(attrs, attribute.String(SpanAttribute, name))
	return tracing.DefaultTracer().Start(ctx, name+" "+operation,
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// EndSpan records err (if any) on span and ends it; it returns err unchanged.
func EndSpan(span trace.Span, err error) error {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
	return err
}
