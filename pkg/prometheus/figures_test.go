package prometheus

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// noSample leaves a step out of a stored series.
var noSample = math.Inf(-1)

// stored is a series Prometheus holds: metric with labels, its values at t0, t0+30 s, ...
func stored(metric string, lbls map[string]string, values ...float64) fakeStream {
	m := map[string]string{model.MetricNameLabel: metric}
	for k, v := range lbls {
		m[k] = v
	}
	var pts [][2]any
	for i, v := range values {
		if v != noSample {
			pts = append(pts, [2]any{float64(t0.Add(time.Duration(i) * 30 * time.Second).Unix()), formatFloat(v)})
		}
	}
	return fakeStream{Metric: m, Values: pts}
}

// withLabels is lbls plus more.
func withLabels(lbls map[string]string, more ...string) map[string]string {
	out := map[string]string{}
	for k, v := range lbls {
		out[k] = v
	}
	for i := 0; i+1 < len(more); i += 2 {
		out[more[i]] = more[i+1]
	}
	return out
}

// identity is a GPU's identity labels as an exporter sends them (no pod, no namespace).
func identity(lbls map[string]string) map[string]string {
	out := map[string]string{}
	for _, k := range []string{"Hostname", "hostname", "gpu", "UUID", "modelName", "GPU_I_ID", "GPU_I_PROFILE"} {
		if v, ok := lbls[k]; ok {
			out[k] = v
		}
	}
	return out
}

// onlySelectors says whether a query is selectors joined with "or": no aggregation, no
// function, no series-limit part for Prometheus to evaluate per step.
func onlySelectors(t *testing.T, q string) bool {
	t.Helper()
	plain := true
	parser.Inspect(reparse(t, q), func(n parser.Node, _ []parser.Node) error {
		switch n := n.(type) {
		case nil, *parser.VectorSelector, *parser.ParenExpr:
		case *parser.BinaryExpr:
			plain = plain && n.Op == parser.LOR
		default:
			plain = false
		}
		return nil
	})
	return plain
}

