package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

const (
	slowTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	cpuType   = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
)

// slowRequest is the trace query's answer for a request slow in its database step: the backend
// (profiled, 300 ms of CPU in db_query), the detector (profiled) and the LLM engine (spans
// only). detectorUploaded says whether the detector's profiler has uploaded the request yet.
func slowRequest(t *testing.T, detectorUploaded bool) []*data.Frame {
	return slowRequestWith(t, detectorUploaded, 300e6)
}

// slowRequestWith is slowRequest with backendUploaded ns of the backend's CPU uploaded so far.
func slowRequestWith(t *testing.T, detectorUploaded bool, backendUploaded int64) []*data.Frame {
	start := time.Date(2026, 11, 24, 2, 4, 55, 0, time.UTC)
	span := func(id, service, op string, offset, d time.Duration) models.Span {
		return models.Span{TraceID: slowTrace, SpanID: id, Service: service, Operation: op, Start: start.Add(offset), Duration: d}
	}
	cpu := func(ns int64) *int64 { return &ns }
	rows := []correlate.SpanRow{
		{Span: new(span("b1", "nemotron-backend", "GET /api/detect", 0, 437*time.Millisecond)), Depth: 0, ProfileID: "b1", CPU: cpu(300e6),
			HotFunction: "main.dbQuery", HotSelf: 250e6, Self: 2 * time.Millisecond},
		{Span: new(span("b2", "nemotron-backend", "db_query", 0, 300*time.Millisecond)), Depth: 1, Self: 300 * time.Millisecond},
		{Span: new(span("d1", "ai-detector", "GET /detect", 300*time.Millisecond, 60*time.Millisecond)), Depth: 1, ProfileID: "d1"},
		{Span: new(span("l1", "nemotron-llm", "llm_request", 360*time.Millisecond, 70*time.Millisecond)), Depth: 1, Self: 70 * time.Millisecond},
	}
	request := &flamegraph.Node{Name: flamegraph.RootName, Total: backendUploaded, Children: []*flamegraph.Node{
		{Name: "nemotron-backend", Total: backendUploaded, Self: backendUploaded}}}
	if detectorUploaded {
		rows[2].CPU, rows[2].HotFunction, rows[2].HotSelf = cpu(40e6), "math.sin", 30e6
		request.Total += 40e6
		request.Children = append(request.Children, &flamegraph.Node{Name: "ai-detector", Total: 40e6,
			Children: []*flamegraph.Node{{Name: "math.sin", Total: 40e6, Self: 40e6}}})
	}
	causes := []diagnose.Cause{
		{Kind: diagnose.CauseCPU, Title: "CPU in nemotron-backend (db_query)", Service: "nemotron-backend", Explains: 300 * time.Millisecond,
			Share: 0.69, Evidence: []string{"span profiles saw 300ms of CPU in nemotron-backend on the critical path",
				"hot function main.dbQuery: 250ms of CPU self time in span GET /api/detect"},
			Action: "CPU work in the service: the hot function is where to start", HotFunction: "main.dbQuery"},
		{Kind: diagnose.CauseModel, Title: "the model in nemotron-llm (llm_request)", Service: "nemotron-llm", Explains: 70 * time.Millisecond, Share: 0.16},
	}
	lever := &correlate.Lever{Service: "nemotron-backend", Name: "host-side work", Action: "the GPU idles and requests do not queue: fix the host side"}
	parts := []diagnose.BreakdownPart{
		{Kind: diagnose.PartCPU, Service: "nemotron-backend", Duration: 300 * time.Millisecond, Source: "span profiles (CPU)"},
		{Kind: diagnose.PartDecode, Service: "nemotron-llm", Duration: 137 * time.Millisecond, Source: "span attribute gen_ai.latency.time_in_model_decode"},
	}
	return roundTrip(t,
		frames.TraceSpans(slowTrace, rows, cpuType, "memory:alloc_space:bytes:space:bytes", frames.TraceLinks{}),
		frames.TraceBreakdown(parts, 437*time.Millisecond),
		frames.TraceVerdict(slowTrace, causes, lever, cpuType, frames.TraceLinks{}),
		frames.FlameGraph(request, cpuType),
	)
}

// fakeBackend answers the trace query with the detector's profile missing for the first
// partialAnswers calls, and the per-service profile query with one graph per service.
type fakeBackend struct {
	t              *testing.T
	partialAnswers int
	traceQueries   int
	// backendUploads, when set, is the backend's CPU uploaded by each trace query in turn (an
	// upload in the middle of the request leaves part of it for the next).
	backendUploads []int64
}

func (b *fakeBackend) ask(_ context.Context, model map[string]any) ([]*data.Frame, error) {
	if model["traceId"] != slowTrace {
		b.t.Fatalf("query for another trace: %v", model)
	}
	if model["queryType"] == "trace" {
		b.traceQueries++
		if len(b.backendUploads) > 0 {
			i := min(b.traceQueries, len(b.backendUploads)) - 1
			return slowRequestWith(b.t, true, b.backendUploads[i]), nil
		}
		return slowRequest(b.t, b.traceQueries > b.partialAnswers), nil
	}
	if model["queryType"] != "profile" || model["perService"] != true {
		b.t.Fatalf("unexpected query %v", model)
	}
	detector := &flamegraph.Node{Name: flamegraph.RootName, Total: 40e6, Children: []*flamegraph.Node{{Name: "math.sin", Total: 40e6, Self: 40e6}}}
	return roundTrip(b.t,
		frames.FlameGraph(backendCPU(), cpuType),
		frames.FlameGraphTree("ai-detector", detector, cpuType),
		frames.FlameGraphTree("nemotron-backend", backendCPU(), cpuType),
	), nil
}

