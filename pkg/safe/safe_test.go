package safe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/goroutines"
)

func TestDoTurnsAPanicIntoAnErrorAndPassesErrorsThrough(t *testing.T) {
	if err := Do("test", func() error {
		var m map[string]int
		m["x"]++ // a real panic: nil map write
		return nil
	}); !errors.Is(err, ErrPanicked) {
		t.Errorf("panic gave %v", err)
	}
	want := errors.New("upstream down")
	if err := Do("test", func() error { return want }); err != want {
		t.Errorf("error gave %v", err)
	}
	if err := Do("test", func() error { return nil }); err != nil {
		t.Errorf("success gave %v", err)
	}
}

func TestForEachBoundsTheCallsAndKeepsEachError(t *testing.T) {
	var mu sync.Mutex
	running, most := 0, 0
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	done := make(chan []error)
	go func() {
		done <- ForEach("test", 10, 3, func(i int) error {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			started <- struct{}{}
			<-release
			mu.Lock()
			running--
			mu.Unlock()
			switch i {
			case 4:
				var m map[string]int
				m["x"]++ // a real panic
			case 7:
				return fmt.Errorf("call %d failed", i)
			}
			return nil
		})
	}()
	// Three calls start; a fourth waits for a slot however long the first three take.
	for range 3 {
		<-started
	}
	select {
	case <-started:
		t.Fatal("a fourth call started while three were running with a bound of 3")
	default:
	}
	close(release)
	errs := <-done
	if most != 3 {
		t.Errorf("at most %d calls ran at once, want 3", most)
	}
	for i, err := range errs {
		switch {
		case i == 4 && !errors.Is(err, ErrPanicked), i == 7 && (err == nil || err.Error() != "call 7 failed"), i != 4 && i != 7 && err != nil:
			t.Errorf("call %d: %v", i, err)
		}
	}
}

