package plugin

import (
	"bytes"
	"fmt"
	"github.com/prometheus/prometheus/promql/parser"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// The upstreams' time per call in BenchmarkTraceQueryLargeRequest, measured on the test bed
// (scripts/run.sh's servers: Jaeger v1.76 with in-memory storage, Pyroscope 1.12, Prometheus 2.42,
// the demo and its traffic running, all on the same 2 cores) by a Go client that reads each
// whole reply, the median of 5 rounds' medians. The fakes take this long whatever the load, and
// take no CPU: the benchmark measures the plugin against the upstreams' latency, not the bed's
// contention for its cores.
const (
	// benchJaegerTraceRead is GET /api/v3/traces/{id} of largeRequest itself (its 2,005 spans
	// sent to the bed's Jaeger through OTLP; 954 kB of reply, as otlpTraceReply's): 9–10 ms.
	benchJaegerTraceRead = 10 * time.Millisecond
	// benchPyroscopeSpanProfile is one SelectMergeSpanProfile of 16 spans of a demo service over
	// a request's window, 16 at once as the plugin's fan-out asks them: 37–41 ms each, 29 calls
	// in 77–90 ms (Pyroscope takes the 2 cores; alone a call takes 3.8 ms).
	benchPyroscopeSpanProfile = 40 * time.Millisecond
	// benchPrometheusQuery is one query of the join's kinds (DCGM range queries of a host, the
	// series API, vLLM gauges and counter ratios, a latency quantile), 16 at once: 5–9 ms
	// each (alone 0.5 ms).
	benchPrometheusQuery = 8 * time.Millisecond
)

// The request BenchmarkTraceQueryLargeRequest asks about: agentic and retrieval-heavy requests
// reach thousands of spans.
const (
	largeRequestSpans    = 2000
	largeRequestServices = 30
)

// largeRequest is an agentic, retrieval-heavy request of about 2,000 spans over 30 services, as
// OpenTelemetry's HTTP instrumentation and otel-profiling-go record one: a gateway's root span
// calls the orchestrator, which runs 25 steps, each a completion from a vLLM engine (its
// llm_request span with vLLM's gen_ai.latency.* attributes, on a GPU) and then 6 tool or
// retrieval calls in parallel, each calling 2 backing services (vector search, document store,
// embedder, reranker, ...). Every call is a client span in the caller and a server span in the
// callee; each server span is its service's local root of that call and carries
// pyroscope.profile.id (the engine, like vLLM, sends no span profiles); handlers have their own
// internal spans. Every span's resource names its host (host.name): the engine, embedder and
// reranker on GPU hosts with their GPU (gpu.index), the rest on CPU hosts. The rng is seeded:
// every run is the same request.
func largeRequest(traceID string, start time.Time) models.Trace {
	g := &requestGen{tr: models.Trace{TraceID: traceID}, rng: rand.New(rand.NewPCG(2000, 30))}
	tools := []string{"web-search", "code-exec", "calculator", "sql-tool", "calendar", "email", "crm", "ticketing",
		"weather", "maps", "translator", "summarizer", "pdf-parser", "image-captioner", "scheduler", "notifier", "browser"}
	backing := []string{"vector-search", "doc-store", "embedder", "reranker", "cache", "memory-store", "auth", "policy", "feature-store", "graph-db"}
	root := g.span(-1, "gateway", "POST /v1/agent", "server", start, 0)
	g.span(root, "gateway", "authenticate", "internal", start.Add(200*time.Microsecond), 2*time.Millisecond)
	t := start.Add(3 * time.Millisecond)
	orch, orchStart := g.call(root, "gateway", "orchestrator", "POST /run", t)
	t = orchStart.Add(time.Millisecond)
	g.span(orch, "orchestrator", "plan", "internal", t, 4*time.Millisecond)
	t = t.Add(5 * time.Millisecond)
	for step := range 25 {
		// The model's turn: queue, prefill, decode on the engine's GPU.
		llm, llmStart := g.call(orch, "orchestrator", "llm-engine", "POST /v1/completions", t)
		queue := time.Duration(g.rng.IntN(40)) * time.Millisecond
		prefill := time.Duration(20+g.rng.IntN(60)) * time.Millisecond
		decode := time.Duration(150+g.rng.IntN(600)) * time.Millisecond
		s := &g.tr.Spans[llm]
		s.Operation = "llm_request"
		s.Attributes[correlate.AttrResponseModel] = "agent-70b"
		s.Attributes[correlate.AttrTimeInQueue] = strconv.FormatFloat(queue.Seconds(), 'f', 6, 64)
		s.Attributes[correlate.AttrTimeInPrefill] = strconv.FormatFloat(prefill.Seconds(), 'f', 6, 64)
		s.Attributes[correlate.AttrTimeInDecode] = strconv.FormatFloat(decode.Seconds(), 'f', 6, 64)
		s.Attributes[correlate.AttrE2E] = strconv.FormatFloat((queue + prefill + decode).Seconds(), 'f', 6, 64)
		g.end(llm, llmStart.Add(queue+prefill+decode))
		t = g.endCall(llm)
		// The tools the model asked for, in parallel; each asks its backing services in turn.
		var ends []time.Time
		for c := range 6 {
			tool := tools[(step*6+c)%len(tools)]
			ts, at := g.call(orch, "orchestrator", tool, "POST /invoke", t.Add(time.Duration(c)*200*time.Microsecond))
			dec := g.span(ts, tool, "decode_request", "internal", at.Add(100*time.Microsecond), time.Millisecond)
			at = g.spanEnd(dec).Add(100 * time.Microsecond)
			work := g.span(ts, tool, "handle", "internal", at, 0)
			for range 2 {
				svc := backing[g.rng.IntN(len(backing))]
				bs, bat := g.call(work, tool, svc, "POST /"+strings.ReplaceAll(svc, "-", "_"), at.Add(time.Millisecond))
				q := g.span(bs, svc, "query", "internal", bat.Add(200*time.Microsecond), time.Duration(5+g.rng.IntN(60))*time.Millisecond)
				enc := g.span(bs, svc, "encode_response", "internal", g.spanEnd(q), time.Duration(1+g.rng.IntN(3))*time.Millisecond)
				g.end(bs, g.spanEnd(enc).Add(100*time.Microsecond))
				at = g.endCall(bs)
			}
			g.end(work, at.Add(time.Duration(g.rng.IntN(20))*time.Millisecond))
			enc := g.span(ts, tool, "encode_response", "internal", g.spanEnd(work), 2*time.Millisecond)
			g.end(ts, g.spanEnd(enc).Add(100*time.Microsecond))
			ends = append(ends, g.endCall(ts))
		}
		t = slices.MaxFunc(ends, func(a, b time.Time) int { return a.Compare(b) }).Add(time.Millisecond)
	}
	g.end(orch, t.Add(2*time.Millisecond))
	g.end(root, g.endCall(orch).Add(time.Millisecond))
	return g.tr
}

// requestGen builds largeRequest's spans.
type requestGen struct {
	tr  models.Trace
	rng *rand.Rand
	// client[i] is the client span of server span i.
	client map[int]int
}

// hostOf places the services: the GPU services on GPU hosts (the engine's 4 replicas' GPUs on
// gpu-node-1, embedder and reranker on gpu-node-2 and 3), the others spread over 3 CPU hosts.
func hostOf(service string) (host, gpu string) {
	switch service {
	case "llm-engine":
		return "gpu-node-1", ""
	case "embedder":
		return "gpu-node-2", "0"
	case "reranker":
		return "gpu-node-3", "1"
	}
	h := 0
	for _, c := range service {
		h += int(c)
	}
	return fmt.Sprintf("cpu-node-%d", 1+h%3), ""
}

// span adds a span of service under parent (-1: the root) and returns its index; a zero dur
// leaves its end for end.
func (g *requestGen) span(parent int, service, op, kind string, start time.Time, dur time.Duration) int {
	i := len(g.tr.Spans)
	host, gpu := hostOf(service)
	s := models.Span{
		TraceID: g.tr.TraceID, SpanID: fmt.Sprintf("%016x", g.rng.Uint64()|1<<63), Service: service, Operation: op,
		Start: start, Duration: dur, Kind: kind,
		Attributes: map[string]string{"otel.scope.name": "hsi-bench"},
		Resource: map[string]string{"host.name": host, "service.namespace": "agents", "telemetry.sdk.language": "go",
			"k8s.namespace.name": "agents", "k8s.pod.name": service + "-7d9f8b6c5-x2x4q"},
	}
	if gpu != "" {
		s.Attributes["gpu.index"] = gpu
	}
	if service == "llm-engine" {
		s.Attributes["gpu.index"] = strconv.Itoa(g.rng.IntN(4))
		s.Resource["telemetry.sdk.language"] = "python"
	}
	if parent >= 0 {
		s.ParentSpanID = g.tr.Spans[parent].SpanID
	}
	if kind == "server" && service != "llm-engine" {
		s.Attributes[models.ProfileIDAttribute] = s.SpanID
	}
	if kind != "internal" {
		s.Attributes["http.request.method"] = "POST"
		s.Attributes["http.response.status_code"] = "200"
		s.Attributes["network.protocol.version"] = "1.1"
		s.Attributes["url.path"] = "/" + strings.ReplaceAll(op, " ", "_")
	}
	g.tr.Spans = append(g.tr.Spans, s)
	return i
}

// call adds a client span in caller under parent and the callee's server span under it, 300 µs
// of network later; it returns the server span and when it starts.
func (g *requestGen) call(parent int, caller, callee, op string, at time.Time) (server int, serverStart time.Time) {
	c := g.span(parent, caller, "POST", "client", at, 0)
	g.tr.Spans[c].Attributes["server.address"] = callee
	serverStart = at.Add(300 * time.Microsecond)
	server = g.span(c, callee, op, "server", serverStart, 0)
	if g.client == nil {
		g.client = map[int]int{}
	}
	g.client[server] = c
	return server, serverStart
}

// end sets span i's end.
func (g *requestGen) end(i int, at time.Time) { g.tr.Spans[i].Duration = at.Sub(g.tr.Spans[i].Start) }

func (g *requestGen) spanEnd(i int) time.Time { return g.tr.Spans[i].Start.Add(g.tr.Spans[i].Duration) }

// endCall ends the client span of server span i 300 µs after the server's end, and returns its
// end.
func (g *requestGen) endCall(server int) time.Time {
	c := g.client[server]
	g.end(c, g.spanEnd(server).Add(300*time.Microsecond))
	return g.spanEnd(c)
}

// otlpTraceReply is Jaeger's v3 answer for tr as the real server sends it: {"result": OTLP JSON}
// with one resource per service (Jaeger groups a trace's spans by their resource), span kinds
// and status. jaegerFake's writeV3 gives each span its own resource and no kind, which is enough
// for the glue's tests but not the size and shape of a large reply.
func otlpTraceReply(tb testing.TB, tr models.Trace) []byte {
	td := ptrace.NewTraces()
	bySvc := map[string]ptrace.SpanSlice{}
	kinds := map[string]ptrace.SpanKind{"server": ptrace.SpanKindServer, "client": ptrace.SpanKindClient, "internal": ptrace.SpanKindInternal}
	for _, s := range tr.Spans {
		spans, ok := bySvc[s.Service]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			putAttributes(rs.Resource().Attributes(), s.Resource)
			rs.Resource().Attributes().PutStr("service.name", s.Service)
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp")
			spans = ss.Spans()
			bySvc[s.Service] = spans
		}
		sp := spans.AppendEmpty()
		sp.SetTraceID(pcommon.TraceID(hexBytes(tb, s.TraceID, 16)))
		sp.SetSpanID(spanID(tb, s.SpanID))
		if s.ParentSpanID != "" {
			sp.SetParentSpanID(spanID(tb, s.ParentSpanID))
		}
		sp.SetName(s.Operation)
		sp.SetKind(kinds[s.Kind])
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(s.Start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(s.Start.Add(s.Duration)))
		sp.Status().SetCode(ptrace.StatusCodeUnset)
		putAttributes(sp.Attributes(), s.Attributes)
	}
	body, err := new(ptrace.JSONMarshaler).MarshalTraces(td)
	if err != nil {
		tb.Fatal(err)
	}
	return []byte(`{"result":` + string(body) + `}`)
}

