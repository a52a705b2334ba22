//go:build integration

package jaeger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// These tests run against the test bed's real Jaeger, fed by the demo (run with -tags
// integration; scripts/test.sh does).

var bed testbed.Endpoints

func TestMain(m *testing.M) { os.Exit(testbed.MainForTests(m, &bed)) }

// demoServices are the services one demo request goes through; all but the simulated engine
// (nemotron-llm, which stands for a server sending traces but no span profiles) are profiled.
var (
	demoServices     = []string{"ai-detector", "ai-enrichment", "nemotron-backend", "nemotron-llm"}
	profiledServices = map[string]bool{"ai-detector": true, "ai-enrichment": true, "nemotron-backend": true}
)

// slowRequest makes the demo serve one request slow in its database step and returns its trace
// ID and when it was sent and answered.
func slowRequest(t *testing.T) (traceID string, sent, answered time.Time) {
	t.Helper()
	if bed.DemoURL == "" {
		t.Fatal("the test bed runs no demo (HSI_TESTBED_DEMO_URL is empty)")
	}
	sent = time.Now()
	res, err := http.Get(bed.DemoURL + "/api/detect?slow=db")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	answered = time.Now()
	traceID = res.Header.Get("X-Trace-Id")
	if res.StatusCode != 200 || len(traceID) != 32 {
		t.Fatalf("demo: HTTP %d, X-Trace-Id %q", res.StatusCode, traceID)
	}
	return traceID, sent, answered
}

