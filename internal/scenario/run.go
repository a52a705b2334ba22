package scenario

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"time"

	otelpyroscope "github.com/grafana/otel-profiling-go"
	"github.com/grafana/pyroscope-go"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/promwrite"
)

// Config says where a scenario's services send what they record.
type Config struct {
	OTLP      string // Jaeger's OTLP gRPC endpoint (host:port)
	Pyroscope string // Pyroscope's URL; "" sends no profiles
	// TraceDir is the folder kernel traces are written to (the plugin's traceDirectories).
	TraceDir string
	// Host is the services' host.name; GPUHost the simulated dcgm-exporter host whose GPUCount
	// GPUs run gpusim.Live's classes (the GPU kinds run their culprit there).
	Host, GPUHost string
	GPUCount      int
	// Prometheus is the URL of a Prometheus with its remote-write receiver on: the kinds around
	// the request write the series a real cluster's Prometheus would hold (cAdvisor's throttling
	// of the culprit's container); "" for the other kinds.
	Prometheus string
	// SeriesSince is the earliest time Prometheus takes samples of a new series at (a TSDB
	// holding backfilled blocks refuses samples before their end as out of bounds); zero: any.
	SeriesSince time.Time
	Log         func(format string, args ...any)
}

// causeKinds are the verdict's kinds of cause each scenario must come first with.
var causeKinds = map[Kind]string{
	Queue: "queue", CPU: "cpu", DownstreamOpaque: "downstream", DownstreamQueued: "downstream",
	GPUMemoryBound: "waiting", GPUThrottled: "waiting",
	HostSync: "host sync", LaunchBound: "launch overhead", Copies: "copies", HostWork: "host work",
	FailedRetry: "failed attempt", DispatchBound: "launch overhead", SharedGPU: "shared gpu",
	CPUThrottled: "cpu throttled", KVPreempted: "preempted",
}

// mechanisms are the kernel-trace patterns of the GPU-idle kinds.
var mechanisms = map[Kind]kinetogen.Mechanism{
	HostSync: kinetogen.MechSync, LaunchBound: kinetogen.MechLaunch, Copies: kinetogen.MechCopies, HostWork: kinetogen.MechHostWork,
	DispatchBound: kinetogen.MechDispatch, SharedGPU: kinetogen.MechShared,
}

// prepCPU is the CPU a handler spends before it waits on the GPU: enough for a few samples at
// the profilers' 100 Hz.
const prepCPU = 50 * time.Millisecond

// gpuMargin is how long the chosen GPU's class must hold on both sides of the request: DCGM's
// readings around a short span are a few seconds either side of it.
const gpuMargin = 20 * time.Second