func TestFailFastReturnsTheFirstFailureAndCancelsTheRest(t *testing.T) {
	boom := errors.New("Prometheus is down")
	var mu sync.Mutex
	cancelled, ran := 0, 0
	err := FailFast(context.Background(), "test", 6, 2, func(ctx context.Context, i int) error {
		mu.Lock()
		ran++
		mu.Unlock()
		if i == 0 {
			return boom
		}
		<-ctx.Done() // the others wait until the failure cancels them
		mu.Lock()
		cancelled++
		mu.Unlock()
		return ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want the first failure, not a cancellation", err)
	}
	if ran == 6 || cancelled != ran-1 {
		t.Errorf("%d calls ran, %d cancelled: calls not yet started must not run after the failure", ran, cancelled)
	}
	if err := FailFast(context.Background(), "test", 3, 0, func(context.Context, int) error { return nil }); err != nil {
		t.Errorf("all succeeded, got %v", err)
	}
	if err := FailFast(context.Background(), "test", 1, 0, func(context.Context, int) error { var m map[int]int; m[0]++; return nil }); !errors.Is(err, ErrPanicked) {
		t.Errorf("a panic gave %v", err)
	}
}

// When every call fits in the bound, the last runs on the caller's goroutine: still all at once
// (each call here waits until every other has started), each error and panic kept by index, and
// in FailFast the last call's failure cancels the others like any call's.
func TestCallsWithinTheBoundRunAtOnceWithTheCallersOwn(t *testing.T) {
	for _, limit := range []int{0, 3, 5} {
		var started sync.WaitGroup
		started.Add(3)
		errs := ForEach("test", 3, limit, func(i int) error {
			started.Done()
			started.Wait() // a call run before the others were started would wait forever
			switch i {
			case 1:
				return fmt.Errorf("call %d failed", i)
			case 2:
				var m map[string]int
				m["x"]++ // a real panic, in the caller's call
			}
			return nil
		})
		if errs[0] != nil || errs[1] == nil || errs[1].Error() != "call 1 failed" || !errors.Is(errs[2], ErrPanicked) {
			t.Errorf("limit %d: errors %v", limit, errs)
		}
	}

	boom := errors.New("Jaeger is down")
	var started sync.WaitGroup
	started.Add(3)
	err := FailFast(context.Background(), "test", 3, 3, func(ctx context.Context, i int) error {
		started.Done()
		started.Wait()
		if i == 2 { // the caller's
			return boom
		}
		<-ctx.Done() // the others end only when the last call's failure cancels them
		return ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Errorf("got %v, want the last call's failure", err)
	}
	if err := FailFast(context.Background(), "test", 1, 0, func(context.Context, int) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("one call failing gave %v", err)
	}
}

// Callers of one key at once share one call. A follower whose shared call was ended by its
// leader's cancellation (that panel closed) runs alone and gets its own answer; an error of the
// call's own (its upstream timed out) is every caller's, not run again.
func TestShareRunsAloneOnlyWhenTheLeaderWasCancelled(t *testing.T) {
	var g singleflight.Group
	var calls atomic.Int32
	started := make(chan struct{})
	do := func(ctx context.Context) (int32, error) {
		n := calls.Add(1)
		if n == 1 {
			close(started)
			<-ctx.Done() // the leader's call lasts until its panel closes
			return 0, ctx.Err()
		}
		return n, nil
	}
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() { _, _, err := Share(&g, leaderCtx, "k", do); leaderDone <- err }()
	<-started
	type answer struct {
		v   int32
		err error
	}
	followerDone := make(chan answer, 1)
	go func() { v, _, err := Share(&g, context.Background(), "k", do); followerDone <- answer{v, err} }()
	// Both callers are inside Share (the follower waiting on the leader's call) before the
	// leader's panel closes.
	for inShare, deadline := 0, time.Now().Add(time.Minute); inShare < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute %d of 2 callers are in Share", inShare)
		}
		inShare = goroutines.In("safe.Share[")
		time.Sleep(10 * time.Millisecond)
	}
	cancelLeader()
	if err := <-leaderDone; !errors.Is(err, context.Canceled) {
		t.Errorf("leader: %v", err)
	}
	if a := <-followerDone; a.err != nil || a.v != 2 {
		t.Errorf("follower got %d, %v; want the answer of its own second call", a.v, a.err)
	}

	// The leader's call fails on its own (the upstream timed out) and the leader's request ends
	// right after, before the follower looks: the follower gets the same failure, not a second
	// call and a second timeout.
	leaderCtx, cancelLeader = context.WithCancel(context.Background())
	release := make(chan struct{})
	var second atomic.Int32
	timedOut := errors.New("upstream timed out")
	leaderDone = make(chan error, 1)
	go func() {
		_, _, err := Share(&g, leaderCtx, "t", func(context.Context) (int, error) {
			second.Add(1)
			<-release
			return 0, timedOut
		})
		cancelLeader() // Grafana ends the request once it is answered
		leaderDone <- err
	}()
	// The leader's call runs first; then the follower joins it (it waits in the flight, not
	// merely in Share) before the leader's call fails.
	inFlight := func(n int) {
		for got, deadline := 0, time.Now().Add(time.Minute); got < n; {
			if time.Now().After(deadline) {
				t.Fatalf("after a minute %d of %d callers are in the flight", got, n)
			}
			got = goroutines.In("singleflight.(*Group).Do(")
			time.Sleep(10 * time.Millisecond)
		}
	}
	for second.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	followerErr := make(chan error, 1)
	go func() {
		_, _, err := Share(&g, context.Background(), "t", func(context.Context) (int, error) { second.Add(1); return 1, nil })
		followerErr <- err
	}()
	inFlight(2)
	close(release)
	if err := <-leaderDone; !errors.Is(err, timedOut) {
		t.Errorf("leader: %v", err)
	}
	if err := <-followerErr; !errors.Is(err, timedOut) || second.Load() != 1 {
		t.Errorf("follower: %v after %d calls; want the leader's failure, one call", err, second.Load())
	}

	boom := errors.New("upstream timed out")
	n := 0
	_, shared, err := Share(&g, context.Background(), "e", func(context.Context) (int, error) { n++; return 0, boom })
	if !errors.Is(err, boom) || n != 1 || shared {
		t.Errorf("err %v after %d calls (shared %v)", err, n, shared)
	}
}
