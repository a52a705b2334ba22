package correlate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/tracetest"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// The hand-made request and its profiles and GPU series, shared with pkg/diagnose's tests.
var (
	jspan         = tracetest.Span
	tree          = tracetest.Tree
	demoJoinTrace = tracetest.DemoTrace
	gpuSeries     = tracetest.GPUSeries
)

func TestSelfTimeCountsOverlappingChildrenOnce(t *testing.T) {
	parent := jspan("p", "", "svc", "root", 0, 100)
	cases := []struct {
		name     string
		children []models.Span
		want     time.Duration
	}{
		{"no children", nil, ms(100)},
		{"two sequential", []models.Span{jspan("a", "p", "svc", "a", 10, 20), jspan("b", "p", "svc", "b", 40, 30)}, ms(50)},
		// Parallel calls 10–50 and 30–70 cover 10–70 once: 60 ms.
		{"overlapping", []models.Span{jspan("a", "p", "svc", "a", 10, 40), jspan("b", "p", "svc", "b", 30, 40)}, ms(40)},
		{"nested inside another", []models.Span{jspan("a", "p", "svc", "a", 10, 80), jspan("b", "p", "svc", "b", 20, 10)}, ms(20)},
		// An async child that outlives its parent counts only inside it (90–100).
		{"outliving the parent", []models.Span{jspan("a", "p", "svc", "a", 90, 500)}, ms(90)},
		{"starting before the parent", []models.Span{jspan("a", "p", "svc", "a", -50, 60)}, ms(90)},
		{"covering it all", []models.Span{jspan("a", "p", "svc", "a", 0, 60), jspan("b", "p", "svc", "b", 60, 40)}, 0},
		{"zero-length child", []models.Span{jspan("a", "p", "svc", "a", 50, 0)}, ms(100)},
	}
	for _, c := range cases {
		kids := make([]int, len(c.children))
		for i := range kids {
			kids[i] = i
		}
		if got := selfTime(&parent, c.children, kids); got != c.want {
			t.Errorf("%s: self %v, want %v", c.name, got, c.want)
		}
	}
}

func TestHotFunctionSumsSelfOverEveryPath(t *testing.T) {
	// sha256.block is called from two places: together it beats dbQuery's own 30.
	name, self := HotFunction(tree("main.handle;main.dbQuery 30", "main.handle;main.dbQuery;sha256.block 25", "main.handle;main.hash;sha256.block 20"))
	if name != "sha256.block" || self != 45 {
		t.Errorf("hot function %s %d", name, self)
	}
	if name, self := HotFunction(flamegraph.New()); name != "" || self != 0 {
		t.Errorf("empty profile: %q %d", name, self)
	}
}

func nan() float64 { return math.NaN() }

// classifyByMeanUtil stands in for the classifier: compute-bound above 50 % mean utilisation,
// idle below; share 1. It records what it was given.
type classifyByMeanUtil struct{ calls [][]classify.GPUSeries }

func (c *classifyByMeanUtil) fn(series []classify.GPUSeries) (classify.Class, float64, []string) {
	c.calls = append(c.calls, series)
	var m mean
	for _, s := range series {
		for _, smp := range s.Samples {
			m.add(smp.Figures.GPUUtil)
		}
	}
	evidence := []string{fmt.Sprintf("mean util %.0f", m.value())}
	if m.value() > 50 {
		return classify.ComputeBound, 1, evidence
	}
	return classify.Idle, 1, evidence
}

func rowByOp(rows []SpanRow, op string) SpanRow {
	for _, r := range rows {
		if r.Span.Operation == op {
			return r
		}
	}
	return SpanRow{}
}

