package safe

import (
	"errors"
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