func TestGPUFiguresJoinsEveryFigurePerGPU(t *testing.T) {
	a0, b0 := identity(nodeA0), identity(nodeB0)
	f := &fakeDCGM{
		labelNames: mixedFleetLabels,
		stored: []fakeStream{
			stored("DCGM_FI_DEV_GPU_UTIL", a0, 95, 96),
			stored("DCGM_FI_DEV_GPU_UTIL", b0, 40, 41),
			stored("DCGM_FI_PROF_SM_ACTIVE", a0, 0.92, 0.9),
			stored("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", b0, 1, 2), // KB/s
			stored("DCGM_FI_DEV_SM_CLOCK", a0, 1410),
			stored("DCGM_FI_DEV_SM_CLOCK", b0, math.NaN(), 900),
		},
	}
	c, _ := newFakeDCGM(t, f)
	c = c.WithDCGM(models.DCGMSettings{MaxSeries: 2}) // exactly as many GPUs as match
	series, noticeList, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0.Add(time.Minute), 30*time.Second)
	notices := noticeList.Texts()
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 {
		t.Fatalf("%d GPUs: %+v", len(series), series)
	}
	a, b := series[0], series[1]
	if a.GPU.Host != "node-a" || a.GPU.Index != "0" || a.GPU.UUID != "GPU-a0" || a.GPU.Model != "NVIDIA A100-SXM4-80GB" ||
		b.GPU != (classify.GPU{Host: "node-b", Index: "0", UUID: "GPU-b0", Model: "Tesla T4"}) {
		t.Errorf("GPUs %+v / %+v", a.GPU, b.GPU)
	}
	// Three steps (0, 30, 60 s): every step present, NaN where a value is missing.
	if len(a.Samples) != 3 || !a.Samples[2].Time.Equal(t0.Add(time.Minute)) {
		t.Fatalf("samples %+v", a.Samples)
	}
	fa, fb := a.Samples[0].Figures, b.Samples[1].Figures
	if fa.GPUUtil != 95 || fa.SMActive != 0.92 || fa.SMClockMHz != 1410 || !math.IsNaN(fa.PCIeTx) || !math.IsNaN(fa.ClockEvents) {
		t.Errorf("node-a/0 at 0 s: %+v", fa)
	}
	if fb.GPUUtil != 41 || fb.PCIeTx != 2048 || fb.SMClockMHz != 900 || !math.IsNaN(fb.SMActive) {
		t.Errorf("node-b/0 at 30 s (PCIe 2 KB/s is 2048 B/s): %+v", fb)
	}
	if !math.IsNaN(b.Samples[0].Figures.SMClockMHz) || !math.IsNaN(a.Samples[2].Figures.GPUUtil) {
		t.Errorf("missing values must be NaN: %+v %+v", b.Samples[0].Figures, a.Samples[2].Figures)
	}
	// Missing figures are notices naming the names tried; the GPUs fit in the limit: no notice.
	joined := strings.Join(notices, "\n")
	for _, want := range []string{"Clock event reasons (clock_events): Prometheus has no series of DCGM_FI_DEV_CLOCKS_EVENT_REASONS or DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DRAM active (dram_active)", "its figure is NaN"} {
		if !strings.Contains(joined, want) {
			t.Errorf("notices lack %q:\n%s", want, joined)
		}
	}
	if strings.Contains(joined, "gpu_utilization") || strings.Contains(joined, "sm_clock") || strings.Contains(joined, "more than") {
		t.Errorf("notices name a figure that is exported, or a limit not reached:\n%s", joined)
	}
	// The GPUs are counted from the series index, over the window and its look-back, for the
	// metrics the figures read only.
	idx := f.requestsTo("/api/v1/series")
	if len(idx) != 1 || len(idx[0].Matches) != 1 {
		t.Fatalf("series requests %+v", idx)
	}
	for _, m := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "DCGM_FI_DEV_SM_CLOCK"} {
		if !strings.Contains(idx[0].Matches[0], m) {
			t.Errorf("series request %s does not read %s", idx[0].Matches[0], m)
		}
	}
	if idx[0].Limit != strconv.Itoa(3*4*seriesPerGPUAndMetric) {
		t.Errorf("series request bounded by %q", idx[0].Limit)
	}
	// Within the limit, plain selectors: nothing for Prometheus to aggregate or rank. A short
	// window (a request's) reads every exported figure in one query.
	ranges := f.requestsTo("/api/v1/query_range")
	if len(ranges) != 1 {
		t.Fatalf("%d range queries, want 1 for the 4 figures of a 3-step window", len(ranges))
	}
	for _, m := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT", "DCGM_FI_DEV_SM_CLOCK"} {
		if !strings.Contains(ranges[0].Query, m) {
			t.Errorf("the query %s does not read %s", ranges[0].Query, m)
		}
	}
	// Two hours of these GPUs at 30 s (6 series × 241 steps) are one query too.
	before := len(ranges)
	hour, _, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0.Add(2*time.Hour), 30*time.Second)
	if err != nil || len(hour) != 2 || hour[0].Samples[0].Figures.GPUUtil != 95 || hour[1].Samples[1].Figures.PCIeTx != 2048 {
		t.Fatalf("two hours: %v, %v", hour, err)
	}
	if n := len(f.requestsTo("/api/v1/query_range")) - before; n != 1 {
		t.Fatalf("%d range queries for 6 series × 241 steps, want 1", n)
	}
	// A read beyond maxBatchedSamples (6 series × 10,801 steps) keeps one query per figure, each
	// folded before the next arrives.
	before = len(f.requestsTo("/api/v1/query_range"))
	long, _, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0.Add(3*time.Hour), time.Second)
	if err != nil || len(long) != 2 || long[0].Samples[0].Figures.GPUUtil != 95 || long[1].Samples[30].Figures.PCIeTx != 2048 {
		t.Fatalf("long window: %v, %v", err, len(long))
	}
	ranges = f.requestsTo("/api/v1/query_range")
	if n := len(ranges) - before; n != 4 || 6*10801 <= maxBatchedSamples {
		t.Fatalf("%d range queries for 6 series × 10,801 steps, want 4: one per exported figure", n)
	}
	for _, r := range ranges {
		if !onlySelectors(t, r.Query) {
			t.Errorf("query is not plain selectors: %s", r.Query)
		}
	}
	for _, r := range ranges[before:] {
		if r.Step != "1" {
			t.Errorf("query %s at step %s, want 1", r.Query, r.Step)
		}
	}
}