// spanStacks gives each profiled span of tr its samples, as typedPyroscope serves them: a
// service's spans share its code (a pool of 60 stacks 8 to 16 frames deep under its handler),
// each span with 12 of them at 1 to 30 samples (10 ms each at 100 Hz).
func spanStacks(tr models.Trace, rng *rand.Rand) map[string][]string {
	pools := map[string][]string{}
	out := map[string][]string{}
	for _, s := range tr.Spans {
		id, _ := s.ProfileID()
		if id == "" {
			continue
		}
		pool := pools[s.Service]
		if pool == nil {
			pkg := strings.ReplaceAll(s.Service, "-", "")
			for range 60 {
				frames := []string{"runtime.goexit", "net/http.(*conn).serve", "main.(*server).handle"}
				for d := range 5 + rng.IntN(9) {
					frames = append(frames, fmt.Sprintf("%s.fn%d_%d", pkg, d, rng.IntN(6)))
				}
				pool = append(pool, strings.Join(frames, ";"))
			}
			pools[s.Service] = pool
		}
		for range 12 {
			out[id] = append(out[id], fmt.Sprintf("%s %d", pool[rng.IntN(len(pool))], 10_000_000*(1+rng.IntN(30))))
		}
	}
	return out
}

// benchUpstream stands in front of one fake: each call takes the upstream's latency from its
// arrival, the fake's reply is recorded the first time a request (method, URL, body) comes and
// replayed after, so that the fakes' own work stays out of the query's heap and CPU (as the
// real servers' does), and each call's interval at the upstream is kept.
type benchUpstream struct {
	latency time.Duration

	mu      sync.Mutex
	replies map[string]*recordedReply
	calls   []upstreamCall
	misses  int   // requests not replayed since the last take
	bytes   int64 // reply bytes since the last take
}

