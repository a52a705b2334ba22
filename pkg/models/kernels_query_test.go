package models

import (
	"strings"
	"testing"
)

func TestParseKernelsQueryView(t *testing.T) {
	for raw, want := range map[string]string{
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`:                   "summary",
		`{"file":"a.json","view":""}`:                                      "summary",
		`{"file":"a.json","view":"summary"}`:                               "summary",
		`{"file":"a.json","view":" launches "}`:                            "launches",
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","view":"launches"}`: "launches",
		`{"file":"a.json","view":"criticalPath"}`:                          "criticalPath",
		`{"file":"a.json","view":" timeline "}`:                            "timeline",
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","view":"timeline"}`: "timeline",
	} {
		q, err := ParseKernelsQuery([]byte(raw))
		if err != nil || q.View != want {
			t.Errorf("%s: %+v, %v", raw, q, err)
		}
	}
	for raw, want := range map[string]string{
		`{"file":"a.json","view":"nope"}`:       `field "view" must be one of summary, launches, criticalPath, timeline, diff, got "nope"`,
		`{"file":"a.json","view":"Launches"}`:   `field "view" must be one of summary, launches, criticalPath, timeline, diff, got "Launches"`,
		`{"file":"a.json","view":"flamegraph"}`: `field "view" must be one of summary, launches, criticalPath, timeline, diff, got "flamegraph"`,
		`{"file":"a.json","view":3}`:            `field "view" must be`,
	} {
		if _, err := ParseKernelsQuery([]byte(raw)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
}