// A caller that reads the compute figure only (the lever) asks Prometheus for its sources only:
// the other figures stay NaN, without a query or a notice of their own.
func TestGPUFiguresFetchesOnlyTheFiguresAsked(t *testing.T) {
	a0 := identity(nodeA0)
	f := &fakeDCGM{
		labelNames: mixedFleetLabels,
		stored: []fakeStream{
			stored("DCGM_FI_DEV_GPU_UTIL", a0, 95, 96),
			stored("DCGM_FI_PROF_SM_ACTIVE", a0, 0.92, 0.9),
			stored("DCGM_FI_DEV_SM_CLOCK", a0, 1410),
			stored("DCGM_FI_DEV_FB_USED", a0, 1000),
		},
	}
	c, _ := newFakeDCGM(t, f)
	for _, name := range classify.ComputeFigures {
		if !slices.ContainsFunc(gpuFigures, func(g gpuFigure) bool { return g.metric == name }) {
			t.Fatalf("classify.ComputeFigures names %q, which GPUFigures does not know", name)
		}
	}
	series, noticeList, err := c.GPUFigures(context.Background(), models.GPUFilter{Figures: classify.ComputeFigures}, t0, t0.Add(time.Minute), 30*time.Second)
	if err != nil || len(series) != 1 {
		t.Fatalf("%+v, %v", series, err)
	}
	fa := series[0].Samples[0].Figures
	if v, src := classify.Compute(fa); v != 92 || src != classify.MetricSMActive || fa.GPUUtil != 95 || !math.IsNaN(fa.SMClockMHz) || !math.IsNaN(fa.FBUsed) {
		t.Errorf("figures %+v (compute %v from %s)", fa, v, src)
	}
	for _, r := range f.requestsTo("/api/v1/query_range") {
		if strings.Contains(r.Query, "SM_CLOCK") || strings.Contains(r.Query, "FB_USED") {
			t.Errorf("a figure not asked was fetched: %s", r.Query)
		}
	}
	if r := f.requestsTo("/api/v1/query_range"); len(r) != 1 || !strings.Contains(r[0].Query, "DCGM_FI_DEV_GPU_UTIL") || !strings.Contains(r[0].Query, "DCGM_FI_PROF_SM_ACTIVE") {
		t.Errorf("range queries %+v, want one of the 2 compute figures exported", r)
	}
	// The only notice is the compute figure this GPU does not export.
	if texts := noticeList.Texts(); len(texts) != 1 || !strings.Contains(texts[0], "gr_engine_active") {
		t.Errorf("notices %v", texts)
	}
}

// A fleet mixing exporters: node-a's new exporter sends PCIe in bytes and, for a while, the
// deprecated KB/s series too; node-b's old one only KB/s. A GPU's pod label changed at 30 s, so
// two series of it overlap there.
func TestGPUFiguresPrefersEachGPUsNewerSourceStepByStepAndCombinesItsSeries(t *testing.T) {
	a0, b0 := identity(nodeA0), identity(nodeB0)
	podA, podB := withLabels(a0, "pod", "detector-0"), withLabels(a0, "pod", "detector-1")
	f := &fakeDCGM{
		labelNames: mixedFleetLabels,
		stored: []fakeStream{
			stored("DCGM_FI_PROF_PCIE_TX_BYTES", a0, 5000, 6000, noSample),
			stored("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", a0, 1, 2, 3),
			stored("DCGM_FI_DEV_PCIE_TX_THROUGHPUT", b0, 10, 20, 30),
			stored("DCGM_FI_DEV_GPU_UTIL", podA, 90, 80, noSample),
			stored("DCGM_FI_DEV_GPU_UTIL", podB, noSample, 40, 50),
			stored("DCGM_FI_DEV_POWER_USAGE", podA, 300, 200, noSample),
			stored("DCGM_FI_DEV_POWER_USAGE", podB, noSample, 100, 250),
			stored("DCGM_FI_DEV_GPU_TEMP", podA, 70, math.NaN(), noSample),
			stored("DCGM_FI_DEV_GPU_TEMP", podB, noSample, 65, 66),
		},
	}
	c, _ := newFakeDCGM(t, f)
	series, _, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0.Add(time.Minute), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 {
		t.Fatalf("%d GPUs, want node-a/0 once (whatever its pods) and node-b/0: %+v", len(series), series)
	}
	a, b := series[0], series[1]
	// The pods dcgm-exporter mapped each GPU to over the range, from the series index.
	if want := []classify.Pod{{Name: "detector-0"}, {Name: "detector-1"}}; !slices.Equal(a.Pods, want) || len(b.Pods) != 0 {
		t.Errorf("pods: node-a %v, node-b %v", a.Pods, b.Pods)
	}
	got := func(s classify.GPUSeries, fig func(classify.Figures) float64) []float64 {
		var out []float64
		for _, smp := range s.Samples {
			out = append(out, fig(smp.Figures))
		}
		return out
	}
	pcie := func(f classify.Figures) float64 { return f.PCIeTx }
	if v := got(a, pcie); !slices.Equal(v, []float64{5000, 6000, 3 * 1024}) {
		t.Errorf("node-a PCIe %v: bytes where sent, else KB/s × 1024", v)
	}
	if v := got(b, pcie); !slices.Equal(v, []float64{10 * 1024, 20 * 1024, 30 * 1024}) {
		t.Errorf("node-b PCIe %v: KB/s × 1024", v)
	}
	// Where both pods' series have a value they are one GPU's reading (copies per pod of a shared
	// GPU carry the same value): the larger is taken, a NaN left aside, never their sum or mean.
	if v := got(a, func(f classify.Figures) float64 { return f.GPUUtil }); !slices.Equal(v, []float64{90, 80, 50}) {
		t.Errorf("node-a utilisation %v", v)
	}
	if v := got(a, func(f classify.Figures) float64 { return f.PowerW }); !slices.Equal(v, []float64{300, 200, 250}) {
		t.Errorf("node-a power %v", v)
	}
	if v := got(a, func(f classify.Figures) float64 { return f.TempC }); !slices.Equal(v, []float64{70, 65, 66}) {
		t.Errorf("node-a temperature %v", v)
	}
	var pcieQuery string
	for _, r := range f.requestsTo("/api/v1/query_range") {
		if strings.Contains(r.Query, "PCIE") {
			pcieQuery = r.Query
		}
	}
	// One selector of both sources, in order of preference (with the other figures' sources: a
	// short window reads them in one query).
	if b, k := strings.Index(pcieQuery, "DCGM_FI_PROF_PCIE_TX_BYTES|DCGM_FI_DEV_PCIE_TX_THROUGHPUT"), strings.Count(pcieQuery, "PCIE"); b < 0 || k != 2 || !onlySelectors(t, pcieQuery) {
		t.Errorf("PCIe query %s: one selector of both sources, in order of preference", pcieQuery)
	}
}