// Run makes the scenario's request, waits until its spans and profiles are sent, and says what
// the verdict should find.
func Run(ctx context.Context, cfg Config, s Spec) (*Result, error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	res := &Result{Kind: s.Kind, Service: s.Culprit, CauseKind: causeKinds[s.Kind], InjectedMs: ms(s.Injected)}
	if res.CauseKind == "" {
		return nil, fmt.Errorf("unknown scenario %q", s.Kind)
	}
	if s.Kind == DownstreamOpaque || s.Kind == DownstreamQueued {
		res.Service, res.Peer = s.Caller, s.Culprit // the caller waits on the culprit
	}
	culpritHost := cfg.Host
	gpu := -1
	switch s.Kind {
	case GPUMemoryBound, GPUThrottled, FailedRetry:
		want := []string{gpusim.MemoryBound}
		if s.Kind == GPUThrottled {
			want = []string{gpusim.ThermalThrottled, gpusim.PowerThrottled}
		}
		if s.Kind == FailedRetry {
			want = gpusim.Classes // any: the framebuffer is what the OOM quotes
		}
		var wait time.Duration
		gpu, wait, res.Class = gpuWith(want, cfg.GPUCount, time.Now(), gpuMargin)
		if res.Class == "" {
			return nil, fmt.Errorf("no GPU of %s shows %v for %s on both sides of any moment", cfg.GPUHost, want, gpuMargin)
		}
		cfg.Log("GPU %d of %s shows %s in %s", gpu, cfg.GPUHost, res.Class, wait)
		if s.Kind == FailedRetry {
			res.Class = "" // the verdict quotes its framebuffer, not its class
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		culpritHost, res.GPU = cfg.GPUHost, strconv.Itoa(gpu)
	}
	onSharedGPU := s.Kind.WritesKernelTrace() && cfg.Prometheus != ""
	if onSharedGPU {
		// The culprit runs on a GPU host of its own, whose dcgm-exporter (written below) maps
		// its GPU to the culprit's pod and another workload's. Only SharedGPU's kernels queue
		// behind that workload; the other GPU-idle kinds must keep their own first cause there.
		culpritHost, gpu, res.GPU = s.SharedHost, s.SharedGPU, strconv.Itoa(s.SharedGPU)
		if s.Kind == SharedGPU {
			res.TitleHas = "GPU shared with " + sharedNamespace + "/" + s.OtherPod
		}
	}
	profiled := s.Kind != Queue && s.Kind != DownstreamOpaque && s.Kind != DownstreamQueued && s.Kind != KVPreempted

	if (s.Kind == CPUThrottled || s.Kind == KVPreempted) && cfg.Prometheus == "" {
		return nil, fmt.Errorf("--kind %s writes the series around the request: give a Prometheus with its remote-write receiver on", s.Kind)
	}
	if s.Kind == CPUThrottled {
		if cfg.Prometheus == "" {
			return nil, fmt.Errorf("--kind %s writes its container's cAdvisor series: give a Prometheus with its remote-write receiver on", s.Kind)
		}
		// Whole CFS periods, each throttled for the share above the quota.
		n := int(math.Ceil(float64(s.Injected) / ((1 - s.Quota) * float64(promwrite.CFSPeriod))))
		res.InjectedMs = ms(time.Duration(float64(n) * (1 - s.Quota) * float64(promwrite.CFSPeriod)))
	}
	callerTP, err := tracerProvider(ctx, cfg.OTLP, s.Caller, cfg.Host)
	if err != nil {
		return nil, err
	}
	defer shutdown(callerTP)
	// The culprit runs in a Kubernetes pod: its spans name it as OpenTelemetry's k8s resource
	// detectors do.
	culpritTP, err := tracerProvider(ctx, cfg.OTLP, s.Culprit, culpritHost,
		attribute.String("k8s.namespace.name", s.Namespace), attribute.String("k8s.pod.name", s.Pod), attribute.String("k8s.container.name", s.Container))
	if err != nil {
		return nil, err
	}
	defer shutdown(culpritTP)
	var culpritTracing trace.TracerProvider = culpritTP
	var profiler *pyroscope.Profiler
	if profiled && cfg.Pyroscope != "" {
		// otel-profiling-go labels the culprit's local root span's samples with its span ID and
		// sets pyroscope.profile.id on it, as the demo's services do.
		culpritTracing = otelpyroscope.NewTracerProvider(culpritTP)
		profiler, err = pyroscope.Start(pyroscope.Config{
			ApplicationName: s.Culprit, ServerAddress: cfg.Pyroscope, UploadRate: time.Second,
			Tags:         map[string]string{"host_name": culpritHost},
			ProfileTypes: []pyroscope.ProfileType{pyroscope.ProfileCPU},
		})
		if err != nil {
			return nil, fmt.Errorf("starting the profiler: %w", err)
		}
	}
	prop := propagation.TraceContext{}
	c := &culprit{spec: s, cfg: cfg, tracer: culpritTracing.Tracer("hsi-scenario"), gpu: gpu, res: res}
	if m, ok := mechanisms[s.Kind]; ok {
		// The IDs are placeholders: the trace is written with the request's own after it.
		if c.kernels, c.truth, err = kinetogen.Generate(kinetogen.Scenario{
			Mechanism: m, TraceID: "a0000000000000000000000000000000", Duration: s.Injected, Seed: s.Seed,
		}); err != nil {
			return nil, err
		}
		res.InjectedMs = ms(time.Duration(c.truth.Of(m)))
	}
	var handler http.Handler = http.HandlerFunc(c.serve)
	switch s.Kind {
	case DownstreamOpaque: // sends no spans: a plain server
	case DownstreamQueued:
		// The callee's own span starts once its handler runs: the time before is the call's.
		traced := otelhttp.NewHandler(handler, s.Operation, otelhttp.WithTracerProvider(culpritTracing), otelhttp.WithPropagators(prop))
		handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(s.Injected)
			traced.ServeHTTP(w, r)
		})
	default:
		handler = otelhttp.NewHandler(handler, "POST /"+s.Operation, otelhttp.WithTracerProvider(culpritTracing), otelhttp.WithPropagators(prop))
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	// The caller: its server span is the request's root; it calls the culprit (twice when the
	// first call fails).
	transportOpts := []otelhttp.Option{otelhttp.WithTracerProvider(callerTP), otelhttp.WithPropagators(prop)}
	if s.Kind == DownstreamOpaque {
		transportOpts = append(transportOpts, otelhttp.WithSpanOptions(trace.WithAttributes(attribute.String("peer.service", s.Culprit))))
	}
	client := &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport, transportOpts...), Timeout: 30 * time.Second}
	rctx, root := callerTP.Tracer("hsi-scenario").Start(ctx, "POST "+s.Endpoint, trace.WithSpanKind(trace.SpanKindServer))
	res.TraceID = root.SpanContext().TraceID().String()
	url := "http://" + ln.Addr().String() + "/" + s.Operation
	status, err := post(rctx, client, url)
	if err == nil && status == http.StatusInternalServerError && s.Kind == FailedRetry {
		status, err = post(rctx, client, url)
	}
	root.End()
	if err == nil && status != http.StatusOK {
		err = fmt.Errorf("%s answered %d", s.Culprit, status)
	}
	if err != nil {
		return nil, err
	}
	if c.kernels != nil {
		if err := c.writeKernelTrace(); err != nil {
			return nil, err
		}
	}
	if s.Kind == CPUThrottled || profiled && cfg.Prometheus != "" {
		if err := c.writeCadvisor(ctx); err != nil {
			return nil, err
		}
	}
	if onSharedGPU {
		if err := c.writeSharedGPU(ctx); err != nil {
			return nil, err
		}
	}
	if s.Kind == KVPreempted || s.Kind == Queue && cfg.Prometheus != "" {
		if err := c.writeEngine(ctx); err != nil {
			return nil, err
		}
	}
	for _, tp := range []*sdktrace.TracerProvider{callerTP, culpritTP} {
		if err := tp.ForceFlush(ctx); err != nil {
			return nil, fmt.Errorf("exporting the spans to %s: %w", cfg.OTLP, err)
		}
	}
	if profiler != nil {
		// Stop uploads what was sampled since the last upload.
		if err := profiler.Stop(); err != nil {
			return nil, fmt.Errorf("uploading the last profile: %w", err)
		}
		res.ProfiledSpan = c.serverSpan
	}
	res.Services = []string{s.Caller}
	if s.Kind != DownstreamOpaque {
		res.Services = append(res.Services, s.Culprit)
	}
	return res, nil
}

