//go:build integration

package jaeger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// A request as NVIDIA Triton's OpenTelemetry trace mode records it, sent to the bed's Jaeger over
// OTLP: the plugin reads Triton's queue and compute times from its span events, so the events
// must come back whole, with their exact times, on both APIs (v3: events; v1: logs).

// tritonTraceTimeout bounds the wait for the exported trace to be queryable (about a second).
const tritonTraceTimeout = 30 * time.Second

// waitForSpans polls Jaeger until trace traceID has n spans.
func waitForSpans(t *testing.T, c *Client, traceID string, n int) *models.Trace {
	t.Helper()
	deadline := time.Now().Add(tritonTraceTimeout)
	var last error
	for time.Now().Before(deadline) {
		tr, err := c.Trace(context.Background(), traceID)
		if err == nil && len(tr.Spans) == n {
			return tr
		}
		if err != nil && !errors.Is(err, ErrTraceNotFound) {
			t.Fatal(err)
		}
		last = err
		if err == nil {
			last = fmt.Errorf("%d span(s) so far", len(tr.Spans))
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("trace %s has not %d spans in Jaeger within %s: %v", traceID, n, tritonTraceTimeout, last)
	return nil
}

func TestRealTritonTraceKeepsItsEventsOnBothAPIs(t *testing.T) {
	start := time.Now().Add(-5 * time.Second).Truncate(time.Microsecond)
	ctx, cancel := context.WithTimeout(context.Background(), tritonTraceTimeout)
	defer cancel()
	traceID, err := testbed.SendTritonTrace(ctx, bed.JaegerOTLP, start)
	if err != nil {
		t.Fatal(err)
	}
	v3 := waitForSpans(t, bedClient(t, APIv3), traceID, len(testbed.TritonSpans))
	v1 := waitForSpans(t, bedClient(t, APIv1), traceID, len(testbed.TritonSpans))

	for _, tr := range []*models.Trace{v3, v1} {
		byName := map[string]models.Span{}
		for _, s := range tr.Spans {
			byName[s.Operation] = s
		}
		parent := ""
		for _, want := range testbed.TritonSpans {
			s, ok := byName[want.Name]
			if !ok {
				t.Errorf("%s: no span %q among %d", tr.API, want.Name, len(tr.Spans))
				continue
			}
			if s.Service != testbed.TritonService || s.ParentSpanID != parent || !s.Start.Equal(start.Add(want.Start)) ||
				s.Duration != want.End-want.Start {
				t.Errorf("%s: span %s: service %q parent %q start %v duration %v", tr.API, want.Name, s.Service, s.ParentSpanID,
					s.Start.Sub(start), s.Duration)
			}
			parent = s.SpanID
			// Triton's root span is the server's; the model and compute spans are internal.
			if wantKind := want.Kind.String(); s.Kind != wantKind {
				t.Errorf("%s: span %s: kind %q, want %q", tr.API, want.Name, s.Kind, wantKind)
			}
			var got, wantEvents []string
			for _, e := range s.Events {
				got = append(got, e.Name+" +"+e.Time.Sub(start).String())
			}
			for _, e := range want.Events {
				wantEvents = append(wantEvents, e.Name+" +"+e.At.String())
			}
			if !slices.Equal(got, wantEvents) {
				t.Errorf("%s: span %s: events\n%v\nwant\n%v", tr.API, want.Name, got, wantEvents)
			}
			if !slices.IsSortedFunc(s.Events, func(a, b models.SpanEvent) int { return a.Time.Compare(b.Time) }) {
				t.Errorf("%s: span %s: events out of time order", tr.API, want.Name)
			}
		}
		model := byName[testbed.TritonModel]
		if model.Attributes["model_name"] != testbed.TritonModel || model.Attributes["model_version"] != testbed.TritonVersion {
			t.Errorf("%s: model span attributes %v", tr.API, model.Attributes)
		}
	}
	// The figures the plugin derives from the events.
	for _, tr := range []*models.Trace{v3, v1} {
		var queued, computeStart, computeEnd time.Time
		for _, s := range tr.Spans {
			if at, ok := s.Event("QUEUE_START"); ok {
				queued = at
			}
			if at, ok := s.Event("COMPUTE_START"); ok {
				computeStart = at
			}
			if at, ok := s.Event("COMPUTE_END"); ok {
				computeEnd = at
			}
		}
		if q, c := computeStart.Sub(queued), computeEnd.Sub(computeStart); q != testbed.TritonQueue || c != testbed.TritonCompute {
			t.Errorf("%s: queue %v, compute %v; want %v and %v", tr.API, q, c, testbed.TritonQueue, testbed.TritonCompute)
		}
	}
}
