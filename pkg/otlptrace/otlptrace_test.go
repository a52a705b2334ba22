package otlptrace

import (
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// OTLP JSON as Jaeger's v3 API and Tempo's v2 trace API write it: hex IDs, nanoseconds as
// strings, the service on the resource, status, kind and events.
const oneSpan = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"ranker"}},{"key":"k8s.pod.name","value":{"stringValue":"ranker-0"}}]},
 "scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","parentSpanId":"a3ce929d0e0e4736","name":"score",
  "kind":2,"startTimeUnixNano":"1796450000000000000","endTimeUnixNano":"1796450000250000000",
  "attributes":[{"key":"gpu.index","value":{"intValue":"3"}}],
  "events":[{"timeUnixNano":"1796450000200000000","name":"late"},{"timeUnixNano":"1796450000100000000","name":"early"}],
  "status":{"code":2,"message":"CUDA out of memory"}}]}]}]}`

func TestSpansFromOTLPJSON(t *testing.T) {
	td, err := UnmarshalJSON([]byte(oneSpan))
	if err != nil {
		t.Fatal(err)
	}
	spans, err := Spans(td)
	if err != nil || len(spans) != 1 {
		t.Fatalf("spans %+v, %v", spans, err)
	}
	s := spans[0]
	if s.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || s.SpanID != "00f067aa0ba902b7" || s.ParentSpanID != "a3ce929d0e0e4736" ||
		s.Service != "ranker" || s.Operation != "score" || s.Kind != "server" || s.Duration != 250*time.Millisecond ||
		s.Attributes["gpu.index"] != "3" || s.Resource["k8s.pod.name"] != "ranker-0" || s.Status != models.StatusError || s.StatusMessage != "CUDA out of memory" {
		t.Errorf("span %+v", s)
	}
	if len(s.Events) != 2 || s.Events[0].Name != "early" {
		t.Errorf("events not in time order: %+v", s.Events)
	}
}

func TestSpansNameWhatIsWrong(t *testing.T) {
	for in, want := range map[string]string{
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"x"}]}]}]}`: `a span ("x") without traceId or spanId`,
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"x","startTimeUnixNano":"20","endTimeUnixNano":"10"}]}]}]}`: `a span (00f067aa0ba902b7) that ends before it starts`,
	} {
		td, err := UnmarshalJSON([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Spans(td); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", in, err, want)
		}
	}
	if _, err := UnmarshalJSON([]byte(`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz"}]}]}]}`)); err == nil {
		t.Error("a trace ID that is not hex was read")
	}
}