func post(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, http.NoBody)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// culprit is the service where the time goes; serve does what its scenario says.
type culprit struct {
	spec   Spec
	cfg    Config
	tracer trace.Tracer
	gpu    int
	res    *Result

	// kernels are the GPU-idle kinds' kernel-trace events, generated before the request; the
	// span's work takes their time, and they are written after the request, as PyTorch's
	// profiler saves its trace once the step is over (writing 60,000 kernels is no part of
	// the request's time).
	kernels   *kinetogen.Generated
	truth     kinetogen.Truth
	workStart time.Time
	workSpan  trace.SpanContext

	mu         sync.Mutex
	calls      int
	serverSpan string

	// The engine kinds: the engine span's times, and when the request waited preempted.
	engineStart, engineEnd, preemptFrom, preemptTo time.Time
}

func (c *culprit) serve(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	c.calls++
	first := c.calls == 1
	if sc := trace.SpanContextFromContext(r.Context()); first && sc.IsValid() {
		c.serverSpan = sc.SpanID().String()
	}
	c.mu.Unlock()
	s := c.spec
	var attrs []attribute.KeyValue
	if c.gpu >= 0 {
		attrs = append(attrs, attribute.String("gpu.index", strconv.Itoa(c.gpu)))
	}
	ctx, span := c.tracer.Start(r.Context(), s.Operation, trace.WithAttributes(attrs...))
	defer span.End()
	switch s.Kind {
	case Queue:
		c.queue(ctx)
	case KVPreempted:
		c.preempted(ctx)
	case CPU:
		burnCPU(s.Injected)
	case GPUMemoryBound, GPUThrottled:
		// Preparing the input takes a little CPU (as any handler does: a profiled service always
		// shows some samples), then the service waits on the GPU. Timed from the start, so a
		// loaded machine that stretches the preparation does not stretch the time off the CPU.
		start := time.Now()
		burnCPU(prepCPU)
		time.Sleep(time.Until(start.Add(prepCPU + s.Injected)))
	case DownstreamOpaque:
		time.Sleep(s.Injected) // a service we cannot see into
	case DownstreamQueued:
		time.Sleep(20 * time.Millisecond)
	case HostSync, LaunchBound, Copies, HostWork, DispatchBound, SharedGPU:
		c.gpuWork(span)
	case CPUThrottled:
		c.throttled()
	case FailedRetry:
		start := time.Now()
		burnCPU(prepCPU)
		if first {
			// A PyTorch service's allocation failing after the attempt ran: the exception as
			// OpenTelemetry's Python SDK records it (record_exception), then an error status.
			time.Sleep(time.Until(start.Add(s.Injected)))
			span.AddEvent("exception", trace.WithAttributes(
				attribute.String("exception.type", "torch.OutOfMemoryError"),
				attribute.String("exception.message", "CUDA out of memory. Tried to allocate 3.20 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.07 GiB is free."),
			))
			span.SetStatus(codes.Error, "torch.OutOfMemoryError: CUDA out of memory")
			http.Error(w, "CUDA out of memory", http.StatusInternalServerError)
			return
		}
		time.Sleep(s.Injected / 4) // the retry with a smaller batch
	}
	w.WriteHeader(http.StatusOK)
}

