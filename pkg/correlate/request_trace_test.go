package correlate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// The trace join against in-memory stores: what it asks of each, in which order, and how it
// joins their answers. The stores' wire formats are tested with their clients.

const allocType = "memory:alloc_space:bytes:space:bytes"

// fakeTraces is a trace store in memory.
type fakeTraces struct {
	trace *models.Trace
	err   error
}

func (f fakeTraces) Trace(_ context.Context, id string) (*models.Trace, error) {
	if f.err != nil {
		return nil, f.err
	}
	if f.trace == nil || f.trace.TraceID != id {
		return nil, fmt.Errorf("trace %s not found", id)
	}
	return f.trace, nil
}

// typedProfiles answers each profile type from its own store; wait, when set, is called before
// every call.
type typedProfiles struct {
	byType map[string]*fakeProfiles
	wait   func(profileTypeID string) error
}

func (p *typedProfiles) MergedFlameGraph(ctx context.Context, q models.FlameGraphQuery) (*flamegraph.Node, error) {
	if p.wait != nil {
		if err := p.wait(q.ProfileTypeID); err != nil {
			return nil, err
		}
	}
	f := p.byType[q.ProfileTypeID]
	if f == nil {
		return flamegraph.New(), nil
	}
	return f.MergedFlameGraph(ctx, q)
}

// fakeGPUs is a GPU store in memory: the series of the hosts asked for.
type fakeGPUs struct {
	series []classify.GPUSeries
	err    error
	wait   func() error

	mu    sync.Mutex
	asked []string // "hosts start end step"
}

func (f *fakeGPUs) GPUFigures(_ context.Context, filter models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, notices.List, error) {
	f.mu.Lock()
	f.asked = append(f.asked, fmt.Sprintf("%s %s %s %s", strings.Join(filter.Hosts, ","), start.Sub(t0), end.Sub(t0), step))
	f.mu.Unlock()
	if f.wait != nil {
		if err := f.wait(); err != nil {
			return nil, nil, err
		}
	}
	if f.err != nil {
		return nil, nil, f.err
	}
	var out []classify.GPUSeries
	for _, s := range f.series {
		if slices.Contains(filter.Hosts, s.GPU.Host) {
			out = append(out, s)
		}
	}
	return out, notices.List{{Severity: notices.Info, Text: "step raised from 1s to 1s (a notice of the store)"}}, nil
}

// fakeKernels is a kernel-trace store in memory.
type fakeKernels struct {
	results  []*gputrace.Result
	warnings []string
}

func (f fakeKernels) KernelTracesOf(context.Context, string) ([]*gputrace.Result, notices.List) {
	return f.results, notices.Warnings(f.warnings...)
}

// fakeKernelBaselines is a kernel-trace store that also counts the other requests a kernels
// diff would compare with.
type fakeKernelBaselines struct {
	fakeKernels
	others int
}

func (f fakeKernelBaselines) KernelTracesWithBaseline(ctx context.Context, traceID string) ([]*gputrace.Result, int, notices.List) {
	r, w := f.KernelTracesOf(ctx, traceID)
	return r, f.others, w
}

// A store that counts other requests' kernel traces says how many; one that cannot, none.
func TestJoinRequestCountsKernelBaselines(t *testing.T) {
	_, _, src := joinStores()
	results := []*gputrace.Result{{ByTraceID: []gputrace.TraceKernelTime{{TraceID: demoTraceID, Kernels: 2, KernelTime: 4000}}}}
	src.Kernels = Ready[KernelTraces](fakeKernelBaselines{fakeKernels{results: results, warnings: []string{"w"}}, 7})
	ans, err := JoinRequest(context.Background(), src, joinQuery())
	if err != nil || ans.KernelBaselines != 7 || len(ans.KernelTraces) != 1 || !ans.Notices.Has("w") {
		t.Fatalf("%v: baselines %d, %d traces, notices %q", err, ans.KernelBaselines, len(ans.KernelTraces), ans.Notices.Texts())
	}
	src.Kernels = Ready[KernelTraces](fakeKernels{results: results})
	if ans, _ := JoinRequest(context.Background(), src, joinQuery()); ans.KernelBaselines != 0 || len(ans.KernelTraces) != 1 {
		t.Errorf("a store without the count: %d", ans.KernelBaselines)
	}
}

// steadyGPU reads the same figures every second from t0-2s to t0+5s.
func steadyGPU(g classify.GPU, smActive, dramActive float64) classify.GPUSeries {
	s := classify.GPUSeries{GPU: g}
	for sec := -2; sec <= 5; sec++ {
		f := classify.Missing()
		f.SMActive, f.GrEngine, f.DRAMActive = smActive, smActive, dramActive
		f.PCIeTx, f.PCIeRx = 1e9, 2e9
		s.Samples = append(s.Samples, classify.Sample{Time: t0.Add(time.Duration(sec) * time.Second), Figures: f})
	}
	return s
}

