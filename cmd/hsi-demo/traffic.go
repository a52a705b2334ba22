package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// traffic sends requests to the backend and prints one line per request: trace ID, slow step,
// duration. Every slowEvery-th request is slow, cycling through the slow steps.
func traffic(args []string) error {
	fs := flag.NewFlagSet("traffic", flag.ExitOnError)
	backend := fs.String("backend", "http://127.0.0.1:8080", "backend base URL")
	requests := fs.Int("requests", 20, "number of requests; 0 means until interrupted")
	every := fs.Duration("every", 200*time.Millisecond, "pause between requests")
	slowEvery := fs.Int("slow-every", 4, "every N-th request is slow (0: none)")
	_ = fs.Parse(args)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	client := &http.Client{Timeout: 30 * time.Second}
	steps := []string{SlowSerialize, SlowDB, SlowModel}
	for i := 1; *requests == 0 || i <= *requests; i++ {
		slow := ""
		if *slowEvery > 0 && i%*slowEvery == 0 {
			slow = steps[(i / *slowEvery)%len(steps)]
		}
		start := time.Now()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, *backend+"/api/detect?slow="+slow, nil)
		res, err := client.Do(req)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("backend answered %s", res.Status)
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
