package diagnose

import (
	"fmt"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// engineEvidence is what the engine's metrics said around span spanID: every figure it has, in
// the engine's order, each with its metric and window.
func engineEvidence(spans []correlate.EngineSpan, t *models.Trace, spanID string) []string {
	var out []string
	for _, e := range spans {
		if t.Spans[e.Span].SpanID != spanID || e.Err != nil {
			continue
		}
		for _, f := range e.Figures.Figures {
			if f.Name == correlate.FigurePreemptions {
				out = append(out, fmt.Sprintf("the engine preempted %.0f request(s) in the %s around it (%s, Prometheus)", f.Max, seconds(f.End.Sub(f.Start)), f.Metric))
				continue
			}
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
func queueGaugeCaveat(spans []correlate.EngineSpan, t *models.Trace, spanID string, queued time.Duration) string {
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

// CausePreempted is a request's inference time beyond the model's own while its engine
// preempted requests for KV-cache space.
const CausePreempted = PartPreempted

// preemptedCause names the engine that preempted the request, with the span's inference and
// model times, the engine's preemptions and KV cache around it, and the one remedy.
func preemptedCause(c Cause, p BreakdownPart, row *correlate.SpanRow, op string) Cause {
	c.Kind = CausePreempted
	trtllm := false
	c.Title = "preempted for KV-cache space in " + p.Service + op
	c.Evidence = []string{fmt.Sprintf("%s of inference beyond the model's own time (%s)", p.Duration.Round(time.Millisecond), p.Source)}
	if row != nil {
		s := *row.Span
		prefill, decode := attrSeconds(s, correlate.AttrTimeInPrefill), attrSeconds(s, correlate.AttrTimeInDecode)
		if pr, ok := preemptedTime(s, row, prefill, decode); ok {
			c.Evidence = append(c.Evidence, fmt.Sprintf("inference %s (prefill and decode), the model's own %s (%s)",
				pr.inference.Round(time.Millisecond), pr.model.Round(time.Millisecond), pr.modelFrom))
		}
		if fig := engineFigure0(row.Engine, correlate.FigurePreemptions); fig != nil {
			c.Evidence = append(c.Evidence, fmt.Sprintf("the engine preempted %.0f request(s) in the %s around it (%s, Prometheus)", fig.Max, seconds(fig.End.Sub(fig.Start)), fig.Metric))
		} else if fig := engineFigure0(row.Engine, correlate.FigurePaused); fig != nil {
			trtllm = true
			c.Evidence = append(c.Evidence, fmt.Sprintf("the engine held up to %.0f request(s) paused for KV-cache blocks in the %s around it (%s, Prometheus)", fig.Max, seconds(fig.End.Sub(fig.Start)), fig.Metric))
		}
		if fig := engineFigure0(row.Engine, correlate.FigureKVCache); fig != nil {
			c.Evidence = append(c.Evidence, fmt.Sprintf("KV cache usage up to %.0f%% (%s, Prometheus)", 100*fig.Max, fig.Metric))
		}
		if tokens := s.Attributes[correlate.AttrCompletionTokens]; tokens != "" {
			c.Evidence = append(c.Evidence, fmt.Sprintf("%s output token(s) (%s)", tokens, correlate.AttrCompletionTokens))
		}
	}
	c.Caveat = "the preemption count is the engine's over the window, not this request's: that this request was among them is read from its inference outlasting its model time"
	c.Action = "the engine ran out of KV-cache blocks and preempted running requests (recomputed or swapped later): give the KV cache headroom with a higher --gpu-memory-utilization, fewer concurrent sequences (--max-num-seqs), chunked prefill, prefix caching, or a larger GPU or tensor parallelism"
	if trtllm {
		c.Action = "the engine ran out of KV-cache blocks and paused running requests: give the KV cache headroom with a higher kv_cache_config.free_gpu_memory_fraction, a lower max_batch_size or max_num_tokens, KV-cache block reuse, the GUARANTEED_NO_EVICT scheduler policy, or a larger GPU or tensor parallelism"
	}
	return c
}
