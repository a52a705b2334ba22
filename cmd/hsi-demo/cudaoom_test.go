package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

func TestCUDAOOMMessageIsPyTorchs(t *testing.T) {
	for b, want := range map[float64]string{512: "512 bytes", 2048: "2.00 KiB", 3 << 20: "3.00 MiB", 20 << 30: "20.00 GiB", 912.37 * (1 << 20): "912.37 MiB"} {
		if got := formatSize(b); got != want {
			t.Errorf("formatSize(%v) = %q, want %q", b, got, want)
		}
	}
	want := "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.21 GiB is free. " +
		"Including non-PyTorch memory, this process has 77.94 GiB memory in use. Of the allocated memory 76.52 GiB is allocated by PyTorch, " +
		"and 912.37 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting " +
		"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  " +
		"(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)"
	if got := CUDAOOMMessage(0, OOMTokens*bytesPerToken); got != want {
		t.Errorf("message\n%s\nwant\n%s", got, want)
	}
}

func TestDetectorFailsWithCUDAOOM(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	s := &service{name: "ai-detector", tracer: tp.Tracer("test")}
	for _, c := range []struct {
		query  string
		status int
		failed bool
	}{{"", 200, false}, {"?tokens=1024", 200, false}, {"?tokens=32768", 500, true}} {
		w := httptest.NewRecorder()
		s.handleDetector(w, httptest.NewRequest(http.MethodGet, "/detect"+c.query, nil))
		if w.Code != c.status {
			t.Errorf("%s: HTTP %d, want %d", c.query, w.Code, c.status)
		}
		spans := rec.Ended()
		sp := spans[len(spans)-1]
		if sp.Name() != "model.predict" {
			t.Fatalf("span %q", sp.Name())
		}
		gpu := false
		for _, a := range sp.Attributes() {
			gpu = gpu || a.Key == "gpu.index" && a.Value.AsString() == "0"
		}
		if !gpu {
			t.Errorf("%s: attributes %v lack gpu.index", c.query, sp.Attributes())
		}
		if (sp.Status().Code == codes.Error) != c.failed || len(sp.Events()) != map[bool]int{true: 1}[c.failed] {
			t.Errorf("%s: status %v, events %v", c.query, sp.Status(), sp.Events())
		}
		if !c.failed {
			continue
		}
		ev := sp.Events()[0]
		attrs := map[string]string{}
		types := 0
		for _, a := range ev.Attributes {
			attrs[string(a.Key)] = a.Value.Emit()
			if a.Key == "exception.type" {
				types++
			}
		}
		if ev.Name != "exception" || types != 1 || attrs["exception.type"] != "torch.OutOfMemoryError" ||
			!strings.HasPrefix(attrs["exception.message"], "CUDA out of memory. Tried to allocate 20.00 GiB. GPU 0 has a total capacity of 79.15 GiB") ||
			!strings.HasSuffix(attrs["exception.stacktrace"], attrs["exception.message"]) {
			t.Errorf("exception event %s %v", ev.Name, attrs)
		}
		if !strings.Contains(w.Body.String(), "torch.OutOfMemoryError: CUDA out of memory.") || !strings.HasPrefix(sp.Status().Description, "torch.OutOfMemoryError: CUDA out of memory.") {
			t.Errorf("body %q, status %q", w.Body.String(), sp.Status().Description)
		}
	}
}
