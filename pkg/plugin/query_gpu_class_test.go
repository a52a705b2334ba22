package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// fakeFigures stands for prometheus.Client.GPUFigures: each GPU's figures are a function of
// time, on the step grid GPUFigures returns (start and end aligned down to the step).
type fakeFigures struct {
	gpus []classGPU
	err  error

	mu    sync.Mutex
	calls []figuresCall
}

type classGPU struct {
	gpu classify.GPU
	at  func(t time.Time) classify.Figures
}

type figuresCall struct {
	filter     models.GPUFilter
	start, end time.Time
	step       time.Duration
}

func (f *fakeFigures) GPUFigures(_ context.Context, filter models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, notices.List, error) {
	f.mu.Lock()
	f.calls = append(f.calls, figuresCall{filter, start, end, step})
	f.mu.Unlock()
	if f.err != nil {
		return nil, nil, f.err
	}
	align := func(t time.Time) time.Time { return time.Unix(0, t.UnixNano()-t.UnixNano()%int64(step)).UTC() }
	var out []classify.GPUSeries
	for _, g := range f.gpus {
		s := classify.GPUSeries{GPU: g.gpu}
		for t := align(start); !t.After(align(end)); t = t.Add(step) {
			s.Samples = append(s.Samples, classify.Sample{Time: t, Figures: g.at(t)})
		}
		out = append(out, s)
	}
	return out, notices.Warnings("SM active (sm_active): Prometheus has no series of DCGM_FI_PROF_SM_ACTIVE in this range; its figure is NaN"), nil
}

var classT0 = time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)

func gpuOf(host, index, model string) classify.GPU {
	return classify.GPU{Host: host, Index: index, Model: model}
}

// nodeA0 is compute-bound with profiling ratios and the bitmask.
func nodeA0(time.Time) classify.Figures {
	f := classify.Missing()
	f.GrEngine, f.DRAMActive, f.GPUUtil, f.MemCopyUtil, f.ClockEvents, f.TempC, f.SMClockMHz = 0.95, 0.25, 95, 30, 0, 70, 1410
	return f
}

// nodeB2 is an old exporter's T4: full clock until classT0-2h, then 88 °C at 900 MHz, at
// util 65 / mem-copy 35 (balanced if the throttling went unseen).
func nodeB2(t time.Time) classify.Figures {
	f := classify.Missing()
	f.GPUUtil, f.MemCopyUtil, f.TempC, f.SMClockMHz = 65, 35, 60, 1590
	if !t.Before(classT0.Add(-2 * time.Hour)) {
		f.TempC, f.SMClockMHz = 88, 900
	}
	return f
}

func classQuery(model string, interval time.Duration) backend.DataQuery {
	return backend.DataQuery{RefID: "A", QueryType: models.QueryTypeGPUClass, JSON: json.RawMessage(model), Interval: interval,
		TimeRange: backend.TimeRange{From: classT0, To: classT0.Add(time.Hour)}}
}

func answer(t *testing.T, src correlate.GPUFigures, model string, interval time.Duration, cs models.ClassifySettings) backend.DataResponse {
	t.Helper()
	gq, err := models.ParseGPUClassQuery(json.RawMessage(model))
	if err != nil {
		t.Fatal(err)
	}
	return answerGPUClass(context.Background(), src, classQuery(model, interval), gq, cs)
}

func defaultClassify() models.ClassifySettings {
	return models.ClassifySettings{Thresholds: classify.DefaultThresholds()}
}

func noticeTexts(f *data.Frame) string {
	if f.Meta == nil {
		return ""
	}
	var out []string
	for _, n := range f.Meta.Notices {
		out = append(out, n.Text)
	}
	return strings.Join(out, "\n")
}

