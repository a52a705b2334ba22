package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// The engine's KV cache preempts, as vLLM's scheduler does: a request that arrived after one
// filling the cache is preempted when it needs room for its next token, waits until the long one
// is answered, recomputes, and finishes; its decode holds the wait, its model time
// (time_in_model_execute) does not, and vllm:num_preemptions_total counts it. The long one runs
// undisturbed.
func TestEnginePreemptsTheLastArrivedRequestWhenItsKVCacheIsFull(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	e := newEngine(prometheus.NewRegistry(), DefaultMaxRunning)
	e.tracer = tp.Tracer("test")
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", e.handleCompletion)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	const longTokens, shortTokens = 30, captionTokens
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() {
		errs[0] = complete(context.Background(), srv.Client(), srv.URL, PreemptPromptTokens, longTokens)
	})
	// The long one is admitted first: wait until it holds its cache, however loaded the machine.
	for admitted := false; !admitted; time.Sleep(time.Millisecond) {
		e.mu.Lock()
		admitted = e.kvInUse >= PreemptPromptTokens
		e.mu.Unlock()
	}
	wg.Go(func() { errs[1] = complete(context.Background(), srv.Client(), srv.URL, promptTokens, shortTokens) })
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := testutil.ToFloat64(e.preemptions); n != 1 {
		t.Errorf("vllm:num_preemptions_total = %v, want 1", n)
	}
	if e.kvInUse != 0 || len(e.running) != 0 {
		t.Errorf("after both answers the cache holds %d tokens of %d requests", e.kvInUse, len(e.running))
	}
	seconds := func(s sdktrace.ReadOnlySpan, key string) time.Duration {
		for _, a := range s.Attributes() {
			if string(a.Key) == key {
				return time.Duration(a.Value.AsFloat64() * float64(time.Second))
			}
		}
		t.Fatalf("span lacks %s", key)
		return 0
	}
	spans := rec.Ended()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	// The long request's answer: its prefill (PreemptPromptTokens × 0.1 ms) and decode.
	longRun := time.Duration(PreemptPromptTokens)*enginePrefillTok + longTokens*engineDecodeTok
	for _, s := range spans {
		tokens := 0
		for _, a := range s.Attributes() {
			if a.Key == attrCompletionTokens {
				tokens = int(a.Value.AsInt64())
			}
		}
		decode, prefill, model := seconds(s, attrTimeInDecode), seconds(s, attrTimeInPrefill), seconds(s, attrTimeInExecute)
		excess := prefill + decode - model
		switch tokens {
		case shortTokens:
			// Preempted after PreemptRoom tokens; it waits for most of the long one's answer.
			if excess < longRun/2 {
				t.Errorf("the preempted request: prefill %s + decode %s, model %s: %s beyond its model time, want at least %s",
					prefill, decode, model, excess, longRun/2)
			}
		case longTokens:
			if excess > 50*time.Millisecond {
				t.Errorf("the long request lost %s beyond its model time (prefill %s + decode %s, model %s)", excess, prefill, decode, model)
			}
		default:
			t.Errorf("a span of %s tokens", strconv.Itoa(tokens))
		}
	}
}
