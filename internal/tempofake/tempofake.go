// Package tempofake is a Grafana Tempo for the test bed, where no Tempo can be installed: an OTLP
// gRPC receiver that keeps each tenant's spans in memory, and the part of Tempo's HTTP API the
// plugin reads, written from Tempo's own handlers and response types (pkg/api/http.go,
// pkg/tempopb/tempo.proto, modules/frontend/combiner): traces by ID (v2 with its partial status,
// and v1, in protobuf or JSON), TraceQL search (the subset the plugin sends: see traceql.go), tag
// values, build info and echo. Multi-tenant like a Grafana Cloud Tempo when Options.Tenant is
// set: a request without X-Scope-OrgID gets Tempo's 401 "no org id".
//
// The bed feeds it the demo's spans through Jaeger's OTLP exporter, so Jaeger and Tempo hold the
// same traces. Where HSI_TEMPO_BIN names a real Tempo, the bed runs that instead.
package tempofake

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/encoding/protowire"
)

// Version is what /api/status/buildinfo answers.
const Version = "2.9.0-hsi-fake"

// Tempo's search bounds (query_frontend.search defaults).
const (
	defaultLimit   = 20
	defaultSpss    = 3
	maxSpss        = 100
	maxSearchRange = 168 * time.Hour
	// rootNotReceived is what the search answers for a trace whose root span has not arrived.
	rootNotReceived = "<root span not yet received>"
	headerOrgID     = "X-Scope-OrgID"
)

// Options configure a fake.
type Options struct {
	// HTTPAddr and OTLPAddr are host:port to listen on (":0" style is fine).
	HTTPAddr, OTLPAddr string
	// Tenant, when set, makes the fake multi-tenant: every request must name a tenant, and
	// spans are kept per tenant. Empty: single-tenant, the header is ignored.
	Tenant string
	// MaxBytesPerTrace is the size above which a trace is answered partial (Tempo's
	// max_bytes_per_trace); 0 means Tempo's default, 5 MB.
	MaxBytesPerTrace int
}

// Server is a running fake.
type Server struct {
	URL      string // http://host:port
	OTLPAddr string // host:port of the OTLP gRPC receiver

	opts    Options
	http    *http.Server
	grpc    *grpc.Server
	mu      sync.Mutex
	tenants map[string]*store
}

// Start listens on the options' addresses and serves until Close.
func Start(opts Options) (*Server, error) {
	if opts.MaxBytesPerTrace == 0 {
		opts.MaxBytesPerTrace = 5 << 20
	}
	hl, err := net.Listen("tcp", opts.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("tempo fake: %w", err)
	}
	gl, err := net.Listen("tcp", opts.OTLPAddr)
	if err != nil {
		hl.Close()
		return nil, fmt.Errorf("tempo fake: %w", err)
	}
	s := &Server{URL: "http://" + hl.Addr().String(), OTLPAddr: gl.Addr().String(), opts: opts, tenants: map[string]*store{}}
	s.grpc = grpc.NewServer()
	ptraceotlp.RegisterGRPCServer(s.grpc, &receiver{s: s})
	s.http = &http.Server{Handler: s.routes(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.grpc.Serve(gl) }()
	go func() { _ = s.http.Serve(hl) }()
	return s, nil
}

// Close stops both listeners.
func (s *Server) Close() {
	s.grpc.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.http.Shutdown(ctx)
}

// Add files spans as if they arrived over OTLP for the tenant (tests that build traces by hand).
func (s *Server) Add(tenant string, td ptrace.Traces) { s.store(tenant).add(td) }

func (s *Server) store(tenant string) *store {
	if s.opts.Tenant == "" {
		tenant = ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.tenants[tenant]
	if st == nil {
		st = newStore()
		s.tenants[tenant] = st
	}
	return st
}

// receiver is the OTLP trace service: the tenant comes from the x-scope-orgid metadata, as
// Tempo's distributor reads it.
type receiver struct {
	ptraceotlp.UnimplementedGRPCServer
	s *Server
}

func (r *receiver) Export(ctx context.Context, req ptraceotlp.ExportRequest) (ptraceotlp.ExportResponse, error) {
	tenant := ""
	if md, ok := metadata.FromIncomingContext(ctx); ok {
		if v := md.Get(strings.ToLower(headerOrgID)); len(v) > 0 {
			tenant = v[0]
		}
	}
	if r.s.opts.Tenant != "" && tenant == "" {
		return ptraceotlp.NewExportResponse(), errors.New("no org id")
	}
	r.s.store(tenant).add(req.Traces())
	return ptraceotlp.NewExportResponse(), nil
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/echo", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "echo", http.StatusOK) })
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ready")) })
	mux.HandleFunc("GET /api/status/buildinfo", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]string{"version": Version, "revision": "fake", "branch": "HEAD", "goVersion": "go"})
	})
	mux.HandleFunc("GET /api/v2/traces/{id}", s.tenanted(s.traceV2))
	mux.HandleFunc("GET /api/traces/{id}", s.tenanted(s.traceV1))
	mux.HandleFunc("GET /api/search", s.tenanted(s.search))
	mux.HandleFunc("GET /api/v2/search/tag/{tag}/values", s.tenanted(s.tagValues))
	mux.HandleFunc("GET /api/v2/search/tags", s.tenanted(s.tags))
	mux.HandleFunc("GET /api/metrics/query", s.tenanted(s.metricsInstant))
	return mux
}

