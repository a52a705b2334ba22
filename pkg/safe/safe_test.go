package safe

import (
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