// queue is a vLLM-style engine with one slot, held by another workload for the injected time
// when the request arrives: the request waits for it, then prefills and decodes, and the engine
// records vLLM's attributes on its llm_request span.
func (c *culprit) queue(ctx context.Context) {
	slot := make(chan struct{}, 1)
	slot <- struct{}{} // the other workload's request
	go func() {
		time.Sleep(c.spec.Injected)
		<-slot
	}()
	_, req := c.tracer.Start(ctx, "llm_request")
	defer req.End()
	queued := time.Now()
	slot <- struct{}{}
	waited := time.Since(queued)
	prefill, decode := 15*time.Millisecond, 40*time.Millisecond
	time.Sleep(prefill + decode)
	<-slot
	c.engineStart, c.engineEnd = queued, time.Now()
	req.SetAttributes(
		attribute.Float64("gen_ai.latency.time_in_model_execute", (prefill+decode).Seconds()),
		attribute.Float64("gen_ai.latency.time_in_queue", waited.Seconds()),
		attribute.Float64("gen_ai.latency.time_in_model_prefill", prefill.Seconds()),
		attribute.Float64("gen_ai.latency.time_in_model_decode", decode.Seconds()),
		attribute.Float64("gen_ai.latency.e2e", time.Since(queued).Seconds()),
		attribute.String("gen_ai.response.model", c.spec.Operation),
	)
}