type recordedReply struct {
	status int
	header http.Header
	body   []byte
}

type upstreamCall struct{ from, to time.Time }

func newBenchUpstream(latency time.Duration) *benchUpstream {
	return &benchUpstream{latency: latency, replies: map[string]*recordedReply{}}
}

func (u *benchUpstream) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived := time.Now()
		body, _ := io.ReadAll(r.Body)
		key := r.Method + " " + r.URL.RequestURI() + "\n" + string(body)
		u.mu.Lock()
		rep := u.replies[key]
		u.mu.Unlock()
		if rep == nil {
			rec := httptest.NewRecorder()
			r.Body = io.NopCloser(bytes.NewReader(body))
			h.ServeHTTP(rec, r)
			rep = &recordedReply{rec.Code, rec.Header().Clone(), rec.Body.Bytes()}
			u.mu.Lock()
			u.replies[key] = rep
			u.misses++
			u.mu.Unlock()
		}
		time.Sleep(time.Until(arrived.Add(u.latency)))
		// The upstream's time ends here: what follows is the transfer of the reply, which the
		// latency figures already hold, and the plugin's reading of it.
		done := time.Now()
		u.mu.Lock()
		u.calls = append(u.calls, upstreamCall{arrived, done})
		u.bytes += int64(len(rep.body))
		u.mu.Unlock()
		maps.Copy(w.Header(), rep.header)
		w.WriteHeader(rep.status)
		_, _ = w.Write(rep.body)
	})
}

