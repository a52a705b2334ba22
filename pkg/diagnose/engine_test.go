package diagnose

import (
	"errors"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/tracetest"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// engineAnswer is a backend calling a Triton model (0–1000 ms) then vLLM (its request queued
// 600 ms), with the figures the engines' metrics gave around the vLLM span.
func engineAnswer(vllm models.EngineFigures, err error) *correlate.TraceAnswer {
	root := jspan("r", "", "api", "POST /answer", 0, 2000)
	llm := jspan("v1", "r", "vllm", "llm_request", 1050, 900)
	llm.Attributes = map[string]string{correlate.AttrTimeInQueue: "0.6", correlate.AttrTimeInPrefill: "0.1", correlate.AttrTimeInDecode: "0.15", correlate.AttrE2E: "0.9"}
	tr := tritonTrace(12, 100, 950)
	tr.Spans[0].ParentSpanID = "r"
	tr = &models.Trace{TraceID: "e1", Spans: append([]models.Span{root, llm}, tr.Spans...)}
	ans := answerOf(tr, nil, nil)
	ans.Engines = []correlate.EngineSpan{{Span: 1, Figures: vllm, Err: err}, {Span: 3, Err: err}}
	return ans
}

func TestTheQueueCauseCarriesTheEnginesMetricsAroundTheRequest(t *testing.T) {
	v := verdictOf(engineAnswer(tracetest.WaitingFigures(), nil))
	var queue *Cause
	for i, c := range v {
		if c.Kind == CauseQueue && c.Service == "vllm" {
			queue = &v[i]
		}
	}
	if queue == nil {
		t.Fatalf("no vLLM queue cause in %+v", v)
	}
	ev := strings.Join(queue.Evidence, "\n")
	for _, want := range []string{
		"waited 600ms in the engine's queue (span attribute gen_ai.latency.time_in_queue)",
		"requests waiting up to 3.0, mean 1.5 in the 30 s around it (vllm:num_requests_waiting, Prometheus, 30 sample(s) of 1 series)",
		"KV cache usage up to 93%, mean 50%",
	} {
		if !strings.Contains(ev, want) {
			t.Errorf("queue evidence lacks %q:\n%s", want, ev)
		}
	}
	// The engine figures appear once, on the queue cause, not again on the model cause.
	for _, c := range v {
		if c.Kind == CauseModel && c.Service == "vllm" && strings.Contains(strings.Join(c.Evidence, " "), "vllm:num_requests_waiting") {
			t.Errorf("model cause repeats the engine figures: %v", c.Evidence)
		}
	}
	if queue.Caveat != "" {
		t.Errorf("caveat %q: the gauge saw the queue", queue.Caveat)
	}
	// A gauge that saw nothing says the wait fell between its scrapes.
	quiet := tracetest.WaitingFigures()
	quiet.Figures[0].Max, quiet.Figures[0].Mean = 0, 0
	for _, c := range verdictOf(engineAnswer(quiet, nil)) {
		if c.Kind == CauseQueue && c.Service == "vllm" && c.Caveat != "vllm:num_requests_waiting showed no waiting request in its 30 sample(s) (one about every 1s): this 600ms wait fell between its scrapes" {
			t.Errorf("caveat %q", c.Caveat)
		}
	}
}

func TestEngineMetricsThatFailLeaveTheVerdictStanding(t *testing.T) {
	v := verdictOf(engineAnswer(models.EngineFigures{}, errors.New("Prometheus (http://p): 503")))
	if kinds := causeKinds(v); !strings.Contains(kinds, "queue vllm") || !strings.Contains(kinds, "model triton-inference-server") {
		t.Errorf("causes %s", kinds)
	}
	for _, c := range v {
		if strings.Contains(strings.Join(c.Evidence, " "), "Prometheus") {
			t.Errorf("evidence from a failed store: %v", c.Evidence)
		}
	}
}