func TestGPUClassQueryAnswersTimelineSummaryAndShares(t *testing.T) {
	src := &fakeFigures{gpus: []classGPU{{gpuOf("fixture-node-a", "0", "NVIDIA A100-SXM4-80GB"), nodeA0}, {gpuOf("fixture-node-b", "2", "Tesla T4"), nodeB2}}}
	r := answer(t, src, `{"queryType":"gpuClass","hosts":["fixture-node-a","fixture-node-b"]}`, 30*time.Second, defaultClassify())
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	names := map[string]int{}
	for _, f := range r.Frames {
		names[f.Name]++
	}
	if len(r.Frames) != 2+2*7 || r.Frames[0].Name != frames.GPUClassTimelineFrameName || r.Frames[1].Name != frames.GPUClassSummaryFrameName ||
		names[frames.GPUClassShareFrameName] != 14 {
		t.Fatalf("frames %v", names)
	}

	// The range, plus the share window before it; then the clock history (node-b has no
	// bitmask) for the rest of the day, at a coarse step.
	if len(src.calls) != 2 {
		t.Fatalf("%d GPUFigures calls, want the range and the clock history", len(src.calls))
	}
	main, hist := src.calls[0], src.calls[1]
	if !main.start.Equal(classT0.Add(-time.Hour)) || !main.end.Equal(classT0.Add(time.Hour)) || main.step != 30*time.Second ||
		strings.Join(main.filter.Hosts, ",") != "fixture-node-a,fixture-node-b" {
		t.Errorf("range call %+v", main)
	}
	if hist.step != 115*time.Second || !hist.start.Equal(classT0.Add(-24*time.Hour)) || !hist.end.Before(classT0.Add(-time.Hour)) {
		t.Errorf("history call %+v, want 23 h before the share window at 23h/720", hist)
	}

	tl := r.Frames[0]
	if tl.Rows() != 121 || !tl.Fields[0].At(0).(time.Time).Equal(classT0) {
		t.Fatalf("timeline: %d rows from %v, want 121 from the panel's start", tl.Rows(), tl.Fields[0].At(0))
	}
	for i := range tl.Rows() {
		if a, b := tl.Fields[1].At(i), tl.Fields[2].At(i); a != "compute-bound" || b != "thermal-throttled" {
			t.Fatalf("row %d: %v, %v", i, a, b)
		}
	}

	sum := r.Frames[1]
	col := func(name string, row int) any {
		f, i := sum.FieldByName(name)
		if i < 0 {
			t.Fatalf("summary lacks %q", name)
		}
		return f.At(row)
	}
	if col("dominant class", 0) != "compute-bound" || col("dominant share", 0) != 1.0 || col("steps", 0) != int64(121) {
		t.Errorf("summary row 0: %v %v %v", col("dominant class", 0), col("dominant share", 0), col("steps", 0))
	}
	ev := col("evidence", 1).(string)
	if col("dominant class", 1) != "thermal-throttled" ||
		!strings.Contains(ev, "temperature 88 °C > thermalTempC 83 and SM clock 900 MHz < thermalClockRatio 0.90 × observed max 1590 MHz (clockMaxWindow 1d)") ||
		!strings.Contains(ev, "fallback: no DCGM_FI_PROF_SM_ACTIVE or DCGM_FI_PROF_GR_ENGINE_ACTIVE, compute from DCGM_FI_DEV_GPU_UTIL") {
		t.Errorf("summary row 1: %v, evidence %q", col("dominant class", 1), ev)
	}
	if at := col("evidence at", 1).(*time.Time); at == nil || !at.Equal(classT0.Add(time.Hour)) {
		t.Errorf("evidence at %v, want the last step", at)
	}
	if !strings.Contains(col("action", 1).(string), "improve cooling, reduce workload") {
		t.Errorf("action %v", col("action", 1))
	}

	notices := noticeTexts(tl)
	for _, want := range []string{
		"classes are judged at each 30s step on DCGM's samples: dcgm-exporter collects every 30 s by default",
		"SM active (sm_active): Prometheus has no series of DCGM_FI_PROF_SM_ACTIVE",
		"no clock-event bitmask (DCGM_FI_DEV_CLOCKS_EVENT_REASONS) for fixture-node-b/2 at some steps",
	} {
		if !strings.Contains(notices, want) {
			t.Errorf("notices lack %q:\n%s", want, notices)
		}
	}
	if strings.Contains(notices, "fixture-node-a/0 at some steps") || strings.Count(notices, "SM active (sm_active)") != 1 {
		t.Errorf("notices name node-a as lacking the bitmask or repeat the history's notices:\n%s", notices)
	}

	// Shares: a whole window of one class from the first step.
	for _, f := range r.Frames[2:] {
		l := f.Fields[1].Labels
		want := 0.0
		if l["host"] == "fixture-node-a" && l["class"] == "compute-bound" || l["host"] == "fixture-node-b" && l["class"] == "thermal-throttled" {
			want = 1
		}
		if f.Rows() != 121 || *f.Fields[1].At(0).(*float64) != want || *f.Fields[1].At(120).(*float64) != want {
			t.Errorf("share %v: %d rows, first %v", l, f.Rows(), *f.Fields[1].At(0).(*float64))
		}
	}
}

