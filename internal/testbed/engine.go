package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/sync/errgroup"
)

// The demo's engine queue, as the traffic generator makes it (cmd/hsi-demo/traffic.go): a burst
// of long answers sent straight to the engine fills its two slots and its queue, so the backend's
// next request waits about one long answer (100 tokens × 8 ms) in the engine's queue.
const (
	burstRequests     = 3   // the engine's two slots, and one more waiting
	burstTokens       = 100 // about 0.8 s of decode each
	burstPromptTokens = 256 // the backend's own prompt size
	// burstLead lets the burst reach the engine before the backend's request does.
	burstLead = 50 * time.Millisecond
)

// QueuedRequest sends the demo a request that waits in the engine's queue, as the traffic
// generator's queue step does: the burst to e.EngineURL, then, once the engine's /metrics shows
// both slots running and a request waiting (at least 50 ms later), GET /api/detect?slow=queue on
// the backend (which changes nothing in the backend itself), then waits for the burst to be
// answered, so that the engine is free again when it returns. It returns the request's trace ID.
func QueuedRequest(ctx context.Context, e Endpoints) (traceID string, err error) {
	if e.EngineURL == "" {
		return "", errors.New("the test bed runs no engine (HSI_TESTBED_ENGINE_URL is empty): no queue to wait in")
	}
	if e.DemoURL == "" {
		return "", errors.New("the test bed runs no demo (HSI_TESTBED_DEMO_URL is empty)")
	}
	var burst errgroup.Group
	for range burstRequests {
		burst.Go(func() error { return completion(ctx, e.EngineURL, burstPromptTokens, burstTokens) })
	}
	// The burst fills both slots and one waits, unless the bed's own traffic holds the engine:
	// then the backend's request waits behind that as well.
	waitForEngine(ctx, e.EngineURL, func(g engineGauges) bool { return g.running >= 2 && g.waiting >= 1 })
	traceID, reqErr := getTraceID(ctx, e.DemoURL+"/api/detect?slow=queue")
	if err := burst.Wait(); err != nil {
		return "", fmt.Errorf("the burst that fills the engine: %w", err)
	}
	return traceID, reqErr
}

// The demo's KV-cache preemption, as the traffic generator's preempt step makes it: one prompt
// that leaves the engine's 4096-token KV cache 4 tokens of room beside the backend's 256-token
// prompt, answered with 100 tokens, so the backend's request, the last to arrive, is preempted
// after 4 tokens until that answer is done (about 0.4 s of prefill and 0.8 s of decode).
const (
	preemptPromptTokens = engineKVTokens - burstPromptTokens - 4
	preemptTokens       = 100
)

// PreemptedRequest sends the demo a request that the engine preempts for KV-cache space, as the
// traffic generator's preempt step does: the KV-filling request to e.EngineURL, then, once the
// engine's /metrics shows its prompt in the KV cache (at least 50 ms later), GET
// /api/detect?slow=preempt on the backend, then waits for the filling request's answer. It
// returns the request's trace ID.
func PreemptedRequest(ctx context.Context, e Endpoints) (traceID string, err error) {
	if e.EngineURL == "" || e.DemoURL == "" {
		return "", errors.New("the test bed runs no demo engine (HSI_TESTBED_ENGINE_URL, HSI_TESTBED_DEMO_URL): no KV cache to fill")
	}
	var fill errgroup.Group
	fill.Go(func() error { return completion(ctx, e.EngineURL, preemptPromptTokens, preemptTokens) })
	// The filling request may wait for a request of the bed's own traffic to leave the cache:
	// the backend's request must come after it is in, or it would run first, in the room.
	waitForEngine(ctx, e.EngineURL, func(g engineGauges) bool { return g.kvUsage*engineKVTokens >= preemptPromptTokens })
	traceID, reqErr := getTraceID(ctx, e.DemoURL+"/api/detect?slow=preempt")
	if err := fill.Wait(); err != nil {
		return "", fmt.Errorf("the request that fills the engine's KV cache: %w", err)
	}
	return traceID, reqErr
}

// engineGauges are the engine's vLLM gauges, as its /metrics shows them.
type engineGauges struct {
	running, waiting, kvUsage float64
}

// engineKVTokens is the demo engine's KV cache, in tokens (cmd/hsi-demo's engineKVTokens).
const engineKVTokens = 4096

// waitForEngine reads the engine's gauges until ready says so: at least burstLead (the request
// that fills the engine must reach it first), at most engineWait, after which the scenario goes
// on and the test sees what happened.
func waitForEngine(ctx context.Context, engineURL string, ready func(engineGauges) bool) {
	ctx, cancel := context.WithTimeout(ctx, engineWait)
	defer cancel()
	select {
	case <-ctx.Done():
		return
	case <-time.After(burstLead):
	}
	for {
		if g, err := readEngineGauges(ctx, engineURL); err == nil && ready(g) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// engineWait bounds the wait for the engine to be as a scenario needs it: the bed's own requests
// hold it for about a second at most.
const engineWait = 5 * time.Second

func readEngineGauges(ctx context.Context, engineURL string) (engineGauges, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, engineURL+"/metrics", nil)
	if err != nil {
		return engineGauges{}, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return engineGauges{}, err
	}
	defer res.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		return engineGauges{}, fmt.Errorf("the engine's /metrics: %w", err)
	}
	gauge := func(name string) float64 {
		if f := families[name]; f != nil && len(f.GetMetric()) > 0 {
			return f.GetMetric()[0].GetGauge().GetValue()
		}
		return 0
	}
	return engineGauges{
		running: gauge("vllm:num_requests_running"),
		waiting: gauge("vllm:num_requests_waiting"),
		kvUsage: gauge("vllm:kv_cache_usage_perc"),
	}, nil
}

