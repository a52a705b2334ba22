package correlate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// Serving-engine span attributes, as vLLM's tracing names them (vllm/tracing.py, SpanAttributes),
// each a duration in seconds on the engine's request span (llm_request).
const (
	AttrTimeInQueue    = "gen_ai.latency.time_in_queue"
	AttrTimeToFirst    = "gen_ai.latency.time_to_first_token"
	AttrTimeInPrefill  = "gen_ai.latency.time_in_model_prefill"
	AttrTimeInDecode   = "gen_ai.latency.time_in_model_decode"
	AttrTimeInSchedule = "gen_ai.latency.time_in_scheduler"
	AttrE2E            = "gen_ai.latency.e2e"
	// With --collect-detailed-traces: the model's own time for the request, the forward pass
	// across workers, and execute (forward, cross-worker sync, sampling); and the request's
	// whole inference (prefill and decode).
	AttrTimeInForward   = "gen_ai.latency.time_in_model_forward"
	AttrTimeInExecute   = "gen_ai.latency.time_in_model_execute"
	AttrTimeInInference = "gen_ai.latency.time_in_model_inference"
	// Token counts (OpenTelemetry's gen_ai conventions as vLLM writes them).
	AttrCompletionTokens = "gen_ai.usage.completion_tokens"
	AttrPromptTokens     = "gen_ai.usage.prompt_tokens"
)

// Triton's request timestamps, as its OpenTelemetry trace mode records them (span events of the
// model's span and of its "compute" child; Triton's docs, trace.md, and qa/L0_trace).
const (
	EventQueueStart   = "QUEUE_START"
	EventComputeStart = "COMPUTE_START"
	EventComputeEnd   = "COMPUTE_END"
)

// Attributes naming the model a serving engine ran: vLLM's request span (vllm/tracing.py) and
// Triton's model span (trace.md: model_name, model_version, request_id).
const (
	AttrResponseModel = "gen_ai.response.model"
	AttrTritonModel   = "model_name"
)

// MaxEngineSpans bounds the engine spans whose metrics one trace join reads (an agent's trace may
// call a model dozens of times; the slowest calls matter).
const MaxEngineSpans = 8

// EngineSpan is a span a serving engine recorded, with what the engine's metrics said around it.
type EngineSpan struct {
	Span    int // index in the trace
	Query   models.EngineQuery
	Figures models.EngineFigures
	Err     error
}

// engineSpans finds the spans a serving engine recorded, longest first, at most MaxEngineSpans:
// vLLM's (a gen_ai.latency.* figure) and Triton's model spans (a QUEUE_START event).
func engineSpans(t *models.Trace) (out []EngineSpan, more int) {
	for i, s := range t.Spans {
		q := models.EngineQuery{Start: s.Start, End: s.Start.Add(s.Duration)}
		_, queued := s.Event(EventQueueStart)
		switch {
		case s.Attributes[AttrTimeInQueue] != "" || s.Attributes[AttrE2E] != "":
			q.Engine, q.Model = models.EngineVLLM, s.Attributes[AttrResponseModel]
		case queued:
			q.Engine, q.Model = models.EngineTriton, s.Attributes[AttrTritonModel]
			if q.Model == "" {
				q.Model = s.Operation // Triton names the model's span after the model
			}
		default:
			continue
		}
		out = append(out, EngineSpan{Span: i, Query: q})
	}
	slices.SortStableFunc(out, func(a, b EngineSpan) int { return cmp.Compare(t.Spans[b.Span].Duration, t.Spans[a.Span].Duration) })
	if len(out) > MaxEngineSpans {
		return out[:MaxEngineSpans], len(out) - MaxEngineSpans
	}
	return out, 0
}

// attachEngines gives each engine span's row its engine's figures (the breakdown splits a
// preempted request's inference time with them).
func attachEngines(rows []SpanRow, t *models.Trace, spans []EngineSpan) {
	for _, e := range spans {
		if e.Err != nil {
			continue
		}
		id := t.Spans[e.Span].SpanID
		for i := range rows {
			if rows[i].Span.SpanID == id {
				f := e.Figures
				rows[i].Engine = &f
			}
		}
	}
}

// Preemptions is how many requests the engine preempted in the window its figures were read
// over, the metric that says so, and whether its metrics say: vLLM's and SGLang's counter, else
// the most requests TensorRT-LLM held paused at once.
func Preemptions(f *models.EngineFigures) (n float64, metric string, known bool) {
	if f == nil {
		return 0, "", false
	}
	for _, name := range []string{FigurePreemptions, FigurePaused} {
		for _, fig := range f.Figures {
			if fig.Name == name {
				return fig.Max, fig.Metric, true
			}
		}
	}
	return 0, "", false
}

// Engine figure names the join and the diagnosis read (prometheus.Client's names).
const (
	FigurePreemptions = "preemptions"
	FigurePaused      = "paused requests" // TensorRT-LLM's preempted requests, a gauge
	FigureTPOT        = "time per output token"
	FigureKVCache     = "KV cache usage"
)

// askEngines reads each engine span's figures in parallel; each keeps its own error.
func askEngines(ctx context.Context, engines Engines, spans []EngineSpan) {
	fanOut(len(spans), func(i int) {
		spans[i].Figures, spans[i].Err = engines.EngineFigures(ctx, spans[i].Query)
	})
}

// engineNotices say what the engines' metrics could not tell.
func engineNotices(t *models.Trace, spans []EngineSpan, more int, err error) notices.List {
	if len(spans) == 0 {
		return nil
	}
	if err != nil {
		return notices.List{{Severity: notices.Warning, Text: fmt.Sprintf("No serving-engine metrics for the %d engine span(s): %v", len(spans), err)}}
	}
	var out notices.List
	for _, e := range spans {
		s := t.Spans[e.Span]
		switch {
		case e.Err != nil:
			out = append(out, notices.Notice{Severity: notices.Warning, Text: fmt.Sprintf("No serving-engine metrics around %s %s: %v", s.Service, s.Operation, e.Err)})
		case len(e.Figures.Missing) > 0:
			out = append(out, notices.Notice{Severity: notices.Info, Text: fmt.Sprintf("Prometheus holds no %s for model %q around %s %s: the engine's figures there are incomplete (are its /metrics scraped?).",
				strings.Join(e.Figures.Missing, ", "), e.Query.Model, s.Service, s.Operation)})
		}
	}
	if more > 0 {
		out = append(out, notices.Notice{Severity: notices.Info, Text: fmt.Sprintf("Serving-engine metrics were read around the %d longest engine spans; %d more were left out.", MaxEngineSpans, more)})
	}
	return out
}

// ProfilerSampleInterval is how often the profilers the plugin reads sample the CPU (100 Hz, the
// default of pyroscope-go, pyroscope-java and py-spy): the CPU a span profile shows is about
// this many samples' worth.
const ProfilerSampleInterval = 10 * time.Millisecond