// With several label names in use for a filtered role, each alternative is a selector of its
// own, joined with "or", in the series request as in the figures' queries.
func TestGPUFiguresFilterCoversEveryHostAlias(t *testing.T) {
	f := &fakeDCGM{
		labelNames: mixedFleetLabels,
		stored: []fakeStream{
			stored("DCGM_FI_DEV_GPU_UTIL", identity(nodeA0), 1, 1),
			stored("DCGM_FI_DEV_GPU_UTIL", identity(nodeB0), 2, 2),
			stored("DCGM_FI_DEV_GPU_UTIL", identity(nodeB1), 3, 3),
		},
	}
	c, _ := newFakeDCGM(t, f)
	series, _, err := c.GPUFigures(context.Background(), models.GPUFilter{Hosts: []string{"node-b"}}, t0, t0.Add(30*time.Second), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 || series[0].GPU.Index != "0" || series[1].GPU.Index != "10" || series[1].Samples[0].Figures.GPUUtil != 3 {
		t.Errorf("GPUs %+v", series)
	}
	q := f.requestsTo("/api/v1/query_range")[0].Query
	if want := `DCGM_FI_DEV_GPU_UTIL{Hostname="node-b"} or DCGM_FI_DEV_GPU_UTIL{hostname="node-b"}`; q != want {
		t.Errorf("got  %s\nwant %s", q, want)
	}
	if m := f.requestsTo("/api/v1/series")[0].Matches; !slices.Equal(m, []string{`{Hostname="node-b",__name__=~"DCGM_FI_DEV_GPU_UTIL"}`, `{__name__=~"DCGM_FI_DEV_GPU_UTIL",hostname="node-b"}`}) {
		t.Errorf("series match[] %v", m)
	}
	// A filter matching no GPU: the series index says so, and no query reads samples.
	f.requests = nil
	series, _, err = c.GPUFigures(context.Background(), models.GPUFilter{Hosts: []string{"node-z"}}, t0, t0.Add(30*time.Second), 30*time.Second)
	if err != nil || len(series) != 0 || len(f.requestsTo("/api/v1/query_range")) != 0 {
		t.Errorf("no GPU matching: series %v, err %v, range queries %+v", series, err, f.requestsTo("/api/v1/query_range"))
	}
}

// Over the limit, every figure's query keeps the same GPUs through one series-limit part; the
// answer has at most limit GPUs, each with all its figures, and says more match.
func TestGPUFiguresOverTheLimitKeepsTheSameGPUsInEveryFigure(t *testing.T) {
	nodeC0 := map[string]string{"Hostname": "node-c", "gpu": "0", "UUID": "GPU-c0", "modelName": "NVIDIA A100-SXM4-80GB"}
	gpus := []map[string]string{identity(nodeC0), identity(nodeA1), identity(nodeA0)}
	metrics := []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_SM_CLOCK"}
	f := &fakeDCGM{labelNames: mixedFleetLabels}
	for _, m := range metrics {
		for _, g := range gpus {
			f.stored = append(f.stored, stored(m, g, 1, 1))
		}
	}
	// Prometheus answers the ranked queries with limit+1 aggregated series, here all three.
	f.rangeAnswer = func(read []string, q string) []fakeStream {
		var out []fakeStream
		for i, g := range gpus {
			out = append(out, fakeStream{Metric: g, Values: points(float64(10*(slices.Index(metrics, read[0])+1) + i))})
		}
		return out
	}
	c, _ := newFakeDCGM(t, f)
	c = c.WithDCGM(models.DCGMSettings{MaxSeries: 2})
	series, noticeList, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0.Add(30*time.Second), 30*time.Second)
	notices := noticeList.Texts()
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 || series[0].GPU.UUID != "GPU-a0" || series[1].GPU.UUID != "GPU-a1" {
		t.Fatalf("GPUs %+v, want the first two of three", series)
	}
	for _, s := range series {
		fg := s.Samples[0].Figures
		if math.IsNaN(fg.GPUUtil) || math.IsNaN(fg.PowerW) || math.IsNaN(fg.SMClockMHz) {
			t.Errorf("%s lacks a figure: %+v", s.GPU, fg)
		}
	}
	if !slices.Contains(notices, "more than 2 GPUs match; the first 2 are used. Narrow the filter or raise jsonData.gpuMaxSeries") {
		t.Errorf("notices %v", notices)
	}
	var limits []string
	for _, r := range f.requestsTo("/api/v1/query_range") {
		reparse(t, r.Query)
		i := strings.Index(r.Query, " and on ")
		if i < 0 {
			t.Fatalf("query over the limit without a series limit: %s", r.Query)
		}
		limits = append(limits, r.Query[i:])
	}
	if len(limits) != 3 {
		t.Fatalf("%d range queries, want 3", len(limits))
	}
	for _, l := range limits[1:] {
		if l != limits[0] {
			t.Errorf("series-limit parts differ:\n%s\n%s", limits[0], l)
		}
	}
	if !strings.Contains(limits[0], "topk(3, group by (Hostname, hostname, gpu, UUID, modelName)") {
		t.Errorf("GPUFigures must rank by the GPU's identity only: %s", limits[0])
	}
}

