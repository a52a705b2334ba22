//go:build integration

package testbed

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// demoOOMTokens is what makes the demo's detector fail with a CUDA out-of-memory error
// (cmd/hsi-demo OOMTokens: 32768 tokens ask 20 GiB of a nearly full GPU).
const demoOOMTokens = 32768

// A request of demoOOMTokens tokens fails in the detector's model.predict span as PyTorch fails:
// an exception event torch.OutOfMemoryError with the caching allocator's message, status ERROR,
// HTTP 500 from the detector and the backend; the diagnosis calls it a CUDA out-of-memory.
func TestDemoRequestFailsWithCUDAOOM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), demoTraceTimeout)
	defer cancel()
	res, err := http.Get(bed.DemoURL + "/api/detect?tokens=" + strconv.Itoa(demoOOMTokens))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	traceID := res.Header.Get("X-Trace-Id")
	if res.StatusCode != http.StatusInternalServerError || len(traceID) != 32 || !strings.Contains(string(body), "torch.OutOfMemoryError: CUDA out of memory.") {
		t.Fatalf("HTTP %d, trace ID %q, body %q; want 500 with PyTorch's error", res.StatusCode, traceID, body)
	}

	u := models.Upstream{Name: models.Jaeger, URL: bed.JaegerURL, Timeout: 10 * time.Second}
	hc, err := upstream.NewHTTPClient(u)
	if err != nil {
		t.Fatal(err)
	}
	defer hc.Close()
	client := jaeger.New(u, hc.Client)
	// The failed request's spans: the backend's server span, db_query and its call to the
	// detector; the detector's server span and model.predict. Nothing after the failure.
	want := map[string]int{"nemotron-backend": 3, "ai-detector": 2}
	var tr *models.Trace
	for {
		tr, err = client.Trace(ctx, traceID)
		got := map[string]int{}
		ids := map[string]bool{}
		if err == nil {
			for _, s := range tr.Spans {
				got[s.Service]++
				ids[s.SpanID] = true
			}
		}
		orphans := 0
		if tr != nil {
			for _, s := range tr.Spans {
				if s.ParentSpanID != "" && !ids[s.ParentSpanID] {
					orphans++
				}
			}
		}
		if err == nil && orphans == 0 && got["nemotron-backend"] == want["nemotron-backend"] && got["ai-detector"] == want["ai-detector"] {
			if len(tr.Spans) != 5 {
				t.Fatalf("trace %s: %d spans %v, want 5", traceID, len(tr.Spans), got)
			}
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("trace %s incomplete in Jaeger after %s: %v; spans per service %v, want %v, %d orphans", traceID, demoTraceTimeout, err, got, want, orphans)
		case <-time.After(500 * time.Millisecond):
		}
	}

	var predict *models.Span
	for i, s := range tr.Spans {
		if s.Service == "ai-detector" && s.Operation == "model.predict" {
			predict = &tr.Spans[i]
		}
	}
	if predict == nil {
		t.Fatalf("no model.predict span in %+v", tr.Spans)
	}
	typ, msg, ok := predict.Exception()
	const wantMsg = "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.21 GiB is free. " +
		"Including non-PyTorch memory, this process has 77.94 GiB memory in use."
	if !ok || typ != "torch.OutOfMemoryError" || !strings.HasPrefix(msg, wantMsg) {
		t.Errorf("model.predict's exception: %v %q %q, want torch.OutOfMemoryError %q…", ok, typ, msg, wantMsg)
	}
	if !predict.Failed() || !strings.HasPrefix(predict.StatusMessage, "torch.OutOfMemoryError: CUDA out of memory.") {
		t.Errorf("model.predict's status %q %q, want ERROR with PyTorch's error", predict.Status, predict.StatusMessage)
	}
	if predict.Attributes["gpu.index"] != "0" || predict.Attributes["demo.tokens"] != strconv.Itoa(demoOOMTokens) ||
		predict.Resource["host.name"] != GPUSimHost || predict.Resource["service.name"] != "ai-detector" {
		t.Errorf("model.predict's attributes %v, resource %v", predict.Attributes, predict.Resource)
	}
	// The servers answered 500: their server spans failed too.
	for _, s := range tr.Spans {
		if s.Kind == models.SpanKindServer && (!s.Failed() || s.Attributes["http.response.status_code"]+s.Attributes["http.status_code"] != "500") {
			t.Errorf("%s %s: status %q, attributes %v; want ERROR and HTTP 500", s.Service, s.Operation, s.Status, s.Attributes)
		}
	}

	// The diagnosis reads the trace as a failed attempt with a CUDA out-of-memory error in the
	// detector's model.predict.
	d := diagnose.Request(&correlate.TraceAnswer{Trace: tr})
	found := false
	for _, c := range d.Verdict {
		if c.Kind == diagnose.CauseFailed && strings.HasPrefix(c.Title, diagnose.FailureCUDAOOM+" in ai-detector (model.predict)") {
			found = true
		}
	}
	if !found {
		t.Errorf("verdict %+v, want a %q cause in ai-detector (model.predict)", d.Verdict, diagnose.FailureCUDAOOM)
	}
}
