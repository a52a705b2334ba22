package correlate

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDiffSidesOfARequestAndItsService(t *testing.T) {
	p := &fakeProfiles{
		bySpan:  demoSpanSamples(),
		byLabel: map[string][]string{`service_name="nemotron-backend"`: {"main.handleDetect;main.dbQuery 30", "main.handleDetect;main.serializeResponse 70"}},
	}
	q := DiffQuery{ProfileTypeID: cpuType, MaxNodes: 1024,
		Baseline:   DiffSideQuery{LabelSelector: `{service_name="nemotron-backend"}`, From: t0.Add(-time.Hour), To: t0},
		Comparison: DiffSideQuery{LabelSelector: `{service_name="nemotron-backend"}`, TraceID: demoTraceID, From: t0.Add(-time.Hour), To: t0.Add(time.Hour)},
	}
	base, comp, err := DiffSides(context.Background(), fakeTraces{trace: demoTrace}, p, q)
	if err != nil {
		t.Fatal(err)
	}
	if base.Describe != `{service_name="nemotron-backend"} over 2026-11-22T09:00:00Z to 2026-11-22T10:00:00Z` || base.Tree.Total != 100 {
		t.Errorf("baseline %q total %d", base.Describe, base.Tree.Total)
	}
	// The request's side has no service level: its stacks start where the service's do.
	if comp.Describe != "trace "+demoTraceID || comp.Tree.Total != 320 || comp.Tree.Children[0].Name != "main.handleDetect" {
		t.Errorf("comparison %q %v", comp.Describe, treeRows(comp.Tree))
	}
	if len(comp.Notices) == 0 {
		t.Error("the request's side lost its notices")
	}
}

func TestDiffSidesPadsSpanSidesAndNamesTheFailingSide(t *testing.T) {
	p := &fakeProfiles{bySpan: demoSpanSamples(), failSelector: "ai-detector"}
	q := DiffQuery{ProfileTypeID: cpuType,
		Baseline:   DiffSideQuery{LabelSelector: `{service_name="nemotron-backend"}`, SpanSelector: []string{"0000000000000001"}, From: t0, To: t0.Add(time.Second)},
		Comparison: DiffSideQuery{LabelSelector: `{service_name="ai-detector"}`, From: t0, To: t0.Add(time.Second)},
	}
	_, _, err := DiffSides(context.Background(), fakeTraces{err: errJaeger}, p, q)
	if err == nil || !strings.HasPrefix(err.Error(), "comparison side of the diff: Pyroscope (http://pyroscope:4040): timed out") {
		t.Fatalf("error %v", err)
	}
	calls := p.spanCalls()
	if len(calls) != 1 || !calls[0].Start.Equal(t0.Add(-SpanWindowPadding)) || !calls[0].End.Equal(t0.Add(time.Second+SpanWindowPadding)) {
		t.Errorf("span side asked %+v", calls)
	}
	// A request whose trace cannot be read and whose samples carry no trace ID fails its side.
	q.Comparison = DiffSideQuery{LabelSelector: "{}", TraceID: demoTraceID, From: t0, To: t0.Add(time.Second)}
	_, _, err = DiffSides(context.Background(), fakeTraces{err: errJaeger}, &fakeProfiles{}, q)
	if !errors.Is(err, errJaeger) || !strings.HasPrefix(err.Error(), "comparison side of the diff: ") {
		t.Errorf("error %v", err)
	}
}
