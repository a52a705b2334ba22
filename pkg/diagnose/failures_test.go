package diagnose

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

func failed(s models.Span, message string) models.Span {
	s.Status, s.StatusMessage = models.StatusError, message
	return s
}

func withException(s models.Span, typ, message string, atMs int) models.Span {
	s.Events = append(s.Events, models.SpanEvent{Name: models.ExceptionEvent, Time: t0.Add(ms(atMs)),
		Attributes: map[string]string{models.ExceptionType: typ, models.ExceptionMessage: message}})
	return s
}

func TestAFailedAttemptOnThePathIsACauseWithItsTime(t *testing.T) {
	tr := demoJoinTrace()
	tr.Spans[4] = failed(tr.Spans[4], "HTTP 500") // ai-enrichment GET /enrich, 395–465 ms
	parts, total := Breakdown(tr, nil)
	var got *BreakdownPart
	for i, p := range parts {
		if p.Kind == PartFailed {
			got = &parts[i]
		}
		if p.Service == "ai-enrichment" && p.Kind != PartFailed {
			t.Errorf("the attempt's time is also %s", p)
		}
	}
	if got == nil || got.Duration != ms(70) || got.SpanID != "e000000000000001" || got.Service != "ai-enrichment" {
		t.Fatalf("failed part %+v in %s", got, partsText(parts))
	}
	v := Verdict(answerOf(tr, nil, nil), parts, total)
	var c *Cause
	for i := range v {
		if v[i].Kind == CauseFailed {
			c = &v[i]
		}
		if v[i].Kind == CauseErrors {
			t.Errorf("an attempt on the path is listed again as an error: %+v", v[i])
		}
	}
	if c == nil || c.Explains != ms(70) || c.Title != "failed attempt in ai-enrichment (GET /enrich)" ||
		!strings.Contains(strings.Join(c.Evidence, "\n"), "ai-enrichment GET /enrich: HTTP 500 (the span's status message)") {
		t.Fatalf("failed cause %+v", c)
	}
}

func TestACUDAOOMAndItsRetryWithTheFramebuffer(t *testing.T) {
	root := jspan("a000000000000001", "", "gateway", "POST /v1/embed", 0, 900)
	call1 := failed(jspan("c000000000000001", "a000000000000001", "gateway", "POST", 10, 400), "HTTP 500")
	call1.Kind = models.SpanKindClient
	server1 := jspan("e000000000000001", "c000000000000001", "embedder", "embed_batch", 15, 390)
	server1 = failed(withException(server1, "torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.50 GiB", 400), "torch.OutOfMemoryError: CUDA out of memory")
	server1.Attributes["gpu.index"] = "0"
	call2 := jspan("c000000000000002", "a000000000000001", "gateway", "POST", 420, 460)
	call2.Kind = models.SpanKindClient
	server2 := jspan("e000000000000002", "c000000000000002", "embedder", "embed_batch", 425, 450)
	server2.Attributes[models.ProfileIDAttribute] = server2.SpanID
	server1.Attributes[models.ProfileIDAttribute] = server1.SpanID
	tr := &models.Trace{TraceID: root.TraceID, Spans: []models.Span{root, call1, server1, call2, server2}}
	gpu := gpuSeries("gpu-node-1", "0", 90)
	for i := range gpu.Samples {
		gpu.Samples[i].Figures.FBUsed, gpu.Samples[i].Figures.FBFree = 80000-float64(i), 1024+float64(i)
	}
	// 300 ms of CPU in the failed attempt, 100 ms in the retry: the retry's CPU stays its own.
	cpu := correlate.SpanProfiles{server1.SpanID: tree("embed 300000000"), server2.SpanID: tree("embed 100000000")}
	ans := answerOf(tr, cpu, []classify.GPUSeries{gpu})
	d := Request(ans)
	first := d.Verdict[0]
	if first.Kind != CauseFailed || first.Explains != ms(400) || first.SpanID != call1.SpanID ||
		first.Title != "CUDA out-of-memory in embedder (embed_batch), retried" {
		t.Fatalf("first cause %+v\nbreakdown %s", first, partsText(d.Breakdown))
	}
	ev := strings.Join(first.Evidence, "\n")
	for _, want := range []string{
		"gateway POST failed after 400ms, 400ms of it on the critical path",
		"embedder embed_batch: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB (the span's exception event)",
		"retried: the next POST took 460ms and succeeded",
		"framebuffer of gpu-node-1/0 around the failure: 78.1 GiB used at most, 1.0 GiB free at least, 99% full (DCGM_FI_DEV_FB_USED/FREE",
	} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	if !strings.Contains(first.Action, "lower the batch size") || first.Host != "gpu-node-1" || first.GPU != "0" {
		t.Errorf("action %q, GPU %s %s", first.Action, first.Host, first.GPU)
	}
	for _, p := range d.Breakdown {
		if p.Kind == PartCPU && p.Service == "embedder" && p.Duration > ms(100) {
			t.Errorf("the failed attempt's CPU went to the retry: %s", p)
		}
	}
}