func TestJoinTraceOrdersSpansDepthFirstWithSelfTime(t *testing.T) {
	rows := JoinTrace(TraceJoin{Trace: demoJoinTrace(), Join: models.DefaultJoinSettings().SpanMatch})
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprintf("%s%s self=%v", strings.Repeat("  ", r.Depth), r.Span.Operation, r.Self))
	}
	want := []string{
		// 500 ms minus db 300, detector 80, enrichment 70, serialise 25.
		"GET /api/detect self=25ms",
		"  db_query self=300ms",
		"  GET /detect self=10ms",
		"    model.predict self=70ms",
		"  GET /enrich self=5ms",
		"    enrich self=65ms",
		"  serialize_response self=25ms",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestJoinTraceShowsProfilesOnlyForSpansThatHaveThem(t *testing.T) {
	tr := demoJoinTrace()
	cpu := SpanProfiles{
		"b000000000000001": tree("main.handleDetect;main.dbQuery;sha256.block 280", "main.handleDetect;main.serializeResponse 20"),
		"d000000000000001": tree("main.handleDetector;main.modelPredict 60"),
		// Profiled, asked, no samples: under one sample period of CPU.
		"e000000000000001": flamegraph.New(),
	}
	// Heap profiles carry no span labels: every span asked, none with samples.
	alloc := SpanProfiles{"b000000000000001": flamegraph.New(), "d000000000000001": flamegraph.New(), "e000000000000001": flamegraph.New()}
	rows := JoinTrace(TraceJoin{Trace: tr, CPU: cpu, Alloc: alloc, Join: models.DefaultJoinSettings().SpanMatch})

	root := rowByOp(rows, "GET /api/detect")
	if root.CPU == nil || *root.CPU != 300 || root.HotFunction != "sha256.block" || root.HotSelf != 280 || root.ProfileID != "b000000000000001" {
		t.Errorf("backend root: cpu %v hot %s %d", root.CPU, root.HotFunction, root.HotSelf)
	}
	if enrich := rowByOp(rows, "GET /enrich"); enrich.CPU == nil || *enrich.CPU != 0 || enrich.HotFunction != "" {
		t.Errorf("a profiled span without samples shows %v, want 0", enrich.CPU)
	}
	for _, op := range []string{"db_query", "model.predict", "serialize_response"} {
		if r := rowByOp(rows, op); r.CPU != nil || r.Alloc != nil || r.HotFunction != "" || r.ProfileID != "" {
			t.Errorf("%s has no profile of its own, yet shows cpu %v alloc %v hot %q", op, r.CPU, r.Alloc, r.HotFunction)
		}
	}
	for _, r := range rows {
		if r.Alloc != nil {
			t.Errorf("%s: allocations %d from a profile type without span labels", r.Span.Operation, *r.Alloc)
		}
	}
	// Without span profiles at all (Pyroscope down), every cell is empty.
	for _, r := range JoinTrace(TraceJoin{Trace: tr, Join: models.DefaultJoinSettings().SpanMatch}) {
		if r.CPU != nil || r.Alloc != nil || r.GPU != nil {
			t.Errorf("%s shows figures without upstream data", r.Span.Operation)
		}
	}
}

func TestJoinTraceJoinsEachSpanToItsServicesGPUs(t *testing.T) {
	tr := demoJoinTrace()
	series := []classify.GPUSeries{gpuSeries("gpu-node-1", "0", 90), gpuSeries("gpu-node-1", "1", 10), gpuSeries("other-node", "0", 100)}
	c := &classifyByMeanUtil{}
	rows := JoinTrace(TraceJoin{Trace: tr, GPUSeries: series, GPUStep: time.Second, GPUsKnown: true, Classify: c.fn, Join: models.DefaultJoinSettings().SpanMatch})

	// The detector names GPU 0 on model.predict: its root span is joined to GPU 0 too. The span
	// (t0+310ms..t0+390ms) gets the reading at t0+1s: the first at or after its end.
	for _, op := range []string{"GET /detect", "model.predict"} {
		r := rowByOp(rows, op)
		if !slices.Equal(r.GPUs, []string{"0"}) || r.GPU == nil || !slices.Equal(gpuNames(r.GPU), []string{"gpu-node-1/0"}) {
			t.Fatalf("%s: gpus %v window %+v", op, r.GPUs, r.GPU)
		}
		if r.GPU.Util != 100 || r.GPU.MemActivity != 50 || r.GPU.PCIe != 3e9 || r.GPU.Samples != 1 || r.GPU.Class != classify.ComputeBound || r.GPU.ClassShare != 1 ||
			!slices.Equal(r.GPU.Evidence, []string{"mean util 100"}) {
			t.Errorf("%s: %+v", op, *r.GPU)
		}
	}
	if r := rowByOp(rows, "enrich"); r.GPU == nil || r.GPU.Util != 20 || r.GPU.Class != classify.Idle {
		t.Errorf("enrich (GPU 1): %+v", r.GPU)
	}
	// The backend names no GPU: all GPUs of its host, not the other host's. Its 500 ms window
	// gets t0 and t0+1s from each GPU: util (90+100+10+20)/4.
	root := rowByOp(rows, "GET /api/detect")
	if root.GPUs != nil || root.GPU == nil || !slices.Equal(gpuNames(root.GPU), []string{"gpu-node-1/0", "gpu-node-1/1"}) || root.GPU.Samples != 4 || root.GPU.Util != 55 {
		t.Fatalf("backend root: gpus %v window %+v", root.GPUs, root.GPU)
	}
	if !root.GPU.From.Equal(t0) || !root.GPU.To.Equal(t0.Add(time.Second)) {
		t.Errorf("backend window %v..%v", root.GPU.From, root.GPU.To)
	}
	// The classifier saw only the window's samples, per GPU.
	for _, call := range c.calls {
		for _, s := range call {
			for _, smp := range s.Samples {
				if smp.Time.Before(t0) || smp.Time.After(t0.Add(time.Second)) {
					t.Errorf("classifier got a sample at %v, outside every span's window", smp.Time)
				}
			}
		}
	}
}

func TestJoinTraceMapsHostsAndLeavesUnknownOnesEmpty(t *testing.T) {
	tr := demoJoinTrace()
	for i := range tr.Spans {
		tr.Spans[i].Resource = map[string]string{"k8s.node.name": "ip-10-0-0-1.ec2.internal"}
	}
	tr.Spans[6].Resource = map[string]string{} // serialize_response: no host at all
	tr.Spans[5].Attributes["gpu.index"] = "GPU-1, 0"
	join := models.DefaultJoinSettings().SpanMatch
	join.HostAttribute = "k8s.node.name"
	join.HostMap = map[string]string{"ip-10-0-0-1.ec2.internal": "gpu-node-1"}
	series := []classify.GPUSeries{gpuSeries("gpu-node-1", "0", 90), gpuSeries("gpu-node-1", "1", 10)}
	rows := JoinTrace(TraceJoin{Trace: tr, GPUSeries: series, GPUStep: time.Second, GPUsKnown: true, Join: join})

	if got := TraceHosts(tr, join); !slices.Equal(got, []string{"gpu-node-1"}) {
		t.Errorf("hosts %v", got)
	}
	root := rowByOp(rows, "GET /api/detect")
	if root.Host != "gpu-node-1" || root.GPU == nil || root.GPU.Class != classify.NoData {
		t.Errorf("mapped host %q, window %+v (no classifier: no data)", root.Host, root.GPU)
	}
	// A GPU named by UUID or index, several at once.
	if r := rowByOp(rows, "enrich"); !slices.Equal(r.GPUs, []string{"0", "GPU-1"}) || r.GPU == nil || len(r.GPU.GPUs) != 2 {
		t.Errorf("enrich: gpus %v window %+v", r.GPUs, r.GPU)
	}
	if r := rowByOp(rows, "serialize_response"); r.Host != "" || r.GPU != nil {
		t.Errorf("a span without host shows host %q, GPU %+v", r.Host, r.GPU)
	}
	// Prometheus not asked or failed: no GPU cells even with a host.
	for _, r := range JoinTrace(TraceJoin{Trace: tr, GPUSeries: series, GPUStep: time.Second, Join: join}) {
		if r.GPU != nil {
			t.Errorf("%s: GPU figures although Prometheus did not answer", r.Span.Operation)
		}
	}
	// Readings missing from the exporter stay missing; a host without series has no window.
	sparse := gpuSeries("gpu-node-1", "0", 90)
	for i := range sparse.Samples {
		sparse.Samples[i].Figures.PCIeTx, sparse.Samples[i].Figures.PCIeRx, sparse.Samples[i].Figures.DRAMActive = nan(), nan(), nan()
		sparse.Samples[i].Figures.MemCopyUtil = 12
	}
	rows = JoinTrace(TraceJoin{Trace: tr, GPUSeries: []classify.GPUSeries{sparse}, GPUStep: time.Second, GPUsKnown: true, Join: join})
	if r := rowByOp(rows, "model.predict"); r.GPU == nil || !math.IsNaN(r.GPU.PCIe) || r.GPU.MemActivity != 12 {
		t.Errorf("sparse readings: %+v", r.GPU)
	}
	if r := rowByOp(rows, "enrich"); r.GPU == nil || len(r.GPU.GPUs) != 1 {
		t.Errorf("enrich with only GPU 0 reporting: %+v", r.GPU)
	}
	join.HostMap = map[string]string{}
	for _, r := range JoinTrace(TraceJoin{Trace: tr, GPUSeries: series, GPUStep: time.Second, GPUsKnown: true, Join: join}) {
		if r.GPU != nil {
			t.Errorf("%s: unmapped host %q matched DCGM's gpu-node-1", r.Span.Operation, r.Host)
		}
	}
}

func TestJoinTraceKeepsOrphansAndSurvivesCycles(t *testing.T) {
	tr := &models.Trace{Spans: []models.Span{
		jspan("a", "missing", "svc", "orphan", 0, 10),
		jspan("b", "c", "svc", "b", 1, 5),
		jspan("c", "b", "svc", "c", 2, 5),
	}}
	rows := JoinTrace(TraceJoin{Trace: tr, Join: models.DefaultJoinSettings().SpanMatch})
	if len(rows) != 3 || rows[0].Span.Operation != "orphan" || rows[0].Depth != 0 {
		t.Errorf("rows %+v", rows)
	}
	if JoinTrace(TraceJoin{}) != nil {
		t.Error("rows without a trace")
	}
}

// Random traces with every oddity a trace store hands over (spans reported twice, parents
// missing, spans their own parent, cycles, equal start times): the rows are the spans depth
// first, children by start then ID, each span once, as a plain walk of the parent IDs gives
// them.
func TestJoinTraceWalksRandomTracesAsTheirParentIDsSay(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 9))
		n := 1 + rng.IntN(40)
		id := func() string { return fmt.Sprintf("%016x", 1+rng.IntN(n+3)) } // repeats, and IDs no span has
		tr := &models.Trace{}
		for range n {
			own, parent := id(), ""
			switch rng.IntN(6) {
			case 0: // a root
			case 1:
				parent = own
			default:
				parent = id()
			}
			tr.Spans = append(tr.Spans, jspan(own, parent, "svc", fmt.Sprint(len(tr.Spans)), rng.IntN(5), 1+rng.IntN(5)))
		}
		var got []string
		for _, r := range JoinTrace(TraceJoin{Trace: tr, Join: models.DefaultJoinSettings().SpanMatch}) {
			got = append(got, fmt.Sprintf("%s@%d", r.Span.Operation, r.Depth))
		}
		if want := walkParentIDs(tr.Spans); !slices.Equal(got, want) {
			t.Fatalf("seed %d: rows %v, want %v", seed, got, want)
		}
	}
}

