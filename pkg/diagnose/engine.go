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