// A series index cut at its bound cannot tell how many GPUs there are: the figures are then
// asked as over the limit, correct if slower.
func TestGPUFiguresTakesACutSeriesAnswerAsOverTheLimit(t *testing.T) {
	f := &fakeDCGM{labelNames: mixedFleetLabels}
	for pod := range 2 * seriesPerGPUAndMetric { // one GPU moved between many pods
		f.stored = append(f.stored, stored("DCGM_FI_DEV_GPU_UTIL", withLabels(identity(nodeA0), "pod", "p"+strconv.Itoa(pod)), 1))
	}
	f.rangeAnswer = func([]string, string) []fakeStream {
		return []fakeStream{{Metric: identity(nodeA0), Values: points(7)}}
	}
	c, _ := newFakeDCGM(t, f)
	c = c.WithDCGM(models.DCGMSettings{MaxSeries: 1})
	series, noticeList, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0, 30*time.Second)
	notices := noticeList.Texts()
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 1 || series[0].Samples[0].Figures.GPUUtil != 7 || len(notices) != len(gpuFigures)-1 {
		t.Errorf("series %+v notices %v", series, notices)
	}
	if q := f.requestsTo("/api/v1/query_range")[0].Query; !strings.Contains(q, "topk(2, ") {
		t.Errorf("query %s", q)
	}
}

func TestGPUFiguresWithNothingExportedIsEmptyWithNotices(t *testing.T) {
	f := &fakeDCGM{labelNames: []string{"Hostname"}}
	c, _ := newFakeDCGM(t, f)
	series, noticeList, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, tEnd, time.Minute)
	notices := noticeList.Texts()
	if err != nil || len(series) != 0 || len(notices) != len(gpuFigures) {
		t.Errorf("series %v notices %d err %v", series, len(notices), err)
	}
	if n := len(f.requests); n != 2 {
		t.Errorf("%d requests, want the inventory's 2 only", n)
	}
}

func TestGPUFiguresFailsWithTheUpstreamError(t *testing.T) {
	f := &fakeDCGM{status: 502}
	c, srv := newFakeDCGM(t, f)
	_, _, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, tEnd, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "Prometheus ("+srv.URL+")") {
		t.Errorf("error %v", err)
	}
}

// A failing figure query fails the call, naming Prometheus, and cancels the queries still to
// come.
func TestGPUFiguresFailsOnTheFirstFailingQuery(t *testing.T) {
	f := &fakeDCGM{labelNames: mixedFleetLabels, stored: everyFigure(identity(nodeA0)), status: 503, failPath: "/api/v1/query_range"}
	c, srv := newFakeDCGM(t, f)
	_, _, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "Prometheus ("+srv.URL+")") || !strings.Contains(err.Error(), "overloaded") {
		t.Errorf("error %v", err)
	}
	if n := len(f.requestsTo("/api/v1/query_range")); n > figureConcurrency {
		t.Errorf("%d figure queries sent, want at most the %d in flight when the first failed", n, figureConcurrency)
	}
}

