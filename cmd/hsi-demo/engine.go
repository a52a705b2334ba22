package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// The simulated serving engine (hsi-demo serve --service engine): an LLM server that answers
// OpenAI-style completions the way vLLM does, as far as the plugin can see it. A request waits
// for one of maxRunning slots (vLLM's max_num_seqs), then runs its prefill and its decode; the
// model's time is the GPU's, so the host thread sleeps through it (no CPU, as with a real GPU).
// It records vLLM's request span (llm_request, with vLLM's exact gen_ai.* attribute names,
// vllm/tracing.py) and vLLM's metrics with their exact names (docs.vllm.ai, Production
// Metrics), every series labelled simulated="true" and every span's resource simulated=true.
const (
	EngineModel      = "nemotron-mini"
	enginePrefillTok = 100 * time.Microsecond // per prompt token
	engineDecodeTok  = 8 * time.Millisecond   // per output token
	engineKVTokens   = 4096                   // the KV cache's capacity, in tokens
	// DefaultMaxRunning is how many requests the engine runs at once.
	DefaultMaxRunning = 2
)

// vLLM's span attributes (vllm/tracing.py, SpanAttributes).
const (
	attrResponseModel    = "gen_ai.response.model"
	attrRequestID        = "gen_ai.request.id"
	attrRequestMaxTokens = "gen_ai.request.max_tokens"
	attrPromptTokens     = "gen_ai.usage.prompt_tokens"
	attrCompletionTokens = "gen_ai.usage.completion_tokens"
	attrTimeInQueue      = "gen_ai.latency.time_in_queue"
	attrTimeToFirstToken = "gen_ai.latency.time_to_first_token"
	attrE2E              = "gen_ai.latency.e2e"
	attrTimeInScheduler  = "gen_ai.latency.time_in_scheduler"
	attrTimeInPrefill    = "gen_ai.latency.time_in_model_prefill"
	attrTimeInDecode     = "gen_ai.latency.time_in_model_decode"
	attrTimeInInference  = "gen_ai.latency.time_in_model_inference"
	// With --collect-detailed-traces: the time the model computed the request's tokens.
	attrTimeInExecute = "gen_ai.latency.time_in_model_execute"
)

// Completion is the body of POST /v1/completions, as far as the engine reads it.
type Completion struct {
	Model        string `json:"model"`
	Prompt       string `json:"prompt"`
	MaxTokens    int    `json:"max_tokens"`
	PromptTokens int    `json:"prompt_tokens,omitempty"` // the demo's stand-in for tokenising Prompt
}

type engine struct {
	tracer trace.Tracer
	slots  chan struct{}
	nextID atomic.Int64

	// The KV cache: kvInUse tokens held by the running requests. A running request needs one
	// more token's room per decoded token; without it the engine preempts the running request
	// that arrived last (vLLM's recompute preemption), which frees its cache, waits for room,
	// and recomputes its prompt and the tokens it had generated. kvFreed wakes the waiters.
	mu      sync.Mutex
	kvFreed *sync.Cond
	kvInUse int
	running []*engineRequest

	waiting, numRunning, kvUsage          prometheus.Gauge
	queueTime, e2e, ttft, prefill, decode prometheus.Observer
	promptToks, genToks, preemptions      prometheus.Counter
	success                               *prometheus.CounterVec
}

// engineRequest is one running request's share of the KV cache.
type engineRequest struct {
	arrived   time.Time
	kv        int  // tokens it holds in the KV cache
	preempted bool // its cache was taken; it must wait and recompute
}