// walkParentIDs is the plain walk: children listed by parent ID, roots and each list sorted by
// start then ID, depth first from the roots, then whatever a cycle left unvisited.
func walkParentIDs(spans []models.Span) []string {
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanID] = true
	}
	children := map[string][]int{}
	var roots []int
	for i, s := range spans {
		if s.ParentSpanID != "" && ids[s.ParentSpanID] && s.ParentSpanID != s.SpanID {
			children[s.ParentSpanID] = append(children[s.ParentSpanID], i)
		} else {
			roots = append(roots, i)
		}
	}
	byStart := func(a, b int) int {
		if c := spans[a].Start.Compare(spans[b].Start); c != 0 {
			return c
		}
		return strings.Compare(spans[a].SpanID, spans[b].SpanID)
	}
	slices.SortStableFunc(roots, byStart)
	for _, c := range children {
		slices.SortStableFunc(c, byStart)
	}
	var out []string
	seen := make([]bool, len(spans))
	var visit func(i, depth int)
	visit = func(i, depth int) {
		if seen[i] {
			return
		}
		seen[i] = true
		out = append(out, fmt.Sprintf("%s@%d", spans[i].Operation, depth))
		for _, c := range children[spans[i].SpanID] {
			visit(c, depth+1)
		}
	}
	for _, r := range roots {
		visit(r, 0)
	}
	for i := range spans {
		visit(i, 0)
	}
	return out
}

