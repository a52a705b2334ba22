package prometheus

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// fakeEngineProm answers /api/v1/query as Prometheus does for the two shapes EngineFigures
// sends: a range selector answers the stored samples of matching series in (time-range, time];
// any other expression (the queue-time ratio) answers ratios[the first metric it reads].
type fakeEngineProm struct {
	stored []fakeStream
	ratios map[string][]sample
	fail   bool // every query fails with HTTP 503

	mu      sync.Mutex
	queries []string
}

func (f *fakeEngineProm) serve(t *testing.T) *Client {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/query" {
			http.NotFound(w, r)
			return
		}
		_ = r.ParseForm()
		q := r.Form.Get("query")
		f.mu.Lock()
		f.queries = append(f.queries, q)
		f.mu.Unlock()
		if f.fail {
			w.WriteHeader(http.StatusServiceUnavailable)
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "unavailable", "error": "storage is down"})
			return
		}
		e, err := gpuTestParser.ParseExpr(q)
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "bad_data", "error": err.Error()})
			return
		}
		at, _ := strconv.ParseFloat(r.Form.Get("time"), 64)
		reply := func(resultType string, result []map[string]any) {
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": map[string]any{"resultType": resultType, "result": result}})
		}
		result := []map[string]any{}
		if ms, ok := e.(*parser.MatrixSelector); ok {
			vs := ms.VectorSelector.(*parser.VectorSelector)
			from := at - ms.Range.Seconds()
			for _, s := range f.stored {
				if !matchesAll(vs.LabelMatchers, s.Metric) {
					continue
				}
				var in [][2]any
				for _, p := range s.Values {
					if ts := p[0].(float64); ts > from && ts <= at {
						in = append(in, p)
					}
				}
				if len(in) > 0 {
					result = append(result, map[string]any{"metric": s.Metric, "values": in})
				}
			}
			reply("matrix", result)
			return
		}
		for _, s := range f.vector(e) {
			result = append(result, map[string]any{"metric": s.labels, "value": []any{at, s.value}})
		}
		reply("vector", result)
	}))
	t.Cleanup(s.Close)
	c, err := New(models.Upstream{Name: models.Prometheus, URL: s.URL}, s.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// vector evaluates an instant query as Prometheus does for the shapes EngineFigures sends: a
// union ("or") of label_replace calls, each setting one label on what its expression answers;
// any other expression (a counter's increase, a ratio) answers ratios[the first metric it reads].
func (f *fakeEngineProm) vector(e parser.Expr) []sample {
	return unionAnswer(e, func(e parser.Expr) []sample { return f.ratios[selectorsOf(e)[0].Name] })
}

func (f *fakeEngineProm) queriesOf(metric string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, q := range f.queries {
		if strings.Contains(q, metric) {
			out = append(out, q)
		}
	}
	return out
}

// The slow request: 5 s ending at reqEnd. Gauges are read over the 30 s around it
// (reqEnd-17.5 s, reqEnd+12.5 s], ratios over the minute around it.
var (
	reqEnd   = time.Unix(1_700_000_100, 0)
	reqStart = reqEnd.Add(-5 * time.Second)
)

// gauge is a series of metric with labels, one sample every 15 s from reqEnd-30 s to reqEnd+15 s;
// the first and last lie outside the 30 s around the request.
func gauge(metric string, lbls map[string]string, values ...string) fakeStream {
	m := map[string]string{"__name__": metric}
	for k, v := range lbls {
		m[k] = v
	}
	s := fakeStream{Metric: m}
	for i, v := range values {
		s.Values = append(s.Values, [2]any{float64(reqEnd.Unix() - 30 + 15*int64(i)), v})
	}
	return s
}

func replica(model, pod string) map[string]string {
	return map[string]string{"model_name": model, "engine": "0", "pod": pod}
}

func figureNamed(t *testing.T, figs models.EngineFigures, name string) models.EngineFigure {
	t.Helper()
	for _, f := range figs.Figures {
		if f.Name == name {
			return f
		}
	}
	t.Fatalf("no figure %q in %+v", name, figs)
	return models.EngineFigure{}
}

func TestEngineFiguresReadVLLMReplicasAroundTheRequest(t *testing.T) {
	const model = "meta-llama/Llama-3.1-8B-Instruct"
	f := &fakeEngineProm{
		stored: []fakeStream{
			// Samples outside the window (first and last) are large: reading them would show.
			gauge("vllm:num_requests_waiting", replica(model, "a"), "100", "2", "4", "100"),
			gauge("vllm:num_requests_waiting", replica(model, "b"), "100", "0", "6", "100"),
			gauge("vllm:num_requests_waiting", replica("other", "c"), "100", "50", "50", "100"),
			gauge("vllm:num_requests_running", replica(model, "a"), "1", "3", "5", "1"),
			gauge("vllm:num_requests_running", replica(model, "b"), "1", "4", "NaN", "1"),
			gauge("vllm:kv_cache_usage_perc", replica(model, "a"), "1", "0.5", "0.9", "1"),
			gauge("vllm:kv_cache_usage_perc", replica(model, "b"), "1", "0.2", "0.2", "1"),
		},
		ratios: map[string][]sample{
			"vllm:request_queue_time_seconds_sum":    {{replica(model, "a"), "0.5"}, {replica(model, "b"), "1.5"}},
			"vllm:num_preemptions_total":             {{replica(model, "a"), "2"}, {replica(model, "b"), "1"}},
			"vllm:time_per_output_token_seconds_sum": {{replica(model, "a"), "0.02"}, {replica(model, "b"), "0.03"}},
		},
	}
	c := f.serve(t)
	figs, err := c.EngineFigures(context.Background(), models.EngineQuery{Engine: models.EngineVLLM, Model: model, Start: reqStart, End: reqEnd})
	if err != nil {
		t.Fatal(err)
	}
	if len(figs.Missing) != 0 {
		t.Errorf("missing %v", figs.Missing)
	}
	var names []string
	for _, fig := range figs.Figures {
		names = append(names, fig.Name)
	}
	if want := []string{"requests waiting", "requests running", "KV cache usage", "queue time per request", "preemptions", "time per output token"}; !slices.Equal(names, want) {
		t.Errorf("figures %v, want %v", names, want)
	}
	// The gauges in one query of their raw samples, the counters and ratios (each of their
	// names) in another: 2 queries for 7 figures.
	if n, gauges, rates := len(f.queries), f.queriesOf("num_requests_waiting"), f.queriesOf("num_preemptions_total"); n != 2 || len(gauges) != 1 ||
		!strings.Contains(gauges[0], "kv_cache_usage_perc") || !strings.Contains(gauges[0], "trtllm_num_paused_requests") ||
		len(rates) != 1 || !strings.Contains(rates[0], "request_queue_time_seconds_sum") || !strings.Contains(rates[0], "trtllm_time_per_output_token_seconds_sum") {
		t.Errorf("%d queries %q: want the gauges in one and the counters and ratios in another", n, f.queries)
	}
	gaugeStart, gaugeEnd := reqEnd.Add(-17500*time.Millisecond), reqEnd.Add(12500*time.Millisecond)
	for _, c := range []struct {
		name, metric, unit string
		max, mean          float64
		samples            int
	}{
		{"requests waiting", "vllm:num_requests_waiting", "short", 6, 3, 4},
		{"requests running", "vllm:num_requests_running", "short", 5, 4, 3}, // a NaN sample says nothing
		{"KV cache usage", "vllm:kv_cache_usage_perc", "percentunit", 0.9, 0.45, 4},
	} {
		fig := figureNamed(t, figs, c.name)
		if fig.Metric != c.metric || fig.Unit != c.unit || fig.Max != c.max || math.Abs(fig.Mean-c.mean) > 1e-12 || fig.Samples != c.samples || fig.Series != 2 {
			t.Errorf("%s: %+v, want %s in %s, max %v mean %v over %d samples of 2 series", c.name, fig, c.metric, c.unit, c.max, c.mean, c.samples)
		}
		if !fig.Start.Equal(gaugeStart) || !fig.End.Equal(gaugeEnd) {
			t.Errorf("%s read over %s – %s, want the 30 s around the request", c.name, fig.Start, fig.End)
		}
		if want := c.metric + `{model_name="` + model + `"}[30s]`; fig.Query != want {
			t.Errorf("%s: query %s, want %s", c.name, fig.Query, want)
		}
	}
	// Preemptions: the counter's increase over the minute around the request, summed over the
	// replicas; time per output token: each replica's mean.
	pre := figureNamed(t, figs, "preemptions")
	if pre.Metric != "vllm:num_preemptions_total" || pre.Max != 3 || pre.Series != 2 || pre.Query != `increase(vllm:num_preemptions_total{model_name="`+model+`"}[1m])` {
		t.Errorf("preemptions: %+v", pre)
	}
	if tpot := figureNamed(t, figs, "time per output token"); tpot.Max != 0.03 || math.Abs(tpot.Mean-0.025) > 1e-12 {
		t.Errorf("time per output token: %+v", tpot)
	}
	queue := figureNamed(t, figs, "queue time per request")
	if queue.Metric != "vllm:request_queue_time_seconds" || queue.Unit != "s" || queue.Max != 1.5 || queue.Mean != 1 || queue.Series != 2 || queue.Samples != 2 {
		t.Errorf("queue time: %+v", queue)
	}
	if want := reqEnd.Add(-32500 * time.Millisecond); !queue.Start.Equal(want) || queue.End.Sub(queue.Start) != time.Minute {
		t.Errorf("queue time read over %s – %s, want the minute around the request", queue.Start, queue.End)
	}
	e := reparse(t, queue.Query)
	if fns := functionsOf(e); !slices.Equal(fns, []string{"increase", "increase"}) {
		t.Errorf("queue time query %s calls %v", queue.Query, fns)
	}
	b, ok := e.(*parser.BinaryExpr)
	if !ok || b.Op != parser.DIV {
		t.Fatalf("queue time query %s is not a ratio", queue.Query)
	}
	for side, want := range map[parser.Expr]string{b.LHS: "vllm:request_queue_time_seconds_sum", b.RHS: "vllm:request_queue_time_seconds_count"} {
		vs := selectorsOf(side)
		if len(vs) != 1 || vs[0].Name != want || matcherOf(vs[0], "model_name").Value != model {
			t.Errorf("queue time query %s: %s side is not %s of the model", queue.Query, side, want)
		}
		var ranges []time.Duration
		parser.Inspect(side, func(n parser.Node, _ []parser.Node) error {
			if ms, ok := n.(*parser.MatrixSelector); ok {
				ranges = append(ranges, ms.Range)
			}
			return nil
		})
		if !slices.Equal(ranges, []time.Duration{time.Minute}) {
			t.Errorf("queue time query %s: ranges %v, want 1m", queue.Query, ranges)
		}
	}
}

func TestEngineFiguresOfEveryModelReadEverySeries(t *testing.T) {
	f := &fakeEngineProm{stored: []fakeStream{
		gauge("vllm:num_requests_waiting", replica("a", "a"), "0", "1", "1", "0"),
		gauge("vllm:num_requests_waiting", replica("b", "b"), "0", "3", "3", "0"),
	}}
	figs, err := f.serve(t).EngineFigures(context.Background(), models.EngineQuery{Engine: models.EngineVLLM, Start: reqStart, End: reqEnd})
	if err != nil {
		t.Fatal(err)
	}
	if w := figureNamed(t, figs, "requests waiting"); w.Series != 2 || w.Max != 3 || w.Mean != 2 || w.Query != "vllm:num_requests_waiting[30s]" {
		t.Errorf("requests waiting of every model: %+v", w)
	}
}

func TestEngineFiguresFallBackToTheOlderKVCacheGaugeAndSayWhatIsMissing(t *testing.T) {
	const model = "opt-125m"
	f := &fakeEngineProm{
		stored: []fakeStream{
			gauge("vllm:num_requests_waiting", replica(model, "a"), "0", "0", "1", "0"),
			gauge("vllm:gpu_cache_usage_perc", replica(model, "a"), "0", "0.3", "0.7", "0"),
			// Only outside the window: no series in it.
			gauge("vllm:num_requests_running", replica(model, "a"), "1"),
		},
		// The replicas served no request in the minute: 0/0.
		ratios: map[string][]sample{"vllm:request_queue_time_seconds_sum": {{replica(model, "a"), "NaN"}}},
	}
	figs, err := f.serve(t).EngineFigures(context.Background(), models.EngineQuery{Engine: models.EngineVLLM, Model: model, Start: reqStart, End: reqEnd})
	if err != nil {
		t.Fatal(err)
	}
	kv := figureNamed(t, figs, "KV cache usage")
	if kv.Metric != "vllm:gpu_cache_usage_perc" || kv.Max != 0.7 || kv.Mean != 0.5 || kv.Query != `vllm:gpu_cache_usage_perc{model_name="opt-125m"}[30s]` {
		t.Errorf("KV cache usage from the older gauge: %+v", kv)
	}
	if len(f.queriesOf("vllm:kv_cache_usage_perc")) != 1 {
		t.Errorf("the current KV cache gauge was asked %d times", len(f.queriesOf("vllm:kv_cache_usage_perc")))
	}
	for _, fig := range figs.Figures {
		if fig.Name == "queue time per request" {
			t.Errorf("a queue time without requests is a figure: %+v", fig)
		}
	}
	if want := []string{"vllm:num_requests_running", "vllm:num_preemptions_total", "vllm:time_per_output_token_seconds"}; !slices.Equal(figs.Missing, want) {
		t.Errorf("missing %v, want %v", figs.Missing, want)
	}
}

func TestEngineFiguresMissingEverything(t *testing.T) {
	f := &fakeEngineProm{}
	figs, err := f.serve(t).EngineFigures(context.Background(), models.EngineQuery{Engine: models.EngineVLLM, Model: "m", Start: reqStart, End: reqEnd})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"vllm:num_requests_waiting", "vllm:num_requests_running", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "vllm:request_queue_time_seconds",
		"vllm:num_preemptions_total", "vllm:time_per_output_token_seconds"}
	if len(figs.Figures) != 0 || !slices.Equal(figs.Missing, want) {
		t.Errorf("figures %+v, missing %v; want none, missing %v", figs.Figures, figs.Missing, want)
	}
}