// A server (or a proxy before it) without the series API still answers: the figures are asked
// as over the limit, which needs none.
func TestGPUFiguresWithoutTheSeriesAPIRanksInPromQL(t *testing.T) {
	f := &fakeDCGM{labelNames: mixedFleetLabels, stored: everyFigure(identity(nodeA0)), status: 404, failPath: "/api/v1/series"}
	f.rangeAnswer = func([]string, string) []fakeStream {
		return []fakeStream{{Metric: identity(nodeA0), Values: points(1)}}
	}
	c, _ := newFakeDCGM(t, f)
	series, noticeList, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0, 30*time.Second)
	notices := noticeList.Texts()
	if err != nil || len(series) != 1 || series[0].Samples[0].Figures.ClockEvents != 1 || len(notices) != 0 {
		t.Fatalf("series %+v notices %v err %v", series, notices, err)
	}
	ranges := f.requestsTo("/api/v1/query_range")
	if len(ranges) != len(gpuFigures) || !strings.Contains(ranges[0].Query, "topk(501, ") {
		t.Errorf("%d queries, the first %s", len(ranges), ranges[0].Query)
	}
}

// everyFigure is one sample of each figure's first source for the GPU.
func everyFigure(gpu map[string]string) []fakeStream {
	var out []fakeStream
	cat := NewCatalogue(models.DCGMSettings{})
	for _, fig := range gpuFigures {
		m, _ := cat.Lookup(fig.metric)
		out = append(out, stored(m.Sources[0].Metric, gpu, 1))
	}
	return out
}

// migSlices are two MIG instances of one A100 as dcgm-exporter labels them: the parent's gpu,
// UUID, device and modelName, plus GPU_I_PROFILE and GPU_I_ID. Only the instance tells them apart.
var migSlices = []map[string]string{
	{"Hostname": "gpu-node-1", "gpu": "0", "UUID": "GPU-5fd4a0b2-7c1e-4d2a-9f3b-0123456789ab", "device": "nvidia0", "pci_bus_id": "00000000:07:00.0",
		"modelName": "NVIDIA A100-SXM4-40GB", "GPU_I_PROFILE": "3g.20gb", "GPU_I_ID": "1"},
	{"Hostname": "gpu-node-1", "gpu": "0", "UUID": "GPU-5fd4a0b2-7c1e-4d2a-9f3b-0123456789ab", "device": "nvidia0", "pci_bus_id": "00000000:07:00.0",
		"modelName": "NVIDIA A100-SXM4-40GB", "GPU_I_PROFILE": "1g.5gb", "GPU_I_ID": "2"},
}

func TestGPUFiguresKeepsEachMIGInstanceOfOneGPU(t *testing.T) {
	f := &fakeDCGM{
		stored: []fakeStream{ // instance 1 busy, instance 2 idle
			stored("DCGM_FI_PROF_GR_ENGINE_ACTIVE", migSlices[0], 0.97, 0.97),
			stored("DCGM_FI_PROF_GR_ENGINE_ACTIVE", migSlices[1], 0.01, 0.01),
			stored("DCGM_FI_PROF_DRAM_ACTIVE", migSlices[0], 0.30, 0.30),
			stored("DCGM_FI_PROF_DRAM_ACTIVE", migSlices[1], 0, 0),
		},
	}
	// The same GPUs over the limit, where Prometheus aggregates: it keeps only the labels a
	// query groups by, so both MIG labels must be among them.
	f.rangeAnswer = func(read []string, _ string) []fakeStream {
		var out []fakeStream
		for _, s := range f.stored {
			if s.Metric[model.MetricNameLabel] == read[0] {
				out = append(out, fakeStream{Metric: identity(s.Metric), Values: s.Values})
			}
		}
		return out
	}
	for _, limit := range []int{2, 1} {
		f.requests = nil
		c, _ := newFakeDCGM(t, f)
		c = c.WithDCGM(models.DCGMSettings{MaxSeries: limit})
		series, _, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0.Add(30*time.Second), 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		parent := classify.GPU{Host: "gpu-node-1", Index: "0", UUID: "GPU-5fd4a0b2-7c1e-4d2a-9f3b-0123456789ab", Model: "NVIDIA A100-SXM4-40GB"}
		one, two := parent, parent
		one.MIG, one.MIGProfile = "1", "3g.20gb"
		two.MIG, two.MIGProfile = "2", "1g.5gb"
		if len(series) != limit || series[0].GPU != one || limit == 2 && series[1].GPU != two {
			t.Fatalf("limit %d: GPUs %+v", limit, series)
		}
		if g := series[0].Samples[0].Figures.GrEngine; g != 0.97 {
			t.Errorf("limit %d: instance 1 graphics engine %v, want 0.97", limit, g)
		}
		if g := series[limit-1].Samples[0].Figures.GrEngine; limit == 2 && g != 0.01 {
			t.Errorf("instance 2 graphics engine %v, want 0.01", g)
		}
		for _, q := range f.requestsTo("/api/v1/query_range") {
			if limit == 1 && (!strings.Contains(q.Query, "GPU_I_ID") || !strings.Contains(q.Query, "GPU_I_PROFILE")) {
				t.Errorf("query does not keep the MIG labels: %s", q.Query)
			}
		}
		if got := one.String(); got != "gpu-node-1 GPU 0 (NVIDIA A100-SXM4-40GB) MIG 3g.20gb #1" {
			t.Errorf("String() = %q", got)
		}
	}
}