func TestTraceWindowCoversEverySpan(t *testing.T) {
	start, end := TraceWindow(demoJoinTrace())
	if !start.Equal(t0) || !end.Equal(t0.Add(ms(500))) {
		t.Errorf("window %v..%v", start, end)
	}
}

// gpuNames are the short names of the window's GPUs.
func gpuNames(w *GPUWindow) []string {
	var out []string
	for _, g := range w.GPUs {
		out = append(out, g.Name())
	}
	return out
}

// migSeries is one MIG instance of gpu-node-1's GPU 0, labelled as dcgm-exporter labels it: the
// parent's index and UUID, plus the instance and its profile.
func migSeries(instance, profile string, utilAtT0 float64) classify.GPUSeries {
	s := gpuSeries("gpu-node-1", "0", utilAtT0)
	s.GPU.MIG, s.GPU.MIGProfile = instance, profile
	return s
}

func TestJoinTraceKeepsEachMIGInstanceOfOneGPU(t *testing.T) {
	tr := demoJoinTrace()
	tr.Spans[5].Attributes["gpu.index"] = "MIG-GPU-0/2/0" // enrich runs on instance 2 only (pre-R470 MIG name)
	series := []classify.GPUSeries{migSeries("1", "3g.20gb", 90), migSeries("2", "1g.5gb", 10)}
	c := &classifyByMeanUtil{}
	rows := JoinTrace(TraceJoin{Trace: tr, GPUSeries: series, GPUStep: time.Second, GPUsKnown: true, Classify: c.fn, Join: models.DefaultJoinSettings().SpanMatch})

	// GPU 0 by index is the whole GPU: both instances, each on its own.
	predict := rowByOp(rows, "model.predict")
	if predict.GPU == nil || !slices.Equal(gpuNames(predict.GPU), []string{"gpu-node-1/0 MIG 3g.20gb #1", "gpu-node-1/0 MIG 1g.5gb #2"}) {
		t.Fatalf("model.predict window %+v", predict.GPU)
	}
	// The instance named by its MIG device name: its own figures and class, not its sibling's.
	enrich := rowByOp(rows, "enrich")
	if enrich.GPU == nil || !slices.Equal(gpuNames(enrich.GPU), []string{"gpu-node-1/0 MIG 1g.5gb #2"}) || enrich.GPU.Util != 20 || enrich.GPU.Class != classify.Idle {
		t.Fatalf("enrich window %+v", enrich.GPU)
	}
	for _, call := range c.calls {
		seen := map[classify.GPU]bool{}
		for _, s := range call {
			if seen[s.GPU] {
				t.Errorf("the classifier got %s twice in one window", s.GPU)
			}
			seen[s.GPU] = true
		}
	}
}