// joinStores are the demo request's stores: the backend's, detector's and enrichment's roots
// profiled (CPU and allocations), the detector on a busy GPU 0, the enrichment on an idle GPU 1,
// and another host's GPU that must not be asked for.
func joinStores() (*typedProfiles, *fakeGPUs, TraceSources) {
	profiles := &typedProfiles{byType: map[string]*fakeProfiles{
		cpuType: {
			bySpan: map[string][]string{
				"b000000000000001": {"main.handleDetect;main.dbQuery;crypto/sha256.block 280", "main.handleDetect;main.serializeResponse 20"},
				"d000000000000001": {"main.handleDetector;main.modelPredict 60"},
				// The enrichment's root was profiled but got no sample.
			},
			byTrace: map[string][]string{`service_name="nemotron-backend"`: {"main.handleDetect;main.dbQuery 99"}},
			byLabel: map[string][]string{`trace_id="` + demoTraceID + `"`: {"main.handleDetect;main.dbQuery 99"}},
			traceID: demoTraceID, traceErr: models.ErrTraceSelectorIgnored,
		},
		allocType: {bySpan: map[string][]string{
			"b000000000000001": {"main.handleDetect;encoding/json.Marshal 4096"},
			"e000000000000001": {"main.handleEnrichment;main.extractFeatures 1048576"},
		}},
	}}
	gpus := &fakeGPUs{series: []classify.GPUSeries{
		steadyGPU(classify.GPU{Host: "gpu-node-1", Index: "0", UUID: "GPU-0"}, 0.95, 0.3),
		steadyGPU(classify.GPU{Host: "gpu-node-1", Index: "1", UUID: "GPU-1"}, 0.01, 0.01),
		steadyGPU(classify.GPU{Host: "gpu-node-2", Index: "0", UUID: "GPU-2"}, 0.5, 0.5),
	}}
	return profiles, gpus, TraceSources{Traces: Ready[Traces](fakeTraces{trace: demoJoinTrace()}), Profiles: Ready[Profiles](profiles), GPUs: Ready[GPUFigures](gpus)}
}

func joinQuery() TraceQuery {
	return TraceQuery{TraceID: demoTraceID, ProfileTypeID: cpuType, AllocTypeID: allocType, MaxNodes: 1024,
		From: t0.Add(-time.Hour), To: t0.Add(time.Hour), Join: models.DefaultJoinSettings().SpanMatch, Thresholds: classify.DefaultThresholds()}
}

