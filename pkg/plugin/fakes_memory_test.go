package plugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// In-memory stores for the plugin's unit tests: they answer as the clients do once they have
// read and checked the upstream's reply, so the tests check the plugin's routing, its error and
// notice mapping and its frames without a wire. What the clients send and how they read the
// replies is tested in their packages (pkg/pyroscope, pkg/jaeger, pkg/prometheus) and in the
// integration suite.

// The errors of stores whose server failed, as their clients file them (upstream.Wrap): the
// upstream's, named with its URL, answered with 502 by the resource routes.
var (
	errJaegerDown     = upstream.Wrap(models.Jaeger, "http://jaeger:16686", &upstream.HTTPStatusError{Status: 503, Body: "storage backend unavailable"})
	errPyroscopeDown  = pyroscopeErr(connect.CodeUnavailable, "dial tcp 127.0.0.1:4040: connect: connection refused")
	errPrometheusDown = upstream.Wrap(models.Prometheus, "http://prometheus:9090", &upstream.HTTPStatusError{Status: 503, Body: "storage is down"})
)

// pyroscopeErr is Pyroscope's answer with this code and message, as its client files it.
func pyroscopeErr(code connect.Code, msg string) error {
	return upstream.Wrap(models.Pyroscope, "http://pyroscope:4040", connect.NewError(code, errors.New(msg)))
}

var (
	_ correlate.ProfileStore = (*memProfiles)(nil)
	_ correlate.TraceStore   = (*memTraces)(nil)
	_ correlate.MetricStore  = (*memMetrics)(nil)
	_ correlate.GPUStore     = (*memGPUs)(nil)
)

// memProfiles is a profile store in memory: span queries answer the stacks of their span IDs
// (by profile type), trace ID queries traceErr or the stacks of byTrace, the other flame graph
// queries the stacks of the selectors containing a key of byLabel.
type memProfiles struct {
	bySpan   map[string]map[string][]string // profile type → span ID → folded stacks "a;b;c 10"
	byLabel  map[string][]string            // selector fragment → folded stacks
	byTrace  map[string][]string            // trace ID → folded stacks of its samples (trace_id_selector)
	traceErr error                          // answered to every trace ID query
	flameErr error                          // answered to every flame graph query
	err      error                          // answered to every question

	types       []models.ProfileType
	labelNames  []string
	labelValues map[string][]string // by label name
	series      []models.ProfileSeries
	seriesErr   error
	heatmap     []models.HeatmapSeries
	filterNotes notices.List // FrameFilterNotices' answer

	mu       sync.Mutex
	calls    []models.FlameGraphQuery
	seriesQs []models.SeriesQuery
	heatQs   []models.HeatmapQuery
	labelQs  []memLabelQuery
}

// memLabelQuery is one LabelNames (label "") or LabelValues question.
type memLabelQuery struct {
	label, selector string
	start, end      time.Time
}

func (f *memProfiles) MergedFlameGraph(_ context.Context, q models.FlameGraphQuery) (*flamegraph.Node, error) {
	f.mu.Lock()
	f.calls = append(f.calls, q)
	f.mu.Unlock()
	if err := cmp.Or(f.err, f.flameErr); err != nil {
		return nil, err
	}
	var stacks []string
	switch {
	case len(q.SpanSelector) > 0:
		for _, id := range q.SpanSelector {
			stacks = append(stacks, f.bySpan[q.ProfileTypeID][id]...)
		}
	case q.TraceID != "":
		if f.traceErr != nil {
			return nil, f.traceErr
		}
		stacks = f.byTrace[q.TraceID]
	default:
		for frag, s := range f.byLabel {
			if strings.Contains(q.LabelSelector, frag) {
				stacks = append(stacks, s...)
			}
		}
	}
	return flamegraph.CallSite(memFolded(stacks...), q.StackTraceSelector), nil
}

// seriesCalls are the series queries asked, in order.
func (f *memProfiles) seriesCalls() []models.SeriesQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.seriesQs)
}

