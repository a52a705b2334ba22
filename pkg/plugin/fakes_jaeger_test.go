package plugin

import (
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// jaegerFake is a Jaeger query service: it serves the given traces on one API only (v3 as OTLP
// JSON, or v1 JSON, exactly as the real server shapes them), with trace search and the service
// list. It serves the tests that check the plugin with its real Jaeger client (boundaries,
// injection, benchmarks); the other unit tests use memTraces (fakes_memory_test.go). pkg/jaeger's
// tests check the decoding against replies recorded from a real Jaeger.
type jaegerFake struct {
	API      string // jaeger.APIv3 (default) or jaeger.APIv1: the other API's routes are 404
	Services []string
	Traces   []models.Trace

	mu       sync.Mutex
	requests []*url.URL
}

// newJaegerFake starts f on a loopback server whose requests pass through wrap (nil: none).
func newJaegerFake(t testing.TB, f *jaegerFake, wrap func(http.Handler) http.Handler) *httptest.Server {
	t.Helper()
	if f.API == "" {
		f.API = jaeger.APIv3
	}
	mux := http.NewServeMux()
	if f.API == jaeger.APIv3 {
		mux.HandleFunc("GET /api/v3/services", func(w http.ResponseWriter, _ *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]any{"services": f.services()})
		})
		mux.HandleFunc("GET /api/v3/traces/{id}", func(w http.ResponseWriter, r *http.Request) {
			f.writeV3(t, w, f.byID(r.PathValue("id")))
		})
		mux.HandleFunc("GET /api/v3/traces", func(w http.ResponseWriter, r *http.Request) {
			p := r.URL.Query()
			start, err1 := time.Parse(time.RFC3339Nano, p.Get("query.start_time_min"))
			end, err2 := time.Parse(time.RFC3339Nano, p.Get("query.start_time_max"))
			if err1 != nil || err2 != nil {
				v3Error(w, http.StatusBadRequest, "query.start_time_min and query.start_time_max are required")
				return
			}
			minDur, _ := time.ParseDuration(p.Get("query.duration_min"))
			limit, _ := strconv.Atoi(p.Get("query.search_depth"))
			f.writeV3(t, w, f.search(p.Get("query.service_name"), p.Get("query.operation_name"), start, end, minDur, limit))
		})
	} else {
		mux.HandleFunc("GET /api/services", func(w http.ResponseWriter, _ *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]any{"data": f.services(), "total": len(f.services())})
		})
		mux.HandleFunc("GET /api/traces/{id}", func(w http.ResponseWriter, r *http.Request) {
			tr := f.byID(r.PathValue("id"))
			if len(tr) == 0 {
				w.WriteHeader(http.StatusNotFound)
				_ = json.NewEncoder(w).Encode(map[string]any{"data": nil, "errors": []map[string]any{{"code": 404, "msg": "trace not found"}}})
				return
			}
			writeV1(w, tr)
		})
		mux.HandleFunc("GET /api/traces", func(w http.ResponseWriter, r *http.Request) {
			p := r.URL.Query()
			us := func(name string) time.Time {
				v, _ := strconv.ParseInt(p.Get(name), 10, 64)
				return time.UnixMicro(v)
			}
			minDur, _ := time.ParseDuration(p.Get("minDuration"))
			limit, _ := strconv.Atoi(p.Get("limit"))
			writeV1(w, f.search(p.Get("service"), p.Get("operation"), us("start"), us("end"), minDur, limit))
		})
	}
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests = append(f.requests, r.URL)
		f.mu.Unlock()
		mux.ServeHTTP(w, r)
	})
	return serve(t, h, wrap)
}

