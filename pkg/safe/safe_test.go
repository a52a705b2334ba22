package safe

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
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