// preempted is a vLLM-style engine that admits the request at once, prefills it, and preempts it
// mid-decode for KV-cache space: the request waits the injected time (recomputed later), then
// decodes the rest. Its llm_request span carries vLLM's attributes with --collect-detailed-traces
// on: decode includes the wait, time_in_model_execute is the model's own time.
func (c *culprit) preempted(ctx context.Context) {
	s := c.spec
	_, req := c.tracer.Start(ctx, "llm_request")
	defer req.End()
	start := time.Now()
	queue, prefill, own := 4*time.Millisecond, 25*time.Millisecond, 60*time.Millisecond
	time.Sleep(queue)
	time.Sleep(prefill + own/2)
	c.preemptFrom = time.Now()
	time.Sleep(s.Injected) // preempted: its KV blocks freed, waiting to be recomputed
	c.preemptTo = time.Now()
	time.Sleep(own / 2)
	decode := time.Since(start) - queue - prefill
	c.engineStart, c.engineEnd = start, time.Now()
	req.SetAttributes(
		attribute.Float64("gen_ai.latency.time_in_queue", queue.Seconds()),
		attribute.Float64("gen_ai.latency.time_in_model_prefill", prefill.Seconds()),
		attribute.Float64("gen_ai.latency.time_in_model_decode", decode.Seconds()),
		attribute.Float64("gen_ai.latency.time_in_model_execute", (prefill+own).Seconds()),
		attribute.Float64("gen_ai.latency.time_in_model_forward", (prefill+own).Seconds()*0.95),
		attribute.Float64("gen_ai.latency.e2e", time.Since(start).Seconds()),
		attribute.Int("gen_ai.usage.completion_tokens", 48),
		attribute.String("gen_ai.response.model", s.Operation),
	)
	c.res.InjectedMs = ms(decode - own)
}

// seriesEnd waits for the next whole second and returns it: the last sample written falls after
// everything the request did (a counter's rise within the current second would otherwise be
// left out of the series).
func seriesEnd() time.Time {
	end := time.Now().Truncate(time.Second).Add(time.Second)
	time.Sleep(time.Until(end))
	return end
}

// sharedNamespace is the other workload's namespace on a shared GPU.
const sharedNamespace = "batch"

// writeSharedGPU writes the culprit's GPU host's dcgm-exporter series into Prometheus, from two
// minutes before the request to now, a scrape a second: the culprit's GPU time-sliced between
// its pod and another workload's (--kubernetes-virtual-gpus: every series once per pod, the
// same device reading), busy computing, as the other workload keeps it.
func (c *culprit) writeSharedGPU(ctx context.Context) error {
	s := c.spec
	pod := func(ns, name, container string) map[string]string {
		return map[string]string{"namespace": ns, "pod": name, "container": container, "simulated": "true"}
	}
	gpus := []gpusim.GPU{
		gpusim.NewGPU(s.SharedHost, s.SharedGPU, gpusim.A100SXM480GB, gpusim.Current, gpusim.SimulatedDriver, pod(s.Namespace, s.Pod, s.Container)),
		gpusim.NewGPU(s.SharedHost, s.SharedGPU, gpusim.A100SXM480GB, gpusim.Current, gpusim.SimulatedDriver, pod(sharedNamespace, s.OtherPod, "trainer")),
	}
	end := seriesEnd()
	since := c.workStart.Add(-2 * time.Minute).Truncate(time.Second)
	if floor := c.cfg.SeriesSince.Add(time.Second).Truncate(time.Second); since.Before(floor) {
		since = floor
	}
	scrapes := map[time.Time][]byte{}
	for t := since; !t.After(end); t = t.Add(time.Second) {
		var b bytes.Buffer
		if err := gpusim.Scrape(&b, gpus, gpusim.ComputeBound, t); err != nil {
			return err
		}
		scrapes[t] = b.Bytes()
	}
	series, err := promwrite.FromText(scrapes)
	if err != nil {
		return err
	}
	if err := (promwrite.Client{URL: c.cfg.Prometheus}).Write(ctx, series); err != nil {
		return fmt.Errorf("writing the shared GPU's DCGM series: %w", err)
	}
	c.cfg.Log("wrote dcgm-exporter's series of %s GPU %d, shared by %s/%s and %s/%s", s.SharedHost, s.SharedGPU, s.Namespace, s.Pod, sharedNamespace, s.OtherPod)
	return nil
}