func TestEngineFiguresReadTriton(t *testing.T) {
	model := map[string]string{"model": "densenet_onnx", "version": "1"}
	other := map[string]string{"model": "resnet", "version": "1"}
	f := &fakeEngineProm{
		stored: []fakeStream{
			gauge("nv_inference_pending_request_count", model, "9", "3", "5", "9"),
			gauge("nv_inference_pending_request_count", other, "9", "30", "50", "9"),
		},
		// 2 s per request in the queue, in Prometheus' answer already divided.
		ratios: map[string][]sample{"nv_inference_queue_duration_us": {{model, "2"}}},
	}
	figs, err := f.serve(t).EngineFigures(context.Background(), models.EngineQuery{Engine: models.EngineTriton, Model: "densenet_onnx", Start: reqStart, End: reqEnd})
	if err != nil {
		t.Fatal(err)
	}
	if len(figs.Missing) != 0 || len(figs.Figures) != 2 {
		t.Fatalf("figures %+v, missing %v", figs.Figures, figs.Missing)
	}
	pending := figureNamed(t, figs, "pending requests")
	if pending.Max != 5 || pending.Mean != 4 || pending.Samples != 2 || pending.Series != 1 || pending.Unit != "short" ||
		pending.Query != `nv_inference_pending_request_count{model="densenet_onnx"}[30s]` {
		t.Errorf("pending requests: %+v", pending)
	}
	queue := figureNamed(t, figs, "queue time per request")
	if queue.Max != 2 || queue.Mean != 2 || queue.Unit != "s" || queue.Metric != "nv_inference_queue_duration_us" {
		t.Errorf("queue time: %+v", queue)
	}
	// Microseconds over requests, in seconds.
	want := `(increase(nv_inference_queue_duration_us{model="densenet_onnx"}[1m]) / increase(nv_inference_request_success{model="densenet_onnx"}[1m])) / 1000000`
	if queue.Query != want {
		t.Errorf("queue time query\n%s\nwant\n%s", queue.Query, want)
	}
	reparse(t, queue.Query)
}