func TestJoinTraceMeetsTheGPUsOfTheSpansOwnPod(t *testing.T) {
	tr := demoJoinTrace()
	for i := range tr.Spans {
		tr.Spans[i].Attributes = map[string]string{} // no gpu.index: the pod decides
		if tr.Spans[i].Service == "nemotron-backend" {
			tr.Spans[i].Resource[PodAttribute], tr.Spans[i].Resource[NamespaceAttribute] = "backend-7d9f", "inference"
		}
		if tr.Spans[i].Service == "ai-detector" {
			tr.Spans[i].Resource[PodAttribute] = "detector-0" // no namespace: matches any
		}
	}
	g0, g1 := gpuSeries("gpu-node-1", "0", 90), gpuSeries("gpu-node-1", "1", 10)
	g0.Pods = []classify.Pod{{Namespace: "inference", Name: "backend-7d9f"}}
	g1.Pods = []classify.Pod{{Namespace: "inference", Name: "detector-0"}, {Namespace: "other", Name: "backend-7d9f"}}
	c := &classifyByMeanUtil{}
	rows := JoinTrace(TraceJoin{Trace: tr, GPUSeries: []classify.GPUSeries{g0, g1}, GPUStep: time.Second, GPUsKnown: true, Classify: c.fn, Join: models.DefaultJoinSettings().SpanMatch})
	for op, want := range map[string][]string{
		"GET /api/detect": {"gpu-node-1/0"}, // its pod in its namespace, not the other namespace's namesake
		"GET /detect":     {"gpu-node-1/1"},
		"GET /enrich":     {"gpu-node-1/0", "gpu-node-1/1"}, // no pod attribute: every GPU of the host
	} {
		r := rowByOp(rows, op)
		if r.GPU == nil || !slices.Equal(gpuNames(r.GPU), want) || r.GPU.ByPod != (len(want) == 1) {
			t.Errorf("%s: %+v, want %v", op, r.GPU, want)
		}
	}
	// GPU 1 serves two pods: a span of one is told of the other, a span of none of both; GPU 0
	// serves the backend's pod alone.
	for op, want := range map[string]string{
		"GET /api/detect": "",
		"GET /detect":     "other/backend-7d9f",
		"GET /enrich":     "inference/detector-0, other/backend-7d9f",
	} {
		var got []string
		for _, p := range rowByOp(rows, op).GPU.SharedWith {
			got = append(got, p.String())
		}
		if strings.Join(got, ", ") != want {
			t.Errorf("%s shares its GPUs with %v, want %q", op, got, want)
		}
	}
	// A pod the exporter maps to no GPU of the host: every GPU of the host, not none.
	for i := range tr.Spans {
		tr.Spans[i].Resource[PodAttribute] = "elsewhere"
	}
	rows = JoinTrace(TraceJoin{Trace: tr, GPUSeries: []classify.GPUSeries{g0, g1}, GPUStep: time.Second, GPUsKnown: true, Classify: c.fn, Join: models.DefaultJoinSettings().SpanMatch})
	if r := rowByOp(rows, "GET /api/detect"); r.GPU == nil || len(r.GPU.GPUs) != 2 || r.GPU.ByPod {
		t.Errorf("unmapped pod: %+v", r.GPU)
	}
}

