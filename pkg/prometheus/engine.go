package prometheus

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// engineParallelQueries bounds the queries of one EngineFigures (two) or ContainerCPU (cAdvisor's
// five) call in flight at once: all of them, so that a slow Prometheus costs one timeout, not
// one per batch (the data source's connection limit per upstream still applies).
const engineParallelQueries = 8

// engineFigureSpec is one figure a serving engine exports: a gauge read as stored, or the mean
// queue time per request from two counters.
type engineFigureSpec struct {
	name, unit string
	// metric is the gauge read; for a ratio, the metric that names the figure.
	metric string
	// olderNames are the gauge's names in older versions of the engine, read in turn while the
	// names before have no series; alsoNames another engine's names for the same figure, read
	// last and never reported missing (that engine may simply not be in use).
	olderNames, alsoNames []string
	// num and den, for a ratio: increase(num) / increase(den) / divisor over the window; later
	// pairs in olderPairs are tried in turn while the ones before have no series.
	num, den   string
	olderPairs [][2]string
	divisor    float64
	// counter: the figure is the counter's increase over the window, summed over series
	// (replicas), with olderNames tried in turn.
	counter bool
	// optional: one engine's figure alone, never reported missing (the others do not have it).
	optional bool
}

func (s engineFigureSpec) ratio() bool { return s.num != "" }

// engineSpec is what an engine exports, as its documentation names it.
type engineSpec struct {
	modelLabel string
	figures    []engineFigureSpec
}

var engineSpecs = map[string]engineSpec{
	// https://docs.vllm.ai/en/latest/design/metrics.html: V1 adds the engine label; the KV cache
	// gauge was vllm:gpu_cache_usage_perc before V1.
	// SGLang's and TensorRT-LLM's metrics share vLLM's model_name label and write the same
	// gen_ai.* span attributes (SGLang's docs/references/production_metrics.md; TensorRT-LLM's
	// tensorrt_llm/metrics/collector.py, prefix trtllm_): they are read where vLLM's are absent.
	models.EngineVLLM: {modelLabel: "model_name", figures: []engineFigureSpec{
		{name: "requests waiting", unit: "short", metric: "vllm:num_requests_waiting", alsoNames: []string{"trtllm_num_requests_waiting"}},
		{name: "requests running", unit: "short", metric: "vllm:num_requests_running", alsoNames: []string{"trtllm_num_requests_running"}},
		// SGLang's KV pool usage; TensorRT-LLM's used ÷ max KV blocks.
		{name: "KV cache usage", unit: "percentunit", metric: "vllm:kv_cache_usage_perc", olderNames: []string{"vllm:gpu_cache_usage_perc"},
			alsoNames: []string{"sglang:token_usage", "trtllm_kv_cache_utilization"}},
		{name: "queue time per request", unit: "s", metric: "vllm:request_queue_time_seconds",
			num: "vllm:request_queue_time_seconds_sum", den: "vllm:request_queue_time_seconds_count", divisor: 1,
			olderPairs: [][2]string{{"trtllm_request_queue_time_seconds_sum", "trtllm_request_queue_time_seconds_count"}}},
		// Requests the scheduler preempted for KV-cache space (recomputed or swapped later);
		// SGLang calls them retracted.
		{name: "preemptions", unit: "short", metric: "vllm:num_preemptions_total", alsoNames: []string{"sglang:num_retracted_requests_total"}, counter: true},
		// TensorRT-LLM counts no preemptions: its in-flight batcher pauses requests for KV-cache
		// blocks (evicted, resumed later), a gauge per iteration.
		{name: "paused requests", unit: "short", metric: "trtllm_num_paused_requests", optional: true},
		// The engine's time per output token over its requests: a model's own decode pace.
		{name: "time per output token", unit: "s", metric: "vllm:time_per_output_token_seconds",
			num: "vllm:time_per_output_token_seconds_sum", den: "vllm:time_per_output_token_seconds_count", divisor: 1,
			olderPairs: [][2]string{{"vllm:inter_token_latency_seconds_sum", "vllm:inter_token_latency_seconds_count"},
				{"trtllm_time_per_output_token_seconds_sum", "trtllm_time_per_output_token_seconds_count"}}},
	}},
	// https://docs.nvidia.com/deeplearning/triton-inference-server/user-guide/docs/user_guide/metrics.html:
	// the queue duration is cumulative microseconds.
	models.EngineTriton: {modelLabel: "model", figures: []engineFigureSpec{
		{name: "pending requests", unit: "short", metric: "nv_inference_pending_request_count"},
		{name: "queue time per request", unit: "s", metric: "nv_inference_queue_duration_us",
			num: "nv_inference_queue_duration_us", den: "nv_inference_request_success", divisor: 1e6},
	}},
}

// engineAnswer is what one figure's queries found: the figure, or the metrics without series.
type engineAnswer struct {
	figure  *models.EngineFigure
	missing []string
}