// completion asks the engine for maxTokens tokens, as the demo's backend does.
func completion(ctx context.Context, engineURL string, promptTokens, maxTokens int) error {
	body, _ := json.Marshal(map[string]any{
		"model": "nemotron-mini", "prompt": "Describe the detections.", "max_tokens": maxTokens, "prompt_tokens": promptTokens,
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, engineURL+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", engineURL, res.Status)
	}
	return nil
}

// getTraceID sends GET url to the demo and returns the trace ID it answers with.
func getTraceID(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("the demo's request: %w", err)
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	id := res.Header.Get("X-Trace-Id")
	if res.StatusCode != http.StatusOK || len(id) != 32 {
		return "", fmt.Errorf("the demo answered %s with trace ID %q", res.Status, id)
	}
	return id, nil
}

// One inference request as NVIDIA Triton's OpenTelemetry trace mode records it (Triton's
// docs/user_guide/trace.md, qa/L0_trace/opentelemetry_unittest.py): a root span InferRequest, a
// span named after the model with the request's timestamps as events, and its "compute" child
// with the compute timestamps. Times are offsets from the request's start.
const (
	TritonService = "triton-inference-server" // Triton's default service.name
	TritonModel   = "densenet_onnx"
	TritonVersion = "1"
	// TritonQueue is the model span's QUEUE_START to the compute span's COMPUTE_START.
	TritonQueue = 600 * time.Millisecond
	// TritonCompute is the compute span's COMPUTE_START to COMPUTE_END.
	TritonCompute = 290 * time.Millisecond
	// TritonDuration is the root span's duration, the request's.
	TritonDuration = time.Second
)

// TritonEvent is one of Triton's timestamps, At after the request's start.
type TritonEvent struct {
	Name string
	At   time.Duration
}

// TritonSpan is one span of the Triton request, from Start to End after the request's start.
type TritonSpan struct {
	Name       string
	Kind       trace.SpanKind
	Start, End time.Duration
	Attributes []attribute.KeyValue
	Events     []TritonEvent // in time order
}

// TritonSpans are the request's spans, parent before child (each the previous one's child).
var TritonSpans = []TritonSpan{
	{Name: "InferRequest", Kind: trace.SpanKindServer, Start: 0, End: TritonDuration, Events: []TritonEvent{
		{"HTTP_RECV_START", 0}, {"HTTP_RECV_END", 2 * time.Millisecond}, {"INFER_RESPONSE_COMPLETE", 996 * time.Millisecond},
		{"HTTP_SEND_START", 997 * time.Millisecond}, {"HTTP_SEND_END", TritonDuration},
	}},
	{Name: TritonModel, Kind: trace.SpanKindInternal, Start: 5 * time.Millisecond, End: 995 * time.Millisecond,
		Attributes: []attribute.KeyValue{
			attribute.String("model_name", TritonModel), attribute.String("model_version", TritonVersion), attribute.String("request_id", "hsi-test-1"),
		},
		Events: []TritonEvent{
			{"REQUEST_START", 5 * time.Millisecond}, {"QUEUE_START", 10 * time.Millisecond}, {"REQUEST_END", 995 * time.Millisecond},
		}},
	{Name: "compute", Kind: trace.SpanKindInternal, Start: 610 * time.Millisecond, End: 900 * time.Millisecond, Events: []TritonEvent{
		{"COMPUTE_START", 610 * time.Millisecond}, {"COMPUTE_INPUT_END", 620 * time.Millisecond},
		{"COMPUTE_OUTPUT_START", 880 * time.Millisecond}, {"COMPUTE_END", 900 * time.Millisecond},
	}},
}

// SendTritonTrace exports one Triton request (TritonSpans) starting at start through OTLP gRPC
// (insecure) to otlpEndpoint (host:port) and returns its trace ID. start is truncated to the
// microsecond, the resolution of Jaeger's v1 API, so that every API gives the times exactly.
func SendTritonTrace(ctx context.Context, otlpEndpoint string, start time.Time) (traceID string, err error) {
	if otlpEndpoint == "" {
		return "", errors.New("no OTLP endpoint (HSI_TESTBED_JAEGER_OTLP is empty)")
	}
	start = start.Truncate(time.Microsecond)
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(otlpEndpoint), otlptracegrpc.WithInsecure())
	if err != nil {
		return "", err
	}
	// A provider of its own: the spans are Triton's, not the test binary's.
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", TritonService))),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(exp),
	)
	tracer := tp.Tracer("triton-server")
	spanCtx := ctx
	var spans []trace.Span
	for _, s := range TritonSpans {
		var sp trace.Span
		spanCtx, sp = tracer.Start(spanCtx, s.Name, trace.WithSpanKind(s.Kind), trace.WithTimestamp(start.Add(s.Start)),
			trace.WithAttributes(s.Attributes...))
		for _, ev := range s.Events {
			sp.AddEvent(ev.Name, trace.WithTimestamp(start.Add(ev.At)))
		}
		spans = append(spans, sp)
	}
	traceID = spans[0].SpanContext().TraceID().String()
	for i := len(spans) - 1; i >= 0; i-- {
		spans[i].End(trace.WithTimestamp(start.Add(TritonSpans[i].End)))
	}
	// ForceFlush reports the export's failure; Shutdown alone would only log it.
	err = tp.ForceFlush(ctx)
	if shutdownErr := tp.Shutdown(ctx); err == nil {
		err = shutdownErr
	}
	if err != nil {
		return "", fmt.Errorf("exporting the Triton trace to %s: %w", otlpEndpoint, err)
	}
	return traceID, nil
}
