package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Normal cost of each step; a request with ?slow=STEP makes that step slowFactor times longer.
// The detector and the enrichment service spend at least 60 ms of CPU each, about six samples at
// the profiler's 100 Hz, so the span profile of a single request shows every service.
const (
	dbCost        = 20 * time.Millisecond
	detectCost    = 60 * time.Millisecond
	enrichCost    = 60 * time.Millisecond
	serializeCost = 10 * time.Millisecond
	slowFactor    = 15
	// The engine's work for one request: a caption of captionTokens tokens (about 0.1 s of
	// decode), ten times longer for ?slow=generate.
	promptTokens  = 256
	captionTokens = 12
)

// Slow steps a request can ask for.
const (
	SlowSerialize = "serialize"
	SlowDB        = "db"
	SlowModel     = "model"    // the detector's CPU-side model work
	SlowGenerate  = "generate" // a long answer from the engine (decode)
	// SlowQueue is not a step of the backend: the traffic generator fills the engine with other
	// work first, so the backend's request waits in the engine's queue.
	SlowQueue = "queue"
	// SlowPreempt is not a step of the backend either: the traffic generator first sends the
	// engine a prompt that leaves its KV cache a few tokens of room beside the backend's request,
	// so the engine preempts the backend's request mid-decode (the last to arrive) until the
	// long one is answered.
	SlowPreempt = "preempt"
)

func cost(base time.Duration, slow, step string) time.Duration {
	if slow == step {
		return base * slowFactor
	}
	return base
}

// handleDetect is the backend's endpoint: a database-like query, the detector, the enrichment
// service, a caption from the engine (when there is one), then serialisation of the answer.
func (s *service) handleDetect(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	slow := r.URL.Query().Get("slow")
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("demo.slow", slow))

	dctx, sp := s.span(ctx, "db_query", attribute.String("db.system", "postgresql"))
	rows := dbQuery(dctx, cost(dbCost, slow, SlowDB))
	sp.End()

	q := url.Values{"slow": {slow}}
	if tokens := r.URL.Query().Get("tokens"); tokens != "" {
		q.Set("tokens", tokens)
	}
	detections, err := s.call(ctx, s.detector+"/detect?"+q.Encode())
	if err != nil {
		// The detector's own failure (a CUDA out-of-memory error) is the request's: 500.
		status := http.StatusBadGateway
		var se *statusError
		if errors.As(err, &se) && se.code == http.StatusInternalServerError {
			status = http.StatusInternalServerError
		}
		http.Error(w, err.Error(), status)
		return
	}
	enriched, err := s.call(ctx, s.enrichment+"/enrich?"+url.Values{"slow": {slow}}.Encode())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}

	if s.engine != "" {
		tokens := captionTokens
		if slow == SlowGenerate {
			tokens *= 10
		}
		if err := complete(ctx, s.client, s.engine, promptTokens, tokens); err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
	}

	sctx, sp := s.span(ctx, "serialize_response")
	body := serializeResponse(sctx, rows, detections, enriched, cost(serializeCost, slow, SlowSerialize))
	sp.End()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// handleDetector runs the object-detection "model" on GPU 0; with ?tokens= above MaxTokens its
// allocation fails with PyTorch's CUDA out-of-memory error (cudaoom.go) and it answers 500.
func (s *service) handleDetector(w http.ResponseWriter, r *http.Request) {
	ctx, sp := s.span(r.Context(), "model.predict", attribute.String("model", "yolo26"), attribute.String("gpu.index", "0"))
	if tokens, size, oom := cudaAllocation(r); tokens > 0 {
		sp.SetAttributes(attribute.Int("demo.tokens", tokens))
		if oom {
			modelPredict(ctx, oomCost)
			msg := recordCUDAOOM(sp, 0, size)
			sp.End()
			http.Error(w, CUDAOOMType+": "+msg, http.StatusInternalServerError)
			return
		}
	}
	score := modelPredict(ctx, cost(detectCost, r.URL.Query().Get("slow"), SlowModel))
	sp.End()
	writeJSON(w, map[string]any{"objects": 3, "score": score})
}

// handleEnrichment extracts features (allocation-heavy) and runs a light model on GPU 1.
func (s *service) handleEnrichment(w http.ResponseWriter, r *http.Request) {
	ctx, sp := s.span(r.Context(), "enrich", attribute.String("model", "clip"), attribute.String("gpu.index", "1"))
	features := extractFeatures(ctx, enrichCost/2)
	score := modelPredict(ctx, enrichCost/2)
	sp.End()
	writeJSON(w, map[string]any{"features": features, "score": score})
}

// dbQuery stands in for a slow database query: CPU spent hashing rows.
//
//go:noinline
func dbQuery(_ context.Context, d time.Duration) int {
	deadline := time.Now().Add(d)
	rows := 0
	sum := sha256.Sum256([]byte("seed"))
	for time.Now().Before(deadline) {
		for range 200 {
			sum = sha256.Sum256(sum[:])
		}
		rows++
	}
	return rows
}

// modelPredict stands in for model inference on the CPU side: dense floating-point work.
//
//go:noinline
func modelPredict(_ context.Context, d time.Duration) float64 {
	deadline := time.Now().Add(d)
	acc := 0.0
	for time.Now().Before(deadline) {
		for i := 1; i < 5000; i++ {
			acc += math.Sqrt(float64(i)) * math.Sin(float64(i))
		}
	}
	return acc
}

// extractFeatures allocates many small vectors, the pattern that shows up in alloc_objects.
//
//go:noinline
func extractFeatures(_ context.Context, d time.Duration) int {
	deadline := time.Now().Add(d)
	n := 0
	var keep [][]float32
	for time.Now().Before(deadline) {
		v := make([]float32, 512)
		v[0] = float32(n)
		keep = append(keep, v)
		if len(keep) > 256 {
			keep = keep[:0]
		}
		n++
	}
	return n
}

// serializeResponse is JSON encoding of a large answer, repeated: the seeds' "wide bar in
// json.dumps" pattern, both CPU- and allocation-heavy.
//
//go:noinline
func serializeResponse(_ context.Context, rows int, detections, enriched map[string]any, d time.Duration) []byte {
	deadline := time.Now().Add(d)
	payload := map[string]any{"rows": rows, "detections": detections, "enrichment": enriched}
	items := make([]map[string]any, 0, 200)
	for i := range 200 {
		items = append(items, map[string]any{"id": i, "label": fmt.Sprintf("object-%d", i), "box": []int{i, i + 1, i + 2, i + 3}})
	}
	payload["items"] = items
	var out []byte
	for first := true; first || time.Now().Before(deadline); first = false {
		out, _ = json.Marshal(payload)
	}
	return out
}