// EngineFigures reads a serving engine's figures for a model over the query's window, widened
// (models.EngineQuery.Window) so that it holds a scrape: gauges' raw samples, and the mean
// queue time per request from the counters' increase. A metric without series in the window
// goes into Missing; a ratio without requests is left out. Any failed query fails the call.
func (c *Client) EngineFigures(ctx context.Context, q models.EngineQuery) (res models.EngineFigures, err error) {
	if err := q.Validate(); err != nil {
		return res, err
	}
	spec := engineSpecs[q.Engine]
	var matchers []*labels.Matcher
	if q.Model != "" {
		// A matcher, printed quoted by the PromQL printer: never text pasted into the query.
		matchers = append(matchers, labels.MustNewMatcher(labels.MatchEqual, spec.modelLabel, q.Model))
	}
	ctx, span := upstream.StartSpan(ctx, models.Prometheus, "EngineFigures",
		attribute.String("hsi.engine", q.Engine), attribute.Int("hsi.figures", len(spec.figures)))
	defer func() { err = upstream.EndSpan(span, err) }()

	// The gauges are read together, in one query of their raw samples (they share a window);
	// each counter and ratio in its own, as increase() drops the metric's name.
	answers := make([]engineAnswer, len(spec.figures))
	var gauges, others []int
	for i, f := range spec.figures {
		if f.counter || f.ratio() {
			others = append(others, i)
		} else {
			gauges = append(gauges, i)
		}
	}
	// Two queries at most, at once: the gauges' raw samples, and every counter's and ratio's
	// candidates in one (engineRates).
	var jobs []func() error
	if len(gauges) > 0 {
		jobs = append(jobs, func() error { return c.engineGauges(ctx, spec.figures, gauges, matchers, q, answers) })
	}
	if len(others) > 0 {
		jobs = append(jobs, func() error { return c.engineRates(ctx, spec.figures, others, matchers, q, answers) })
	}
	for _, err := range safe.ForEach("engine figures", len(jobs), engineParallelQueries, func(j int) error { return jobs[j]() }) {
		if err != nil {
			return models.EngineFigures{}, c.wrap(err)
		}
	}
	for _, a := range answers {
		if a.figure != nil {
			res.Figures = append(res.Figures, *a.figure)
		}
		res.Missing = append(res.Missing, a.missing...)
	}
	return res, nil
}

// engineGauges reads the gauges figures[at...] from one query of the raw samples of all their
// names in the window; each figure is its first name with series (its newest name, then its
// older ones, then another engine's), and its own query is the selector of that name alone,
// which answers the same samples.
func (c *Client) engineGauges(ctx context.Context, figures []engineFigureSpec, at []int, matchers []*labels.Matcher, q models.EngineQuery, answers []engineAnswer) error {
	start, end := q.Window(models.EngineGaugeWindow)
	var names []string
	for _, i := range at {
		f := figures[i]
		names = append(names, f.metric)
		names = append(append(names, f.olderNames...), f.alsoNames...)
	}
	all, err := metricNamesSelector(names, matchers)
	if err != nil {
		return err
	}
	expr, err := checked(rangeSelector(all, end.Sub(start)))
	if err != nil {
		return err
	}
	m, err := c.instantMatrix(ctx, expr, end)
	if err != nil {
		return err
	}
	byName := map[string]model.Matrix{}
	for _, s := range m {
		name := string(s.Metric[model.MetricNameLabel])
		byName[name] = append(byName[name], s)
	}
	for _, i := range at {
		answers[i], err = engineGauge(figures[i], matchers, start, end, byName)
		if err != nil {
			return err
		}
	}
	return nil
}

// engineGauge is one gauge's figure from the series read by name: its first name with series.
func engineGauge(f engineFigureSpec, matchers []*labels.Matcher, start, end time.Time, byName map[string]model.Matrix) (engineAnswer, error) {
	var a engineAnswer
	reported := 1 + len(f.olderNames)
	if f.optional {
		reported = 0
	}
	for n, metric := range append(append([]string{f.metric}, f.olderNames...), f.alsoNames...) {
		m := byName[metric]
		if len(m) == 0 {
			if n < reported {
				a.missing = append(a.missing, metric)
			}
			continue
		}
		expr, err := checked(rangeSelector(metricSelector(metric, matchers), end.Sub(start)))
		if err != nil {
			return a, err
		}
		fig := models.EngineFigure{Name: f.name, Metric: metric, Query: expr, Unit: f.unit, Max: math.Inf(-1), Series: len(m), Start: start, End: end}
		sum := 0.0
		for _, s := range m {
			for _, p := range s.Values {
				v := float64(p.Value)
				if math.IsNaN(v) {
					continue
				}
				fig.Max = max(fig.Max, v)
				sum += v
				fig.Samples++
			}
		}
		if fig.Samples == 0 {
			// Series of NaN only: there, but saying nothing.
			return engineAnswer{}, nil
		}
		fig.Mean = sum / float64(fig.Samples)
		// An older name answered: the newer ones are not missing, this engine predates them.
		return engineAnswer{figure: &fig}, nil
	}
	return a, nil
}

