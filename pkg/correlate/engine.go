package correlate

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Engines is what the trace join asks of a serving engine's metrics (prometheus.Client answers
// it): the engine's queue and KV cache around a span's time.
type Engines interface {
	EngineFigures(ctx context.Context, q models.EngineQuery) (models.EngineFigures, error)
}

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

// askEngines reads each engine span's figures in parallel; each keeps its own error.
func askEngines(ctx context.Context, engines Engines, spans []EngineSpan) {
	fanOut(len(spans), func(i int) {
		spans[i].Figures, spans[i].Err = engines.EngineFigures(ctx, spans[i].Query)
	})
}

// engineNotices say what the engines' metrics could not tell.
func engineNotices(t *models.Trace, spans []EngineSpan, more int, err error) []Notice {
	if len(spans) == 0 {
		return nil
	}
	if err != nil {
		return []Notice{{Warning, fmt.Sprintf("No serving-engine metrics for the %d engine span(s): %v", len(spans), err)}}
	}
	var out []Notice
	for _, e := range spans {
		s := t.Spans[e.Span]
		switch {
		case e.Err != nil:
			out = append(out, Notice{Warning, fmt.Sprintf("No serving-engine metrics around %s %s: %v", s.Service, s.Operation, e.Err)})
		case len(e.Figures.Missing) > 0:
			out = append(out, Notice{Info, fmt.Sprintf("Prometheus holds no %s for model %q around %s %s: the engine's figures there are incomplete (are its /metrics scraped?).",
				strings.Join(e.Figures.Missing, ", "), e.Query.Model, s.Service, s.Operation)})
		}
	}
	if more > 0 {
		out = append(out, Notice{Info, fmt.Sprintf("Serving-engine metrics were read around the %d longest engine spans; %d more were left out.", MaxEngineSpans, more)})
	}
	return out
}

// engineEvidence is what the engine's metrics said around span spanID: every figure it has, in
// the engine's order, each with its metric and window.
func engineEvidence(spans []EngineSpan, t *models.Trace, spanID string) []string {
	var out []string
	for _, e := range spans {
		if t.Spans[e.Span].SpanID != spanID || e.Err != nil {
			continue
		}
		for _, f := range e.Figures.Figures {
			if f.Unit == "s" { // a ratio of counters: every request of the window, not this one's
				out = append(out, fmt.Sprintf("the engine's requests in the %s around it: %s %s on average (%s, Prometheus; its scrapes may not hold this request yet)",
					seconds(f.End.Sub(f.Start)), f.Name, engineValue(f, f.Mean), f.Metric))
				continue
			}
			out = append(out, fmt.Sprintf("%s up to %s, mean %s in the %s around it (%s, Prometheus, %d sample(s) of %d series)",
				f.Name, engineValue(f, f.Max), engineValue(f, f.Mean), seconds(f.End.Sub(f.Start)), f.Metric, f.Samples, f.Series))
		}
	}
	return out
}

func engineValue(f models.EngineFigure, v float64) string {
	switch f.Unit {
	case "percentunit":
		return fmt.Sprintf("%.0f%%", 100*v)
	case "s":
		return time.Duration(v * float64(time.Second)).Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%.1f", v)
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.0f s", d.Seconds()) }

// queueGaugeCaveat says when the engine's queue gauge never showed a waiting request although
// the span queued: the wait fell between scrapes.
func queueGaugeCaveat(spans []EngineSpan, t *models.Trace, spanID string, queued time.Duration) string {
	for _, e := range spans {
		if t.Spans[e.Span].SpanID != spanID || e.Err != nil {
			continue
		}
		for _, f := range e.Figures.Figures {
			if (f.Metric == "vllm:num_requests_waiting" || f.Metric == "nv_inference_pending_request_count") && f.Max == 0 && f.Samples > 0 && f.Series > 0 {
				every := f.End.Sub(f.Start) / time.Duration(max(1, f.Samples/f.Series))
				return fmt.Sprintf("%s showed no waiting request in its %d sample(s) (one about every %s): this %s wait fell between its scrapes",
					f.Metric, f.Samples, every.Round(100*time.Millisecond), queued.Round(time.Millisecond))
			}
		}
	}
	return ""
}
