package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

func partsText(parts []BreakdownPart) string {
	var out []string
	for _, p := range parts {
		out = append(out, p.String())
	}
	return strings.Join(out, "; ")
}

func TestBreakdownOfARequestSlowedByTheEnginesQueue(t *testing.T) {
	engine := jspan("v1", "r", "vllm", "llm_request", 50, 900)
	engine.Attributes = map[string]string{correlate.AttrTimeInQueue: "0.6", correlate.AttrTimeInPrefill: "0.1", correlate.AttrTimeInDecode: "0.15", correlate.AttrE2E: "0.9"}
	tr := &models.Trace{Spans: []models.Span{jspan("r", "", "api", "POST /v1/completions", 0, 1000), engine}}
	parts, total := Breakdown(tr, correlate.JoinTrace(correlate.TraceJoin{Trace: tr, Join: models.DefaultJoinSettings().SpanMatch}))
	want := "queue in vllm: 600ms; decode in vllm: 150ms; prefill in vllm: 100ms; unexplained in api: 100ms; unexplained in vllm: 50ms"
	if got := partsText(parts); got != want {
		t.Errorf("parts:\n got %s\nwant %s", got, want)
	}
	if total != time.Second {
		t.Errorf("total %s, want the request's 1s", total)
	}
	if parts[0].Source != "span attribute gen_ai.latency.time_in_queue" {
		t.Errorf("source %q", parts[0].Source)
	}
}

func TestBreakdownSplitsProfiledTimeIntoCPUAndTheRest(t *testing.T) {
	tr := demoJoinTrace()
	cpu := correlate.SpanProfiles{
		"b000000000000001": tree("main.handleDetect;main.dbQuery 250000000"), // 250 ms of CPU
		"d000000000000001": tree("main.handleDetector;main.modelPredict 30000000"),
		"e000000000000001": tree(),
	}
	rows := correlate.JoinTrace(correlate.TraceJoin{Trace: tr, CPU: cpu, Join: models.DefaultJoinSettings().SpanMatch})
	kernel := int64(20 * time.Millisecond)
	for i := range rows {
		if rows[i].Span.Operation == "model.predict" {
			rows[i].GPUKernelTime = &kernel
		}
	}
	parts, total := Breakdown(tr, rows)
	if total != 500*time.Millisecond {
		t.Fatalf("total %s, want the root's 500ms", total)
	}
	got := map[string]time.Duration{}
	for _, p := range parts {
		got[p.Kind+" "+p.Service] = p.Duration
	}
	// The backend's path time: 500 ms less the detector (310–390) and the enrichment (395–465):
	// 350 ms, of which its profiles saw 250 ms of CPU.
	for k, want := range map[string]time.Duration{
		"cpu nemotron-backend":     250 * time.Millisecond,
		"off-cpu nemotron-backend": 100 * time.Millisecond,
		"gpu kernels ai-detector":  20 * time.Millisecond,
		"cpu ai-detector":          30 * time.Millisecond,
		// model.predict ran kernels: its time neither in them nor on the CPU is the GPU idle.
		"gpu idle ai-detector":  30 * time.Millisecond,
		"off-cpu ai-detector":   0,
		"off-cpu ai-enrichment": 70 * time.Millisecond,
	} {
		if got[k] != want {
			t.Errorf("%s: %s, want %s (all: %s)", k, got[k], want, partsText(parts))
		}
	}
	if parts[0].Kind != PartCPU || parts[0].Service != "nemotron-backend" {
		t.Errorf("largest part %s", parts[0])
	}
	// The verdict names the idle GPU with what the kernel trace says about it.
	kt := &gputrace.Result{Idle: []gputrace.StreamIdle{{Idle: 4_000_000, HostWait: 3_000_000, KernelWait: 500_000}},
		Launch: gputrace.LaunchStats{Joined: 200, ShorterThanLaunch: 0.6}}
	kt.Sync.Calls, kt.Sync.Time = 12, 2_500_000
	causes := Verdict(&correlate.TraceAnswer{Trace: tr, Rows: rows, KernelTraces: []*gputrace.Result{kt}}, parts, total)
	var idle *Cause
	for i := range causes {
		if causes[i].Kind == CauseGPUIdle {
			idle = &causes[i]
		}
	}
	if idle == nil || idle.Title != "GPU idle in ai-detector (model.predict)" || idle.Explains != 30*time.Millisecond {
		t.Fatalf("GPU idle cause %+v in %+v", idle, causes)
	}
	ev := strings.Join(idle.Evidence, "\n")
	for _, want := range []string{"streams idle 4ms, of which host wait 3ms (GPU idle while the host was busy) and kernel wait 500µs",
		"60% of 200 launched kernels ran shorter than their launch call", "12 synchronising call(s) blocked the host 2.5ms"} {
		if !strings.Contains(ev, want) {
			t.Errorf("evidence lacks %q:\n%s", want, ev)
		}
	}
	// No other request's kernel traces to compare with: no cause links to the kernels diff.
	for _, c := range causes {
		if c.KernelDiff {
			t.Errorf("%s links to a kernels diff without a baseline", c.Title)
		}
	}
	// With some, the causes read from the kernel traces do, and only they.
	causes = Verdict(&correlate.TraceAnswer{Trace: tr, Rows: rows, KernelTraces: []*gputrace.Result{kt}, KernelBaselines: 3}, parts, total)
	linked := map[string]bool{}
	for _, c := range causes {
		linked[c.Kind] = c.KernelDiff
		if c.Kind == CauseGPUKernels && !strings.HasSuffix(c.Action, "its link compares them with the service's recent requests (the kernels diff)") {
			t.Errorf("GPU kernels action %q", c.Action)
		}
	}
	if !linked[CauseGPUKernels] || !linked[CauseGPUIdle] || linked[CauseCPU] || linked[CauseWaiting] {
		t.Errorf("kernels diff links by kind: %v", linked)
	}
}