// A span's window of a GPU series is the samples in [from, to): a part of the series where it is
// in time order, the matching samples wherever they are otherwise.
func TestSpanWindowOfSamples(t *testing.T) {
	t0 := time.Unix(1796450000, 0)
	at := func(secs ...int) []classify.Sample {
		out := make([]classify.Sample, len(secs))
		for i, s := range secs {
			out[i] = classify.Sample{Time: t0.Add(time.Duration(s) * time.Second), Figures: classify.Figures{GPUUtil: float64(s)}}
		}
		return out
	}
	secsOf := func(ss []classify.Sample) (out []int) {
		for _, s := range ss {
			out = append(out, int(s.Figures.GPUUtil))
		}
		return out
	}
	from, to := t0.Add(2*time.Second), t0.Add(5*time.Second)
	sorted := at(0, 1, 2, 3, 4, 5, 6)
	got := window(sorted, from, to)
	if !slices.Equal(secsOf(got), []int{2, 3, 4}) || &got[0] != &sorted[2] {
		t.Errorf("in time order: %v, a copy: %v", secsOf(got), &got[0] != &sorted[2])
	}
	if got := window(at(3, 0, 9, 4, 2, 7), from, to); !slices.Equal(secsOf(got), []int{3, 4, 2}) {
		t.Errorf("out of order: %v", secsOf(got))
	}
	if got := window(at(0, 1, 6), from, to); got != nil {
		t.Errorf("none inside: %v", secsOf(got))
	}
}
