//go:build integration

package jaeger

import (
	"context"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// A failed attempt and its retry, sent to the bed's Jaeger over OTLP by the OpenTelemetry SDK:
// the span status (code and message) and the exception event must come back on both APIs (v3:
// OTLP's status and events; v1: the otel.status_code / otel.status_description / error tags and
// the logs), or the verdict never sees a failure.
func TestRealSpanStatusAndExceptionsOnBothAPIs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), tritonTraceTimeout)
	defer cancel()
	traceID, err := testbed.SendSpans(ctx, bed.JaegerOTLP, time.Now().Add(-5*time.Second), testbed.FailedAttemptSpans)
	if err != nil {
		t.Fatal(err)
	}
	for _, api := range []string{APIv3, APIv1} {
		tr := waitForSpans(t, bedClient(t, api), traceID, len(testbed.FailedAttemptSpans))
		failed := map[string]models.Span{}
		var ok int
		for _, s := range tr.Spans {
			switch {
			case s.Failed():
				failed[s.Service+" "+s.Operation] = s
			case s.Status == models.StatusOK:
				ok++
			}
		}
		server, client := failed["hsi-embedder embed_batch"], failed["hsi-gateway POST"]
		if len(failed) != 2 || server.StatusMessage != testbed.OOMStatusMessage || client.StatusMessage != "HTTP 500" {
			t.Errorf("%s: failed spans %+v", api, failed)
		}
		typ, msg, found := server.Exception()
		if !found || typ != testbed.OOMExceptionType || msg != testbed.OOMExceptionMessage {
			t.Errorf("%s: exception %q %q %v, events %+v", api, typ, msg, found, server.Events)
		}
		// The retry's server span set OK; the spans that set nothing have no status.
		if ok != 1 {
			t.Errorf("%s: %d span(s) with status OK, want 1", api, ok)
		}
	}
}
