package diagnose

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// engineRequest is a caller and a vLLM engine span: queued, prefilled and decoded as the
// attributes say, of which excess was lost to preemption; the model's own time is given by the
// detailed-trace attribute (byAttr) or by the engine's time per output token; the engine's
// metrics saw preemptions preempted requests around it.
func engineRequest(rng *rand.Rand, n int, queue, prefill, decode, excess time.Duration, byAttr bool, preemptions float64) (*correlate.TraceAnswer, string) {
	engine := randomName(rng) + "-vllm"
	total := queue + prefill + decode
	root := jspan(fmt.Sprintf("c%015x", n), "", randomName(rng)+"-gw", "POST /v1/"+randomName(rng), 0, int(total/time.Millisecond)+15)
	s := jspan(fmt.Sprintf("d%015x", n), root.SpanID, engine, "llm_request", 5, int(total/time.Millisecond)+2)
	sec := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', 6, 64) }
	tokens := 20 + rng.IntN(400)
	s.Attributes = map[string]string{
		correlate.AttrTimeInQueue: sec(queue), correlate.AttrTimeInPrefill: sec(prefill), correlate.AttrTimeInDecode: sec(decode),
		correlate.AttrE2E: sec(total), correlate.AttrResponseModel: randomName(rng), correlate.AttrCompletionTokens: strconv.Itoa(tokens),
	}
	model := prefill + decode - excess
	if byAttr {
		s.Attributes[correlate.AttrTimeInExecute] = sec(model)
		s.Attributes[correlate.AttrTimeInForward] = sec(model - model/20)
	}
	tr := &models.Trace{TraceID: root.TraceID, Spans: []models.Span{root, s}}
	ans := answerOf(tr, nil, nil)
	w0, w1 := t0.Add(-30*time.Second), t0.Add(30*time.Second)
	figs := models.EngineFigures{Figures: []models.EngineFigure{
		{Name: correlate.FigureKVCache, Metric: "vllm:kv_cache_usage_perc", Unit: "percentunit", Max: 0.95 + 0.04*rng.Float64(), Mean: 0.9, Samples: 30, Series: 1, Start: w0, End: w1},
		{Name: correlate.FigurePreemptions, Metric: "vllm:num_preemptions_total", Unit: "short", Max: preemptions, Mean: preemptions, Samples: 1, Series: 1, Start: w0, End: w1},
		{Name: correlate.FigureTPOT, Metric: "vllm:time_per_output_token_seconds", Unit: "s", Max: 0, Mean: (decode - excess).Seconds() / float64(tokens), Samples: 1, Series: 1, Start: w0, End: w1},
	}}
	ans.Engines = []correlate.EngineSpan{{Span: 1, Figures: figs}}
	for i := range ans.Rows {
		if ans.Rows[i].Span.SpanID == s.SpanID {
			ans.Rows[i].Engine = &figs
		}
	}
	return ans, engine
}

// asTensorRTLLM makes the engine TensorRT-LLM: its span writes the queue, the first token and
// the end only (tensorrt_llm/llmapi/tracing.py), its metrics are its KV and TPOT series, and its
// paused requests (a gauge: the most held at once) stand where vLLM counts preemptions.
func asTensorRTLLM(ans *correlate.TraceAnswer) {
	for i := range ans.Trace.Spans {
		a := ans.Trace.Spans[i].Attributes
		if a[correlate.AttrE2E] == "" {
			continue
		}
		queue, _ := strconv.ParseFloat(a[correlate.AttrTimeInQueue], 64)
		prefill, _ := strconv.ParseFloat(a[correlate.AttrTimeInPrefill], 64)
		a[correlate.AttrTimeToFirst] = strconv.FormatFloat(queue+prefill, 'f', 6, 64)
		for _, k := range []string{correlate.AttrTimeInPrefill, correlate.AttrTimeInDecode, correlate.AttrTimeInExecute, correlate.AttrTimeInForward, correlate.AttrResponseModel} {
			delete(a, k) // the rows' spans share the map
		}
	}
	for _, e := range ans.Engines {
		for i := range e.Figures.Figures {
			f := &e.Figures.Figures[i]
			switch f.Name {
			case correlate.FigureKVCache:
				f.Metric = "trtllm_kv_cache_utilization"
			case correlate.FigureTPOT:
				f.Metric = "trtllm_time_per_output_token_seconds"
			case correlate.FigurePreemptions:
				f.Name, f.Metric = correlate.FigurePaused, "trtllm_num_paused_requests"
			}
		}
	}
}