func newEngine(reg *prometheus.Registry, maxRunning int) *engine {
	labels := prometheus.Labels{"model_name": EngineModel, "engine": "0", "simulated": "true"}
	gauge := func(name, help string) prometheus.Gauge {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels})
		reg.MustRegister(g)
		return g
	}
	hist := func(name, help string, buckets []float64) prometheus.Observer {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: labels, Buckets: buckets})
		reg.MustRegister(h)
		return h
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		reg.MustRegister(c)
		return c
	}
	latency := []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	e := &engine{
		tracer:      otel.Tracer("vllm.llm_engine"),
		slots:       make(chan struct{}, maxRunning),
		waiting:     gauge("vllm:num_requests_waiting", "Number of requests waiting to be processed."),
		numRunning:  gauge("vllm:num_requests_running", "Number of requests in model execution batches."),
		kvUsage:     gauge("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage."),
		queueTime:   hist("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", latency),
		e2e:         hist("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", latency),
		ttft:        hist("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", latency),
		prefill:     hist("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", latency),
		decode:      hist("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", latency),
		promptToks:  counter("vllm:prompt_tokens_total", "Number of prefill tokens processed."),
		genToks:     counter("vllm:generation_tokens_total", "Number of generation tokens processed."),
		preemptions: counter("vllm:num_preemptions_total", "Cumulative number of preemption from the engine."),
		success: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total",
			Help: "Count of successfully processed requests.", ConstLabels: labels}, []string{"finished_reason"}),
	}
	e.kvFreed = sync.NewCond(&e.mu)
	reg.MustRegister(e.success)
	return e
}

// handleCompletion serves POST /v1/completions: queue, prefill, decode (preempted when the KV
// cache runs out), then the span and the metrics, as vLLM records them when the request
// finishes. The model's own time (time_in_model_execute, which vLLM writes with detailed
// traces) is the time the request's tokens were computed, recomputation included.
func (e *engine) handleCompletion(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	var c Completion
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&c); err != nil {
		http.Error(w, "the body is not a completion request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if c.MaxTokens <= 0 || c.MaxTokens > 2048 {
		http.Error(w, "max_tokens must be 1 to 2048", http.StatusBadRequest)
		return
	}
	if c.PromptTokens <= 0 {
		c.PromptTokens = len(c.Prompt)/4 + 1 // about four characters a token
	}
	if c.PromptTokens+c.MaxTokens > engineKVTokens {
		http.Error(w, fmt.Sprintf("prompt_tokens + max_tokens must fit the KV cache's %d tokens", engineKVTokens), http.StatusBadRequest)
		return
	}
	// vLLM continues the caller's trace from the request's headers and starts its span at the
	// request's arrival.
	ctx := propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	ctx, span := e.tracer.Start(ctx, "llm_request", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(arrived))

	e.waitForRoom(c.PromptTokens)
	if !e.schedule(ctx) {
		span.End()
		return
	}
	scheduled := time.Now()
	req := &engineRequest{arrived: arrived}
	e.admit(req, c.PromptTokens)

	sleep(ctx, time.Duration(c.PromptTokens)*enginePrefillTok)
	model := time.Since(scheduled)
	firstToken := time.Now()
	for generated := 0; generated < c.MaxTokens && ctx.Err() == nil; {
		if !e.grow(req) {
			// Preempted: back to the waiting requests, its batch slot given up, until a slot
			// and room for everything it had are free; then it recomputes that.
			e.unschedule()
			e.waitForRoom(c.PromptTokens + generated)
			if !e.schedule(ctx) {
				span.End()
				return
			}
			e.admit(req, c.PromptTokens+generated)
			start := time.Now()
			sleep(ctx, time.Duration(c.PromptTokens+generated)*enginePrefillTok)
			model += time.Since(start)
			continue
		}
		start := time.Now()
		sleep(ctx, engineDecodeTok)
		model += time.Since(start)
		generated++
	}
	done := time.Now()

	e.release(req)
	e.unschedule()

	queue, prefill, decode := scheduled.Sub(arrived), firstToken.Sub(scheduled), done.Sub(firstToken)
	id := "cmpl-" + strconv.FormatInt(e.nextID.Add(1), 10)
	span.SetAttributes(
		attribute.String(attrResponseModel, EngineModel),
		attribute.String(attrRequestID, id),
		attribute.Int(attrRequestMaxTokens, c.MaxTokens),
		attribute.Int(attrPromptTokens, c.PromptTokens),
		attribute.Int(attrCompletionTokens, c.MaxTokens),
		attribute.Float64(attrTimeInQueue, queue.Seconds()),
		attribute.Float64(attrTimeToFirstToken, firstToken.Sub(arrived).Seconds()),
		attribute.Float64(attrE2E, done.Sub(arrived).Seconds()),
		attribute.Float64(attrTimeInScheduler, 0),
		attribute.Float64(attrTimeInPrefill, prefill.Seconds()),
		attribute.Float64(attrTimeInDecode, decode.Seconds()),
		attribute.Float64(attrTimeInInference, (prefill+decode).Seconds()),
		attribute.Float64(attrTimeInExecute, model.Seconds()),
	)
	span.End(trace.WithTimestamp(done))
	e.queueTime.Observe(queue.Seconds())
	e.prefill.Observe(prefill.Seconds())
	e.ttft.Observe(firstToken.Sub(arrived).Seconds())
	e.e2e.Observe(done.Sub(arrived).Seconds())
	e.decode.Observe(decode.Seconds())
	e.promptToks.Add(float64(c.PromptTokens))
	e.genToks.Add(float64(c.MaxTokens))
	e.success.WithLabelValues("length").Inc()
	writeJSON(w, map[string]any{"id": id, "object": "text_completion", "model": EngineModel,
		"usage": map[string]int{"prompt_tokens": c.PromptTokens, "completion_tokens": c.MaxTokens}})
}

