//go:build integration

package jaeger

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// FailedTraces finds the traces with a failed span and not the others: one failed and one
// successful request of a service of its own are sent, and the search of that service, on both
// APIs, answers the failed one only, whole. (The bed's in-memory Jaeger answers the tag search
// wrongly, jaegertracing/jaeger#8553: the recent-traces search is what finds it there.)
func TestRealFailedTracesFindsOnlyFailedRequests(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), tritonTraceTimeout)
	defer cancel()
	service := fmt.Sprintf("hsi-failing-%d", time.Now().UnixNano())
	spans := slices.Clone(testbed.FailedAttemptSpans)
	for i := range spans {
		spans[i].Service = service + "-" + spans[i].Service
	}
	start := time.Now().Add(-5 * time.Second)
	failedID, err := testbed.SendSpans(ctx, bed.JaegerOTLP, start, spans)
	if err != nil {
		t.Fatal(err)
	}
	ok := slices.Clone(spans)
	for i := range ok {
		ok[i].Status, ok[i].StatusMessage, ok[i].Events = codes.Unset, "", nil
	}
	okID, err := testbed.SendSpans(ctx, bed.JaegerOTLP, start, ok)
	if err != nil {
		t.Fatal(err)
	}
	embedder := service + "-hsi-embedder"
	for _, api := range []string{APIv3, APIv1} {
		c := bedClient(t, api)
		// Both traces whole before the search is asked, so a miss is the search's.
		waitForSpans(t, c, failedID, len(spans))
		waitForSpans(t, c, okID, len(ok))
		found, err := c.FailedTraces(ctx, models.TraceSearchQuery{Service: embedder, Start: start.Add(-time.Minute), End: time.Now().Add(time.Minute), Limit: 20})
		if err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		if len(found) != 1 || found[0].TraceID != failedID {
			var ids []string
			for _, tr := range found {
				ids = append(ids, tr.TraceID)
			}
			t.Fatalf("%s: found %v, want only the failed trace %s (not %s)", api, ids, failedID, okID)
		}
		if n := len(found[0].Spans); n != len(spans) {
			t.Errorf("%s: %d spans of the failed trace, want all %d", api, n, len(spans))
		}
		var exc bool
		for _, s := range found[0].Spans {
			if typ, _, has := s.Exception(); has && typ == testbed.OOMExceptionType && s.Failed() {
				exc = true
			}
		}
		if !exc {
			t.Errorf("%s: the failed span's exception event did not come back", api)
		}
	}
}
