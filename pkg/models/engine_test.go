package models

import (
	"strings"
	"testing"
	"time"
)

func TestEngineWindowWidensAShortRequestAroundItsMiddle(t *testing.T) {
	end := time.Unix(1_700_000_100, 0)
	for _, c := range []struct {
		name       string
		start      time.Time
		least      time.Duration
		wantStart  time.Time
		wantLength time.Duration
	}{
		// 5 s request: the 30 s around it, centred on its middle (end-2.5 s).
		{"short", end.Add(-5 * time.Second), EngineGaugeWindow, end.Add(-17500 * time.Millisecond), 30 * time.Second},
		{"short, rate", end.Add(-5 * time.Second), EngineRateWindow, end.Add(-32500 * time.Millisecond), time.Minute},
		// A long request is its own window, in whole seconds that cover it, ending at its end.
		{"long", end.Add(-90*time.Second - 300*time.Millisecond), EngineGaugeWindow, end.Add(-91 * time.Second), 91 * time.Second},
		{"exactly the least", end.Add(-30 * time.Second), EngineGaugeWindow, end.Add(-30 * time.Second), 30 * time.Second},
	} {
		q := EngineQuery{Engine: EngineVLLM, Start: c.start, End: end}
		start, stop := q.Window(c.least)
		if !start.Equal(c.wantStart) || stop.Sub(start) != c.wantLength {
			t.Errorf("%s: %s + %s, want %s + %s", c.name, start, stop.Sub(start), c.wantStart, c.wantLength)
		}
		if start.After(q.Start) || stop.Before(q.End) {
			t.Errorf("%s: window %s – %s does not cover the request", c.name, start, stop)
		}
	}
}

func TestEngineQueryValidate(t *testing.T) {
	end := time.Unix(1_700_000_100, 0)
	if err := (EngineQuery{Engine: EngineTriton, Start: end, End: end}).Validate(); err != nil {
		t.Errorf("an instant is a window: %v", err)
	}
	if err := (EngineQuery{Engine: "sglang", Start: end, End: end}).Validate(); err == nil || !strings.Contains(err.Error(), `"vllm"`) {
		t.Errorf("unknown engine: %v", err)
	}
	if err := (EngineQuery{Engine: EngineVLLM, Start: end, End: end.Add(-time.Second)}).Validate(); err == nil {
		t.Error("an end before the start passed")
	}
	if err := (EngineQuery{Engine: EngineVLLM, End: end}).Validate(); err == nil {
		t.Error("a zero start passed")
	}
}