func TestBreakdownIgnoresEngineFiguresThatAreNotDurations(t *testing.T) {
	engine := jspan("v1", "", "vllm", "llm_request", 0, 100)
	engine.Attributes = map[string]string{correlate.AttrTimeInQueue: "NaN", correlate.AttrTimeInPrefill: "-1", correlate.AttrTimeInDecode: "5"}
	tr := &models.Trace{Spans: []models.Span{engine}}
	parts, total := Breakdown(tr, nil)
	// A decode longer than the span is cut to it; the rest are not durations.
	if got := partsText(parts); got != "decode in vllm: 100ms" || total != 100*time.Millisecond {
		t.Errorf("parts %s total %s", got, total)
	}
	if parts, total := Breakdown(&models.Trace{}, nil); parts != nil || total != 0 {
		t.Errorf("empty trace: %v %s", parts, total)
	}
}

func TestBreakdownReadsTritonsQueueAndComputeTimestamps(t *testing.T) {
	tr := tritonTrace(12, 700, 950)
	parts, total := Breakdown(tr, nil)
	// Queue: QUEUE_START 12 ms to COMPUTE_START 700 ms; compute 250 ms; the rest (10 + 2 + 40
	// of the model span + 10 of InferRequest) nothing explains.
	want := "queue in triton-inference-server: 688ms; compute in triton-inference-server: 250ms; unexplained in triton-inference-server: 62ms"
	if got := partsText(parts); got != want || total != time.Second {
		t.Errorf("parts:\n got %s (total %s)\nwant %s", got, total, want)
	}
	if parts[0].SpanID != "t2" || parts[0].Source != "span events QUEUE_START → COMPUTE_START (Triton)" {
		t.Errorf("queue part %+v", parts[0])
	}
	if parts[1].SpanID != "t3" || parts[1].Source != "span events COMPUTE_START → COMPUTE_END (Triton)" {
		t.Errorf("compute part %+v", parts[1])
	}
	causes := Verdict(&correlate.TraceAnswer{Trace: tr}, parts, total)
	if len(causes) < 2 || causes[0].Kind != CauseQueue || causes[1].Kind != CauseModel || causes[1].Title != "the model in triton-inference-server (compute)" {
		t.Fatalf("causes %+v", causes)
	}
	// Without the compute child, the model span's queue start alone says nothing.
	tr.Spans = tr.Spans[:2]
	if parts, _ := Breakdown(tr, nil); parts[0].Kind != PartUnexplained {
		t.Errorf("no compute span: %s", partsText(parts))
	}
}

func TestBreakdownCountsACallsOwnTimeAsWaitingOnTheCallee(t *testing.T) {
	root := jspan("r", "", "api", "GET /api", 0, 500)
	root.Kind = models.SpanKindServer
	call := jspan("c", "r", "api", "HTTP GET", 10, 300) // 10..310
	call.Kind = models.SpanKindClient
	served := jspan("s", "c", "model", "POST /predict", 60, 200) // 60..260: 100 ms the callee's spans do not cover
	served.Kind = models.SpanKindServer
	db := jspan("d", "r", "api", "SELECT", 320, 150) // an untraced database
	db.Kind = models.SpanKindClient
	db.Attributes = map[string]string{"db.system": "postgresql", "server.address": "db-1"}
	tr := &models.Trace{Spans: []models.Span{root, call, served, db}}
	parts, total := Breakdown(tr, nil)
	want := "unexplained in model: 200ms; downstream in api (postgresql): 150ms; downstream in api (model): 100ms; unexplained in api: 50ms"
	if got := partsText(parts); got != want || total != 500*time.Millisecond {
		t.Errorf("parts:\n got %s (total %s)\nwant %s", got, total, want)
	}
	causes := Verdict(&correlate.TraceAnswer{Trace: tr}, parts, total)
	byTitle := map[string]Cause{}
	for _, c := range causes {
		byTitle[c.Title] = c
	}
	pg, ok := byTitle["api waiting on postgresql (SELECT)"]
	if !ok || pg.Kind != CauseDownstream || !strings.Contains(pg.Action, "postgresql sent no spans") || pg.Caveat == "" {
		t.Errorf("untraced callee: %+v (all %+v)", pg, causes)
	}
	m, ok := byTitle["api waiting on model (HTTP GET)"]
	if !ok || !strings.Contains(m.Action, "model's server queue") || m.Caveat != "" {
		t.Errorf("traced callee: %+v", m)
	}
}
