package tempo

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// fakeTempo answers as Tempo's query frontend does (pkg/api/http.go, modules/frontend): the v2
// trace path with a protobuf TraceByIDResponse (an empty trace for one it does not hold), the v1
// path with the bare Trace, tag values in JSON.
type fakeTempo struct {
	traces   map[string]ptrace.Traces
	partial  map[string]string // trace ID → the partial status's message
	noV2     bool              // a server from before the v2 path
	tagVals  map[string][]string
	lastQ    string
	accepted []string
	search   string       // the /api/search reply
	asked    []url.Values // the searches' parameters
}

func (f *fakeTempo) serve(t *testing.T) *Client {
	t.Helper()
	mux := http.NewServeMux()
	proto := func(td ptrace.Traces) []byte {
		b, err := new(ptrace.ProtoMarshaler).MarshalTraces(td)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	mux.HandleFunc("GET /api/v2/traces/{id}", func(w http.ResponseWriter, r *http.Request) {
		f.accepted = append(f.accepted, r.Header.Get("Accept"))
		if f.noV2 {
			http.NotFound(w, r)
			return
		}
		td, ok := f.traces[r.PathValue("id")]
		if !ok {
			td = ptrace.NewTraces()
		}
		// TraceByIDResponse: trace = 1, metrics = 2 (skipped by readers), status = 3, message = 4.
		var b []byte
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendBytes(b, []byte{0x08, 0x2a}) // inspectedBytes: 42
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, proto(td))
		if msg, ok := f.partial[r.PathValue("id")]; ok {
			b = protowire.AppendTag(b, 3, protowire.VarintType)
			b = protowire.AppendVarint(b, 1)
			b = protowire.AppendTag(b, 4, protowire.BytesType)
			b = protowire.AppendString(b, msg)
		}
		w.Header().Set("Content-Type", "application/protobuf")
		_, _ = w.Write(b)
	})
	mux.HandleFunc("GET /api/traces/{id}", func(w http.ResponseWriter, r *http.Request) {
		td, ok := f.traces[r.PathValue("id")]
		if !ok {
			http.Error(w, "trace not found", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/protobuf")
		_, _ = w.Write(proto(td))
	})
	mux.HandleFunc("GET /api/v2/search/tag/{tag}/values", func(w http.ResponseWriter, r *http.Request) {
		f.lastQ = r.URL.Query().Get("q")
		var reply struct {
			TagValues []map[string]string `json:"tagValues"`
		}
		for _, v := range f.tagVals[r.PathValue("tag")] {
			reply.TagValues = append(reply.TagValues, map[string]string{"type": "string", "value": v})
		}
		_ = json.NewEncoder(w).Encode(reply)
	})
	mux.HandleFunc("GET /api/search", func(w http.ResponseWriter, r *http.Request) {
		f.asked = append(f.asked, r.URL.Query())
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(f.search))
	})
	mux.HandleFunc("GET /api/status/buildinfo", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"version":"2.9.0","revision":"abc","branch":"HEAD","goVersion":"go1.25.1"}`))
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return New(models.Upstream{Name: models.Tempo, URL: s.URL}, s.Client())
}

// oneTrace is a trace of two services' spans, as the OpenTelemetry SDK exports them.
func oneTrace(traceID string) ptrace.Traces {
	td := ptrace.NewTraces()
	var tid pcommon.TraceID
	copy(tid[:], mustHex(traceID))
	start := time.Unix(1_796_450_000, 0)
	for i, svc := range []string{"gateway", "ranker"} {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", svc)
		s := rs.ScopeSpans().AppendEmpty().Spans().AppendEmpty()
		s.SetTraceID(tid)
		s.SetSpanID(pcommon.SpanID{byte(i + 1), 2, 3, 4, 5, 6, 7, 8})
		if i > 0 {
			s.SetParentSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 8})
		}
		s.SetName("op-" + svc)
		s.SetStartTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i) * time.Millisecond)))
		s.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(300 * time.Millisecond)))
	}
	return td
}

func mustHex(s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= '0' && c <= '9':
				v |= byte(c - '0')
			default:
				v |= byte(c-'a') + 10
			}
		}
		b[i] = v
	}
	return b
}

const (
	traceA = "4bf92f3577b34da6a3ce929d0e0e4736"
	traceB = "00f067aa0ba902b700f067aa0ba902b7"
)

func TestTraceReadsTheV2PathInProtobuf(t *testing.T) {
	f := &fakeTempo{traces: map[string]ptrace.Traces{traceA: oneTrace(traceA), traceB: oneTrace(traceB)}, partial: map[string]string{traceB: "Trace exceeds maximum size of 5000000 bytes, a partial trace is returned"}}
	c := f.serve(t)
	tr, err := c.Trace(context.Background(), strings.ToUpper(traceA))
	if err != nil {
		t.Fatal(err)
	}
	if tr.TraceID != traceA || tr.API != APIv2 || len(tr.Spans) != 2 || tr.Partial != "" ||
		tr.Spans[0].Service != "gateway" || tr.Spans[1].ParentSpanID != tr.Spans[0].SpanID || tr.Spans[1].Duration != 299*time.Millisecond {
		t.Errorf("trace %+v", tr)
	}
	if f.accepted[0] != "application/protobuf" {
		t.Errorf("asked for %q, want protobuf (Tempo's JSON writes IDs in base64)", f.accepted[0])
	}
	// A partial trace: what it holds, and why.
	tr, err = c.Trace(context.Background(), traceB)
	if err != nil || len(tr.Spans) != 2 || !strings.Contains(tr.Partial, "exceeds maximum size") {
		t.Errorf("partial trace %+v, %v", tr, err)
	}
	// The v2 path answers a trace it does not hold with an empty trace.
	_, err = c.Trace(context.Background(), "11111111111111111111111111111111")
	if !errors.Is(err, models.ErrTraceNotFound) || !strings.Contains(err.Error(), "Tempo ("+c.url+"): trace 11111111111111111111111111111111 not found") {
		t.Errorf("unknown trace: %v", err)
	}
	// A bad ID never reaches the URL.
	if _, err := c.Trace(context.Background(), "../../api/echo"); err == nil || strings.Contains(err.Error(), "Tempo (") {
		t.Errorf("bad ID: %v", err)
	}
}

func TestTraceFallsBackToTheV1PathOnAnOlderTempo(t *testing.T) {
	f := &fakeTempo{traces: map[string]ptrace.Traces{traceA: oneTrace(traceA)}, noV2: true}
	c := f.serve(t)
	tr, err := c.Trace(context.Background(), traceA)
	if err != nil || tr.API != APIv1 || len(tr.Spans) != 2 {
		t.Fatalf("trace %+v, %v", tr, err)
	}
	if _, err := c.Trace(context.Background(), traceB); !errors.Is(err, models.ErrTraceNotFound) {
		t.Errorf("unknown trace on v1: %v", err)
	}
}

func TestTraceSaysWhatIsWrongWithAReply(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"not protobuf": func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("{\"trace\":{}}")) },
		"html": func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<html>"))
		},
		"5xx": func(w http.ResponseWriter, _ *http.Request) {
			http.Error(w, "ingester unavailable", http.StatusServiceUnavailable)
		},
	} {
		s := httptest.NewServer(h)
		c := New(models.Upstream{URL: s.URL}, s.Client())
		_, err := c.Trace(context.Background(), traceA)
		s.Close()
		want := map[string]string{"not protobuf": "is not the protobuf TraceByIDResponse Tempo sends", "html": "is an HTML page, not Tempo's API",
			"5xx": "ingester unavailable"}[name]
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "Tempo (") {
			t.Errorf("%s: %v, want %q naming Tempo", name, err, want)
		}
		if name == "5xx" {
			if st, ok := errors.AsType[*upstream.HTTPStatusError](err); !ok || st.Status != http.StatusServiceUnavailable {
				t.Errorf("5xx: %v is not the HTTP status", err)
			}
		}
	}
}

func TestServicesAndOperationsAreTagValues(t *testing.T) {
	f := &fakeTempo{tagVals: map[string][]string{"resource.service.name": {"ranker", "gateway", "ranker"}, "name": {"score", "GET /v1/rank"}}}
	c := f.serve(t)
	svcs, api, err := c.Services(context.Background())
	if err != nil || api != APIv2 || strings.Join(svcs, ",") != "gateway,ranker" {
		t.Errorf("services %v %s %v", svcs, api, err)
	}
	ops, err := c.Operations(context.Background(), `we"ird\svc`)
	if err != nil || strings.Join(ops, ",") != "GET /v1/rank,score" {
		t.Errorf("operations %v %v", ops, err)
	}
	if f.lastQ != `{ resource.service.name = "we\"ird\\svc" }` {
		t.Errorf("operations scoped by %s", f.lastQ)
	}
	if v, err := c.Version(context.Background()); err != nil || v != "2.9.0" {
		t.Errorf("version %q %v", v, err)
	}
}

// A Tempo older than 2.3 has no build endpoint: its echo still tells it from another server,
// and a server that answers neither is named as probably not Tempo.
func TestVersionOfOldTempoAndOfAnotherServer(t *testing.T) {
	for _, tc := range []struct {
		name, echo, want, wantErr string
	}{
		{name: "old Tempo", echo: "echo", want: "unknown (older than 2.3: no /api/status/buildinfo)"},
		{name: "another server", echo: "", wantErr: "is this URL Tempo's query frontend"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			if tc.echo != "" {
				mux.HandleFunc("GET /api/echo", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, tc.echo, http.StatusOK) })
			}
			s := httptest.NewServer(mux)
			defer s.Close()
			v, err := New(models.Upstream{Name: models.Tempo, URL: s.URL}, s.Client()).Version(context.Background())
			switch {
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error %v, want one saying %q", err, tc.wantErr)
			case tc.wantErr == "" && (err != nil || v != tc.want):
				t.Errorf("version %q %v, want %q", v, err, tc.want)
			}
		})
	}
}