func TestEngineFiguresQuoteTheModelName(t *testing.T) {
	// A model name that would end the selector and read every series if it were pasted.
	evil := `x"} or vector(1) or up{a="` + "\\\n"
	for _, engine := range []string{models.EngineVLLM, models.EngineTriton} {
		f := &fakeEngineProm{}
		if _, err := f.serve(t).EngineFigures(context.Background(), models.EngineQuery{Engine: engine, Model: evil, Start: reqStart, End: reqEnd}); err != nil {
			t.Fatal(err)
		}
		label := map[string]string{models.EngineVLLM: "model_name", models.EngineTriton: "model"}[engine]
		if len(f.queries) == 0 {
			t.Fatalf("%s: no query sent", engine)
		}
		for _, q := range f.queries {
			e := reparse(t, q)
			if fns := functionsOf(e); slices.Contains(fns, "vector") {
				t.Errorf("%s: the model name became a function call: %s", q, fns)
			}
			for _, vs := range selectorsOf(e) {
				if len(vs.LabelMatchers) != 2 {
					t.Errorf("%s: selector %s has %d matchers", q, vs, len(vs.LabelMatchers))
				}
				if m := matcherOf(vs, label); m == nil || m.Type != labels.MatchEqual || m.Value != evil {
					t.Errorf("%s: selector %s does not match %s exactly", q, vs, label)
				}
			}
		}
	}
}