// Randomised preempted requests: the first cause is the preemption in the engine, with its one
// remedy, explaining the lost time within 10 %; the model keeps only its own time. A third of
// the engines are TensorRT-LLM's, which pauses requests instead of counting preemptions.
func TestPreemptedRequestsAreNamedByTheirPreemption(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 44))
	for n := range 60 {
		prefill := time.Duration(20+rng.IntN(200)) * time.Millisecond
		own := time.Duration(50+rng.IntN(300)) * time.Millisecond
		excess := prefill + own + time.Duration(100+rng.IntN(700))*time.Millisecond // the preemption is the larger part
		trtllm := n%3 == 2
		ans, engine := engineRequest(rng, n, time.Duration(rng.IntN(30))*time.Millisecond, prefill, own+excess, excess, n%2 == 0 && !trtllm, float64(1+rng.IntN(9)))
		if trtllm {
			asTensorRTLLM(ans)
		}
		d := Request(ans)
		first := d.Verdict[0]
		if first.Kind != CausePreempted || first.Service != engine {
			t.Fatalf("request %d: first cause %s %q; breakdown %s", n, first.Kind, first.Title, partsText(d.Breakdown))
		}
		if got := float64(first.Explains); math.Abs(got-float64(excess)) > 0.1*float64(excess) {
			t.Errorf("request %d (model time by attribute %v): explains %s, preempted %s", n, n%2 == 0, first.Explains, excess)
		}
		remedy, evidence := "--gpu-memory-utilization", "preempted"
		if trtllm {
			remedy, evidence = "free_gpu_memory_fraction", "while the engine preempted requests (trtllm_num_paused_requests)"
		}
		if !strings.Contains(first.Action, remedy) || strings.Contains(first.Action, "shorter prompts") || !strings.Contains(strings.Join(first.Evidence, "; "), evidence) {
			t.Errorf("request %d (TensorRT-LLM %v): action %q, evidence %q", n, trtllm, first.Action, first.Evidence)
		}
		var modelTime time.Duration
		for _, p := range d.Breakdown {
			if p.Kind == PartPrefill || p.Kind == PartDecode {
				modelTime += p.Duration
			}
		}
		if diff := modelTime - (prefill + own); diff < -2*time.Millisecond || diff > 2*time.Millisecond {
			t.Errorf("request %d: the model's parts hold %s, its own time is %s", n, modelTime, prefill+own)
		}
	}
}

// An engine that preempted other requests while this one ran in its model time, or did not
// preempt at all, gives no preemption cause: the request keeps its own first cause.
func TestPreemptionsOfOthersLeaveTheRequestsOwnCause(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 1))
	for n := range 40 {
		queue := time.Duration(400+rng.IntN(600)) * time.Millisecond
		ans, engine := engineRequest(rng, n, queue, 30*time.Millisecond, 80*time.Millisecond, 0, n%2 == 0, float64(1+rng.IntN(5)))
		v := verdictOf(ans)
		if v[0].Kind != CauseQueue || v[0].Service != engine {
			t.Fatalf("request %d: first cause %s %q", n, v[0].Kind, v[0].Title)
		}
		for _, c := range v {
			if c.Kind == CausePreempted {
				t.Errorf("request %d: a preemption cause %q for a request that ran in its model time", n, c.Title)
			}
		}
		// The engine's own work between steps (a few percent over the model's time) while it
		// preempted others: no preemption either.
		model := time.Duration(200+rng.IntN(800)) * time.Millisecond
		overhead := model * time.Duration(1+rng.IntN(8)) / 100
		ans, _ = engineRequest(rng, n, queue, 20*time.Millisecond, model-20*time.Millisecond+overhead, overhead, true, float64(1+rng.IntN(5)))
		for _, c := range verdictOf(ans) {
			if c.Kind == CausePreempted {
				t.Errorf("request %d: %s of step overhead over a %s model time named a preemption: %q", n, overhead, model, c.Title)
			}
		}
		// Slow decode, but no preemption in the engine's window: the model's own time.
		ans, _ = engineRequest(rng, n, 0, 30*time.Millisecond, 900*time.Millisecond, 500*time.Millisecond, true, 0)
		if v := verdictOf(ans); v[0].Kind != CauseModel {
			t.Errorf("request %d: without preemptions the first cause is %s %q", n, v[0].Kind, v[0].Title)
		}
	}
}