// tenanted answers 401 "no org id" to a request without a tenant when the fake is multi-tenant,
// as Tempo's auth middleware does, and hands the tenant's store on.
func (s *Server) tenanted(h func(w http.ResponseWriter, r *http.Request, st *store)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		tenant := r.Header.Get(headerOrgID)
		if s.opts.Tenant != "" && tenant == "" {
			http.Error(w, "no org id", http.StatusUnauthorized)
			return
		}
		h(w, r, s.store(tenant))
	}
}

// traceID reads the path's ID as Tempo does: hex, at most 32 digits, left-padded.
func traceID(w http.ResponseWriter, r *http.Request) (pcommon.TraceID, bool) {
	raw := r.PathValue("id")
	if len(raw) == 0 || len(raw) > 32 {
		http.Error(w, "invalid trace id: "+raw, http.StatusBadRequest)
		return pcommon.TraceID{}, false
	}
	b, err := hex.DecodeString(strings.Repeat("0", 32-len(raw)) + raw)
	if err != nil {
		http.Error(w, "invalid trace id: "+err.Error(), http.StatusBadRequest)
		return pcommon.TraceID{}, false
	}
	var id pcommon.TraceID
	copy(id[:], b)
	return id, true
}

func wantsProtobuf(r *http.Request) bool {
	return r.Header.Get("Accept") == "application/protobuf"
}

// traceV2 answers a TraceByIDResponse: the trace, cut to MaxBytesPerTrace with status PARTIAL
// and Tempo's message when larger. A trace the tenant does not hold is an empty response.
func (s *Server) traceV2(w http.ResponseWriter, r *http.Request, st *store) {
	id, ok := traceID(w, r)
	if !ok {
		return
	}
	td, found := st.get(id)
	var partial bool
	if found {
		td, partial = cut(td, s.opts.MaxBytesPerTrace)
	} else {
		td = ptrace.NewTraces()
	}
	msg := ""
	if partial {
		msg = fmt.Sprintf("Trace exceeds maximum size of %d bytes, a partial trace is returned", s.opts.MaxBytesPerTrace)
	}
	if wantsProtobuf(r) {
		body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		var out []byte
		if found {
			out = protowire.AppendTag(out, 1, protowire.BytesType)
			out = protowire.AppendBytes(out, body)
		}
		if partial {
			out = protowire.AppendTag(out, 3, protowire.VarintType)
			out = protowire.AppendVarint(out, 1)
			out = protowire.AppendTag(out, 4, protowire.BytesType)
			out = protowire.AppendString(out, msg)
		}
		w.Header().Set("Content-Type", "application/protobuf")
		_, _ = w.Write(out)
		return
	}
	reply := map[string]any{}
	if found {
		reply["trace"] = jsonTrace(td)
	}
	if partial {
		reply["status"], reply["message"] = "PARTIAL", msg
	}
	writeJSON(w, reply)
}

// traceV1 answers the Trace itself, or 404 when the tenant holds none of it.
func (s *Server) traceV1(w http.ResponseWriter, r *http.Request, st *store) {
	id, ok := traceID(w, r)
	if !ok {
		return
	}
	td, found := st.get(id)
	if !found {
		w.WriteHeader(http.StatusNotFound)
		return
	}
	td, _ = cut(td, s.opts.MaxBytesPerTrace)
	if wantsProtobuf(r) {
		body, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/protobuf")
		_, _ = w.Write(body)
		return
	}
	writeJSON(w, jsonTrace(td))
}