// schedule waits for one of the engine's batch slots (vLLM's max_num_seqs); false when the
// client gave up first.
func (e *engine) schedule(ctx context.Context) bool {
	e.waiting.Inc()
	defer e.waiting.Dec()
	select {
	case e.slots <- struct{}{}:
		e.numRunning.Inc()
		return true
	case <-ctx.Done():
		return false
	}
}

// unschedule gives the request's batch slot up.
func (e *engine) unschedule() {
	e.numRunning.Dec()
	<-e.slots
}

// waitForRoom waits, holding no batch slot, until the KV cache has room for tokens and the next
// one: vLLM schedules a waiting request only then.
func (e *engine) waitForRoom(tokens int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for e.kvInUse+tokens+1 > engineKVTokens {
		e.kvFreed.Wait()
	}
}

// admit waits until the KV cache has room for tokens and the next one (as vLLM's watermark
// keeps a request from being rescheduled only to be preempted again; another request may have
// taken the room waitForRoom saw), then gives them to the request, which runs (again).
func (e *engine) admit(req *engineRequest, tokens int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for e.kvInUse+tokens+1 > engineKVTokens {
		e.kvFreed.Wait()
	}
	req.kv, req.preempted = tokens, false
	e.kvInUse += tokens
	e.running = append(e.running, req)
	e.setKVUsage()
}

// grow gives the request room for one more token, preempting the running requests that arrived
// last until there is room; false when the request itself was preempted (now or by another's
// growth), its cache freed.
func (e *engine) grow(req *engineRequest) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for !req.preempted && e.kvInUse+1 > engineKVTokens {
		last := e.running[0]
		for _, r := range e.running {
			if r.arrived.After(last.arrived) {
				last = r
			}
		}
		e.evict(last)
		e.preemptions.Inc()
	}
	if req.preempted {
		return false
	}
	req.kv++
	e.kvInUse++
	e.setKVUsage()
	return true
}

// release frees a finished request's cache.
func (e *engine) release(req *engineRequest) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !req.preempted {
		e.evict(req)
	}
}

// evict takes a running request's cache and wakes the requests waiting for room. Locked.
func (e *engine) evict(req *engineRequest) {
	e.kvInUse -= req.kv
	req.kv, req.preempted = 0, true
	e.running = slices.DeleteFunc(e.running, func(r *engineRequest) bool { return r == req })
	e.setKVUsage()
	e.kvFreed.Broadcast()
}

func (e *engine) setKVUsage() { e.kvUsage.Set(float64(e.kvInUse) / engineKVTokens) }

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// complete asks the engine for a completion of maxTokens tokens (the backend's and the traffic
// generator's client).
func complete(ctx context.Context, client *http.Client, engineURL string, promptTokens, maxTokens int) error {
	body, _ := json.Marshal(Completion{Model: EngineModel, Prompt: "Describe the detections.", MaxTokens: maxTokens, PromptTokens: promptTokens})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, engineURL+"/v1/completions", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", engineURL, res.Status)
	}
	return nil
}
