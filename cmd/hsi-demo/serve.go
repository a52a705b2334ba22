package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	otelpyroscope "github.com/grafana/otel-profiling-go"
	"github.com/grafana/pyroscope-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.26.0"
	"go.opentelemetry.io/otel/trace"
)

// ServiceNames are the names the demo's services report, as in the seeds' platform.
var ServiceNames = map[string]string{
	"backend":    "nemotron-backend",
	"detector":   "ai-detector",
	"enrichment": "ai-enrichment",
	"engine":     "nemotron-llm",
}

// HostName is the host.name resource attribute of every demo span; the GPU join maps it to the
// DCGM Hostname label.
const HostName = "gpu-node-1"

type service struct {
	name       string
	detector   string
	enrichment string
	engine     string
	tracer     trace.Tracer
	client     *http.Client
	duration   *prometheus.HistogramVec
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	role := fs.String("service", "backend", "backend, detector, enrichment or engine (the simulated LLM server)")
	listen := fs.String("listen", "127.0.0.1:8080", "address to serve on")
	detector := fs.String("detector", "", "detector base URL (backend only)")
	enrichment := fs.String("enrichment", "", "enrichment base URL (backend only)")
	engineURL := fs.String("engine", "", "engine base URL (backend only; none: the backend asks no LLM)")
	maxRunning := fs.Int("max-running", DefaultMaxRunning, "requests the engine runs at once (vLLM's max_num_seqs)")
	pod := fs.String("pod", "", "Kubernetes pod name to report (k8s.pod.name, namespace/name), as if the service ran in that pod")
	pyroURL := fs.String("pyroscope", "", "Pyroscope URL to push profiles to")
	otlp := fs.String("otlp", "", "OTLP gRPC endpoint (host:port) of Jaeger")
	_ = fs.Parse(args)

	name, ok := ServiceNames[*role]
	if !ok {
		return fmt.Errorf("unknown service %q", *role)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	simulated := *role == "engine"
	tp, err := newTracerProvider(ctx, name, *otlp, *pod, simulated)
	if err != nil {
		return err
	}
	defer func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(c)
	}()
	// otel-profiling-go labels each local root span's samples with span_id/span_name and sets
	// pyroscope.profile.id on the span: what the trace-to-profile link needs.
	// The simulated engine stands for a Python server (vLLM) that sends traces but no span
	// profiles, so it is neither profiled nor linked.
	if simulated {
		otel.SetTracerProvider(tp)
	} else {
		otel.SetTracerProvider(otelpyroscope.NewTracerProvider(tp))
	}
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))

	if *pyroURL != "" && !simulated {
		profiler, err := pyroscope.Start(pyroscope.Config{
			ApplicationName: name,
			ServerAddress:   *pyroURL,
			Tags:            map[string]string{"environment": "demo", "host_name": HostName},
			UploadRate:      2 * time.Second,
			ProfileTypes: []pyroscope.ProfileType{
				pyroscope.ProfileCPU, pyroscope.ProfileAllocObjects, pyroscope.ProfileAllocSpace,
				pyroscope.ProfileInuseObjects, pyroscope.ProfileInuseSpace,
			},
		})
		if err != nil {
			return fmt.Errorf("starting the profiler: %w", err)
		}
		defer profiler.Stop()
	}

	reg := prometheus.NewRegistry()
	s := &service{
		name:       name,
		detector:   *detector,
		enrichment: *enrichment,
		engine:     *engineURL,
		tracer:     otel.Tracer("hsi-demo"),
		client:     &http.Client{Transport: otelhttp.NewTransport(http.DefaultTransport), Timeout: 30 * time.Second},
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "http_request_duration_seconds",
			Help:    "Duration of HTTP requests, by service and endpoint.",
			Buckets: []float64{0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2.5, 5, 10},
		}, []string{"service", "endpoint", "method", "status"}),
	}
	reg.MustRegister(s.duration)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	switch *role {
	case "backend":
		mux.Handle("/api/detect", s.instrument("/api/detect", s.handleDetect))
	case "detector":
		mux.Handle("/detect", s.instrument("/detect", s.handleDetector))
	case "enrichment":
		mux.Handle("/enrich", s.instrument("/enrich", s.handleEnrichment))
	case "engine":
		if *maxRunning < 1 {
			return fmt.Errorf("--max-running must be at least 1, got %d", *maxRunning)
		}
		mux.HandleFunc("POST /v1/completions", newEngine(reg, *maxRunning).handleCompletion)
	}
	srv := &http.Server{Addr: *listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(c)
	}()
	log.Printf("%s serving on %s", name, *listen)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func newTracerProvider(ctx context.Context, name, otlp, pod string, simulated bool) (*sdktrace.TracerProvider, error) {
	attrs := []attribute.KeyValue{semconv.ServiceName(name), semconv.ServiceNamespace("hsi-demo"), semconv.HostName(HostName)}
	if ns, podName, ok := strings.Cut(pod, "/"); ok {
		attrs = append(attrs, semconv.K8SNamespaceName(ns), semconv.K8SPodName(podName))
	} else if pod != "" {
		return nil, fmt.Errorf("--pod must be namespace/name, got %q", pod)
	}
	if simulated {
		attrs = append(attrs, attribute.Bool("simulated", true))
	}
	res, err := resource.New(ctx, resource.WithAttributes(attrs...))
	if err != nil {
		return nil, err
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.AlwaysSample())}
	if otlp != "" {
		exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(otlp), otlptracegrpc.WithInsecure())
		if err != nil {
			return nil, err
		}
		opts = append(opts, sdktrace.WithBatcher(exp, sdktrace.WithBatchTimeout(500*time.Millisecond)))
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

// instrument wraps a handler in a server span (the service's local root span, which
// otel-profiling-go labels) and records its duration in the histogram.
func (s *service) instrument(endpoint string, h http.HandlerFunc) http.Handler {
	timed := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: 200}
		sc := trace.SpanContextFromContext(r.Context())
		if sc.HasTraceID() {
			rec.Header().Set("X-Trace-Id", sc.TraceID().String())
		}
		h(rec, r)
		s.duration.WithLabelValues(s.name, endpoint, r.Method, strconv.Itoa(rec.status)).Observe(time.Since(start).Seconds())
	})
	return otelhttp.NewHandler(timed, endpoint, otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
		return r.Method + " " + endpoint
	}))
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (s *service) call(ctx context.Context, url string) (map[string]any, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	res, err := s.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
		return nil, &statusError{url: url, code: res.StatusCode, status: res.Status, body: strings.TrimSpace(string(body))}
	}
	out := map[string]any{}
	return out, json.NewDecoder(res.Body).Decode(&out)
}

// statusError is an answer other than 200 from another service.
type statusError struct {
	url, status, body string
	code              int
}

func (e *statusError) Error() string {
	if e.body == "" {
		return e.url + " answered " + e.status
	}
	return e.url + " answered " + e.status + ": " + e.body
}

func (s *service) span(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	return s.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}
