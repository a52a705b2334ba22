package diagnose

import (
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

func TestVerdictPutsTheEnginesQueueFirst(t *testing.T) {
	engine := jspan("v1", "r", "vllm", "llm_request", 50, 900)
	engine.Attributes = map[string]string{correlate.AttrTimeInQueue: "0.6", correlate.AttrTimeInPrefill: "0.1", correlate.AttrTimeInDecode: "0.15"}
	tr := &models.Trace{Spans: []models.Span{jspan("r", "", "api", "POST /v1/completions", 0, 1000), engine}}
	v := verdictOf(answerOf(tr, nil, nil))
	if len(v) != 4 {
		t.Fatalf("%d causes: %+v", len(v), v)
	}
	first := v[0]
	if first.Kind != CauseQueue || first.Explains != 600*time.Millisecond || first.Share != 0.6 || first.Title != "queued in vllm (llm_request)" ||
		!strings.Contains(first.Evidence[0], "gen_ai.latency.time_in_queue") || !strings.Contains(first.Action, "vllm:num_requests_waiting") {
		t.Errorf("first cause %+v", first)
	}
	// Prefill and decode are one cause: the model's own time.
	if v[1].Kind != CauseModel || v[1].Explains != 250*time.Millisecond || len(v[1].Evidence) != 2 {
		t.Errorf("second cause %+v", v[1])
	}
	// The rest is unexplained, and says what would explain it.
	if v[2].Kind != CauseUnexplained || v[2].Service != "api" || !strings.Contains(v[2].Caveat, "add span profiles to api") {
		t.Errorf("third cause %+v", v[2])
	}
	var sum float64
	for _, c := range v {
		sum += c.Share
	}
	if sum < 0.999 || sum > 1.001 {
		t.Errorf("shares sum to %v", sum)
	}
}

func TestVerdictNamesTheHotFunctionAndTheGPUsState(t *testing.T) {
	tr := demoJoinTrace()
	cpu := correlate.SpanProfiles{
		"b000000000000001": tree("main.handleDetect;main.dbQuery;crypto/sha256.block 250000000"),
		"d000000000000001": tree("main.handleDetector;main.modelPredict 30000000"), // 3 samples
		"e000000000000001": tree(),
	}
	busy := gpuSeries("gpu-node-1", "0", 100)
	for i := range busy.Samples {
		busy.Samples[i].Figures.SMActive, busy.Samples[i].Figures.DRAMActive = 0.95, 0.2
	}
	v := verdictOf(answerOf(tr, cpu, []classify.GPUSeries{busy}))
	first := v[0]
	if first.Kind != CauseCPU || first.Service != "nemotron-backend" || first.Explains != 250*time.Millisecond ||
		!strings.Contains(strings.Join(first.Evidence, "\n"), "hot function crypto/sha256.block: 250ms") ||
		!strings.Contains(strings.Join(first.Evidence, "\n"), "in nemotron-backend's own code: main.dbQuery") || first.Caveat != "" ||
		first.HotFunction != "crypto/sha256.block" || first.OwnFunction != "main.dbQuery" || first.ProfileID == "" {
		t.Errorf("first cause %+v", first)
	}
	var detectorCPU, detectorWait *Cause
	for i := range v {
		if v[i].Service == "ai-detector" {
			switch v[i].Kind {
			case CauseCPU:
				detectorCPU = &v[i]
			case CauseWaiting:
				detectorWait = &v[i]
			}
		}
	}
	// 30 ms of CPU is three samples: the verdict says so.
	if detectorCPU == nil || !strings.Contains(detectorCPU.Caveat, "about 3 profile samples") {
		t.Errorf("detector CPU %+v", detectorCPU)
	}
	// Its waiting happened on a compute-bound GPU, read from DCGM around a short span.
	if detectorWait == nil || !strings.Contains(strings.Join(detectorWait.Evidence, "\n"), "GPU compute-bound") ||
		!strings.HasPrefix(detectorWait.Action, "the GPU was compute-bound: ") || !strings.Contains(detectorWait.Caveat, "DCGM's readings around a") {
		t.Errorf("detector waiting %+v", detectorWait)
	}
	if strings.Contains(detectorWait.Caveat, "other pods") {
		t.Errorf("a GPU mapped to no pod is not shared: %s", detectorWait.Caveat)
	}

	// The same GPU time-sliced between two pods: the caveat names them, since DCGM's figures
	// are the whole GPU's.
	busy.Pods = []classify.Pod{{Namespace: "inference", Name: "triton-shared-0"}, {Namespace: "inference", Name: "embedder-shared-0"}}
	v = verdictOf(answerOf(tr, cpu, []classify.GPUSeries{busy}))
	for _, c := range v {
		if c.Service == "ai-detector" && c.Kind == CauseWaiting {
			if !strings.Contains(c.Caveat, "other pods too over the range (inference/triton-shared-0, inference/embedder-shared-0: time-sliced, or handed over): its figures are the whole GPU's") {
				t.Errorf("shared GPU caveat %q", c.Caveat)
			}
		}
	}
}

func TestVerdictWithoutATrace(t *testing.T) {
	if Verdict(&correlate.TraceAnswer{}, nil, 0) != nil {
		t.Error("a verdict without a trace")
	}
}