// engineCandidate is one way to read a counter or ratio figure: one of its names (a counter's),
// or one of its pairs (a ratio's), in the order they are tried.
type engineCandidate struct {
	figure int    // index in figures
	metric string // the name the figure is reported under
	// expr is the figure's own query, which answers the same numbers; it is printed for the
	// figure that uses it only (the union it is part of is checked whole).
	expr parser.Expr
}

// engineRates reads the counters and ratios figures[at...] in one instant query at the window's
// end: each candidate of each figure (its names, or its pairs of names, newest first) a part of
// one labelled union, so that a join asks Prometheus twice in all, not once per figure and per
// older name. Each figure is then its first candidate with series, as if they were asked in
// turn: a counter's increase over the window summed over its series (the engine's replicas), a
// ratio's increase(num) / increase(den) / divisor per series.
func (c *Client) engineRates(ctx context.Context, figures []engineFigureSpec, at []int, matchers []*labels.Matcher, q models.EngineQuery, answers []engineAnswer) error {
	start, end := q.Window(models.EngineRateWindow)
	rng := end.Sub(start)
	increase := func(metric string) parser.Expr {
		return promCall("increase", rangeSelector(metricSelector(metric, matchers), rng))
	}
	var cands []engineCandidate
	for _, i := range at {
		f := figures[i]
		if f.counter {
			for _, metric := range append(append([]string{f.metric}, f.olderNames...), f.alsoNames...) {
				cands = append(cands, engineCandidate{figure: i, metric: metric, expr: increase(metric)})
			}
			continue
		}
		for _, pair := range append([][2]string{{f.num, f.den}}, f.olderPairs...) {
			var e parser.Expr = binaryExpr(parser.DIV, increase(pair[0]), increase(pair[1]))
			if f.divisor != 1 {
				e = binaryExpr(parser.DIV, e, numberLit(f.divisor))
			}
			// A histogram's name, or the counter's.
			cands = append(cands, engineCandidate{figure: i, metric: strings.TrimSuffix(pair[0], "_sum"), expr: e})
		}
	}
	parts := make([]parser.Expr, len(cands))
	for n := range cands {
		parts[n] = cands[n].expr
	}
	expr, err := checked(labelledUnion(parts))
	if err != nil {
		return err
	}
	vec, _, err := c.instantVector(ctx, expr, end)
	if err != nil {
		return err
	}
	byCandidate, err := byPart(vec, len(cands), expr)
	if err != nil {
		return err
	}
	for _, i := range at {
		answers[i] = engineRate(figures[i], cands, byCandidate, i, start, end)
	}
	return nil
}

// engineRate is figure i's answer from the series of its candidates: the first with series.
// A counter's names before it that have none are missing (another engine's names never are); a
// ratio without any pair is missing by its figure's metric. A first candidate whose series all
// say nothing (NaN, or no requests: 0/0) gives no figure.
func engineRate(f engineFigureSpec, cands []engineCandidate, byCandidate []model.Vector, i int, start, end time.Time) engineAnswer {
	var a engineAnswer
	reported := 1 + len(f.olderNames)
	tried := 0
	for n, cand := range cands {
		if cand.figure != i {
			continue
		}
		tried++
		vec := byCandidate[n]
		if len(vec) == 0 {
			if f.counter && tried <= reported {
				a.missing = append(a.missing, cand.metric)
			}
			continue
		}
		fig := models.EngineFigure{Name: f.name, Metric: cand.metric, Query: cand.expr.String(), Unit: f.unit, Start: start, End: end}
		if f.counter {
			for _, s := range vec {
				if v := float64(s.Value); !math.IsNaN(v) && !math.IsInf(v, 0) {
					fig.Max += v
					fig.Series++
				}
			}
			if fig.Series == 0 {
				return engineAnswer{}
			}
			fig.Mean, fig.Samples = fig.Max, fig.Series
			return engineAnswer{figure: &fig}
		}
		fig.Max = math.Inf(-1)
		sum := 0.0
		for _, s := range vec {
			v := float64(s.Value)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			fig.Max = max(fig.Max, v)
			sum += v
			fig.Series++
		}
		if fig.Series == 0 {
			return engineAnswer{}
		}
		fig.Samples = fig.Series
		fig.Mean = sum / float64(fig.Series)
		return engineAnswer{figure: &fig}
	}
	if !f.counter {
		return engineAnswer{missing: []string{f.metric}}
	}
	return a
}

// instantMatrix asks an instant query of a range selector: the raw samples in the range.
func (c *Client) instantMatrix(ctx context.Context, expr string, at time.Time) (model.Matrix, error) {
	v, _, _, err := c.api.Query(ctx, expr, at)
	if err != nil {
		return nil, err
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, fmt.Errorf("query %s answered a %s, not a range vector", expr, v.Type())
	}
	return m, nil
}