// waitForWholeTrace polls Jaeger (at most 20 s) until the trace has all three services, one
// root, every parent inside the trace, and the same span count twice in a row: the three
// services export their spans in separate batches.
func waitForWholeTrace(t *testing.T, c *Client, traceID string) *models.Trace {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	prev := -1
	var last error
	for time.Now().Before(deadline) {
		tr, err := c.Trace(context.Background(), traceID)
		last = err
		if err == nil {
			if why := incomplete(tr); why != "" {
				last = errors.New(why)
			} else if len(tr.Spans) == prev {
				return tr
			} else {
				prev = len(tr.Spans)
			}
		} else if !errors.Is(err, ErrTraceNotFound) {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("trace %s not complete in Jaeger within 20 s: %v", traceID, last)
	return nil
}

func incomplete(tr *models.Trace) string {
	ids := map[string]bool{}
	services := map[string]bool{}
	for _, s := range tr.Spans {
		ids[s.SpanID] = true
		services[s.Service] = true
	}
	roots := 0
	for _, s := range tr.Spans {
		if s.ParentSpanID == "" {
			roots++
		} else if !ids[s.ParentSpanID] {
			return fmt.Sprintf("span %s's parent %s not there yet", s.SpanID, s.ParentSpanID)
		}
	}
	if len(services) != len(demoServices) || roots != 1 {
		return fmt.Sprintf("%d spans, services %v, %d roots", len(tr.Spans), services, roots)
	}
	return ""
}

// bedClient is a client of the bed's Jaeger forced to api ("": detect).
func bedClient(t *testing.T, api string) *Client {
	t.Helper()
	u := models.Upstream{Name: models.Jaeger, URL: bed.JaegerURL, Timeout: 10 * time.Second}
	hc, err := upstream.NewHTTPClient(u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(hc.Close)
	c := New(u, hc.Client)
	if err := c.UseAPI(api); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRealTraceIsTheSameOnV3AndV1(t *testing.T) {
	traceID, _, _ := slowRequest(t)
	v3 := waitForWholeTrace(t, bedClient(t, APIv3), traceID)
	v1, err := bedClient(t, APIv1).Trace(context.Background(), traceID)
	if err != nil {
		t.Fatal(err)
	}
	if v3.API != APIv3 || v1.API != APIv1 || v3.TraceID != traceID || v1.TraceID != traceID {
		t.Errorf("v3 %s %s, v1 %s %s", v3.API, v3.TraceID, v1.API, v1.TraceID)
	}

	// The same spans: IDs, parents, services, operations; times agree within 1 µs (v1 has
	// microseconds, v3 nanoseconds).
	if len(v3.Spans) != len(v1.Spans) {
		t.Fatalf("v3 has %d spans, v1 %d", len(v3.Spans), len(v1.Spans))
	}
	within := func(d time.Duration) bool { return d <= time.Microsecond && d >= -time.Microsecond }
	byID := map[string]models.Span{}
	for _, s := range v1.Spans {
		byID[s.SpanID] = s
	}
	for _, a := range v3.Spans {
		b, ok := byID[a.SpanID]
		if !ok {
			t.Errorf("span %s %q only in v3", a.SpanID, a.Operation)
			continue
		}
		if a.TraceID != b.TraceID || a.ParentSpanID != b.ParentSpanID || a.Service != b.Service || a.Operation != b.Operation ||
			!within(a.Start.Sub(b.Start)) || !within(a.Duration-b.Duration) {
			t.Errorf("span %s differs:\nv3 %s\nv1 %s", a.SpanID, spanKey(a), spanKey(b))
		}
	}

	for _, tr := range []*models.Trace{v3, v1} {
		spans := map[string]models.Span{}
		services := map[string]bool{}
		for _, s := range tr.Spans {
			spans[s.SpanID] = s
			services[s.Service] = true
			if s.Resource["host.name"] != "gpu-node-1" {
				t.Errorf("%s: span %s of %s: resource host.name = %q", tr.API, s.SpanID, s.Service, s.Resource["host.name"])
			}
		}
		var got []string
		for s := range services {
			got = append(got, s)
		}
		slices.Sort(got)
		if !slices.Equal(got, demoServices) {
			t.Errorf("%s: services %v", tr.API, got)
		}
		// Each profiled service's local root (no parent, or a parent in another service) carries
		// pyroscope.profile.id = its own span ID, which the trace-to-profile link relies on.
		localRoots := 0
		for _, s := range tr.Spans {
			if parent, ok := spans[s.ParentSpanID]; s.ParentSpanID == "" || ok && parent.Service != s.Service {
				localRoots++
				if want := map[bool]string{true: s.SpanID}[profiledServices[s.Service]]; s.Attributes[models.ProfileIDAttribute] != want {
					t.Errorf("%s: local root %s %q of %s: %s = %q", tr.API, s.SpanID, s.Operation, s.Service,
						models.ProfileIDAttribute, s.Attributes[models.ProfileIDAttribute])
				}
			}
		}
		if localRoots != len(demoServices) {
			t.Errorf("%s: %d local roots, want one per service", tr.API, localRoots)
		}
		if root := tr.Spans[0]; root.ParentSpanID != "" || root.Service != "nemotron-backend" || root.Attributes["demo.slow"] != "db" {
			t.Errorf("%s: earliest span %s, want the backend's root of the slow=db request", tr.API, spanKey(root))
		}
	}
}

func TestRealFindTracesFindsTheSlowRequestOnBothAPIs(t *testing.T) {
	traceID, sent, answered := slowRequest(t)
	want := waitForWholeTrace(t, bedClient(t, APIv3), traceID)
	for _, api := range []string{APIv3, APIv1} {
		// A window around the one request, so that the demo's steady traffic cannot push it out
		// of the search depth.
		found, err := bedClient(t, api).FindTraces(context.Background(), models.TraceSearchQuery{
			Service: "nemotron-backend", MinDuration: 200 * time.Millisecond,
			Start: sent.Add(-time.Second), End: answered.Add(time.Second), Limit: 100,
		})
		if err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		i := slices.IndexFunc(found, func(s models.TraceSummary) bool { return s.TraceID == traceID })
		if i < 0 {
			t.Fatalf("%s: trace %s not among %d hits %+v", api, traceID, len(found), found)
		}
		s := found[i]
		if s.RootService != "nemotron-backend" || s.RootOperation != want.Spans[0].Operation || s.Spans != len(want.Spans) ||
			!slices.Equal(s.Services, demoServices) || s.Duration < 200*time.Millisecond {
			t.Errorf("%s: hit %+v", api, s)
		}
		for j, h := range found {
			if h.Duration < 200*time.Millisecond || !slices.Contains(h.Services, "nemotron-backend") {
				t.Errorf("%s: hit %d %+v is not a nemotron-backend trace of 200 ms or more", api, j, h)
			}
			if j > 0 && found[j-1].Duration < h.Duration {
				t.Errorf("%s: not slowest first at %d", api, j)
			}
		}
	}
}

func TestRealMissingTraceIsNotFoundOnBothAPIs(t *testing.T) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	for _, api := range []string{APIv3, APIv1} {
		_, err := bedClient(t, api).Trace(context.Background(), id)
		if !errors.Is(err, ErrTraceNotFound) || !strings.Contains(err.Error(), "Jaeger ("+bed.JaegerURL+"): trace "+id+" not found") {
			t.Errorf("%s: err = %v, want ErrTraceNotFound naming Jaeger and the trace", api, err)
		}
	}
}

func TestRealDetectionPicksV3(t *testing.T) {
	c := bedClient(t, "")
	if api, err := c.detectAPI(context.Background()); err != nil || api != APIv3 {
		t.Errorf("detected %q, err %v", api, err)
	}
}

func TestRealSearchSpansAndOperationsAgreeOnBothAPIs(t *testing.T) {
	traceID, sent, answered := slowRequest(t)
	want := waitForWholeTrace(t, bedClient(t, APIv3), traceID)
	for _, api := range []string{APIv3, APIv1} {
		c := bedClient(t, api)
		spans, err := c.SearchSpans(context.Background(), models.TraceSearchQuery{
			Service: "nemotron-backend", Operation: "db_query",
			Start: sent.Add(-time.Second), End: answered.Add(time.Second), Limit: 100,
		})
		if err != nil {
			t.Fatalf("%s: %v", api, err)
		}
		// Jaeger answers whole traces: the slow request's every span, db_query among them.
		var got []models.Span
		for _, s := range spans {
			if s.TraceID == traceID {
				got = append(got, s)
			}
		}
		if len(got) != len(want.Spans) {
			t.Errorf("%s: %d spans of trace %s, want its %d", api, len(got), traceID, len(want.Spans))
		}
		if !slices.ContainsFunc(got, func(s models.Span) bool { return s.Operation == "db_query" && s.Service == "nemotron-backend" }) {
			t.Errorf("%s: no db_query span in %+v", api, got)
		}
		ops, err := c.Operations(context.Background(), "nemotron-backend")
		if err != nil || !slices.Contains(ops, "db_query") || !slices.Contains(ops, want.Spans[0].Operation) || !slices.IsSorted(ops) {
			t.Errorf("%s: operations %q err %v", api, ops, err)
		}
	}
}
