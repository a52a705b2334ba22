package correlate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/tracetest"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// fakeEngines answers each model's figures from memory and records what was asked.
type fakeEngines struct {
	byModel map[string]models.EngineFigures
	err     error

	mu    sync.Mutex
	asked []models.EngineQuery
}

func (f *fakeEngines) EngineFigures(_ context.Context, q models.EngineQuery) (models.EngineFigures, error) {
	f.mu.Lock()
	f.asked = append(f.asked, q)
	f.mu.Unlock()
	if f.err != nil {
		return models.EngineFigures{}, f.err
	}
	return f.byModel[q.Model], nil
}

// engineTrace is a backend calling a Triton model (0–1000 ms) then vLLM (its request queued
// 600 ms).
func engineTrace() *models.Trace {
	root := jspan("r", "", "api", "POST /answer", 0, 2000)
	llm := jspan("v1", "r", "vllm", "llm_request", 1050, 900)
	llm.Attributes = map[string]string{AttrTimeInQueue: "0.6", AttrTimeInPrefill: "0.1", AttrTimeInDecode: "0.15", AttrE2E: "0.9", AttrResponseModel: "llama-3"}
	tr := tritonTrace(12, 100, 950)
	tr.Spans[0].ParentSpanID = "r"
	tr.Spans[1].Attributes = map[string]string{AttrTritonModel: "densenet_onnx"}
	return &models.Trace{TraceID: "e1", Spans: append([]models.Span{root, llm}, tr.Spans...)}
}

func TestTheQueueCauseCarriesTheEnginesMetricsAroundTheRequest(t *testing.T) {
	tr := engineTrace()
	engines := &fakeEngines{byModel: map[string]models.EngineFigures{"llama-3": waitingFigures()}}
	ans, err := JoinRequest(context.Background(), TraceSources{Traces: Ready[Traces](fakeTraces{trace: tr}), Profiles: Unavailable[Profiles](errors.New("no Pyroscope")), GPUs: Unavailable[GPUFigures](errors.New("no GPUs")), Engines: Ready[Engines](engines)},
		TraceQuery{TraceID: "e1", Join: models.DefaultJoinSettings().SpanMatch})
	if err != nil {
		t.Fatal(err)
	}
	// Both engine spans were asked, each over its own span's window, with its engine and model.
	asked := map[string]models.EngineQuery{}
	for _, q := range engines.asked {
		asked[q.Engine+" "+q.Model] = q
	}
	v, tq := asked["vllm llama-3"], asked["triton densenet_onnx"]
	if len(engines.asked) != 2 || v.End.Sub(v.Start) != 900*time.Millisecond || tq.End.Sub(tq.Start) != 980*time.Millisecond {
		t.Fatalf("asked %+v", engines.asked)
	}
	// The vLLM span's figures are on the answer, for the verdict's queue cause.
	var got *EngineSpan
	for i, e := range ans.Engines {
		if tr.Spans[e.Span].SpanID == "v1" {
			got = &ans.Engines[i]
		}
	}
	if got == nil || got.Err != nil || len(got.Figures.Figures) != 2 || got.Figures.Figures[0].Metric != "vllm:num_requests_waiting" {
		t.Fatalf("engines on the answer: %+v", ans.Engines)
	}
	n := noticeText(ans.Notices)
	if !strings.Contains(n, `Prometheus holds no vllm:request_queue_time_seconds for model "llama-3" around vllm llm_request`) {
		t.Errorf("notices:\n%s", n)
	}
}

func TestEngineMetricsThatFailLeaveTheVerdictStanding(t *testing.T) {
	for name, src := range map[string]TraceSources{
		"not configured": {Engines: Unavailable[Engines](errors.New("Prometheus is not configured"))},
		"failing":        {Engines: Ready[Engines](&fakeEngines{err: errors.New("Prometheus (http://p): 503")})},
	} {
		src.Traces, src.Profiles, src.GPUs = Ready[Traces](fakeTraces{trace: engineTrace()}), Unavailable[Profiles](errors.New("no Pyroscope")), Unavailable[GPUFigures](errors.New("no GPUs"))
		ans, err := JoinRequest(context.Background(), src, TraceQuery{TraceID: "e1", Join: models.DefaultJoinSettings().SpanMatch})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(ans.Engines) != 2 || ans.Engines[0].Err == nil && name == "failing" {
			t.Errorf("%s: engines %+v", name, ans.Engines)
		}
		if n := noticeText(ans.Notices); !strings.Contains(n, "No serving-engine metrics") {
			t.Errorf("%s: notices:\n%s", name, n)
		}
	}
}

func TestEngineSpansAreBoundedLongestFirst(t *testing.T) {
	tr := &models.Trace{}
	for i := range MaxEngineSpans + 3 {
		s := jspan(string(rune('a'+i)), "", "vllm", "llm_request", 0, 10*(i+1))
		s.Attributes = map[string]string{AttrE2E: "0.01"}
		tr.Spans = append(tr.Spans, s)
	}
	spans, more := engineSpans(tr)
	if len(spans) != MaxEngineSpans || more != 3 || tr.Spans[spans[0].Span].Duration != 110*time.Millisecond {
		t.Errorf("%d spans, %d more, first %s", len(spans), more, tr.Spans[spans[0].Span].Duration)
	}
	if n := engineNotices(tr, spans, more, nil); len(n) != 1 || !strings.Contains(n[0].Text, "3 more were left out") {
		t.Errorf("notices %+v", n)
	}
}

var tritonTrace = tracetest.TritonTrace

// waitingFigures are a queued request's engine metrics, without the per-request queue time.
func waitingFigures() models.EngineFigures {
	f := tracetest.WaitingFigures()
	f.Missing = []string{"vllm:request_queue_time_seconds"}
	return f
}
