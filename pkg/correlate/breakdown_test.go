package correlate

import (
	"strings"
	"testing"
	"time"

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
	engine.Attributes = map[string]string{AttrTimeInQueue: "0.6", AttrTimeInPrefill: "0.1", AttrTimeInDecode: "0.15", AttrE2E: "0.9"}
	tr := &models.Trace{Spans: []models.Span{jspan("r", "", "api", "POST /v1/completions", 0, 1000), engine}}
	parts, total := Breakdown(tr, JoinTrace(TraceJoin{Trace: tr, Join: models.DefaultJoinSettings()}))
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
	cpu := SpanProfiles{
		"b000000000000001": tree("main.handleDetect;main.dbQuery 250000000"), // 250 ms of CPU
		"d000000000000001": tree("main.handleDetector;main.modelPredict 30000000"),
		"e000000000000001": tree(),
	}
	rows := JoinTrace(TraceJoin{Trace: tr, CPU: cpu, Join: models.DefaultJoinSettings()})
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
		"off-cpu ai-detector":      30 * time.Millisecond,
		"off-cpu ai-enrichment":    70 * time.Millisecond,
	} {
		if got[k] != want {
			t.Errorf("%s: %s, want %s (all: %s)", k, got[k], want, partsText(parts))
		}
	}
	if parts[0].Kind != PartCPU || parts[0].Service != "nemotron-backend" {
		t.Errorf("largest part %s", parts[0])
	}
}

func TestBreakdownIgnoresEngineFiguresThatAreNotDurations(t *testing.T) {
	engine := jspan("v1", "", "vllm", "llm_request", 0, 100)
	engine.Attributes = map[string]string{AttrTimeInQueue: "NaN", AttrTimeInPrefill: "-1", AttrTimeInDecode: "5"}
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