// writeEngine writes the engine's vLLM series into Prometheus for its model, from two minutes
// before the request to now, the KV cache nearly full: for KVPreempted the preemption counter
// rises while the request waited preempted; for Queue it rises during the request too (the
// engine preempted other requests), which must not become this request's cause.
func (c *culprit) writeEngine(ctx context.Context) error {
	s := c.spec
	from, to := c.preemptFrom, c.preemptTo
	if s.Kind != KVPreempted {
		from, to = c.engineStart, c.engineEnd
	}
	end := seriesEnd()
	since := c.engineStart.Add(-2 * time.Minute).Truncate(time.Second)
	if floor := c.cfg.SeriesSince.Add(time.Second).Truncate(time.Second); since.Before(floor) {
		since = floor
	}
	preempted := 1 + int(s.Seed%4)
	series := promwrite.VLLMEngine(s.Operation, 0.96+float64(s.Seed%4)/100, preempted, from, to, since, end, time.Second)
	if err := (promwrite.Client{URL: c.cfg.Prometheus}).Write(ctx, series); err != nil {
		return fmt.Errorf("writing the engine's vLLM series: %w", err)
	}
	c.cfg.Log("wrote vLLM's series of model %s: %d preemption(s) during the request", s.Operation, preempted)
	return nil
}

// throttled is CPU work in a container at its CPU limit: each CFS period the thread runs for
// the quota's share, then waits out the period throttled, for as many periods as the injected
// throttled time needs. Timed from each period's start, as the kernel's CFS does.
func (c *culprit) throttled() {
	s := c.spec
	n := int(math.Ceil(float64(s.Injected) / ((1 - s.Quota) * float64(promwrite.CFSPeriod))))
	c.workStart = time.Now()
	for i := range n {
		period := c.workStart.Add(time.Duration(i) * promwrite.CFSPeriod)
		burnCPU(time.Duration(s.Quota * float64(promwrite.CFSPeriod)))
		time.Sleep(time.Until(period.Add(promwrite.CFSPeriod)))
	}
}

// writeCadvisor writes the culprit's container's cAdvisor CPU series into Prometheus, as the
// kubelet's cAdvisor would have had them scraped, from two minutes before the request to now:
// for CPUThrottled at its limit, throttled (1 − quota)/quota seconds per CPU-second, its one busy
// thread's; for the other profiled kinds mildly throttled (AroundThrottle) under a 2-CPU limit,
// as a busy pod often is while its request is slow for another reason.
func (c *culprit) writeCadvisor(ctx context.Context) error {
	s := c.spec
	quota, per := s.Quota, (1-s.Quota)/s.Quota
	if s.Kind != CPUThrottled {
		quota, per = 2, s.AroundThrottle
	}
	if c.workStart.IsZero() {
		c.workStart = time.Now()
	}
	end := seriesEnd()
	from := c.workStart.Add(-2 * time.Minute).Truncate(time.Second)
	if since := c.cfg.SeriesSince.Add(time.Second).Truncate(time.Second); from.Before(since) {
		from = since
	}
	series := promwrite.CadvisorCPU(promwrite.Container{Namespace: s.Namespace, Pod: s.Pod, Container: s.Container},
		quota, per, from, end, time.Second)
	if err := (promwrite.Client{URL: c.cfg.Prometheus}).Write(ctx, series); err != nil {
		return fmt.Errorf("writing %s's cAdvisor series: %w", s.Pod, err)
	}
	c.cfg.Log("wrote cAdvisor's CPU series of %s/%s/%s: quota %.2f CPUs, %.2f s throttled per CPU-second", s.Namespace, s.Pod, s.Container, quota, per)
	return nil
}