// cut keeps whole resource-span groups while the trace stays under max bytes: what Tempo's
// combiner returns of a trace over the limit (a prefix of what it read).
func cut(td ptrace.Traces, max int) (ptrace.Traces, bool) {
	m := &ptrace.ProtoMarshaler{}
	if m.TracesSize(td) <= max {
		return td, false
	}
	out := ptrace.NewTraces()
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rss.At(i).CopyTo(out.ResourceSpans().AppendEmpty())
		if m.TracesSize(out) > max {
			last, at := out.ResourceSpans().Len()-1, 0
			out.ResourceSpans().RemoveIf(func(ptrace.ResourceSpans) bool { at++; return at-1 == last })
			break
		}
	}
	return out, true
}

// jsonTrace is a Trace as Tempo's jsonpb writes it: OTLP field names, with trace and span IDs in
// base64 (tempopb's IDs are bytes), not OTLP JSON's hex.
func jsonTrace(td ptrace.Traces) any {
	b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
	if err != nil {
		return map[string]any{}
	}
	var v any
	_ = json.Unmarshal(b, &v)
	var walk func(any)
	walk = func(x any) {
		switch t := x.(type) {
		case map[string]any:
			for k, val := range t {
				if s, ok := val.(string); ok && (k == "traceId" || k == "spanId" || k == "parentSpanId") {
					if raw, err := hex.DecodeString(s); err == nil {
						t[k] = base64.StdEncoding.EncodeToString(raw)
					}
					continue
				}
				walk(val)
			}
		case []any:
			for _, e := range t {
				walk(e)
			}
		}
	}
	walk(v)
	return v
}

// searchRange reads start and end (Unix seconds) as Tempo's search does.
func searchRange(r *http.Request) (time.Time, time.Time, error) {
	q := r.URL.Query()
	rawStart, rawEnd := q.Get("start"), q.Get("end")
	if rawStart == "" && rawEnd == "" {
		return time.Time{}, time.Time{}, nil
	}
	start, err1 := strconv.ParseInt(rawStart, 10, 64)
	end, err2 := strconv.ParseInt(rawEnd, 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("invalid start (%s) or end (%s): both must be Unix seconds", rawStart, rawEnd)
	}
	if end <= start {
		return time.Time{}, time.Time{}, fmt.Errorf("http parameter start must be before end. received start=%d end=%d", start, end)
	}
	if time.Duration(end-start)*time.Second > maxSearchRange {
		return time.Time{}, time.Time{}, fmt.Errorf("range specified by start and end exceeds %s. received start=%d end=%d", maxSearchRange, start, end)
	}
	return time.Unix(start, 0), time.Unix(end, 0), nil
}

func intParam(r *http.Request, name string, def int) (int, error) {
	raw := r.URL.Query().Get(name)
	if raw == "" {
		return def, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid %s: %s", name, raw)
	}
	if n == 0 {
		return def, nil
	}
	return n, nil
}