// Without the clock history the thermal fallback would only know the throttled clock: the
// history is what makes node-b's sustained throttling visible, as max_over_time[1d] does.
func TestGPUClassQueryNeedsTheClockHistoryForSustainedThrottling(t *testing.T) {
	src := &fakeFigures{gpus: []classGPU{{gpuOf("fixture-node-b", "2", "Tesla T4"), nodeB2}}}
	cs := defaultClassify()
	cs.Thresholds.ClockMaxWindow = time.Hour // no history beyond the share window
	cs.Changed = []string{"clockMaxWindow"}
	r := answer(t, src, `{"format":"timeline"}`, 30*time.Second, cs)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if len(src.calls) != 1 {
		t.Errorf("%d calls: no history is needed when the clock window is the share window", len(src.calls))
	}
	if len(r.Frames) != 1 || r.Frames[0].Fields[1].At(0) != "balanced" {
		t.Errorf("frames %d, first class %v: an hour-long window no longer holds the 1590 MHz maximum", len(r.Frames), r.Frames[0].Fields[1].At(0))
	}
	if n := noticeTexts(r.Frames[0]); !strings.Contains(n, "thresholds differ from the defaults (clockMaxWindow)") || !strings.Contains(n, "go run ./cmd/hsi-rulegen") {
		t.Errorf("notices:\n%s", n)
	}
}

func TestGPUClassQueryFormatsAndSteps(t *testing.T) {
	gpus := []classGPU{{gpuOf("fixture-node-a", "0", "A100"), nodeA0}}
	for _, c := range []struct {
		model    string
		interval time.Duration
		frames   []string
		step     time.Duration
		notice   string
	}{
		{`{"format":"timeline"}`, 30 * time.Second, []string{frames.GPUClassTimelineFrameName}, 30 * time.Second, ""},
		{`{"format":"summary"}`, 2 * time.Minute, []string{frames.GPUClassSummaryFrameName}, 2 * time.Minute, ""},
		{`{"format":"shares"}`, 5 * time.Second, slicesRepeat(frames.GPUClassShareFrameName, 7), 30 * time.Second,
			"step raised from the panel's 5s to minStep 30s"},
		{`{"format":"timeline","minStep":"15s"}`, 5 * time.Second, []string{frames.GPUClassTimelineFrameName}, 15 * time.Second,
			"step raised from the panel's 5s to minStep 15s"},
	} {
		src := &fakeFigures{gpus: gpus}
		r := answer(t, src, c.model, c.interval, defaultClassify())
		if r.Error != nil {
			t.Fatalf("%s: %v", c.model, r.Error)
		}
		var got []string
		for _, f := range r.Frames {
			got = append(got, f.Name)
		}
		if strings.Join(got, "|") != strings.Join(c.frames, "|") {
			t.Errorf("%s: frames %v, want %v", c.model, got, c.frames)
		}
		if src.calls[0].step != c.step {
			t.Errorf("%s: step %s, want %s", c.model, src.calls[0].step, c.step)
		}
		if n := noticeTexts(r.Frames[0]); c.notice != "" && !strings.Contains(n, c.notice) || c.notice == "" && strings.Contains(n, "step raised") {
			t.Errorf("%s: notices\n%s\nwant %q", c.model, n, c.notice)
		}
		if strings.Contains(c.model, "shares") {
			for _, f := range r.Frames {
				if f.Meta.Type != data.FrameTypeTimeSeriesMulti || f.Fields[1].Type() != data.FieldTypeNullableFloat64 {
					t.Errorf("share frame %s is %s with %s values: alerting needs numeric series", f.Name, f.Meta.Type, f.Fields[1].Type())
				}
			}
		}
	}
}

func slicesRepeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestGPUClassQueryWithoutGPUsSaysWhy(t *testing.T) {
	for _, format := range []string{"all", "shares"} {
		r := answer(t, &fakeFigures{}, `{"hosts":["nowhere"],"format":"`+format+`"}`, time.Minute, defaultClassify())
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		if len(r.Frames) == 0 {
			t.Fatalf("%s: no frames to carry the notice", format)
		}
		if n := noticeTexts(r.Frames[0]); !strings.Contains(n, "no DCGM series match the filter (hosts=nowhere) between 2026-01-02T10:00:00Z and 2026-01-02T11:00:00Z") {
			t.Errorf("%s: notices\n%s", format, n)
		}
		if format == "shares" && (len(r.Frames) != 1 || r.Frames[0].Meta.Type != data.FrameTypeTimeSeriesMulti) {
			t.Errorf("shares without GPUs: %d frames", len(r.Frames))
		}
	}
}

func TestGPUClassQueryNamesGPUsWithoutClassesAndPassesErrorsOn(t *testing.T) {
	onlyMemory := func(time.Time) classify.Figures {
		f := classify.Missing()
		f.MemCopyUtil = 50
		return f
	}
	r := answer(t, &fakeFigures{gpus: []classGPU{{gpuOf("fixture-node-b", "4", "Tesla T4"), onlyMemory}}}, `{}`, time.Minute, defaultClassify())
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if n := noticeTexts(r.Frames[0]); !strings.Contains(n, "no class for fixture-node-b/4: a compute figure (DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_GR_ENGINE_ACTIVE or DCGM_FI_DEV_GPU_UTIL) and a memory figure") {
		t.Errorf("notices\n%s", n)
	}
	if f, _ := r.Frames[1].FieldByName("dominant class"); f.At(0) != "no data" {
		t.Errorf("dominant %v", f.At(0))
	}

	upErr := upstream.Wrap(models.Prometheus, "http://prom:9090", errors.New("connection refused"))
	r = answer(t, &fakeFigures{err: upErr}, `{}`, time.Minute, defaultClassify())
	if r.Error == nil || !strings.Contains(r.Error.Error(), "http://prom:9090") {
		t.Errorf("error %v, want Prometheus' URL", r.Error)
	}
}

func TestGPUClassQueryThroughTheDatasource(t *testing.T) {
	// Registered, with errors that name the field or the setting.
	ds := newTestDatasource(t, map[string]any{}, nil)
	q := classQuery(`{"queryType":"gpuClass","format":"pie"}`, time.Minute)
	wantError(t, run(t, ds, q).Responses["A"], backend.ErrorSourceDownstream, `invalid gpuClass query: field "format" must be`)
	q = classQuery(`{"queryType":"gpuClass"}`, time.Minute)
	wantError(t, run(t, ds, q).Responses["A"], backend.ErrorSourceDownstream, "Prometheus is not configured: set its URL (jsonData.prometheusUrl)")
	ds = newTestDatasource(t, map[string]any{"prometheusUrl": "http://127.0.0.1:1", "gpuThresholds": map[string]any{"idleBelowPct": 150}}, nil)
	wantError(t, run(t, ds, q).Responses["A"], backend.ErrorSourceDownstream, "jsonData.gpuThresholds.idleBelowPct must be in [0, 100], got 150")
}