// gpuWork is the span's GPU work: it lasts as long as its kernel trace says; the host sleeps
// through it, except for host work, which keeps the CPU busy for the wall time the trace's gaps
// hold, and eager dispatch, which keeps it busy throughout (the host dispatches op after op). Wall time, not CPU time: the trace's gaps are wall time, and on a loaded machine a CPU
// budget would stretch the span past its kernel trace (the tail then reads as GPU idle outside
// the trace, which it is, but not the request this scenario means to make).
func (c *culprit) gpuWork(span trace.Span) {
	burnCPU(prepCPU) // preparing the batch, before the GPU work
	c.workStart, c.workSpan = time.Now(), span.SpanContext()
	switch c.spec.Kind {
	case HostWork:
		spinUntil(c.workStart.Add(time.Duration(c.truth.HostWork)))
	case DispatchBound:
		spinUntil(c.workStart.Add(c.spec.Injected))
	}
	time.Sleep(time.Until(c.workStart.Add(c.spec.Injected)))
}

// writeKernelTrace writes the request's kernel trace (named after the request's trace ID, its
// annotation naming the trace and the span) into the trace folder, whole or not at all.
func (c *culprit) writeKernelTrace() error {
	name := fmt.Sprintf("%s_%s.pt.trace.json", c.spec.Culprit, c.workSpan.TraceID())
	tmp, err := os.CreateTemp(c.cfg.TraceDir, ".writing-*")
	if err != nil {
		return err
	}
	err = c.kernels.Write(tmp, c.workStart, c.workSpan.TraceID().String(), c.workSpan.SpanID().String())
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// Renamed when whole: the plugin never reads half a file.
		err = os.Rename(tmp.Name(), filepath.Join(c.cfg.TraceDir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("writing the kernel trace: %w", err)
	}
	c.res.KernelTrace = name
	return nil
}

// burnCPU spends d of this thread's CPU time (not wall time: on a loaded machine the loop waits
// for a core, which must not shorten the CPU the scenario injects).
func burnCPU(d time.Duration) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	until := threadCPU() + int64(d)
	spin(func() bool { return threadCPU() >= until })
}

var sink uint64

// spinUntil keeps this thread busy until the wall clock reaches t.
func spinUntil(t time.Time) {
	spin(func() bool { return !time.Now().Before(t) })
}

// spin keeps the CPU busy until done says so.
//
//go:noinline
func spin(done func() bool) {
	x := uint64(88172645463325252)
	for !done() {
		for range 20000 {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
		}
	}
	sink = x
}

func tracerProvider(ctx context.Context, otlp, service, host string, extra ...attribute.KeyValue) (*sdktrace.TracerProvider, error) {
	if otlp == "" {
		return nil, errors.New("no OTLP endpoint")
	}
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(otlp), otlptracegrpc.WithInsecure())
	if err != nil {
		return nil, err
	}
	attrs := append([]attribute.KeyValue{semconv.ServiceName(service), semconv.HostName(host), attribute.Bool("simulated", true)}, extra...)
	res := resource.NewSchemaless(attrs...)
	return sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(200*time.Millisecond))), nil
}

func shutdown(tp *sdktrace.TracerProvider) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = tp.Shutdown(ctx)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
