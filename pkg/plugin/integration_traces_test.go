//go:build integration

package plugin

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// The trace resources against the bed's real Jaeger (TestMain and bedDatasource are in
// integration_test.go).

func TestRealTraceServicesResource(t *testing.T) {
	status, body := traceResource(t, bedDatasource(t), "trace-services")
	var services []string
	if err := json.Unmarshal([]byte(body), &services); status != 200 || err != nil {
		t.Fatalf("HTTP %d %s (%v)", status, body, err)
	}
	for _, want := range []string{"ai-detector", "ai-enrichment", "nemotron-backend"} {
		if !slices.Contains(services, want) {
			t.Errorf("services %v lack %s", services, want)
		}
	}
	if !slices.IsSorted(services) {
		t.Errorf("services %v are not sorted", services)
	}
}

func TestRealTracesResourceFindsASlowRequest(t *testing.T) {
	ds := bedDatasource(t)
	sent := time.Now()
	res, err := http.Get(bed.DemoURL + "/api/detect?slow=db")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	traceID := res.Header.Get("X-Trace-Id")
	if res.StatusCode != 200 || len(traceID) != 32 {
		t.Fatalf("demo: HTTP %d, X-Trace-Id %q", res.StatusCode, traceID)
	}
	path := fmt.Sprintf("traces?service=nemotron-backend&minDuration=200ms&limit=100&from=%d&to=%d",
		sent.Add(-time.Second).UnixMilli(), time.Now().Add(time.Second).UnixMilli())

	// The demo's four services export in separate batches: poll until the whole trace is in.
	var hit *models.TraceSummary
	var last string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && hit == nil; time.Sleep(500 * time.Millisecond) {
		status, body := traceResource(t, ds, path)
		if status != 200 {
			t.Fatalf("HTTP %d %s", status, body)
		}
		last = body
		var found []models.TraceSummary
		if err := json.Unmarshal([]byte(body), &found); err != nil {
			t.Fatal(err)
		}
		for i, s := range found {
			// The backend's root span ends last, so it is exported last: wait for it too.
			if s.TraceID == traceID && len(s.Services) == 4 && s.RootOperation == "GET /api/detect" {
				hit = &found[i]
			}
		}
	}
	if hit == nil {
		t.Fatalf("trace %s with four services not found within 20 s; last answer %s", traceID, last)
	}
	if hit.RootService != "nemotron-backend" || hit.RootOperation != "GET /api/detect" || hit.DurationMs < 200 ||
		strings.Join(hit.Services, ",") != "ai-detector,ai-enrichment,nemotron-backend,nemotron-llm" {
		t.Errorf("hit %+v", hit)
	}
	if !strings.Contains(last, `"traceId":"`+traceID+`"`) || !strings.Contains(last, `"durationMs":`) {
		t.Errorf("JSON field names: %s", last)
	}
}

func TestRealTracesResourceRejectsBadParameters(t *testing.T) {
	status, body := traceResource(t, bedDatasource(t), "traces?service=nemotron-backend&minDuration=fast")
	if status != 400 || !strings.Contains(body, `parameter \"minDuration\" must be a duration such as 500ms or 1s, got \"fast\"`) {
		t.Errorf("HTTP %d %s", status, body)
	}
}