// fold does in Go what PromQL's "A or B × scale" then max by the GPU does per step: a series of
// a preferred source hides a less preferred source's series of the same labels only, at the
// steps it has a value, and the GPU's remaining series are one reading.
func TestFigureFoldIsPromQLsOrThenAggregation(t *testing.T) {
	g := figureGrid{start: t0, step: 30 * time.Second, steps: 3}
	stream := func(metric string, extra string, values ...float64) *model.SampleStream {
		s := &model.SampleStream{Metric: model.Metric{"__name__": model.LabelValue(metric), "Hostname": "n", "gpu": "0"}}
		if extra != "" {
			s.Metric["pod"] = model.LabelValue(extra)
		}
		for i, v := range values {
			if v != noSample {
				s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t0.Add(time.Duration(i) * g.step).UnixNano()), Value: model.SampleValue(v)})
			}
		}
		return s
	}
	roles := map[string][]string{models.RoleHost: {"Hostname"}, models.RoleGPU: {"gpu"}}
	fold := func(agg string, m model.Matrix) []float64 {
		job := figureJob{
			fig:     gpuFigure{"x", func(f *classify.Figures, v float64) { f.GPUUtil = v }},
			metric:  Metric{Aggregate: agg},
			sources: []Source{{Metric: "A"}, {Metric: "B", Scale: 1024}},
		}
		byGPU := map[classify.GPU]*classify.GPUSeries{}
		g.fold(byGPU, job, m, roles, true, false)
		if len(byGPU) != 1 {
			t.Fatalf("%d GPUs", len(byGPU))
		}
		var out []float64
		for _, gs := range byGPU {
			for _, s := range gs.Samples {
				out = append(out, s.Figures.GPUUtil)
			}
		}
		return out
	}
	same := func(a, b []float64) bool {
		return slices.EqualFunc(a, b, func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) })
	}
	// B{same labels} is hidden where A has a value; B{other labels} is not: one GPU's series of
	// other labels are one reading, the larger taken, even for an entry that sums (per host).
	if got := fold(aggSum, model.Matrix{stream("A", "", 1, 2, noSample), stream("B", "", 5, 6, 7), stream("B", "other", 1, noSample, noSample)}); !same(got, []float64{1024, 2, 7 * 1024}) {
		t.Errorf("sum %v", got)
	}
	// A series of the less preferred source alone is scaled.
	if got := fold(aggAvg, model.Matrix{stream("B", "", 1, noSample, 3)}); !same(got, []float64{1024, math.NaN(), 3 * 1024}) {
		t.Errorf("lone B %v", got)
	}
	// Copies per pod: max skips a NaN unless every copy is NaN, as PromQL's max does.
	if got := fold(aggAvg, model.Matrix{stream("A", "p1", 1, 4, math.NaN()), stream("A", "p2", 3, noSample, 1)}); !same(got, []float64{3, 4, 1}) {
		t.Errorf("avg %v", got)
	}
	if got := fold(aggMax, model.Matrix{stream("A", "p1", math.NaN(), 4, math.NaN()), stream("A", "p2", 3, 5, math.NaN())}); !same(got, []float64{3, 5, math.NaN()}) {
		t.Errorf("max %v", got)
	}
}

// Figures PromQL must compute (a counter's rate, a computed entry) are aggregated per GPU by
// Prometheus within the limit, and ranked with the others over it.
func TestFigureQueryLeavesCountersAndComputedEntriesToPromQL(t *testing.T) {
	p := testPlan(t, models.GPUFilter{}, bothHostLabels, []string{"Hostname", "hostname", "gpu"})
	cat := NewCatalogue(models.DCGMSettings{})
	for _, name := range []string{"energy_power", "fb_used_percent", "pcie_tx"} {
		m, _ := cat.Lookup(name)
		j := figureJob{metric: m}
		var used []string
		if len(m.ComputedFrom) == 0 {
			j.sources = m.Sources
			j.expr, used = p.metricExpr(m, func(string) bool { return true })
		} else {
			fu, _ := cat.Lookup("fb_used")
			ff, _ := cat.Lookup("fb_free")
			eu, _ := p.metricExpr(fu, func(string) bool { return true })
			ef, _ := p.metricExpr(ff, func(string) bool { return true })
			j.expr, used = combineParts(m.Combine, []parser.Expr{eu, ef}), []string{"DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_FREE"}
		}
		within, err := p.figureQuery(j, used, false)
		if err != nil {
			t.Fatal(err)
		}
		over, _ := p.figureQuery(j, used, true)
		q := within.String()
		reparse(t, q)
		if name == "pcie_tx" {
			if !onlySelectors(t, q) {
				t.Errorf("%s within the limit: %s", name, q)
			}
		} else if !strings.HasPrefix(q, m.Aggregate+" by (Hostname, hostname, gpu) (") || strings.Contains(q, "topk") {
			t.Errorf("%s within the limit: %s", name, q)
		}
		if !strings.Contains(over.String(), "topk(501, ") {
			t.Errorf("%s over the limit: %s", name, over)
		}
	}
}