// flameCalls are the flame graph queries asked, in order.
func (f *memProfiles) flameCalls() []models.FlameGraphQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

func (f *memProfiles) ProfileTypes(context.Context, time.Time, time.Time) ([]models.ProfileType, error) {
	if f.err != nil {
		return nil, f.err
	}
	return f.types, nil
}

// LabelNames answers labelNames as the client does: sorted, without Pyroscope's internal labels.
func (f *memProfiles) LabelNames(_ context.Context, selector string, start, end time.Time) ([]string, error) {
	f.mu.Lock()
	f.labelQs = append(f.labelQs, memLabelQuery{selector: selector, start: start, end: end})
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	out := []string{}
	for _, n := range f.labelNames {
		if !pyroscope.IsInternalLabel(n) {
			out = append(out, n)
		}
	}
	return memSorted(out), nil
}

// LabelValues answers the label's values as the client does: sorted, never nil.
func (f *memProfiles) LabelValues(_ context.Context, label, selector string, start, end time.Time) ([]string, error) {
	f.mu.Lock()
	f.labelQs = append(f.labelQs, memLabelQuery{label: label, selector: selector, start: start, end: end})
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return memSorted(f.labelValues[label]), nil
}

// memSorted is a sorted copy of list without repeats, never nil (the clients answer [] as such).
func memSorted(list []string) []string {
	out := append([]string{}, list...)
	slices.Sort(out)
	return slices.Compact(out)
}

// labelCalls are the label questions asked, in order.
func (f *memProfiles) labelCalls() []memLabelQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.labelQs)
}

func (f *memProfiles) Series(_ context.Context, q models.SeriesQuery) ([]models.ProfileSeries, error) {
	f.mu.Lock()
	f.seriesQs = append(f.seriesQs, q)
	f.mu.Unlock()
	if err := cmp.Or(f.err, f.seriesErr); err != nil {
		return nil, err
	}
	return f.series, nil
}

func (f *memProfiles) Heatmap(_ context.Context, q models.HeatmapQuery) ([]models.HeatmapSeries, error) {
	f.mu.Lock()
	f.heatQs = append(f.heatQs, q)
	f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	return f.heatmap, nil
}

func (f *memProfiles) FrameFilterNotices(filter models.FrameFilter, _ bool) notices.List {
	if filter.Empty() {
		return nil
	}
	return f.filterNotes
}

// memFolded builds a flame graph from folded stacks ("a;b;c 10"), merging equal paths.
func memFolded(stacks ...string) *flamegraph.Node {
	root := flamegraph.New()
	for _, s := range stacks {
		path, v, _ := strings.Cut(s, " ")
		value, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			panic(fmt.Sprintf("folded stack %q: %v", s, err))
		}
		chain := &flamegraph.Node{Total: value}
		n := chain
		for _, name := range strings.Split(path, ";") {
			c := &flamegraph.Node{Name: name, Total: value}
			n.Children = []*flamegraph.Node{c}
			n = c
		}
		n.Self = value
		root.Merge(chain)
	}
	return root
}

// memTraces is a trace store in memory: Trace answers a stored trace (or err, or not found as
// jaeger.Client files it),
// the searches keep the traces with a span of the service (and operation) starting in the range
// and lasting at least the minimum, as Jaeger's span-level search does.
type memTraces struct {
	traces   []models.Trace
	services []string // nil: the services of the traces
	api      string   // the API Services names; "" is jaeger.APIv3's "v3"
	err      error    // answered to every question

	mu       sync.Mutex
	searches []models.TraceSearchQuery
}

func (f *memTraces) Trace(_ context.Context, traceID string) (*models.Trace, error) {
	if f.err != nil {
		return nil, f.err
	}
	for _, tr := range f.traces {
		if tr.TraceID == traceID {
			tr.Spans = slices.Clone(tr.Spans)
			return &tr, nil
		}
	}
	return nil, upstream.Wrap(models.Jaeger, "http://jaeger:16686", memTraceNotFound(traceID))
}