// take returns the calls, misses and reply bytes since the last take, and forgets them.
func (u *benchUpstream) take() (calls []upstreamCall, misses int, bytes int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	calls, misses, bytes = u.calls, u.misses, u.bytes
	u.calls, u.misses, u.bytes = nil, 0, 0
	return calls, misses, bytes
}

// busy is the time at least one of the calls was at its upstream: the union of their intervals.
func busy(calls []upstreamCall) time.Duration {
	if len(calls) == 0 {
		return 0
	}
	calls = slices.Clone(calls)
	slices.SortFunc(calls, func(a, b upstreamCall) int { return a.from.Compare(b.from) })
	var total time.Duration
	cur := calls[0]
	for _, c := range calls[1:] {
		if c.from.After(cur.to) {
			total += cur.to.Sub(cur.from)
			cur = c
		} else if c.to.After(cur.to) {
			cur.to = c.to
		}
	}
	return total + cur.to.Sub(cur.from)
}

// packed is how long the calls' upstream times take when they go in arrival order on slots
// connections, each as soon as one is free: what the calls need under that bound, without the
// caller's own delays between them.
func packed(calls []upstreamCall, slots int) time.Duration {
	calls = slices.Clone(calls)
	slices.SortFunc(calls, func(a, b upstreamCall) int { return a.from.Compare(b.from) })
	free := make([]time.Duration, slots) // when each slot is next free
	var end time.Duration
	for _, c := range calls {
		i := slices.Index(free, slices.Min(free))
		free[i] += c.to.Sub(c.from)
		end = max(end, free[i])
	}
	return end
}