// A Prometheus failing the series call (down, overloaded, too slow) fails the figures at once: the
// ranked queries would only fail again, after as long.
func TestGPUFiguresFailsWhenTheSeriesCallFails(t *testing.T) {
	f := &fakeDCGM{labelNames: mixedFleetLabels, stored: everyFigure(identity(nodeA0)), status: 503, failPath: "/api/v1/series"}
	c, _ := newFakeDCGM(t, f)
	_, _, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "Prometheus (http://127.0.0.1:") || !strings.Contains(err.Error(), "503") {
		t.Fatalf("error %v", err)
	}
	if n := len(f.requestsTo("/api/v1/query_range")); n != 0 {
		t.Errorf("%d figure queries after the series call failed", n)
	}
}

// dcgm-exporter 4.9 writes the SM clock in Hz under DCGM 4.7's name: read as stored, it is
// scaled to MHz per source, so a fleet mixing exporter versions shows one unit.
func TestGPUFiguresConvertExporter49ClocksFromHz(t *testing.T) {
	a0, b0 := identity(nodeA0), identity(nodeB0)
	f := &fakeDCGM{
		labelNames: mixedFleetLabels,
		stored: []fakeStream{
			stored("DCGM_FI_DEV_GPU_UTIL", a0, 95, 96),
			stored("DCGM_FI_DEV_GPU_UTIL", b0, 40, 41),
			stored("DCGM_FI_DEV_SM_CLOCK", a0, 1410, 1410),
			stored("DCGM_FI_DEV_SM_CLOCK_HERTZ", b0, 1.2e9, 1.41e9),
		},
	}
	c, _ := newFakeDCGM(t, f)
	series, _, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0.Add(30*time.Second), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 {
		t.Fatalf("%d GPUs: %+v", len(series), series)
	}
	a, b := series[0], series[1]
	if got := []float64{a.Samples[0].Figures.SMClockMHz, b.Samples[0].Figures.SMClockMHz, b.Samples[1].Figures.SMClockMHz}; !slices.Equal(got, []float64{1410, 1200, 1410}) {
		t.Errorf("SM clocks %v MHz: node-b's Hz × 1e-6", got)
	}
	if b.Samples[0].Figures.GPUUtil != 40 {
		t.Errorf("node-b GPU utilisation %v: the percentage as it is", b.Samples[0].Figures.GPUUtil)
	}
}

// dcgm-exporter 4.9 writes the framebuffer in bytes under DCGM 4.7's names: read as MiB per
// source, beside node-a's classic MiB.
func TestGPUFiguresConvertExporter49FramebufferFromBytes(t *testing.T) {
	a0, b0 := identity(nodeA0), identity(nodeB0)
	f := &fakeDCGM{
		labelNames: mixedFleetLabels,
		stored: []fakeStream{
			stored("DCGM_FI_DEV_GPU_UTIL", a0, 95),
			stored("DCGM_FI_DEV_GPU_UTIL", b0, 40),
			stored("DCGM_FI_DEV_FB_USED", a0, 30000),
			stored("DCGM_FI_DEV_FB_FREE", a0, 51920),
			stored("DCGM_FI_DEV_FB_USED_BYTES", b0, 8*(1<<30)),
			stored("DCGM_FI_DEV_FB_FREE_BYTES", b0, 7*(1<<30)),
		},
	}
	c, _ := newFakeDCGM(t, f)
	series, _, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 {
		t.Fatalf("%d GPUs: %+v", len(series), series)
	}
	a, b := series[0].Samples[0].Figures, series[1].Samples[0].Figures
	if got := []float64{a.FBUsed, a.FBFree, b.FBUsed, b.FBFree}; !slices.Equal(got, []float64{30000, 51920, 8192, 7168}) {
		t.Errorf("framebuffer %v MiB: node-b's bytes ÷ 2^20", got)
	}
}