// search answers /api/search with a TraceQL query: the newest traces with a span the filter
// matches, each with its root, duration, services and matching spans (at most spss).
func (s *Server) search(w http.ResponseWriter, r *http.Request, st *store) {
	start, end, err := searchRange(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	limit, err := intParam(r, "limit", defaultLimit)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	spss, err := intParam(r, "spss", defaultSpss)
	if err == nil && spss > maxSpss {
		err = fmt.Errorf("spans per span set exceeds %d. received %d", maxSpss, spss)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.URL.Query().Get("q")
	if q == "" {
		http.Error(w, "this fake answers TraceQL searches only (q)", http.StatusBadRequest)
		return
	}
	f, err := parseTraceQL(q)
	if err == nil && f.metric != "" {
		err = fmt.Errorf("invalid TraceQL query: %s is a metrics query: ask /api/metrics/query or /api/metrics/query_range", f.metric)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	traces := []any{}
	inspected := 0
	st.eachOrdered(start, end, f.mostRecent, func(t *trace) bool {
		inspected++
		if hit := searchHit(t, f, spss); hit != nil {
			traces = append(traces, hit)
		}
		return len(traces) < limit
	})
	writeJSON(w, map[string]any{"traces": traces, "metrics": map[string]any{
		"inspectedTraces": inspected, "completedJobs": 1, "totalJobs": 1}})
}

// searchHit is the trace's TraceSearchMetadata in jsonpb's JSON, nil when no span matches.
func searchHit(t *trace, f *filter, spss int) map[string]any {
	var matched []map[string]any
	n := 0
	stats := map[string]map[string]any{}
	var root ptrace.Span
	var rootService string
	t.spans(func(res pcommon.Resource, sp ptrace.Span) {
		svc := ""
		if v, ok := res.Attributes().Get("service.name"); ok {
			svc = v.AsString()
		}
		stat := stats[svc]
		if stat == nil {
			stat = map[string]any{}
			stats[svc] = stat
		}
		stat["spanCount"] = intOf(stat["spanCount"]) + 1
		if sp.Status().Code() == ptrace.StatusCodeError {
			stat["errorCount"] = intOf(stat["errorCount"]) + 1
		}
		if sp.ParentSpanID().IsEmpty() {
			root, rootService = sp, svc
		}
		if !f.matches(res, sp) {
			return
		}
		n++
		if len(matched) < spss {
			matched = append(matched, searchSpan(res, sp, f))
		}
	})
	if n == 0 {
		return nil
	}
	sort.Slice(matched, func(i, j int) bool {
		return matched[i]["startTimeUnixNano"].(string) < matched[j]["startTimeUnixNano"].(string)
	})
	set := map[string]any{"spans": matched, "matched": n}
	hit := map[string]any{
		"traceID":           strings.TrimLeft(t.id.String(), "0"),
		"rootServiceName":   rootNotReceived,
		"startTimeUnixNano": strconv.FormatInt(t.start.UnixNano(), 10),
		"durationMs":        uint32(t.end.Sub(t.start) / time.Millisecond),
		"spanSet":           set,
		"spanSets":          []any{set},
		"serviceStats":      stats,
	}
	if root != (ptrace.Span{}) {
		hit["rootServiceName"], hit["rootTraceName"] = rootService, root.Name()
	}
	return hit
}

func intOf(v any) int {
	n, _ := v.(int)
	return n
}

// searchSpan is a matching span as the search writes it: the attributes the query names or
// selects (intrinsics are fields of their own).
func searchSpan(res pcommon.Resource, sp ptrace.Span, f *filter) map[string]any {
	out := map[string]any{
		"spanID":            sp.SpanID().String(),
		"name":              sp.Name(),
		"startTimeUnixNano": strconv.FormatInt(sp.StartTimestamp().AsTime().UnixNano(), 10),
		"durationNanos":     strconv.FormatInt(sp.EndTimestamp().AsTime().Sub(sp.StartTimestamp().AsTime()).Nanoseconds(), 10),
	}
	var attrs []any
	seen := map[string]bool{}
	refs := append([]attrRef{}, f.selAtt...)
	for _, c := range f.conds {
		refs = append(refs, c.lhs)
	}
	for _, a := range refs {
		if a.intrinsic != "" || seen[a.String()] {
			continue
		}
		seen[a.String()] = true
		if v, ok := lookup(a, res, sp); ok {
			attrs = append(attrs, map[string]any{"key": a.key, "value": map[string]any{"stringValue": v}})
		}
	}
	if len(attrs) > 0 {
		out["attributes"] = attrs
	}
	return out
}

// metricsInstant answers /api/metrics/query: quantile_over_time(duration, …) or count_over_time()
// of the spans the filter matches that start in [start, end], one series per by(...) group (and
// quantile, labelled p), as Tempo's QueryInstantResponse. Quantiles are estimated from
// power-of-two buckets of the durations in nanoseconds, interpolated exponentially inside the
// bucket, as Tempo estimates them.
func (s *Server) metricsInstant(w http.ResponseWriter, r *http.Request, st *store) {
	start, end, err := searchRange(r)
	if err == nil && start.IsZero() {
		err = errors.New("this fake needs start and end")
	}
	var f *filter
	if err == nil {
		f, err = parseTraceQL(r.URL.Query().Get("q"))
	}
	if err == nil && f.metric == "" {
		err = errors.New("invalid TraceQL query: a metrics query needs a metrics function")
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	type group struct {
		labels []any
		ns     []int64
	}
	groups := map[string]*group{}
	var order []string
	st.each(start, end, func(t *trace) bool {
		t.spans(func(res pcommon.Resource, sp ptrace.Span) {
			at := sp.StartTimestamp().AsTime()
			if at.Before(start) || at.After(end) || !f.matches(res, sp) {
				return
			}
			var labels []any
			var key strings.Builder
			for _, a := range f.by {
				v, ok := value(a, res, sp)
				if !ok {
					continue
				}
				labels = append(labels, map[string]any{"key": a.String(), "value": map[string]any{"stringValue": v}})
				key.WriteString(a.String() + "=" + v + "\x00")
			}
			g := groups[key.String()]
			if g == nil {
				g = &group{labels: labels}
				groups[key.String()] = g
				order = append(order, key.String())
			}
			g.ns = append(g.ns, sp.EndTimestamp().AsTime().Sub(at).Nanoseconds())
		})
		return true
	})
	series := []any{}
	for _, k := range order {
		g := groups[k]
		if f.metric == "count_over_time" {
			series = append(series, map[string]any{"labels": g.labels, "value": float64(len(g.ns))})
			continue
		}
		for _, q := range f.quantiles {
			labels := append(append([]any{}, g.labels...), map[string]any{"key": "p", "value": map[string]any{"doubleValue": q}})
			series = append(series, map[string]any{"labels": labels, "value": log2Quantile(q, g.ns)})
		}
	}
	writeJSON(w, map[string]any{"series": series, "metrics": map[string]any{"inspectedSpans": "0"}})
}

// log2Quantile estimates the q quantile, in seconds, of durations in nanoseconds from their
// power-of-two buckets: the bucket that holds the ceil(q·n)-th duration, interpolated
// exponentially between the previous bucket's bound and its own.
func log2Quantile(q float64, ns []int64) float64 {
	counts := map[float64]int{}
	for _, d := range ns {
		b := 1.0
		for b < float64(d) {
			b *= 2
		}
		counts[b]++
	}
	bounds := make([]float64, 0, len(counts))
	for b := range counts {
		bounds = append(bounds, b)
	}
	sort.Float64s(bounds)
	want := max(int(math.Ceil(q*float64(len(ns)))), 1)
	total := 0
	for i, b := range bounds {
		if total+counts[b] >= want {
			lo := math.Log2(b) - 1
			if i > 0 {
				lo = math.Log2(bounds[i-1])
			}
			frac := float64(want-total) / float64(counts[b])
			return math.Pow(2, lo+(math.Log2(b)-lo)*frac) / 1e9
		}
		total += counts[b]
	}
	return 0
}

// tagValues answers /api/v2/search/tag/{tag}/values: the values of an attribute or of the name
// intrinsic among the spans q matches (every span without q), typed as Tempo types them.
func (s *Server) tagValues(w http.ResponseWriter, r *http.Request, st *store) {
	tag := r.PathValue("tag")
	ref, err := (&parser{s: tag}).attr()
	if err != nil || ref.intrinsic == "duration" || ref.intrinsic == "status" {
		http.Error(w, fmt.Sprintf("this fake lists the values of name, span.x and resource.x, not %q", tag), http.StatusBadRequest)
		return
	}
	f := &filter{}
	if q := r.URL.Query().Get("q"); q != "" && q != "{}" {
		if f, err = parseTraceQL(q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
	}
	start, end, err := searchRange(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	values := map[string]bool{}
	st.each(start, end, func(t *trace) bool {
		t.spans(func(res pcommon.Resource, sp ptrace.Span) {
			if !f.matches(res, sp) {
				return
			}
			if ref.intrinsic == "name" {
				values[sp.Name()] = true
			} else if v, ok := lookup(ref, res, sp); ok {
				values[v] = true
			}
		})
		return true
	})
	out := []any{}
	for v := range values {
		out = append(out, map[string]string{"type": "string", "value": v})
	}
	writeJSON(w, map[string]any{"tagValues": out, "metrics": map[string]any{"inspectedBytes": "0"}})
}

// tags answers /api/v2/search/tags: the attribute names by scope, and the intrinsics.
func (s *Server) tags(w http.ResponseWriter, _ *http.Request, st *store) {
	res, span := map[string]bool{}, map[string]bool{}
	st.each(time.Time{}, time.Time{}, func(t *trace) bool {
		t.spans(func(r pcommon.Resource, sp ptrace.Span) {
			r.Attributes().Range(func(k string, _ pcommon.Value) bool { res[k] = true; return true })
			sp.Attributes().Range(func(k string, _ pcommon.Value) bool { span[k] = true; return true })
		})
		return true
	})
	sorted := func(m map[string]bool) []string {
		out := make([]string, 0, len(m))
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return out
	}
	writeJSON(w, map[string]any{"scopes": []any{
		map[string]any{"name": "resource", "tags": sorted(res)},
		map[string]any{"name": "span", "tags": sorted(span)},
		map[string]any{"name": "intrinsic", "tags": []string{"duration", "kind", "name", "rootName", "rootServiceName", "status", "statusMessage", "traceDuration"}},
	}})
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}