// heapDuring runs f while sampling the heap every millisecond (runtime/metrics: no stop of the
// world), after a GC; it returns the peak of the heap's objects (live and not yet swept, as
// MemStats.HeapAlloc) above what they were before f, and the bytes f allocated.
func heapDuring(f func()) (peak, allocated uint64) {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/allocs:bytes"}}
	runtime.GC()
	metrics.Read(samples)
	base, allocs0 := samples[0].Value.Uint64(), samples[1].Value.Uint64()
	top := base
	done := make(chan struct{})
	sampled := make(chan uint64)
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		var seen uint64
		for {
			metrics.Read(s)
			seen = max(seen, s[0].Value.Uint64())
			select {
			case <-done:
				sampled <- seen
				return
			case <-tick.C:
			}
		}
	}()
	f()
	close(done)
	top = max(top, <-sampled)
	metrics.Read(samples)
	top = max(top, samples[0].Value.Uint64())
	return top - base, samples[1].Value.Uint64() - allocs0
}

// BenchmarkTraceQueryLargeRequest runs the trace query (the request-level join) through
// QueryData on largeRequest, about 2,000 spans over 30 services, against fakes that answer with
// the test bed's latencies (benchJaegerTraceRead, benchPyroscopeSpanProfile,
// benchPrometheusQuery). The profiled spans (452, each service's local root of each call) are
// more than correlate.MaxSpanQueries, so span profiles are asked per service (29 calls,
// MaxParallelProfileQueries at once) and the allocation column is left out; the GPUs of the
// trace's hosts, the engine's metrics around its 8 longest llm_request spans and runbook 002's
// lever come from Prometheus meanwhile.
//
// Its critical path is measured at the fakes in the same queries (largeQueryFigures.add): the
// Jaeger read, then the slower of the two branches that follow, Pyroscope's 29 calls at most
// MaxParallelProfileQueries at once (two rounds) or Prometheus' calls. What the wall time holds
// beyond it is the plugin's own work: reading the trace, planning, decoding the replies,
// joining, diagnosing, building the frames, and the collector's share of the CPU. Metrics: wall
// time, critical path and their ratio (goal ≤ 1.3), the plugin's own time before its fan-out and
// after its last call; the heap's peak during the query above its level before (goal ≤ 50 MB),
// the bytes the query allocated and the upstreams' replies' size.
func BenchmarkTraceQueryLargeRequest(b *testing.B) {
	// As the plugin's process runs: Go's default collector target (GOGC=100).
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	const traceID = "7a3e1c9b5d2f4a6e8b0c1d2e3f405162"
	start := time.Now().Add(-10 * time.Minute).Truncate(time.Second)
	tr := largeRequest(traceID, start)
	services := map[string]bool{}
	profiled := 0
	for _, s := range tr.Spans {
		services[s.Service] = true
		if id, _ := s.ProfileID(); id != "" {
			profiled++
		}
	}
	if n := len(tr.Spans); n < largeRequestSpans*9/10 || n > largeRequestSpans*11/10 || len(services) != largeRequestServices {
		b.Fatalf("largeRequest has %d spans over %d services, want about %d over %d", n, len(services), largeRequestSpans, largeRequestServices)
	}

	jaegerUp, pyroUp, promUp := newBenchUpstream(benchJaegerTraceRead), newBenchUpstream(benchPyroscopeSpanProfile), newBenchUpstream(benchPrometheusQuery)
	// Jaeger: the fake answers the API probe; the trace is Jaeger's own shape of reply.
	reply := otlpTraceReply(b, tr)
	jae := &jaegerFake{Services: slices.Sorted(maps.Keys(services))}
	jaegerURL := newJaegerFake(b, jae, func(h http.Handler) http.Handler {
		return jaegerUp.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/api/v3/traces/"+traceID {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(reply)
				return
			}
			h.ServeHTTP(w, r)
		}))
	}).URL
	// Pyroscope: each span's samples, merged per query as Pyroscope does.
	pyro := &typedPyroscope{byType: map[string]map[string][]string{cpuTypeID: spanStacks(tr, rand.New(rand.NewPCG(1, 2)))}}
	path, handler := querierv1connect.NewQuerierServiceHandler(pyro)
	mux := http.NewServeMux()
	mux.Handle(path, handler)
	pyroURL := serve(b, mux, pyroUp.wrap).URL
	// Prometheus: 8 GPUs on each GPU host (and on one the trace does not touch), the engine's
	// gauges and queue-time counters; the latency histograms' queries get empty answers.
	prom := &promFake{}
	for _, host := range []string{"gpu-node-1", "gpu-node-2", "gpu-node-3", "gpu-node-9"} {
		for i := range 8 {
			prom.GPUs = append(prom.GPUs, steadyGPU(host, strconv.Itoa(i), float64(40+5*i), 0.4+0.05*float64(i), 0.3))
		}
	}
	promURL := serve(b, engineMetrics(http.HandlerFunc(prom.serveHTTP)), promUp.wrap).URL

	ds := newTestDatasource(b, map[string]any{"jaegerUrl": jaegerURL, "pyroscopeUrl": pyroURL, "prometheusUrl": promURL}, nil)
	ctx := backend.WithPluginContext(b.Context(), pluginCtx)
	// A fixed panel range, so that every query asks the same and the fakes replay their replies.
	q := query("A", fmt.Sprintf(`{"queryType":"trace","traceId":%q,"profileTypeId":%q,"allocTypeId":%q}`, traceID, cpuTypeID, allocTypeID))
	q.TimeRange = backend.TimeRange{From: start.Add(-50 * time.Minute), To: start.Add(10 * time.Minute)}
	ask := func() backend.DataResponse {
		forgetKeptReplies(b, ds) // each query a first refresh's: Pyroscope asked, as the figures count
		res, err := ds.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pluginCtx, Queries: []backend.DataQuery{q}})
		if err != nil || res.Responses["A"].Error != nil {
			b.Fatal(err, res.Responses["A"].Error)
		}
		return res.Responses["A"]
	}
	// The first query detects Jaeger's API and fills the fakes' replies, and the first few fill
	// the plugin's free lists of reply buffers with buffers of these replies' sizes, as a
	// long-lived instance has done before.
	for range 4 {
		checkLargeAnswer(b, ask(), tr)
	}
	for _, u := range []*benchUpstream{jaegerUp, pyroUp, promUp} {
		u.take()
	}

	var m largeQueryFigures
	for b.Loop() {
		var t0, t1 time.Time
		var r backend.DataResponse
		peak, allocated := heapDuring(func() {
			t0 = time.Now()
			r = ask()
			t1 = time.Now()
		})
		checkLargeAnswer(b, r, tr)
		m.add(t0, t1, peak, allocated, jaegerUp, pyroUp, promUp)
	}
	if m.misses > 0 {
		b.Fatalf("%d upstream requests in the measured queries were not asked in the first: the queries differ", m.misses)
	}
	m.report(b, len(tr.Spans), profiled)
}

