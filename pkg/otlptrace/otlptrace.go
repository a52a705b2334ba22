// Package otlptrace turns OpenTelemetry's trace data (OTLP, as Jaeger's v3 API and Tempo answer
// a trace) into the plugin's spans.
package otlptrace

import (
	"fmt"
	"slices"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// ServiceNameAttribute is the resource attribute naming the service (OpenTelemetry semantic
// conventions).
const ServiceNameAttribute = "service.name"

// UnmarshalJSON reads OTLP JSON (hex trace and span IDs, 64-bit integers as strings), which
// plain protojson cannot (it expects base64 IDs).
func UnmarshalJSON(b []byte) (ptrace.Traces, error) {
	return new(ptrace.JSONUnmarshaler).UnmarshalTraces(b)
}

// UnmarshalProto reads OTLP protobuf (TracesData).
func UnmarshalProto(b []byte) (ptrace.Traces, error) {
	return new(ptrace.ProtoUnmarshaler).UnmarshalTraces(b)
}

// Spans flattens the traces' spans: each with its service (the resource's service.name), its
// attributes and its resource's as strings, its status, kind and events (in time order). A span
// without IDs, or ending before it starts, is an error naming it: a negative duration would
// become a profile range that ends before it starts.
func Spans(td ptrace.Traces) ([]models.Span, error) {
	var out []models.Span
	for _, rs := range td.ResourceSpans().All() {
		resource := Attributes(rs.Resource().Attributes())
		service := resource[ServiceNameAttribute]
		for _, ss := range rs.ScopeSpans().All() {
			for _, s := range ss.Spans().All() {
				if s.TraceID().IsEmpty() || s.SpanID().IsEmpty() {
					return nil, fmt.Errorf("a span (%q) without traceId or spanId", s.Name())
				}
				start, end := s.StartTimestamp().AsTime(), s.EndTimestamp().AsTime()
				if end.Before(start) {
					return nil, fmt.Errorf("a span (%s) that ends before it starts", s.SpanID())
				}
				sp := models.Span{
					TraceID:    s.TraceID().String(),
					SpanID:     s.SpanID().String(),
					Service:    service,
					Operation:  s.Name(),
					Start:      start,
					Duration:   end.Sub(start),
					Attributes: Attributes(s.Attributes()),
					Resource:   resource,
					Kind:       kind(s.Kind()),
				}
				switch s.Status().Code() {
				case ptrace.StatusCodeError:
					sp.Status = models.StatusError
				case ptrace.StatusCodeOk:
					sp.Status = models.StatusOK
				}
				sp.StatusMessage = s.Status().Message()
				for _, e := range s.Events().All() {
					sp.Events = append(sp.Events, models.SpanEvent{Name: e.Name(), Time: e.Timestamp().AsTime(), Attributes: Attributes(e.Attributes())})
				}
				SortEvents(sp.Events)
				if !s.ParentSpanID().IsEmpty() {
					sp.ParentSpanID = s.ParentSpanID().String()
				}
				out = append(out, sp)
			}
		}
	}
	return out, nil
}

// Attributes flattens OTLP attributes to strings (AsString: numbers and booleans as printed,
// arrays and maps as JSON).
func Attributes(m pcommon.Map) map[string]string {
	out := make(map[string]string, m.Len())
	for k, v := range m.All() {
		out[k] = v.AsString()
	}
	return out
}

// kind is the span kind as Jaeger's span.kind tag spells it (lower case), "" when unspecified.
func kind(k ptrace.SpanKind) string {
	if k == ptrace.SpanKindUnspecified {
		return ""
	}
	return strings.ToLower(k.String())
}

// SortEvents puts events in time order (stable: events at one instant keep the store's order).
func SortEvents(es []models.SpanEvent) {
	slices.SortStableFunc(es, func(a, b models.SpanEvent) int { return a.Time.Compare(b.Time) })
}