func TestEngineFiguresFailWhenPrometheusFails(t *testing.T) {
	f := &fakeEngineProm{fail: true}
	c := f.serve(t)
	_, err := c.EngineFigures(context.Background(), models.EngineQuery{Engine: models.EngineTriton, Model: "m", Start: reqStart, End: reqEnd})
	var ue *upstream.Error
	if !errors.As(err, &ue) || ue.Upstream != models.Prometheus || ue.URL != c.URL() || !strings.Contains(err.Error(), "storage is down") {
		t.Errorf("error %v, want Prometheus' failure named with its URL", err)
	}
}

func TestEngineFiguresRejectAnUnknownEngine(t *testing.T) {
	f := &fakeEngineProm{}
	_, err := f.serve(t).EngineFigures(context.Background(), models.EngineQuery{Engine: "tgi", Start: reqStart, End: reqEnd})
	if err == nil || !strings.Contains(err.Error(), `"tgi"`) {
		t.Errorf("error %v", err)
	}
	if len(f.queries) != 0 {
		t.Errorf("queries sent for an unknown engine: %v", f.queries)
	}
}

// TensorRT-LLM (trtllm-serve's collector, prefix trtllm_) writes vLLM's span attributes, so its
// spans are read as vLLM's: its own series answer where vLLM's are absent, its paused requests
// (its preemption) among them, and none of its names is called missing.
func TestEngineFiguresReadTensorRTLLM(t *testing.T) {
	const model = "nemotron-nano-3"
	lbls := map[string]string{"model_name": model, "engine_type": "trtllm"}
	f := &fakeEngineProm{
		stored: []fakeStream{
			gauge("trtllm_num_requests_waiting", lbls, "0", "2", "4", "0"),
			gauge("trtllm_num_requests_running", lbls, "8", "8", "8", "8"),
			gauge("trtllm_kv_cache_utilization", lbls, "0.5", "0.97", "1", "0.4"),
			gauge("trtllm_num_paused_requests", lbls, "0", "1", "3", "0"),
		},
		ratios: map[string][]sample{
			"trtllm_time_per_output_token_seconds_sum": {{lbls, "0.021"}},
			"trtllm_request_queue_time_seconds_sum":    {{lbls, "0.4"}},
		},
	}
	figs, err := f.serve(t).EngineFigures(context.Background(), models.EngineQuery{Engine: models.EngineVLLM, Model: model, Start: reqStart, End: reqEnd})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct {
		metric string
		max    float64
	}{
		"requests waiting": {"trtllm_num_requests_waiting", 4}, "KV cache usage": {"trtllm_kv_cache_utilization", 1},
		"paused requests": {"trtllm_num_paused_requests", 3}, "time per output token": {"trtllm_time_per_output_token_seconds", 0.021},
		"queue time per request": {"trtllm_request_queue_time_seconds", 0.4},
	} {
		if fig := figureNamed(t, figs, name); fig.Metric != want.metric || fig.Max != want.max {
			t.Errorf("%s: %s max %v, want %s max %v", name, fig.Metric, fig.Max, want.metric, want.max)
		}
	}
	for _, m := range figs.Missing {
		if strings.HasPrefix(m, "trtllm_") {
			t.Errorf("missing %v names TensorRT-LLM's own series", figs.Missing)
		}
	}
	// The counters vLLM and SGLang have and TensorRT-LLM lacks are said missing under vLLM's name.
	if !slices.Contains(figs.Missing, "vllm:num_preemptions_total") || slices.Contains(figs.Missing, "trtllm_num_paused_requests") {
		t.Errorf("missing %v", figs.Missing)
	}
}

// Every query of a container's figures is asked at once: a Prometheus that times out costs one
// timeout (an engine's figures are two queries, asked together).
func TestContainerFiguresAreAskedAllAtOnce(t *testing.T) {
	if n := len(containerCounters) + 1; n > engineParallelQueries {
		t.Errorf("cAdvisor's %d figures, %d asked at once", n, engineParallelQueries)
	}
}