// largeQueryFigures add up BenchmarkTraceQueryLargeRequest's queries.
type largeQueryFigures struct {
	n                                      int
	wall, critical                         time.Duration
	jaeger, pyroPacked, pyroBusy, promBusy time.Duration
	beforeFanOut, afterCalls               time.Duration
	jaegerCalls, pyroCalls, promCalls      int
	misses                                 int
	peak                                   uint64 // the largest of the queries'
	allocated, replyBytes                  uint64
}

// add takes one query, from t0 to t1, and its calls at the upstreams. The critical path of its
// calls is the Jaeger read, then the slower branch: Pyroscope's calls as they would go with
// nothing but the fan-out bound between them (packed into MaxParallelProfileQueries slots, as
// many as upstream.MaxConcurrentRequests connections, each as soon as one is free), or the time
// Prometheus was busy with at least one of its calls (they depend on each other: the series
// index before the figures, older metric names after newer ones; the union is what they took as
// the plugin sequenced them, at most what they need).
func (m *largeQueryFigures) add(t0, t1 time.Time, peak, allocated uint64, jaegerUp, pyroUp, promUp *benchUpstream) {
	jc, jm, jb := jaegerUp.take()
	pc, pm, pb := pyroUp.take()
	mc, mm, mb := promUp.take()
	j, pyroPacked, pyroBusy, promBusy := busy(jc), packed(pc, min(correlate.MaxParallelProfileQueries, upstream.MaxConcurrentRequests)), busy(pc), busy(mc)
	m.n++
	m.wall += t1.Sub(t0)
	m.critical += j + max(pyroPacked, promBusy)
	m.jaeger, m.pyroPacked, m.pyroBusy, m.promBusy = m.jaeger+j, m.pyroPacked+pyroPacked, m.pyroBusy+pyroBusy, m.promBusy+promBusy
	// The plugin's own time before the fan-out (reading the trace, planning) and after the last
	// call (joining, diagnosing, the frames).
	fanOut := slices.Concat(pc, mc)
	firstCall := slices.MinFunc(fanOut, func(a, b upstreamCall) int { return a.from.Compare(b.from) }).from
	lastCall := slices.MaxFunc(fanOut, func(a, b upstreamCall) int { return a.to.Compare(b.to) }).to
	jaegerEnd := slices.MaxFunc(jc, func(a, b upstreamCall) int { return a.to.Compare(b.to) }).to
	m.beforeFanOut += firstCall.Sub(jaegerEnd)
	m.afterCalls += t1.Sub(lastCall)
	m.jaegerCalls, m.pyroCalls, m.promCalls = m.jaegerCalls+len(jc), m.pyroCalls+len(pc), m.promCalls+len(mc)
	m.misses += jm + pm + mm
	m.peak = max(m.peak, peak)
	m.allocated += allocated
	m.replyBytes += uint64(jb + pb + mb)
}