func TestARequestIsExplainedOnceEveryProfiledServiceHasSamples(t *testing.T) {
	b := &fakeBackend{t: t, partialAnswers: 2}
	var out, progress bytes.Buffer
	o := requestOptions{traceID: slowTrace, wait: time.Minute, every: time.Millisecond, rows: 20, width: 120}
	if err := runRequest(context.Background(), &out, &progress, b.ask, o); err != nil {
		t.Fatal(err)
	}
	// Twice without the detector's samples, then twice with the same samples (nothing more to come).
	if b.traceQueries != 4 {
		t.Errorf("asked the trace query %d times, want 4", b.traceQueries)
	}
	if !strings.Contains(progress.String(), "waiting up to 60 s for the span profiles of ai-detector") {
		t.Errorf("progress: %q", progress.String())
	}
	text := out.String()
	checkWidth(t, text, 120)
	const answer = "Request 4bf92f35… took 437 ms: CPU in nemotron-backend (db_query), 300 ms (69.0%) — hot function main.dbQuery"
	lines := strings.Split(text, "\n")
	first := ""
	for _, l := range lines {
		if strings.HasPrefix(l, "Request ") {
			first = l
			break
		}
	}
	if first != answer {
		t.Errorf("answer line %q, want %q\n%s", first, answer, text)
	}
	for _, want := range []string{
		"every profiled service of the request has samples (ai-detector, nemotron-backend); nemotron-llm sends spans without profiles",
		"Runbook 002 lever for nemotron-backend over the panel's range: host-side work",
		"fix the host side",
		"Where the 437 ms went",
		"decode in nemotron-llm",
		`flame graph "ai-detector": 40 ms in total`,
		`flame graph "nemotron-backend": 300 ms in total`,
	} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), want) { // as read, whatever the wrapping
			t.Errorf("missing %q in\n%s", want, text)
		}
	}
	// The answer comes first, the flame graphs last; the whole-request graph is not repeated.
	if strings.Index(text, answer) > strings.Index(text, "Causes") || strings.Index(text, "Causes") > strings.Index(text, "flame graph") {
		t.Errorf("out of order:\n%s", text)
	}
	if strings.Contains(text, `flame graph "response"`) || strings.Contains(text, "Not complete") {
		t.Errorf("unexpected:\n%s", text)
	}
}

func TestARequestStillMissingProfilesSaysWhichAndWhenToAskAgain(t *testing.T) {
	b := &fakeBackend{t: t, partialAnswers: 1000}
	var out, progress bytes.Buffer
	o := requestOptions{traceID: slowTrace, wait: 0, every: time.Millisecond, rows: 20, width: 120}
	if err := runRequest(context.Background(), &out, &progress, b.ask, o); err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(out.String()), " ")
	for _, want := range []string{
		"Not complete: no span-profile samples yet for ai-detector after 0 s",
		"ask again in a minute",
		"Request 4bf92f35… took 437 ms",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("missing %q in\n%s", want, out.String())
		}
	}
	if strings.Index(text, "Not complete") > strings.Index(text, "Request 4bf92f35") {
		t.Errorf("the warning must come before the answer it qualifies:\n%s", out.String())
	}
}

func TestARequestWhoseTraceIsMissingFailsAfterTheWait(t *testing.T) {
	ask := func(context.Context, map[string]any) ([]*data.Frame, error) {
		return nil, &answerError{source: "downstream", message: "Jaeger: trace 4bf9 not found"}
	}
	var out, progress bytes.Buffer
	err := runRequest(context.Background(), &out, &progress, ask, requestOptions{traceID: slowTrace, wait: 0, every: time.Millisecond, rows: 20, width: 120})
	if err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("error %v, want the answer's", err)
	}
}

func TestARequestWithABadTraceIDFailsAtOnce(t *testing.T) {
	asked := false
	ask := func(context.Context, map[string]any) ([]*data.Frame, error) { asked = true; return nil, nil }
	var out, progress bytes.Buffer
	err := runRequest(context.Background(), &out, &progress, ask, requestOptions{traceID: "", wait: time.Hour, every: time.Millisecond, rows: 20, width: 120})
	if err == nil || asked {
		t.Errorf("an empty trace ID: error %v, asked %v", err, asked)
	}
}

func TestARequestAnsweredWithAnotherErrorFailsAtOnce(t *testing.T) {
	ask := func(context.Context, map[string]any) ([]*data.Frame, error) {
		return nil, &answerError{source: "downstream", message: "Prometheus: unreachable (dial tcp 127.0.0.1:9: connection refused)"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a retry would run into it
	defer cancel()
	var out, progress bytes.Buffer
	err := runRequest(ctx, &out, &progress, ask, requestOptions{traceID: slowTrace, wait: time.Hour, every: time.Millisecond, rows: 20, width: 120})
	if err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("error %v, want the answer's at once", err)
	}
}

func TestARequestWhoseProfileIsStillGrowingIsAskedAgain(t *testing.T) {
	b := &fakeBackend{t: t, backendUploads: []int64{120e6, 300e6, 300e6, 300e6}}
	var out, progress bytes.Buffer
	o := requestOptions{traceID: slowTrace, wait: time.Minute, every: time.Millisecond, rows: 20, width: 120}
	if err := runRequest(context.Background(), &out, &progress, b.ask, o); err != nil {
		t.Fatal(err)
	}
	// 120 ms, then 300 ms (the rest uploaded), then 300 ms again: settled.
	if b.traceQueries != 3 {
		t.Errorf("asked the trace query %d times, want 3", b.traceQueries)
	}
}
