package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Queue-making burst: BurstRequests long answers sent straight to the engine (another workload
// sharing it) fill its DefaultMaxRunning slots and its queue, so the backend's next request
// waits about one long answer (BurstTokens × 8 ms) in the engine's queue.
const (
	BurstRequests = DefaultMaxRunning + 1
	BurstTokens   = 100
)

// KV-filling request of the preempt step: its prompt leaves the KV cache PreemptRoom tokens
// beside the backend's caption request, and its PreemptTokens-token answer holds that cache for
// about a second (its prefill, then PreemptTokens × 8 ms).
const (
	PreemptRoom         = 4
	PreemptPromptTokens = engineKVTokens - promptTokens - PreemptRoom
	PreemptTokens       = 100
)

// DefaultOOMEvery: one request in 50 fails with a CUDA out-of-memory error, printed with step
// StepCUDAOOM.
const (
	DefaultOOMEvery = 50
	StepCUDAOOM     = "cuda-oom"
)

// traffic sends requests to the backend and prints one line per request: trace ID, slow step,
// duration. Every slowEvery-th request is slow, cycling through the slow steps; every
// oomEvery-th asks for OOMTokens tokens instead and fails with a CUDA out-of-memory error in
// the detector (HTTP 500, step "cuda-oom").
func traffic(args []string) error {
	fs := flag.NewFlagSet("traffic", flag.ExitOnError)
	backend := fs.String("backend", "http://127.0.0.1:8080", "backend base URL")
	engine := fs.String("engine", "", "the engine's base URL, for the queue step's burst (none: no queue step)")
	requests := fs.Int("requests", 20, "number of requests; 0 means until interrupted")
	every := fs.Duration("every", 200*time.Millisecond, "pause between requests")
	slowEvery := fs.Int("slow-every", 4, "every N-th request is slow (0: none)")
	oomEvery := fs.Int("oom-every", DefaultOOMEvery, "every N-th request fails with a CUDA out-of-memory error (0: none)")
	stepList := fs.String("steps", "", "slow steps to cycle through, comma-separated (default: serialize,db,model, then generate,queue,preempt with --engine)")
	_ = fs.Parse(args)

	steps := []string{SlowSerialize, SlowDB, SlowModel}
	if *engine != "" {
		steps = append(steps, SlowGenerate, SlowQueue, SlowPreempt)
	}
	if *stepList != "" {
		steps = strings.Split(*stepList, ",")
	}
	for _, s := range steps {
		switch s {
		case SlowSerialize, SlowDB, SlowModel, SlowGenerate:
		case SlowQueue, SlowPreempt:
			if *engine == "" {
				return fmt.Errorf("the %s step needs --engine", s)
			}
		default:
			return fmt.Errorf("unknown slow step %q (serialize, db, model, generate, queue, preempt)", s)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := &http.Client{Timeout: 30 * time.Second}
	for i := 1; *requests == 0 || i <= *requests; i++ {
		slow, query := "", ""
		if *slowEvery > 0 && i%*slowEvery == 0 {
			slow = steps[(i / *slowEvery)%len(steps)]
		}
		oom := *oomEvery > 0 && i%*oomEvery == 0
		if oom {
			slow, query = "", "&tokens="+strconv.Itoa(OOMTokens)
		}
		var burst sync.WaitGroup
		switch slow {
		case SlowQueue:
			burst.Go(func() { fillEngine(ctx, client, *engine) })
			time.Sleep(50 * time.Millisecond) // the burst reaches the engine first
		case SlowPreempt:
			burst.Go(func() { _ = complete(ctx, client, *engine, PreemptPromptTokens, PreemptTokens) })
			time.Sleep(50 * time.Millisecond) // it arrives first, so the backend's is preempted
		}
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, *backend+"/api/detect?slow="+slow+query, nil)
		res, err := client.Do(req)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		burst.Wait()
		switch {
		case oom && res.StatusCode != http.StatusInternalServerError:
			return fmt.Errorf("backend answered %s to a request of %d tokens, want 500 (CUDA out of memory)", res.Status, OOMTokens)
		case !oom && res.StatusCode != 200:
			return fmt.Errorf("backend answered %s", res.Status)
		}
		if oom {
			slow = StepCUDAOOM
		}
		if slow == "" {
			slow = "-"
		}
		fmt.Printf("%s\t%s\t%s\n", res.Header.Get("X-Trace-Id"), slow, time.Since(start).Round(time.Millisecond))
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(*every):
		}
	}
	return nil
}

// fillEngine sends the burst and waits for its answers; failures only mean no queue this time.
func fillEngine(ctx context.Context, client *http.Client, engine string) {
	var wg sync.WaitGroup
	for range BurstRequests {
		wg.Go(func() { _ = complete(ctx, client, engine, promptTokens, BurstTokens) })
	}
	wg.Wait()
}