// cells prints a row's joined figures ("-" for none).
func cells(r SpanRow) string {
	opt := func(v *int64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprint(*v)
	}
	gpu := "gpu=-"
	if r.GPU != nil {
		var names []string
		for _, g := range r.GPU.GPUs {
			names = append(names, g.Index)
		}
		gpu = fmt.Sprintf("gpu=%s %s", strings.Join(names, ","), r.GPU.Class)
	}
	return fmt.Sprintf("cpu=%s alloc=%s hot=%s %s kernel=%s", opt(r.CPU), opt(r.Alloc), cmpOr(r.HotFunction, "-"), gpu, opt(r.GPUKernelTime))
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func TestJoinRequestJoinsEveryStorePerSpan(t *testing.T) {
	profiles, gpus, src := joinStores()
	src.Kernels = Ready[KernelTraces](fakeKernels{results: []*gputrace.Result{{
		Annotations: []gputrace.AnnotationKernels{{Name: "forward span=d000000000000002 trace=" + demoTraceID, TraceID: demoTraceID, Kernels: 2, KernelTime: 4000}},
		ByTraceID:   []gputrace.TraceKernelTime{{TraceID: demoTraceID, Kernels: 2, KernelTime: 4000}},
	}}})
	ans, err := JoinRequest(context.Background(), src, joinQuery())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range ans.Rows {
		got[r.Span.Operation] = cells(r)
	}
	want := map[string]string{
		"GET /api/detect":    "cpu=300 alloc=4096 hot=crypto/sha256.block gpu=0,1 compute-bound kernel=-",
		"db_query":           "cpu=- alloc=- hot=- gpu=0,1 compute-bound kernel=-",
		"GET /detect":        "cpu=60 alloc=0 hot=main.modelPredict gpu=0 compute-bound kernel=-",
		"model.predict":      "cpu=- alloc=- hot=- gpu=0 compute-bound kernel=4000",
		"GET /enrich":        "cpu=0 alloc=1048576 hot=- gpu=1 idle kernel=-",
		"enrich":             "cpu=- alloc=- hot=- gpu=1 idle kernel=-",
		"serialize_response": "cpu=- alloc=- hot=- gpu=0,1 compute-bound kernel=-",
	}
	for op, w := range want {
		if got[op] != w {
			t.Errorf("%s:\n got %s\nwant %s", op, got[op], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d rows: %v", len(got), got)
	}
	// The evidence is the thresholds' own; over two GPUs it names the one it is about.
	root := ans.Rows[0]
	if root.GPU == nil || len(root.GPU.Evidence) == 0 || !strings.HasPrefix(root.GPU.Evidence[0], "GPU 0: ") {
		t.Errorf("root evidence %v", root.GPU)
	}
	// The flame graph is the whole request's: the profiled spans' samples under their services.
	if ans.Profile == nil || ans.Profile.Tree.Total != 360 {
		t.Fatalf("profile %+v", ans.Profile)
	}
	// One call per profiled span and type; only the trace's host, over the trace's window from
	// a step before to three after, at the join's step.
	if n := len(profiles.byType[cpuType].spanCalls()) + len(profiles.byType[allocType].spanCalls()); n != 6 {
		t.Errorf("%d span calls", n)
	}
	if want := []string{"gpu-node-1 -1s 3.5s 1s"}; !slices.Equal(gpus.asked, want) {
		t.Errorf("GPU store asked %v, want %v", gpus.asked, want)
	}
	wantParts(t, noticeText(ans.Notices),
		"[info] GPU figures for 7 of 7 span(s), over each span's window to 1s after its end",
		"[info] GPU series: step raised from 1s to 1s (a notice of the store)",
	)
	// The kernel trace's time is all attributed to the span it names: nothing is left for the root.
	if strings.Contains(noticeText(ans.Notices), "not attributed") {
		t.Errorf("notices:\n%s", noticeText(ans.Notices))
	}
}

func TestJoinRequestKeepsTheOtherColumnsWhenAStoreFails(t *testing.T) {
	errProm := errors.New("Prometheus (http://prometheus:9090): HTTP 503")
	errPyro := errors.New("Pyroscope (http://pyroscope:4040) is not configured")

	t.Run("GPU store fails", func(t *testing.T) {
		_, gpus, src := joinStores()
		gpus.err = errProm
		ans, err := JoinRequest(context.Background(), src, joinQuery())
		if err != nil {
			t.Fatal(err)
		}
		if got := cells(ans.Rows[0]); got != "cpu=300 alloc=4096 hot=crypto/sha256.block gpu=- kernel=-" {
			t.Errorf("root: %s", got)
		}
		wantParts(t, noticeText(ans.Notices), "[warning] No GPU columns: "+errProm.Error())
	})
	t.Run("GPU store unavailable", func(t *testing.T) {
		_, gpus, src := joinStores()
		src.GPUs = Unavailable[GPUFigures](errProm)
		ans, err := JoinRequest(context.Background(), src, joinQuery())
		if err != nil {
			t.Fatal(err)
		}
		if len(gpus.asked) != 0 || ans.Rows[0].GPU != nil {
			t.Errorf("asked %v, root GPU %v", gpus.asked, ans.Rows[0].GPU)
		}
		wantParts(t, noticeText(ans.Notices), "[warning] No GPU columns: "+errProm.Error())
	})
	t.Run("profile store unavailable", func(t *testing.T) {
		_, _, src := joinStores()
		src.Profiles = Unavailable[Profiles](errPyro)
		ans, err := JoinRequest(context.Background(), src, joinQuery())
		if err != nil {
			t.Fatal(err)
		}
		if got := cells(rowByOp(ans.Rows, "GET /detect")); got != "cpu=- alloc=- hot=- gpu=0 compute-bound kernel=-" {
			t.Errorf("detector: %s", got)
		}
		if ans.Profile != nil {
			t.Errorf("a profile without a profile store: %v", ans.Profile)
		}
		wantParts(t, noticeText(ans.Notices), "[warning] No CPU column or flame graph: "+errPyro.Error(), "[warning] No allocation column: "+errPyro.Error())
	})
	t.Run("trace unreadable", func(t *testing.T) {
		_, gpus, src := joinStores()
		src.Traces = Ready[Traces](fakeTraces{err: errJaeger})
		ans, err := JoinRequest(context.Background(), src, joinQuery())
		if err != nil {
			t.Fatal(err)
		}
		if len(ans.Rows) != 0 || ans.Trace != nil || len(gpus.asked) != 0 {
			t.Errorf("rows %v, GPU store asked %v", ans.Rows, gpus.asked)
		}
		wantParts(t, noticeText(ans.Notices), "[warning] No span table: could not read trace "+demoTraceID+" ("+errJaeger.Error()+").")
		// The flame graph still comes, from the samples that carry the trace ID.
		if ans.Profile == nil || ans.Profile.Tree.Total != 99 {
			t.Errorf("profile %+v", ans.Profile)
		}
	})
	t.Run("trace unreadable and no profile store", func(t *testing.T) {
		_, _, src := joinStores()
		src.Traces = Ready[Traces](fakeTraces{err: errJaeger})
		src.Profiles = Unavailable[Profiles](errPyro)
		if _, err := JoinRequest(context.Background(), src, joinQuery()); !errors.Is(err, errJaeger) {
			t.Errorf("error %v, want the trace store's", err)
		}
	})
}

// rendezvous lets n parties each wait until all n have arrived, or fail after a long bound: the
// stores of a join that asks them one after another never all arrive.
type rendezvous struct {
	mu      sync.Mutex
	arrived map[string]bool
	all     chan struct{}
	n       int
}

func newRendezvous(n int) *rendezvous {
	return &rendezvous{arrived: map[string]bool{}, all: make(chan struct{}), n: n}
}

func (r *rendezvous) wait(party string) error {
	r.mu.Lock()
	if !r.arrived[party] {
		r.arrived[party] = true
		if len(r.arrived) == r.n {
			close(r.all)
		}
	}
	r.mu.Unlock()
	select {
	case <-r.all:
		return nil
	case <-time.After(20 * time.Second):
		return fmt.Errorf("%s waited 20 s for the other stores: they were not asked at the same time", party)
	}
}

func TestJoinRequestAsksItsStoresInParallel(t *testing.T) {
	profiles, gpus, src := joinStores()
	// The CPU profile, the allocations and the GPU figures each wait for the other two.
	r := newRendezvous(3)
	profiles.wait = r.wait
	gpus.wait = func() error { return r.wait("gpu") }
	ans, err := JoinRequest(context.Background(), src, joinQuery())
	if err != nil {
		t.Fatal(err)
	}
	if n := noticeText(ans.Notices); strings.Contains(n, "[warning]") {
		t.Errorf("notices:\n%s", n)
	}
	if got := cells(rowByOp(ans.Rows, "GET /detect")); got != "cpu=60 alloc=0 hot=main.modelPredict gpu=0 compute-bound kernel=-" {
		t.Errorf("detector: %s", got)
	}
}

func TestJoinRequestSaysWhichHostsHaveNoGPUSeries(t *testing.T) {
	q := joinQuery()
	q.Join.HostAttribute = "k8s.node.name"
	named := func(src TraceSources, host string) TraceSources {
		tr := *demoJoinTrace()
		tr.Spans = slices.Clone(tr.Spans)
		for i := range tr.Spans {
			tr.Spans[i].Resource = map[string]string{"k8s.node.name": host}
		}
		src.Traces = Ready[Traces](fakeTraces{trace: &tr})
		return src
	}
	// Mapped to the exporter's host label, the spans meet their GPUs.
	_, _, src := joinStores()
	q.Join.HostMap = map[string]string{"ip-10-0-0-1.ec2.internal": "gpu-node-1"}
	ans, err := JoinRequest(context.Background(), named(src, "ip-10-0-0-1.ec2.internal"), q)
	if err != nil {
		t.Fatal(err)
	}
	if r := rowByOp(ans.Rows, "enrich"); r.Host != "gpu-node-1" || r.GPU == nil {
		t.Errorf("mapped: host %q GPU %v", r.Host, r.GPU)
	}
	// Unmapped, the host has no series: the notice says what to set.
	q.Join.HostMap = nil
	ans, err = JoinRequest(context.Background(), named(src, "ip-10-0-0-1.ec2.internal"), q)
	if err != nil {
		t.Fatal(err)
	}
	wantParts(t, noticeText(ans.Notices), "[warning] GPU figures for 0 of 7 span(s)",
		`No DCGM series for host(s) ip-10-0-0-1.ec2.internal (from the spans' "k8s.node.name"): map them to the exporter's host label with jsonData.joinHostMap.`)
	// No span names a host: the GPU store is not asked, and the notice names the attribute.
	_, gpus, src := joinStores()
	ans, err = JoinRequest(context.Background(), named(src, ""), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(gpus.asked) != 0 {
		t.Errorf("GPU store asked %v", gpus.asked)
	}
	wantParts(t, noticeText(ans.Notices), `[warning] No GPU columns: no span of the trace names its host in the resource attribute "k8s.node.name" (jsonData.joinHostAttribute)`)
}

func TestJoinRequestWithoutProfiledSpansSaysWhyTheColumnsAreEmpty(t *testing.T) {
	profiles, _, src := joinStores()
	tr := *demoJoinTrace()
	tr.Spans = slices.Clone(tr.Spans)
	for i := range tr.Spans {
		tr.Spans[i].Attributes = map[string]string{}
	}
	src.Traces = Ready[Traces](fakeTraces{trace: &tr})
	ans, err := JoinRequest(context.Background(), src, joinQuery())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range ans.Rows {
		if r.CPU != nil || r.Alloc != nil {
			t.Errorf("%s: %s", r.Span.Operation, cells(r))
		}
	}
	wantParts(t, noticeText(ans.Notices),
		"[info] The cpu column is empty: no span carries pyroscope.profile.id",
		"[info] No span carries pyroscope.profile.id, so no span has a profile of its own: the allocation column is empty.")
	// The flame graph still asks every span, one query per service; no allocation is asked.
	if ans.Profile == nil || len(profiles.byType[cpuType].spanCalls()) != 3 || len(profiles.byType[allocType].spanCalls()) != 0 {
		t.Errorf("profile %v, CPU calls %d, allocation calls %d", ans.Profile, len(profiles.byType[cpuType].spanCalls()), len(profiles.byType[allocType].spanCalls()))
	}
}

func TestJoinRequestPassesKernelTraceWarningsOn(t *testing.T) {
	_, _, src := joinStores()
	src.Kernels = Ready[KernelTraces](fakeKernels{
		results: []*gputrace.Result{{
			Annotations: []gputrace.AnnotationKernels{{Name: "request " + demoTraceID, TraceID: demoTraceID, Kernels: 1, KernelTime: 1500}},
			ByTraceID:   []gputrace.TraceKernelTime{{TraceID: demoTraceID, Kernels: 1, KernelTime: 1500}},
		}},
		warnings: []string{"GPU kernel trace run/x.pt.trace.json: truncated"},
	})
	ans, err := JoinRequest(context.Background(), src, joinQuery())
	if err != nil {
		t.Fatal(err)
	}
	// An annotation naming only the trace goes to the root span, and the notice says so.
	if got := cells(ans.Rows[0]); !strings.HasSuffix(got, "kernel=1500") {
		t.Errorf("root: %s", got)
	}
	wantParts(t, noticeText(ans.Notices), "[info] GPU kernel time: 1500 ns of the request's kernel traces is not attributed to a span",
		"[warning] GPU kernel trace run/x.pt.trace.json: truncated")
}

func TestJoinRequestSaysWhichSpansMetTheirPodsGPUs(t *testing.T) {
	_, gpus, src := joinStores()
	gpus.series[0].Pods = []classify.Pod{{Namespace: "inference", Name: "backend-0"}}
	tr := *demoJoinTrace()
	tr.Spans = slices.Clone(tr.Spans)
	for i := range tr.Spans {
		if tr.Spans[i].Service == "nemotron-backend" {
			tr.Spans[i].Resource = map[string]string{"host.name": "gpu-node-1", PodAttribute: "backend-0", NamespaceAttribute: "inference"}
		}
	}
	src.Traces = Ready[Traces](fakeTraces{trace: &tr})
	ans, err := JoinRequest(context.Background(), src, joinQuery())
	if err != nil {
		t.Fatal(err)
	}
	if r := rowByOp(ans.Rows, "db_query"); r.GPU == nil || len(r.GPU.GPUs) != 1 || r.GPU.GPUs[0].Index != "0" {
		t.Errorf("db_query: %+v", r.GPU)
	}
	wantParts(t, noticeText(ans.Notices), "3 of them met the GPUs dcgm-exporter maps to their own pod (k8s.pod.name), the others every GPU of their host.")
	if strings.Contains(noticeText(ans.Notices), "other pods too") {
		t.Errorf("no GPU is shared: %s", noticeText(ans.Notices))
	}

	// The backend's GPU time-sliced with another pod: the notice counts the spans that met it,
	// the backend's three and the two others of that host, which meet every GPU of it.
	gpus.series[0].Pods = append(gpus.series[0].Pods, classify.Pod{Namespace: "inference", Name: "embedder-0"})
	if ans, err = JoinRequest(context.Background(), src, joinQuery()); err != nil {
		t.Fatal(err)
	}
	wantParts(t, noticeText(ans.Notices), "5 met a GPU dcgm-exporter maps to other pods too (shared or handed over): its figures are the whole GPU's.")
}