// memTraceNotFound is jaeger.Client's error for a trace Jaeger has no span of.
type memTraceNotFound string

func (e memTraceNotFound) Error() string {
	return fmt.Sprintf("trace %s not found (older than Jaeger's retention, not yet flushed, or a different Jaeger)", string(e))
}

func (e memTraceNotFound) Is(target error) bool { return target == jaeger.ErrTraceNotFound }

func (f *memTraces) Services(context.Context) ([]string, string, error) {
	if f.err != nil {
		return nil, "", f.err
	}
	api := cmp.Or(f.api, "v3")
	if f.services != nil {
		return f.services, api, nil
	}
	var out []string
	for _, tr := range f.traces {
		for _, s := range tr.Spans {
			if !slices.Contains(out, s.Service) {
				out = append(out, s.Service)
			}
		}
	}
	return out, api, nil
}

func (f *memTraces) Operations(_ context.Context, service string) ([]string, error) {
	if f.err != nil {
		return nil, f.err
	}
	var out []string
	for _, tr := range f.traces {
		for _, s := range tr.Spans {
			if s.Service == service && !slices.Contains(out, s.Operation) {
				out = append(out, s.Operation)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// found are the traces the search finds, at most its limit.
func (f *memTraces) found(q models.TraceSearchQuery) []models.Trace {
	f.mu.Lock()
	f.searches = append(f.searches, q)
	f.mu.Unlock()
	var out []models.Trace
	for _, tr := range f.traces {
		if slices.ContainsFunc(tr.Spans, func(s models.Span) bool { return f.matches(s, q) }) {
			out = append(out, tr)
		}
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out
}

func (f *memTraces) matches(s models.Span, q models.TraceSearchQuery) bool {
	return s.Service == q.Service && (q.Operation == "" || s.Operation == q.Operation) &&
		(q.Start.IsZero() || !s.Start.Before(q.Start)) && (q.End.IsZero() || !s.Start.After(q.End)) && s.Duration >= q.MinDuration
}

func (f *memTraces) FindTraces(_ context.Context, q models.TraceSearchQuery) ([]models.TraceSummary, error) {
	if f.err != nil {
		return nil, f.err
	}
	out := []models.TraceSummary{}
	for _, tr := range f.found(q) {
		out = append(out, memSummary(tr))
	}
	slices.SortFunc(out, func(a, b models.TraceSummary) int {
		return cmp.Or(cmp.Compare(b.Duration, a.Duration), a.Start.Compare(b.Start), cmp.Compare(a.TraceID, b.TraceID))
	})
	return out, nil
}

// FailedTraces answers the traces of the search with a failed span, as jaeger.Client does.
func (f *memTraces) FailedTraces(_ context.Context, q models.TraceSearchQuery) ([]*models.Trace, error) {
	if f.err != nil {
		return nil, f.err
	}
	var out []*models.Trace
	for _, tr := range f.found(models.TraceSearchQuery{Service: q.Service, Operation: q.Operation, Start: q.Start, End: q.End}) {
		if slices.ContainsFunc(tr.Spans, models.Span.Failed) {
			tr.Spans = slices.Clone(tr.Spans)
			out = append(out, &tr)
		}
	}
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

func (f *memTraces) SearchSpans(_ context.Context, q models.TraceSearchQuery) ([]models.Span, error) {
	if f.err != nil {
		return nil, f.err
	}
	var out []models.Span
	for _, tr := range f.found(q) {
		for _, s := range tr.Spans {
			if f.matches(s, q) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// memSummary is a trace's search hit, as jaeger.Client summarises one: the root is the span
// without a parent, the duration from the first span's start to the last span's end.
func memSummary(tr models.Trace) models.TraceSummary {
	spans := slices.Clone(tr.Spans)
	slices.SortStableFunc(spans, func(a, b models.Span) int { return a.Start.Compare(b.Start) })
	root, rootMissing := spans[0], true
	for _, s := range spans {
		if s.ParentSpanID == "" {
			root, rootMissing = s, false
			break
		}
	}
	start, end := spans[0].Start, spans[0].Start
	var services []string
	for _, s := range spans {
		if e := s.Start.Add(s.Duration); e.After(end) {
			end = e
		}
		if !slices.Contains(services, s.Service) {
			services = append(services, s.Service)
		}
	}
	slices.Sort(services)
	sum := models.TraceSummary{TraceID: tr.TraceID, RootService: root.Service, RootOperation: root.Operation,
		Start: start, Duration: end.Sub(start), Spans: len(spans), Services: services, RootMissing: rootMissing}
	sum.DurationMs = float64(sum.Duration) / float64(time.Millisecond)
	return sum
}

// memMetrics is the application's Prometheus in memory: EndpointLatencies answers the rows of
// latency the query's histograms, service and endpoint keep (or err), recording each query.
type memMetrics struct {
	latency   models.LatencyResult
	err       error
	version   string
	engines   models.EngineFigures // EngineFigures' answer (none: the engine exports nothing)
	engineErr error
	kube      models.KubeAnswer // ContainerTerminations' answer
	kubeErr   error
	// containers are ContainerCPU's answers by pod (none: cAdvisor has no series for it).
	containers map[string]models.ContainerCPU

	mu  sync.Mutex
	qs  []models.LatencyQuery
	eng []models.EngineQuery
}

func (f *memMetrics) EndpointLatencies(_ context.Context, q models.LatencyQuery) (models.LatencyResult, error) {
	f.mu.Lock()
	f.qs = append(f.qs, q)
	f.mu.Unlock()
	if f.err != nil {
		return models.LatencyResult{}, f.err
	}
	res := f.latency
	var rows []models.EndpointLatency
	for _, r := range res.Rows {
		asked := len(q.Histograms) == 0 || slices.ContainsFunc(q.Histograms, func(h models.LatencyHistogram) bool { return h.Metric == r.Metric })
		if asked && (q.Service == "" || r.Service == q.Service) && (q.Endpoint == "" || r.Endpoint == q.Endpoint) {
			rows = append(rows, r)
		}
	}
	res.Rows = rows
	if res.Range == 0 {
		res.Range = q.Range
	}
	return res, nil
}

func (f *memMetrics) queries() []models.LatencyQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.qs)
}

func (f *memMetrics) EngineFigures(_ context.Context, q models.EngineQuery) (models.EngineFigures, error) {
	f.mu.Lock()
	f.eng = append(f.eng, q)
	f.mu.Unlock()
	return f.engines, f.engineErr
}

func (f *memMetrics) ContainerTerminations(context.Context, models.GPUFilter, time.Time, time.Time) (models.KubeAnswer, error) {
	if err := cmp.Or(f.err, f.kubeErr); err != nil {
		return models.KubeAnswer{}, err
	}
	return f.kube, nil
}

func (f *memMetrics) ContainerCPU(_ context.Context, q models.ContainerQuery) (models.ContainerCPU, error) {
	if f.err != nil {
		return models.ContainerCPU{}, f.err
	}
	if c, ok := f.containers[q.Pod]; ok {
		return c, nil
	}
	nan := math.NaN()
	return models.ContainerCPU{Pod: q.Pod, Periods: nan, ThrottledPeriods: nan, ThrottledSeconds: nan, UsageSeconds: nan, QuotaCPUs: nan,
		Missing: []string{models.CadvisorPeriods, models.CadvisorThrottledPeriods, models.CadvisorThrottledSeconds, models.CadvisorUsageSeconds, models.CadvisorQuota}}, nil
}

func (f *memMetrics) Version(context.Context) (string, error) {
	if f.err != nil {
		return "", f.err
	}
	return cmp.Or(f.version, "2.53.0"), nil
}

// memGPUs is the GPUs' Prometheus in memory: GPUFigures answers the figures of the fake GPUs
// the filter's hosts and GPUs select (fakeGPU's readings by DCGM name, as the client maps them
// to classify.Figures), on the step grid of the range, recording each filter.
type memGPUs struct {
	gpus []fakeGPU
	err  error

	mu      sync.Mutex
	filters []models.GPUFilter
}

func (f *memGPUs) GPUFigures(_ context.Context, filter models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, notices.List, error) {
	f.mu.Lock()
	f.filters = append(f.filters, filter)
	f.mu.Unlock()
	if f.err != nil {
		return nil, nil, f.err
	}
	if step <= 0 {
		return nil, nil, fmt.Errorf("step %v", step)
	}
	var out []classify.GPUSeries
	for _, g := range f.gpus {
		gpu := classify.GPU{Host: g.Labels["Hostname"], Index: g.Labels["gpu"], UUID: g.Labels["UUID"], Model: g.Labels["modelName"],
			MIG: g.Labels["GPU_I_ID"], MIGProfile: g.Labels["GPU_I_PROFILE"]}
		if !memSelects(filter, gpu) {
			continue
		}
		s := classify.GPUSeries{GPU: gpu}
		for t := start.Truncate(step); !t.After(end); t = t.Add(step) {
			if t.Before(start) {
				continue
			}
			s.Samples = append(s.Samples, classify.Sample{Time: t, Figures: memFigures(g, t)})
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b classify.GPUSeries) int { return a.GPU.Compare(b.GPU) })
	return out, nil, nil
}

// memSelects says whether the filter's hosts, GPUs (indexes or UUIDs) and models keep gpu.
func memSelects(f models.GPUFilter, gpu classify.GPU) bool {
	in := func(list []string, v ...string) bool {
		return len(list) == 0 || slices.ContainsFunc(v, func(x string) bool { return x != "" && slices.Contains(list, x) })
	}
	return in(f.Hosts, gpu.Host) && in(f.GPUs, gpu.Index, gpu.UUID) && in(f.Models, gpu.Model)
}

// memFigures are a fake GPU's readings at t as classify.Figures: NaN where it exports none.
func memFigures(g fakeGPU, t time.Time) classify.Figures {
	v := func(metric string) float64 {
		if x, ok := g.Value(metric, t); ok {
			return x
		}
		return math.NaN()
	}
	return classify.Figures{
		GPUUtil: v("DCGM_FI_DEV_GPU_UTIL"), MemCopyUtil: v("DCGM_FI_DEV_MEM_COPY_UTIL"), SMActive: v("DCGM_FI_PROF_SM_ACTIVE"),
		GrEngine: v("DCGM_FI_PROF_GR_ENGINE_ACTIVE"), DRAMActive: v("DCGM_FI_PROF_DRAM_ACTIVE"), Tensor: v("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"),
		PCIeTx: v("DCGM_FI_PROF_PCIE_TX_BYTES"), PCIeRx: v("DCGM_FI_PROF_PCIE_RX_BYTES"), TempC: v("DCGM_FI_DEV_GPU_TEMP"),
		SMClockMHz: v("DCGM_FI_DEV_SM_CLOCK"), PowerW: v("DCGM_FI_DEV_POWER_USAGE"), ClockEvents: v("DCGM_FI_DEV_CLOCKS_EVENT_REASONS"),
		FBUsed: v("DCGM_FI_DEV_FB_USED"), FBFree: v("DCGM_FI_DEV_FB_FREE"),
	}
}

// askedFilters are the filters GPUFigures was asked, in order.
func (f *memGPUs) askedFilters() []models.GPUFilter {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.filters)
}

func (f *memGPUs) GPUMetric(context.Context, string, models.GPUFilter, string, time.Time, time.Time, time.Duration) (*models.GPUMetricResult, error) {
	return nil, errNotFaked
}

func (f *memGPUs) GPULabelValues(context.Context, string, models.GPUFilter, time.Time, time.Time) ([]string, error) {
	return nil, errNotFaked
}
