package models

import (
	"encoding/json"
	"testing"
)

func TestParseKernelsQueryView(t *testing.T) {
	for raw, want := range map[string]string{
		`{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736"}`:                     KernelViewSummary,
		`{"file": "a.json", "view": "summary"}`:                               KernelViewSummary,
		`{"file": "a.json", "view": " timeline "}`:                            KernelViewTimeline,
		`{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "view": "timeline"}`: KernelViewTimeline,
	} {
		q, err := ParseKernelsQuery(json.RawMessage(raw))
		if err != nil || q.View != want {
			t.Errorf("%s: %+v %v, want view %s", raw, q, err, want)
		}
	}
	_, err := ParseKernelsQuery(json.RawMessage(`{"file": "a.json", "view": "flamegraph"}`))
	if err == nil || err.Error() != `field "view" must be one of summary, timeline, got "flamegraph"` {
		t.Errorf("unknown view: %v", err)
	}
}