func (m *largeQueryFigures) report(b *testing.B, spans, profiled int) {
	n := float64(m.n)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / n }
	mb := func(v uint64) float64 { return float64(v) / (1 << 20) }
	b.ReportMetric(float64(spans), "spans")
	b.ReportMetric(float64(profiled), "profiled-spans")
	b.ReportMetric(ms(m.wall), "wall-ms/op")
	b.ReportMetric(ms(m.critical), "critical-path-ms/op")
	b.ReportMetric(float64(m.wall)/float64(m.critical), "x-critical-path")
	b.ReportMetric(ms(m.jaeger), "jaeger-ms/op")
	b.ReportMetric(ms(m.pyroPacked), "pyroscope-packed-ms/op")
	b.ReportMetric(ms(m.pyroBusy), "pyroscope-busy-ms/op")
	b.ReportMetric(ms(m.promBusy), "prometheus-busy-ms/op")
	b.ReportMetric(ms(m.beforeFanOut), "before-fan-out-ms/op")
	b.ReportMetric(ms(m.afterCalls), "after-calls-ms/op")
	b.ReportMetric(float64(m.jaegerCalls)/n, "jaeger-calls/op")
	b.ReportMetric(float64(m.pyroCalls)/n, "pyroscope-calls/op")
	b.ReportMetric(float64(m.promCalls)/n, "prometheus-calls/op")
	b.ReportMetric(mb(m.peak), "peak-heap-MB")
	b.ReportMetric(mb(m.allocated)/n, "alloc-MB/op")
	b.ReportMetric(mb(m.replyBytes)/n, "replies-MB/op")
}