// End to end through QueryData and the Prometheus client, against a fake Prometheus API that
// serves DCGM series of an old exporter (GPU_UTIL and MEM_COPY_UTIL only).
func TestGPUClassQueryEndToEndWithAFakePrometheus(t *testing.T) {
	points := func(v string) [][2]any {
		var out [][2]any
		for i := -60; i <= 60; i++ {
			out = append(out, [2]any{float64(gpuT0.Add(time.Duration(i) * time.Minute).Unix()), v})
		}
		return out
	}
	labels := map[string]string{"hostname": "fixture-node-b", "gpu": "1", "UUID": "GPU-b1", "modelName": "Tesla T4"}
	fake := &gpuPrometheus{
		metricNames: []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL"},
		labelNames:  []string{"hostname", "gpu", "UUID", "modelName"},
		labelValues: map[string][]string{"hostname": {"fixture-node-b"}},
		streams: map[string][]gpuStream{
			"DCGM_FI_DEV_GPU_UTIL":      {{Metric: labels, Values: points("40")}},
			"DCGM_FI_DEV_MEM_COPY_UTIL": {{Metric: labels, Values: points("85")}},
		},
	}
	ds := newTestDatasource(t, map[string]any{"prometheusUrl": newGPUPrometheus(t, fake).URL}, nil)
	q := backend.DataQuery{RefID: "A", QueryType: models.QueryTypeGPUClass, JSON: json.RawMessage(`{"queryType":"gpuClass","format":"summary"}`),
		Interval: time.Minute, TimeRange: backend.TimeRange{From: gpuT0, To: gpuT0.Add(30 * time.Minute)}}
	r := run(t, ds, q).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	sum := r.Frames[0]
	dom, _ := sum.FieldByName("dominant class")
	share, _ := sum.FieldByName("memory-bound")
	host, _ := sum.FieldByName("host")
	if sum.Rows() != 1 || dom.At(0) != "memory-bound" || math.Abs(share.At(0).(float64)-1) > 1e-9 || host.At(0) != "fixture-node-b" {
		t.Fatalf("summary: %d rows, %v %v %v; notices\n%s", sum.Rows(), dom.At(0), share.At(0), host.At(0), noticeTexts(sum))
	}
}

// BenchmarkGPUClassQueryOwnTime is the plugin's own work for 64 GPUs over 24 h at 15 s (the
// figures handed over in memory): classification, shares, frames and their Arrow encoding.
// BenchmarkRealGPUClass64GPUs24h (integration) measures the same work against a real Prometheus
// and Prometheus' own time beside it; scripts/bench.sh sets this figure against that time too.
func BenchmarkGPUClassQueryOwnTime(b *testing.B) {
	var gpus []classGPU
	for i := range 64 {
		at := nodeA0
		if i%4 == 3 {
			at = nodeB2 // a quarter without the bitmask: the clock history is fetched too
		}
		gpus = append(gpus, classGPU{gpuOf(fmt.Sprintf("bench-node-%02d", i/8), strconv.Itoa(i%8), "A100"), at})
	}
	src := &cachedFigures{fakeFigures: fakeFigures{gpus: gpus}}
	model := `{"queryType":"gpuClass","minStep":"15s"}`
	gq, _ := models.ParseGPUClassQuery(json.RawMessage(model))
	q := backend.DataQuery{RefID: "A", JSON: json.RawMessage(model), Interval: 15 * time.Second,
		TimeRange: backend.TimeRange{From: classT0, To: classT0.Add(24 * time.Hour)}}
	// Once before timing, so that the fake's figures are made and cached outside the loop.
	if r := answerGPUClass(context.Background(), src, q, gq, defaultClassify()); r.Error != nil {
		b.Fatal(r.Error)
	}
	for b.Loop() {
		r := answerGPUClass(context.Background(), src, q, gq, defaultClassify())
		if r.Error != nil {
			b.Fatal(r.Error)
		}
		if _, err := data.Frames(r.Frames).MarshalArrow(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(64*5761*b.N)/b.Elapsed().Seconds(), "gpu-steps/s")
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "own-ms/op")
}

// cachedFigures answers each distinct call once, so the benchmark times the plugin, not the fake.
type cachedFigures struct {
	fakeFigures
	cache sync.Map
}

func (c *cachedFigures) GPUFigures(ctx context.Context, f models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, notices.List, error) {
	key := fmt.Sprint(start.UnixNano(), end.UnixNano(), step)
	if v, ok := c.cache.Load(key); ok {
		r := v.([]classify.GPUSeries)
		return r, nil, nil
	}
	s, n, err := c.fakeFigures.GPUFigures(ctx, f, start, end, step)
	c.cache.Store(key, s)
	return s, n, err
}
