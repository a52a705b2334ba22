package models

import (
	"fmt"
	"time"
)

// Serving engines whose own metrics explain a slow request: a long queue, a full KV cache.
const (
	EngineVLLM   = "vllm"
	EngineTriton = "triton"
)

// The shortest windows engine figures are read over. A gauge is scraped every 15–30 s, so a
// shorter window may hold no sample; an increase needs two scrapes.
const (
	EngineGaugeWindow = 30 * time.Second
	EngineRateWindow  = time.Minute
)

// EngineQuery asks for a serving engine's figures for one model over a window.
type EngineQuery struct {
	Engine     string // EngineVLLM ("vllm") or EngineTriton ("triton")
	Model      string // vLLM's model_name label / Triton's model label; "" = every model
	Start, End time.Time
}

// Validate says what is wrong with the query, naming the engines known.
func (q EngineQuery) Validate() error {
	if q.Engine != EngineVLLM && q.Engine != EngineTriton {
		return fmt.Errorf("unknown serving engine %q: want %q or %q", q.Engine, EngineVLLM, EngineTriton)
	}
	if q.Start.IsZero() || q.End.IsZero() || q.End.Before(q.Start) {
		return fmt.Errorf("the engine figures' window %s – %s is not a time range", q.Start.Format(time.RFC3339), q.End.Format(time.RFC3339))
	}
	return nil
}

// Window is the window figures are read over: the query's, in whole seconds, or, when that is
// shorter than least, the least seconds centred on it ("in the 30 s around the request").
func (q EngineQuery) Window(least time.Duration) (start, end time.Time) {
	d := q.End.Sub(q.Start)
	if d >= least {
		// Whole seconds, so that the PromQL range reads plainly; rounded up to cover the query.
		whole := d.Truncate(time.Second)
		if whole < d {
			whole += time.Second
		}
		return q.End.Add(-whole), q.End
	}
	centre := q.Start.Add(d / 2)
	start = centre.Add(-least / 2)
	return start, start.Add(least)
}

// EngineFigure is one figure of a serving engine over a window, with the PromQL it came from.
type EngineFigure struct {
	Name   string // in words: "requests waiting", "requests running", "KV cache usage", "pending requests", "queue time per request"
	Metric string // the metric read, e.g. "vllm:num_requests_waiting"
	Query  string // the PromQL sent (evidence: the user can paste it)
	Unit   string // Grafana unit: "short", "percentunit", "s"
	// Max and Mean are over every sample of every series for a gauge. For a ratio (queue time
	// per request) each series (replica) gives its own mean over the window: Max is the worst
	// series', Mean the average of the series' means, unweighted by their request counts.
	Max, Mean float64
	Samples   int // raw samples (gauges) the figures rest on; for rates, the number of series
	Series    int // how many series (replicas/engines) were read
	// Start and End are the window read: the query's, widened (EngineQuery.Window) to at least
	// EngineGaugeWindow for gauges and EngineRateWindow for ratios.
	Start, End time.Time
}

// EngineFigures are a serving engine's figures, in a fixed order, and the metrics it lacks.
type EngineFigures struct {
	Figures []EngineFigure
	Missing []string // metrics Prometheus holds no series of in the window (e.g. "vllm:kv_cache_usage_perc")
}
