package correlate

import (
	"context"
	"errors"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// The seams of every query: what each one asks of a store, one interface per question, and the
// stores themselves, each available or with the reason it is not. The joins take the narrow
// interfaces, so their tests use in-memory fakes; the plugin holds Sources, built once per data
// source instance, and never a client's own type.

// Profiles is what the joins ask of a profile store (pyroscope.Client answers it). A flame graph
// it answers is the caller's: the joins merge into it.
type Profiles interface {
	MergedFlameGraph(ctx context.Context, q models.FlameGraphQuery) (*flamegraph.Node, error)
}

// Traces reads one trace (jaeger.Client answers it).
type Traces interface {
	Trace(ctx context.Context, traceID string) (*models.Trace, error)
}

// TraceSearch lists the services and finds traces (the slow-request list).
type TraceSearch interface {
	Services(ctx context.Context) (services []string, api string, err error)
	FindTraces(ctx context.Context, q models.TraceSearchQuery) ([]models.TraceSummary, error)
}

// SpanSearch finds an operation's spans in a range (the span heatmap and span profile), in any
// order: the asked service's spans whole; spans of other services may come too (their traces
// count), and may come without their attributes and events.
type SpanSearch interface {
	SearchSpans(ctx context.Context, q models.TraceSearchQuery) ([]models.Span, error)
}

// GPUFigures is every classify.Figures of the GPUs matching the filter, per GPU on one step
// grid, with notices (prometheus.Client answers it).
type GPUFigures interface {
	GPUFigures(ctx context.Context, filter models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, notices.List, error)
}

// GPUMetrics reads one catalogue metric of the GPUs (gpuMetrics, and the lever's memory).
type GPUMetrics interface {
	GPUMetric(ctx context.Context, name string, filter models.GPUFilter, aggregation string, start, end time.Time, step time.Duration) (*models.GPUMetricResult, error)
}

// KernelTraces is the analysed kernel traces that name a request, and warnings about those
// that could not be found or read (tracestore.Store answers it).
type KernelTraces interface {
	KernelTracesOf(ctx context.Context, traceID string) ([]*gputrace.Result, notices.List)
}

// KernelBaselines is KernelTraces that also counts, from the same listing and without reading
// any file, the other requests whose traces a kernels diff of the request would take as its
// default baseline (tracestore.Store answers it): the verdict links GPU causes to that diff.
type KernelBaselines interface {
	KernelTracesWithBaseline(ctx context.Context, traceID string) ([]*gputrace.Result, int, notices.List)
}

// Engines reads serving engines' metrics around a span.
type Engines interface {
	EngineFigures(ctx context.Context, q models.EngineQuery) (models.EngineFigures, error)
}

// Containers reads a Kubernetes container's CPU throttling around a span (cAdvisor's series).
type Containers interface {
	ContainerCPU(ctx context.Context, q models.ContainerQuery) (models.ContainerCPU, error)
}

// Latencies reads the request-duration histograms (slowRequests, and the lever's p99).
type Latencies interface {
	EndpointLatencies(ctx context.Context, q models.LatencyQuery) (models.LatencyResult, error)
}

// KubeStates reads kube-state-metrics' container terminations of a range (the triage).
type KubeStates interface {
	ContainerTerminations(ctx context.Context, f models.GPUFilter, start, end time.Time) (models.KubeAnswer, error)
}

// TraceLatencies answers the latency table from a trace store's own metrics (Tempo's TraceQL
// metrics over server spans), where no request-duration histogram has the requests.
type TraceLatencies interface {
	EndpointLatencies(ctx context.Context, q models.TraceLatencyQuery) (models.TraceLatencyResult, error)
}

// FailedRequests lists the services and finds a service's failed traces (the triage).
type FailedRequests interface {
	Services(ctx context.Context) (services []string, api string, err error)
	FailedTraces(ctx context.Context, q models.TraceSearchQuery) ([]*models.Trace, error)
}

// ProfileStore is Pyroscope as the plugin uses it.
type ProfileStore interface {
	Profiles
	ProfileTypes(ctx context.Context, start, end time.Time) ([]models.ProfileType, error)
	LabelNames(ctx context.Context, selector string, start, end time.Time) ([]string, error)
	LabelValues(ctx context.Context, label, selector string, start, end time.Time) ([]string, error)
	Series(ctx context.Context, q models.SeriesQuery) ([]models.ProfileSeries, error)
	Heatmap(ctx context.Context, q models.HeatmapQuery) ([]models.HeatmapSeries, error)
	// FrameFilterNotices says what a panel must know of frameFilter on this server.
	FrameFilterNotices(f models.FrameFilter, series bool) notices.List
}

// TraceStore is Jaeger as the plugin uses it.
type TraceStore interface {
	Traces
	TraceSearch
	SpanSearch
	FailedRequests
	Operations(ctx context.Context, service string) ([]string, error)
}

// MetricStore is the application's Prometheus: latency histograms and serving engines.
type MetricStore interface {
	Latencies
	Engines
	Containers
	KubeStates
	Version(ctx context.Context) (string, error)
}

// GPUStore is the Prometheus of the GPUs' DCGM series, with the data source's DCGM names.
type GPUStore interface {
	GPUFigures
	GPUMetrics
	GPULabelValues(ctx context.Context, role string, filter models.GPUFilter, start, end time.Time) ([]string, error)
}

// KernelStore is the configured GPU kernel trace directories and buckets.
type KernelStore interface {
	KernelTraces
	FilesOf(ctx context.Context, traceID string) ([]gputrace.TraceFile, notices.List)
	// TracesOfWith answers the kernels query with the limits its view needs.
	TracesOfWith(ctx context.Context, file, traceID string, l gputrace.Limits) ([]gputrace.Found, notices.List, error)
	// Diff compares a request's kernel traces with a baseline's (the kernels query's diff view).
	Diff(ctx context.Context, q gputrace.DiffRequest) (*gputrace.KernelDiff, error)
	// CheckBuckets lists each bucket afresh (the health check).
	CheckBuckets(ctx context.Context) []gputrace.BucketCheck
	// Close closes the buckets' clients.
	Close() error
}

// Sources are every store a query can read, each available or with the reason it is not.
type Sources struct {
	Profiles  Source[ProfileStore]          // Pyroscope
	Traces    Source[TraceStore]            // Jaeger
	Metrics   Source[MetricStore]           // the application's Prometheus
	GPUs      Source[GPUStore]              // the GPUs' Prometheus, DCGM names applied
	Kernels   Source[KernelStore]           // GPU kernel trace directories and buckets
	LocalGPUs Source[models.LocalGPUSource] // this host's GPUs through NVML
}

// ErrNotSet is the reason of a Source nobody set: a bug, as every source of an instance is
// set, available or not, when it is built.
var ErrNotSet = errors.New("this store was not set up")

// Source is one store: its client, or the reason it cannot be asked.
type Source[T any] struct {
	client T
	err    error
	ready  bool
}

// Ready is a store that can be asked.
func Ready[T any](client T) Source[T] { return Source[T]{client: client, ready: true} }

// Unavailable is a store that cannot be asked, and why (shown to the user as is).
func Unavailable[T any](why error) Source[T] {
	if why == nil {
		why = ErrNotSet
	}
	return Source[T]{err: why}
}

// Get is the client, or why there is none.
func (s Source[T]) Get() (T, error) {
	if !s.ready {
		var none T
		if s.err == nil {
			return none, ErrNotSet
		}
		return none, s.err
	}
	return s.client, nil
}

// Ready says whether the store can be asked.
func (s Source[T]) Ready() bool { return s.ready }

// Narrow is the same store seen through a narrower interface U, which its client must
// implement (a ProfileStore as the joins' Profiles).
func Narrow[U, T any](s Source[T]) Source[U] {
	c, err := s.Get()
	if err != nil {
		return Unavailable[U](err)
	}
	u, ok := any(c).(U)
	if !ok {
		return Unavailable[U](errors.New("the store cannot answer this question"))
	}
	return Ready(u)
}

// ServiceLatency gives the p99 of a service's requests over a range (the lever's question).
type ServiceLatency interface {
	ServiceP99(ctx context.Context, service string, start, end time.Time) (LatencyFigure, error)
}

// TraceSources are the stores the trace join reads.
type TraceSources struct {
	Traces   Source[Traces]
	Profiles Source[Profiles]
	GPUs     Source[GPUFigures]
	// Kernels unavailable (no trace directory) leaves the kernel column empty, silently: the
	// feature is not in use.
	Kernels Source[KernelTraces]
	// Engines reads serving engines' metrics (the application Prometheus).
	Engines Source[Engines]
	// Containers reads the spans' containers' CPU throttling (cAdvisor, the application
	// Prometheus); unavailable leaves the throttling unread, with a caveat where it matters.
	Containers Source[Containers]
	// LocalGPUs lists the processes on the plugin's host's GPUs (NVML), LocalHost that host's
	// name: a span that ran there and queued behind other work names them.
	LocalGPUs Source[LocalProcesses]
	LocalHost string
	// Lever's stores: runbook 002's questions over the panel's range.
	Lever LeverSources
}

// LeverSources are the stores Lever reads; an unavailable one leaves its question unanswered.
type LeverSources struct {
	GPUs    Source[GPUFigures]
	Memory  Source[GPUMetrics]
	Engines Source[Engines]
	Latency Source[ServiceLatency]
}

// ForTrace is what the trace join reads of s; histograms are the latency histograms whose p99
// the lever compares with the service's threshold.
func (s Sources) ForTrace(histograms []models.LatencyHistogram) TraceSources {
	// The histograms first, else the trace store's metrics where it has them (Tempo).
	traceMetrics := Narrow[TraceLatencies](s.Traces)
	latency := Unavailable[ServiceLatency](nil)
	if m, err := s.Metrics.Get(); err == nil {
		latency = Ready[ServiceLatency](ServiceLatencies{Store: m, Histograms: histograms, Traces: traceMetrics})
	} else if traceMetrics.Ready() {
		latency = Ready[ServiceLatency](ServiceLatencies{Histograms: histograms, Traces: traceMetrics})
	} else {
		latency = Unavailable[ServiceLatency](err)
	}
	return TraceSources{
		Traces:     Narrow[Traces](s.Traces),
		Profiles:   Narrow[Profiles](s.Profiles),
		GPUs:       Narrow[GPUFigures](s.GPUs),
		Kernels:    Narrow[KernelTraces](s.Kernels),
		Engines:    Narrow[Engines](s.Metrics),
		Containers: Narrow[Containers](s.Metrics),
		LocalGPUs:  Narrow[LocalProcesses](s.LocalGPUs),
		Lever: LeverSources{
			GPUs: Narrow[GPUFigures](s.GPUs), Memory: Narrow[GPUMetrics](s.GPUs),
			Engines: Narrow[Engines](s.Metrics), Latency: latency,
		},
	}
}

// get asks an available store, or returns why it is not.
func get[T, R any](s Source[T], ask func(T) (R, error)) (R, error) {
	c, err := s.Get()
	if err != nil {
		var none R
		return none, err
	}
	return ask(c)
}

// TracesOf is the trace store as a Traces even when it is unavailable: each answer is then
// why, so the whole-request join can fall back to the trace_id label and say so.
func TracesOf(s Source[TraceStore]) Traces { return sourceTraces(Narrow[Traces](s)) }

type sourceTraces Source[Traces]

func (s sourceTraces) Trace(ctx context.Context, traceID string) (*models.Trace, error) {
	return get(Source[Traces](s), func(t Traces) (*models.Trace, error) { return t.Trace(ctx, traceID) })
}