func TestFailureClasses(t *testing.T) {
	cases := []struct {
		op, typ, msg, status string
		want                 string
	}{
		{"embed_batch", "torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 20.00 MiB", "", FailureCUDAOOM},
		{"generate", "torch.cuda.OutOfMemoryError", "", "", FailureCUDAOOM},
		{"infer", "RuntimeError", "CUDA error: out of memory", "", FailureCUDAOOM},
		{"infer", "", "", "cudaErrorMemoryAllocation", FailureCUDAOOM},
		{"load_model", "torch.OutOfMemoryError", "CUDA out of memory", "", FailureCUDAOOMLoad},
		{"AutoModel.from_pretrained", "", "", "CUDA out of memory", FailureCUDAOOMLoad},
		{"infer", "java.lang.OutOfMemoryError", "Java heap space", "", FailureError},
		{"GET /enrich", "", "", "HTTP 503", FailureError},
	}
	for _, c := range cases {
		root := jspan("r", "", "api", "POST /x", 0, 100)
		s := failed(jspan("a", "r", "model", c.op, 10, 50), c.status)
		if c.typ != "" || c.msg != "" {
			s = withException(s, c.typ, c.msg, 59)
		}
		tr := &models.Trace{Spans: []models.Span{root, s}}
		children := childrenOf(tr, models.NewSpanTree(tr.Spans))
		attempts, _ := failedAttempts(tr, 0, children)
		if len(attempts) != 1 || attempts[0].class != c.want {
			t.Errorf("%s %q %q %q: %+v, want %s", c.op, c.typ, c.msg, c.status, attempts, c.want)
		}
	}
}

func TestFailedSpansOffThePathAndAFailedRootExplainNoTime(t *testing.T) {
	root := failed(jspan("r", "", "api", "GET /answer", 0, 1000), "HTTP 500")
	slow := jspan("a", "r", "api", "SELECT", 0, 990)
	// A parallel call that failed early: the request waited for the SELECT, not for it.
	side := failed(jspan("b", "r", "api", "cache GET", 5, 20), "timeout")
	tr := &models.Trace{Spans: []models.Span{root, slow, side}}
	v := verdictOf(answerOf(tr, nil, nil))
	last := v[len(v)-1]
	if last.Kind != CauseErrors || last.Explains != 0 || last.Title != "2 failed span(s) off the critical path" ||
		!strings.Contains(last.Evidence[0], "api cache GET after 20ms: timeout") {
		t.Errorf("errors cause %+v", last)
	}
	for _, c := range v {
		if c.Kind == CauseFailed {
			t.Errorf("an attempt off the path: %+v", c)
		}
	}
}

// Randomised: a request nobody here built (names, durations and the depth of the failing span
// drawn at random), one attempt failed and retried, other work around it. The failed attempt is
// one cause with exactly its time on the path, the retry's own time is not in it, and the retry
// is named when there is one.
func TestRandomFailedAttemptsAreMeasuredExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(22, 7))
	word := func() string {
		const letters = "abcdefghijklmnopqrstuvwxyz"
		b := make([]byte, 4+rng.IntN(8))
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return string(b)
	}
	for n := range 200 {
		caller, callee, op := word()+"-svc", word()+"-svc", word()
		before := 1 + rng.IntN(200)
		attemptMs := 5 + rng.IntN(2000)
		gap := rng.IntN(30)
		retryMs := 5 + rng.IntN(2000)
		after := 1 + rng.IntN(200)
		total := before + attemptMs + gap + retryMs + after
		id := func(k int) string { return fmt.Sprintf("%016x", n*16+k) }
		root := jspan(id(1), "", caller, "POST /"+word(), 0, total)
		call1 := failed(jspan(id(2), id(1), caller, op, before, attemptMs), "HTTP 500")
		call1.Kind = models.SpanKindClient
		spans := []models.Span{root, call1}
		// The failure is reported one to three levels down.
		parent := id(2)
		depth := 1 + rng.IntN(3)
		for d := range depth {
			s := jspan(id(3+d), parent, callee, word(), before+d+1, attemptMs-2*(d+1))
			if d == depth-1 {
				s = failed(withException(s, "torch.OutOfMemoryError", "CUDA out of memory", before+attemptMs-d-2), "")
			}
			spans = append(spans, s)
			parent = s.SpanID
		}
		retried := rng.IntN(4) > 0
		if retried {
			call2 := jspan(id(8), id(1), caller, op, before+attemptMs+gap, retryMs)
			call2.Kind = models.SpanKindClient
			spans = append(spans, call2, jspan(id(9), id(8), callee, word(), before+attemptMs+gap+1, retryMs-2))
		}
		tr := &models.Trace{TraceID: root.TraceID, Spans: spans}
		d := Request(answerOf(tr, nil, nil))
		var c *Cause
		for i := range d.Verdict {
			if d.Verdict[i].Kind == CauseFailed {
				c = &d.Verdict[i]
			}
		}
		if c == nil || c.Explains != ms(attemptMs) || c.SpanID != call1.SpanID || c.Service != callee {
			t.Fatalf("request %d: failed cause %+v\nbreakdown %s", n, c, partsText(d.Breakdown))
		}
		if retried != strings.HasSuffix(c.Title, ", retried") || !strings.HasPrefix(c.Title, FailureCUDAOOM+" in "+callee) {
			t.Errorf("request %d (retried %v): title %q", n, retried, c.Title)
		}
		var sum time.Duration
		for _, p := range d.Breakdown {
			sum += p.Duration
		}
		if sum != d.Request || math.Abs(c.Share-float64(attemptMs)/float64(total)) > 1e-9 {
			t.Errorf("request %d: parts sum to %s of %s; share %v", n, sum, d.Request, c.Share)
		}
	}
}
