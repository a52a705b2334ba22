package pyroscope

import (
	"errors"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope/pyroscopetest"
)

// Pyroscope 2.x in v1-v2-dual mode, as the fake answers from its source (pyroscopetest): a
// trace_id_selector query whose range reaches the v1 storage is refused whole, naming no split.

func TestDualModeRefusalNamesWhereTheSelectorIsServedFoundByNarrowingTheRange(t *testing.T) {
	at := time.Now().Add(-5 * time.Minute)
	split := at.Add(-3*time.Minute - 417*time.Millisecond)
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2, V1Until: split}
	requestSamples(srv, "ai-detector", at)
	c := newTraceClient(t, srv)

	q := traceQuery("ai-detector", traceA, at)
	q.Start = at.Add(-15 * time.Minute)
	_, err := c.MergedFlameGraph(t.Context(), q)
	se, ok := errors.AsType[*models.TraceSelectorSplitError](err)
	if !ok || !errors.Is(err, models.ErrTraceSelectorRefused) {
		t.Fatalf("err = %v", err)
	}
	// Found to within a second: never before the split (that part would be refused again).
	if se.From.Before(split) || se.From.Sub(split) > time.Second {
		t.Errorf("served from %v, split at %v", se.From, split)
	}
	calls := len(srv.TraceSelectorCalls())
	if calls > 2+splitProbes {
		t.Errorf("%d calls to find the split", calls)
	}

	// Asked from there on, the selector answers the trace's samples.
	q.Start = se.From
	fg, err := c.MergedFlameGraph(t.Context(), q)
	if err != nil || fg.Total != 300 {
		t.Errorf("after the split: %v, %v", fg, err)
	}

	// Another service's query over the same range reuses the split: one refused call, no
	// narrowing.
	before := len(srv.TraceSelectorCalls())
	q2 := traceQuery("ai-enrichment", traceA, at)
	q2.Start = at.Add(-15 * time.Minute)
	_, err = c.MergedFlameGraph(t.Context(), q2)
	if se2, ok := errors.AsType[*models.TraceSelectorSplitError](err); !ok || !se2.From.Equal(se.From) {
		t.Errorf("second query: %v", err)
	}
	if n := len(srv.TraceSelectorCalls()) - before; n != 1 {
		t.Errorf("second query made %d calls", n)
	}
}

func TestDualModeRangeWhollyInV1StorageStaysAPlainRefusal(t *testing.T) {
	at := time.Now().Add(-5 * time.Minute)
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2, V1Until: at.Add(time.Hour)}
	requestSamples(srv, "ai-detector", at)
	c := newTraceClient(t, srv)
	_, err := c.MergedFlameGraph(t.Context(), traceQuery("ai-detector", traceA, at))
	if _, split := errors.AsType[*models.TraceSelectorSplitError](err); split || !errors.Is(err, models.ErrTraceSelectorRefused) {
		t.Errorf("err = %v", err)
	}
}

func TestDualModeHeatmapRefusalIsNotAMissingCall(t *testing.T) {
	at := time.Now().Add(-5 * time.Minute)
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2, V1Until: at.Add(-3 * time.Minute)}
	requestSamples(srv, "ai-detector", at)
	c := newTraceClient(t, srv)
	hq := models.HeatmapQuery{ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="ai-detector"}`,
		Start: at.Add(-10 * time.Minute), End: at.Add(time.Minute), Step: time.Minute}
	_, err := c.Heatmap(t.Context(), hq)
	if !errors.Is(err, models.ErrUnsupported) {
		t.Fatalf("err = %v", err)
	}
	if ue, _ := errors.AsType[*models.UnsupportedError](err); ue == nil || !ue.V1Range || ue.Call != "SelectHeatmap" {
		t.Errorf("dual-mode refusal = %#v, want SelectHeatmap refused for its v1 range", err)
	}
	hq.Start = at.Add(-2 * time.Minute)
	if _, err := c.Heatmap(t.Context(), hq); err != nil {
		t.Errorf("range after the split: %v", err)
	}

	old := newTraceClient(t, &pyroscopetest.Server{Version: pyroscopetest.V112})
	_, err = old.Heatmap(t.Context(), hq)
	if ue, _ := errors.AsType[*models.UnsupportedError](err); ue == nil || ue.V1Range || ue.Since != "1.19" {
		t.Errorf("1.12 refusal = %#v, want SelectHeatmap missing before 1.19", err)
	}
}
