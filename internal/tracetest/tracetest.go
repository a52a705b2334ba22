// Package tracetest builds the hand-made traces, profiles and GPU series the join's tests
// (pkg/correlate) and the diagnosis' tests (pkg/diagnose) read, so both describe a request the
// same way.
package tracetest

import (
	"fmt"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// T0 is the start of every hand-made request.
var T0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// TraceID is the hand-made requests' trace ID.
const TraceID = "4bf92f3577b34da6a3ce929d0e0e4736"

// Span is a span of service running op from startMs to startMs+durMs after T0, on host
// gpu-node-1 (the demo's host.name).
func Span(id, parent, service, op string, startMs, durMs int) models.Span {
	return models.Span{
		TraceID: TraceID, SpanID: id, ParentSpanID: parent, Service: service, Operation: op,
		Start: T0.Add(ms(startMs)), Duration: ms(durMs),
		Attributes: map[string]string{}, Resource: map[string]string{"host.name": "gpu-node-1"},
	}
}

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// Tree builds a profile from "a;b;c value" stacks, root first.
func Tree(stacks ...string) *flamegraph.Node {
	root := flamegraph.New()
	for _, st := range stacks {
		path, val, _ := strings.Cut(st, " ")
		var v int64
		fmt.Sscan(val, &v)
		leaf := &flamegraph.Node{Total: v, Self: v}
		names := strings.Split(path, ";")
		n := leaf
		n.Name = names[len(names)-1]
		for i := len(names) - 2; i >= 0; i-- {
			n = &flamegraph.Node{Name: names[i], Total: v, Children: []*flamegraph.Node{n}}
		}
		sub := flamegraph.New()
		sub.Total = v
		sub.Children = []*flamegraph.Node{n}
		root.Merge(sub)
	}
	return root
}

// DemoTrace is the demo's request: the backend's root with db_query and serialize_response, the
// detector's root with model.predict (gpu.index=0), the enrichment's root with enrich
// (gpu.index=1). The services' local roots carry pyroscope.profile.id.
func DemoTrace() *models.Trace {
	spans := []models.Span{
		Span("b000000000000001", "", "nemotron-backend", "GET /api/detect", 0, 500),
		Span("b000000000000002", "b000000000000001", "nemotron-backend", "db_query", 5, 300),
		Span("d000000000000001", "b000000000000001", "ai-detector", "GET /detect", 310, 80),
		Span("d000000000000002", "d000000000000001", "ai-detector", "model.predict", 312, 70),
		Span("e000000000000001", "b000000000000001", "ai-enrichment", "GET /enrich", 395, 70),
		Span("e000000000000002", "e000000000000001", "ai-enrichment", "enrich", 396, 65),
		Span("b000000000000003", "b000000000000001", "nemotron-backend", "serialize_response", 470, 25),
	}
	for _, i := range []int{0, 2, 4} {
		spans[i].Attributes[models.ProfileIDAttribute] = spans[i].SpanID
	}
	spans[3].Attributes["gpu.index"] = "0"
	spans[5].Attributes["gpu.index"] = "1"
	return &models.Trace{TraceID: spans[0].TraceID, Spans: spans}
}

// GPUSeries is one GPU with a reading every second from T0-2s to T0+3s: util rises 10 per
// second from utilAtT0 at T0, DRAM_ACTIVE 0.5, PCIe 1e9 + 2e9 bytes/s.
func GPUSeries(host, index string, utilAtT0 float64) classify.GPUSeries {
	s := classify.GPUSeries{GPU: classify.GPU{Host: host, Index: index, UUID: "GPU-" + index}}
	for sec := -2; sec <= 3; sec++ {
		f := classify.Missing()
		f.GPUUtil = utilAtT0 + 10*float64(sec)
		f.DRAMActive = 0.5
		f.PCIeTx, f.PCIeRx = 1e9, 2e9
		s.Samples = append(s.Samples, classify.Sample{Time: T0.Add(time.Duration(sec) * time.Second), Figures: f})
	}
	return s
}

// Triton's request timestamps (span events), as its OpenTelemetry trace mode records them.
const (
	EventQueueStart   = "QUEUE_START"
	EventComputeStart = "COMPUTE_START"
	EventComputeEnd   = "COMPUTE_END"
)

// TritonTrace is Triton's trace of one request: InferRequest, the model's span with
// QUEUE_START, and its compute span with COMPUTE_START and COMPUTE_END (ms after T0).
func TritonTrace(queueStart, computeStart, computeEnd int) *models.Trace {
	ev := func(name string, at int) models.SpanEvent { return models.SpanEvent{Name: name, Time: T0.Add(ms(at))} }
	root := Span("t1", "", "triton-inference-server", "InferRequest", 0, 1000)
	root.Kind = models.SpanKindServer
	model := Span("t2", "t1", "triton-inference-server", "simple", 10, 980)
	model.Events = []models.SpanEvent{ev("REQUEST_START", 10), ev(EventQueueStart, queueStart), ev("REQUEST_END", 990)}
	compute := Span("t3", "t2", "triton-inference-server", "compute", computeStart, computeEnd-computeStart)
	compute.Events = []models.SpanEvent{ev(EventComputeStart, computeStart), ev("COMPUTE_INPUT_END", computeStart+5), ev("COMPUTE_OUTPUT_START", computeEnd-5), ev(EventComputeEnd, computeEnd)}
	return &models.Trace{Spans: []models.Span{root, model, compute}}
}

// WaitingFigures are a vLLM engine's metrics around a request that queued: up to 3 requests
// waiting (1.5 on average) and its KV cache up to 93 % full, over 30 s.
func WaitingFigures() models.EngineFigures {
	w := T0
	return models.EngineFigures{
		Figures: []models.EngineFigure{
			{Name: "requests waiting", Metric: "vllm:num_requests_waiting", Unit: "short", Max: 3, Mean: 1.5, Samples: 30, Series: 1, Start: w, End: w.Add(30 * time.Second)},
			{Name: "KV cache usage", Metric: "vllm:kv_cache_usage_perc", Unit: "percentunit", Max: 0.93, Mean: 0.5, Samples: 30, Series: 1, Start: w, End: w.Add(30 * time.Second)},
		},
	}
}