// checkLargeAnswer checks that the query did what the benchmark means to measure: a row per span,
// GPU figures for the GPU services' spans, the per-service span profiles in the flame graph, a
// verdict.
func checkLargeAnswer(b *testing.B, r backend.DataResponse, tr models.Trace) {
	b.Helper()
	if len(r.Frames) != 4 || r.Frames[3].Name != "response" {
		b.Fatalf("frames %v", r.Frames)
	}
	spans, verdict := r.Frames[0], r.Frames[2]
	if spans.Rows() != len(tr.Spans) || verdict.Rows() == 0 {
		b.Fatalf("%d span rows for %d spans, %d verdict rows; notices:\n%s", spans.Rows(), len(tr.Spans), verdict.Rows(), frameNotices(spans))
	}
	n := frameNotices(spans)
	for _, want := range []string{"[info] GPU figures for ", "samples are known per service only"} {
		if !strings.Contains(n, want) {
			b.Fatalf("notices lack %q:\n%s", want, n)
		}
	}
	for _, bad := range []string{"[warning]", "[error]"} {
		if strings.Contains(n, bad) {
			b.Fatalf("notices warn:\n%s", n)
		}
	}
	if fg := frameNotices(r.Frames[3]); !strings.Contains(fg, "29 of 29 service(s)") {
		b.Fatalf("flame graph notices:\n%s", fg)
	}
	if f, _ := spans.FieldByName("gpus"); f == nil || countNonEmpty(f) == 0 {
		b.Fatal("no span has GPUs")
	}
}

func countNonEmpty(f *data.Field) int {
	n := 0
	for i := range f.Len() {
		if v, ok := f.ConcreteAt(i); ok && v != "" {
			n++
		}
	}
	return n
}

// engineMetrics answers the serving engine's instant queries as a Prometheus scraping a vLLM V1
// engine every 15 s would: its gauges (one range selector of their names) with their current
// names only, and each counter or ratio labelled by label_replace (one union of them) where it
// reads vLLM's current names; TensorRT-LLM's, SGLang's and vLLM's older names have no series.
// Other requests go to next.
func engineMetrics(next http.Handler) http.Handler {
	current := func(name string) bool {
		return strings.HasPrefix(name, "vllm:") && name != "vllm:gpu_cache_usage_perc" && !strings.HasPrefix(name, "vllm:inter_token_latency")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		q := r.Form.Get("query")
		if r.URL.Path != "/api/v1/query" || !strings.Contains(q, "vllm:") {
			next.ServeHTTP(w, r)
			return
		}
		e, err := parser.NewParser(parser.Options{}).ParseExpr(q)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		at := promTime(r.Form.Get("time"))
		var series []string
		if ms, ok := e.(*parser.MatrixSelector); ok { // the gauges' raw samples
			for _, m := range ms.VectorSelector.(*parser.VectorSelector).LabelMatchers {
				if m.Name != "__name__" {
					continue
				}
				for name := range strings.SplitSeq(m.Value, "|") {
					if !current(name) {
						continue
					}
					var points []string
					for i := range 5 {
						v := float64(i % 3) // requests waiting or running
						if strings.Contains(name, "cache") {
							v = 0.3 + 0.1*v // KV cache usage, a fraction
						}
						points = append(points, fmt.Sprintf(`[%d,"%g"]`, at.Add(-time.Duration(4-i)*15*time.Second).Unix(), v))
					}
					series = append(series, `{"metric":{"__name__":"`+name+`","model_name":"agent-70b","engine":"0"},"values":[`+strings.Join(points, ",")+`]}`)
				}
			}
			writeProm(w, "matrix", series)
			return
		}
		var walk func(parser.Expr)
		walk = func(e parser.Expr) {
			switch e := e.(type) {
			case *parser.ParenExpr:
				walk(e.Expr)
			case *parser.BinaryExpr:
				walk(e.LHS)
				walk(e.RHS)
			case *parser.Call: // label_replace(rate, figure label, candidate, "", "")
				for _, vs := range selectorsIn(e.Args[0]) {
					if !current(vs.Name) {
						return
					}
				}
				label, value := e.Args[1].(*parser.StringLiteral).Val, e.Args[2].(*parser.StringLiteral).Val
				series = append(series, fmt.Sprintf(`{"metric":{"model_name":"agent-70b","engine":"0",%q:%q},"value":[%d,"0.021"]}`, label, value, at.Unix()))
			}
		}
		walk(e)
		writeProm(w, "vector", series)
	})
}

func writeProm(w http.ResponseWriter, resultType string, series []string) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"status":"success","data":{"resultType":"`+resultType+`","result":[`+strings.Join(series, ",")+`]}}`)
}

// selectorsIn lists the vector selectors of an expression.
func selectorsIn(e parser.Expr) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}