// Requests are the URLs (path and query) the fake was asked, in order.
func (f *jaegerFake) Requests() []*url.URL {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

func (f *jaegerFake) services() []string {
	if f.Services != nil {
		return f.Services
	}
	seen := map[string]bool{}
	var out []string
	for _, tr := range f.Traces {
		for _, s := range tr.Spans {
			if !seen[s.Service] {
				seen[s.Service] = true
				out = append(out, s.Service)
			}
		}
	}
	return out
}

func (f *jaegerFake) byID(id string) [][]models.Span {
	for _, tr := range f.Traces {
		if tr.TraceID == id {
			return [][]models.Span{tr.Spans}
		}
	}
	return nil
}

// search keeps the traces with a span of service (and operation) starting in [start, end] and
// lasting at least minDur, as Jaeger's span-level search does; at most limit traces.
func (f *jaegerFake) search(service, operation string, start, end time.Time, minDur time.Duration, limit int) [][]models.Span {
	var out [][]models.Span
	for _, tr := range f.Traces {
		if slices.ContainsFunc(tr.Spans, func(s models.Span) bool {
			return s.Service == service && (operation == "" || s.Operation == operation) &&
				!s.Start.Before(start) && !s.Start.After(end) && s.Duration >= minDur
		}) {
			out = append(out, tr.Spans)
		}
	}
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out
}

// writeV3 answers as Jaeger's v3 API: {"result": OTLP JSON}, or 404 "No traces found".
func (f *jaegerFake) writeV3(t testing.TB, w http.ResponseWriter, traces [][]models.Span) {
	if len(traces) == 0 {
		v3Error(w, http.StatusNotFound, "No traces found")
		return
	}
	td := ptrace.NewTraces()
	for _, spans := range traces {
		for _, s := range spans {
			rs := td.ResourceSpans().AppendEmpty()
			putAttributes(rs.Resource().Attributes(), s.Resource)
			rs.Resource().Attributes().PutStr("service.name", s.Service)
			sp := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
			sp.SetTraceID(pcommon.TraceID(hexBytes(t, s.TraceID, 16)))
			sp.SetSpanID(spanID(t, s.SpanID))
			if s.ParentSpanID != "" {
				sp.SetParentSpanID(spanID(t, s.ParentSpanID))
			}
			sp.SetName(s.Operation)
			sp.SetStartTimestamp(pcommon.NewTimestampFromTime(s.Start))
			sp.SetEndTimestamp(pcommon.NewTimestampFromTime(s.Start.Add(s.Duration)))
			putAttributes(sp.Attributes(), s.Attributes)
		}
	}
	body, err := new(ptrace.JSONMarshaler).MarshalTraces(td)
	if err != nil {
		t.Errorf("fake Jaeger: %v", err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte(`{"result":` + string(body) + `}`))
}

func v3Error(w http.ResponseWriter, status int, msg string) {
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"httpCode": status, "message": msg}})
}

// writeV1 answers as Jaeger's v1 API: one process per span, references for parents, µs times.
func writeV1(w http.ResponseWriter, traces [][]models.Span) {
	type kv struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value string `json:"value"`
	}
	tags := func(m map[string]string) []kv {
		out := []kv{}
		for k, v := range m {
			if k != "service.name" { // v1 moves it to serviceName
				out = append(out, kv{k, "string", v})
			}
		}
		return out
	}
	data := []map[string]any{}
	for _, spans := range traces {
		var v1spans []map[string]any
		processes := map[string]any{}
		for i, s := range spans {
			pid := "p" + strconv.Itoa(i+1)
			processes[pid] = map[string]any{"serviceName": s.Service, "tags": tags(s.Resource)}
			refs := []map[string]string{}
			if s.ParentSpanID != "" {
				refs = append(refs, map[string]string{"refType": "CHILD_OF", "traceID": s.TraceID, "spanID": s.ParentSpanID})
			}
			v1spans = append(v1spans, map[string]any{
				"traceID": s.TraceID, "spanID": s.SpanID, "operationName": s.Operation, "references": refs,
				"startTime": s.Start.UnixMicro(), "duration": s.Duration.Microseconds(),
				"tags": tags(s.Attributes), "logs": []any{}, "processID": pid, "warnings": nil,
			})
		}
		data = append(data, map[string]any{"traceID": spans[0].TraceID, "spans": v1spans, "processes": processes})
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"data": data, "total": 0, "limit": 0, "offset": 0, "errors": nil})
}

func putAttributes(m pcommon.Map, attrs map[string]string) {
	for k, v := range attrs {
		m.PutStr(k, v)
	}
}

func spanID(t testing.TB, s string) pcommon.SpanID {
	b := hexBytes(t, s, 8)
	return pcommon.SpanID(b[:8])
}

// hexBytes decodes an n-byte hex ID into the start of a 16-byte array (trace IDs use all of it,
// span IDs the first 8).
func hexBytes(t testing.TB, s string, n int) (out [16]byte) {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != n {
		t.Errorf("fake Jaeger: %q is not %d hex bytes", s, n)
		return out
	}
	copy(out[:], b)
	return out
}

// fakeTrace builds a trace of spans "service/operation" in order: the first is the root, each
// later one the child of the root, starting 1 ms apart and lasting dur (the root lasts the whole).
func fakeTrace(traceID string, start time.Time, dur time.Duration, spans ...string) models.Trace {
	tr := models.Trace{TraceID: traceID}
	for i, name := range spans {
		service, op, _ := strings.Cut(name, "/")
		s := models.Span{
			TraceID: traceID, SpanID: traceID[:14] + hex.EncodeToString([]byte{byte(i + 1)}),
			Service: service, Operation: op, Start: start.Add(time.Duration(i) * time.Millisecond),
			Duration: dur, Attributes: map[string]string{}, Resource: map[string]string{"host.name": "gpu-node-1"},
		}
		if i == 0 {
			s.Duration = dur + time.Duration(len(spans))*time.Millisecond
		} else {
			s.ParentSpanID = tr.Spans[0].SpanID
		}
		tr.Spans = append(tr.Spans, s)
	}
	return tr
}
