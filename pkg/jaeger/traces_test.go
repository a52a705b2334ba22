package jaeger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/goroutines"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// The replies under testdata/ were recorded from the test bed's real Jaeger (v1.76.0 module,
// i.e. Jaeger v2 with the in-memory store) fed by the demo; testdata/README.md has the commands.
// The fake below serves them on the routes the real server has.

func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// recordedTraceID is the trace recorded in v3_trace.json and v1_trace.json: a demo request made
// slow in its database step (GET /api/detect?slow=db).
func recordedTraceID(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(string(testdata(t, "trace_id.txt")))
}

// recordedJaeger serves the recorded replies. v1Only: a Jaeger with only the v1 API, whose v3
// routes are the plain 404 of an unknown path; v3HTML: they are the UI page (HTTP 200) that
// Jaeger serves for unknown paths (ui_catch_all.html, recorded from /api/v3/no-such-route).
// Each request is logged.
type recordedJaeger struct {
	t      *testing.T
	v1Only bool
	v3HTML bool

	mu       sync.Mutex
	requests []*url.URL
}

func (j *recordedJaeger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	j.mu.Lock()
	j.requests = append(j.requests, r.URL)
	j.mu.Unlock()
	traceID := recordedTraceID(j.t)
	reply := func(status int, file string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(testdata(j.t, file))
	}
	switch p := r.URL.Path; {
	case strings.HasPrefix(p, "/api/v3/") && j.v1Only:
		http.NotFound(w, r)
	case strings.HasPrefix(p, "/api/v3/") && j.v3HTML:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(testdata(j.t, "ui_catch_all.html"))
	case p == "/api/v3/services":
		reply(200, "v3_services.json")
	case p == "/api/v3/traces/"+traceID:
		reply(200, "v3_trace.json")
	case strings.HasPrefix(p, "/api/v3/traces/"):
		reply(404, "v3_not_found.json")
	case p == "/api/v3/traces":
		if r.URL.Query().Get("query.service_name") == "nobody" {
			reply(404, "v3_search_empty.json")
			return
		}
		reply(200, "v3_search.json")
	case p == "/api/services":
		reply(200, "v1_services.json")
	case p == "/api/traces/"+traceID:
		reply(200, "v1_trace.json")
	case strings.HasPrefix(p, "/api/traces/"):
		reply(404, "v1_not_found.json")
	case p == "/api/traces":
		if r.URL.Query().Get("service") == "nobody" {
			reply(200, "v1_search_empty.json")
			return
		}
		reply(200, "v1_search.json")
	default:
		http.NotFound(w, r)
	}
}

func (j *recordedJaeger) paths() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for _, u := range j.requests {
		out = append(out, u.Path)
	}
	return out
}

func (j *recordedJaeger) last() *url.URL {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.requests[len(j.requests)-1]
}

func recorded(t *testing.T, v1Only bool) (*Client, *recordedJaeger, string) {
	j := &recordedJaeger{t: t, v1Only: v1Only}
	c, srv := client(t, j)
	return c, j, srv.URL
}

// spanKey is what both APIs must agree on for one span.
func spanKey(s models.Span) string {
	return fmt.Sprintf("%s %s parent=%s %s %q kind=%s start=%d dur=%d events=%d", s.TraceID, s.SpanID, s.ParentSpanID, s.Service, s.Operation,
		s.Kind, s.Start.UnixMicro(), s.Duration.Microseconds(), len(s.Events))
}

func TestTraceV3DecodesTheRecordedReply(t *testing.T) {
	c, j, _ := recorded(t, false)
	id := recordedTraceID(t)
	tr, err := c.Trace(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if tr.API != APIv3 || tr.TraceID != id {
		t.Errorf("API %q trace %q", tr.API, tr.TraceID)
	}
	checkDemoTrace(t, tr)
	if got := strings.Join(j.paths(), " "); got != "/api/v3/services /api/v3/traces/"+id {
		t.Errorf("requests %s: detection should ask v3 services once, then the trace", got)
	}
}

func TestTraceV1DecodesTheRecordedReplyLikeV3(t *testing.T) {
	c3, _, _ := recorded(t, false)
	c1, j, _ := recorded(t, true)
	id := recordedTraceID(t)
	v3, err := c3.Trace(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := c1.Trace(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if v1.API != APIv1 {
		t.Errorf("a v1-only server answered as %q", v1.API)
	}
	checkDemoTrace(t, v1)
	// v1 has microseconds where v3 has nanoseconds: the keys compare at µs.
	var k3, k1 []string
	for i := range v3.Spans {
		k3 = append(k3, spanKey(v3.Spans[i]))
	}
	for i := range v1.Spans {
		k1 = append(k1, spanKey(v1.Spans[i]))
	}
	if !slices.Equal(k3, k1) {
		t.Errorf("v3 and v1 differ:\nv3 %s\nv1 %s", strings.Join(k3, "\nv3 "), strings.Join(k1, "\nv1 "))
	}
	// v1 folds service.name into serviceName; the client puts it back into Resource.
	for i := range v1.Spans {
		if v1.Spans[i].Resource["service.name"] != v3.Spans[i].Resource["service.name"] {
			t.Errorf("span %s: resource service.name v1 %q v3 %q", v1.Spans[i].SpanID, v1.Spans[i].Resource["service.name"], v3.Spans[i].Resource["service.name"])
		}
	}
	if got := strings.Join(j.paths(), " "); got != "/api/v3/services /api/services /api/traces/"+id {
		t.Errorf("requests %s", got)
	}
}

// checkDemoTrace asserts what the demo put in the trace: three services, one root, parents
// inside the trace, host.name on every resource, and pyroscope.profile.id = span ID on each
// service's local root span (otel-profiling-go's doing).
func checkDemoTrace(t *testing.T, tr *models.Trace) {
	t.Helper()
	byID := map[string]models.Span{}
	services := map[string]bool{}
	for _, s := range tr.Spans {
		byID[s.SpanID] = s
		services[s.Service] = true
		if s.TraceID != tr.TraceID || len(s.SpanID) != 16 || s.Start.IsZero() || s.Duration <= 0 {
			t.Errorf("span %+v", s)
		}
		if s.Resource["host.name"] != "gpu-node-1" {
			t.Errorf("span %s (%s): resource host.name = %q", s.SpanID, s.Service, s.Resource["host.name"])
		}
	}
	if len(services) != 3 || !services["nemotron-backend"] || !services["ai-detector"] || !services["ai-enrichment"] {
		t.Errorf("services %v", services)
	}
	roots, localRoots := 0, 0
	for _, s := range tr.Spans {
		parent, ok := byID[s.ParentSpanID]
		switch {
		case s.ParentSpanID == "":
			roots++
		case !ok:
			t.Errorf("span %s: parent %s is not in the trace", s.SpanID, s.ParentSpanID)
		}
		if s.ParentSpanID == "" || ok && parent.Service != s.Service {
			localRoots++
			if s.Attributes[models.ProfileIDAttribute] != s.SpanID {
				t.Errorf("local root %s %q of %s: %s = %q", s.SpanID, s.Operation, s.Service, models.ProfileIDAttribute, s.Attributes[models.ProfileIDAttribute])
			}
		}
	}
	kinds := map[string]int{}
	for _, s := range tr.Spans {
		kinds[s.Kind]++
	}
	// otelhttp's spans: the backend's two calls (client) and the three services' handlers (server).
	if kinds[models.SpanKindClient] != 2 || kinds[models.SpanKindServer] != 3 {
		t.Errorf("span kinds %v, want 2 client and 3 server spans", kinds)
	}
	if roots != 1 || localRoots != 3 {
		t.Errorf("%d roots and %d local roots, want 1 and 3", roots, localRoots)
	}
	root := tr.Spans[0]
	if root.ParentSpanID != "" || root.Service != "nemotron-backend" || root.Operation != "GET /api/detect" || root.Attributes["demo.slow"] != "db" {
		t.Errorf("first span (earliest) is %+v, want the backend's root of a slow=db request", root)
	}
}

func TestV1OnlyServerWithAUIIsDetected(t *testing.T) {
	j := &recordedJaeger{t: t, v3HTML: true}
	c, _ := client(t, j)
	id := recordedTraceID(t)
	for range 2 {
		tr, err := c.Trace(context.Background(), id)
		if err != nil || tr.API != APIv1 || len(tr.Spans) != 9 {
			t.Fatalf("trace %+v err %v", tr, err)
		}
	}
	if got := strings.Join(j.paths(), " "); got != "/api/v3/services /api/services /api/traces/"+id+" /api/traces/"+id {
		t.Errorf("requests %s: detection should happen once", got)
	}
}

func TestTraceNotFoundOnBothAPIs(t *testing.T) {
	const missing = "0123456789abcdef0123456789abcdef"
	for _, v1Only := range []bool{false, true} {
		c, _, base := recorded(t, v1Only)
		tr, err := c.Trace(context.Background(), missing)
		if !errors.Is(err, ErrTraceNotFound) || tr != nil {
			t.Fatalf("v1Only=%v: trace %v err %v, want ErrTraceNotFound", v1Only, tr, err)
		}
		want := "Jaeger (" + base + "): trace " + missing + " not found (older than Jaeger's retention, not yet flushed, or a different Jaeger)"
		if err.Error() != want {
			t.Errorf("v1Only=%v: err = %q\nwant %q", v1Only, err, want)
		}
		if !backend.IsDownstreamError(err) {
			t.Errorf("v1Only=%v: not found must be a downstream error", v1Only)
		}
		// The API stays detected: a missing trace on v3 must not make the client fall back to v1.
		if _, err := c.Trace(context.Background(), recordedTraceID(t)); err != nil {
			t.Errorf("v1Only=%v: after a miss, the recorded trace: %v", v1Only, err)
		}
	}
}

func TestTraceV3WithNoSpansIsNotFound(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v3/services" {
			w.Write([]byte(`{"services":[]}`))
			return
		}
		w.Write([]byte(`{"result":{"resourceSpans":[]}}`))
	}))
	if _, err := c.Trace(context.Background(), "0123456789abcdef0123456789abcdef"); !errors.Is(err, ErrTraceNotFound) {
		t.Errorf("err = %v", err)
	}
}

func TestTraceRejectsAnIDThatIsNotHex(t *testing.T) {
	c, j, _ := recorded(t, false)
	for _, id := range []string{"", "../../api/services", "0123456789abcdef0123456789abcdeg", "abc"} {
		_, err := c.Trace(context.Background(), id)
		if err == nil || err.Error() != fmt.Sprintf("trace ID %q is not 16 or 32 hex digits", id) {
			t.Errorf("%q: err = %v", id, err)
		}
		if _, ok := errors.AsType[*upstream.Error](err); ok {
			t.Errorf("%q: a bad ID is not Jaeger's failure: %v", id, err)
		}
	}
	if got := j.paths(); len(got) != 0 {
		t.Errorf("bad IDs reached Jaeger: %v", got)
	}
}

func TestTraceGarbageAndTruncatedReplies(t *testing.T) {
	id := "0123456789abcdef0123456789abcdef"
	whole := string(testdata(t, "v3_trace.json"))
	cases := []struct {
		name, api, body, want string
	}{
		{"html", APIv3, "<html>proxy login</html>", "reply to /api/v3/traces/" + id + " is an HTML page, not the JSON Jaeger sends: is this URL Jaeger's query service"},
		{"not JSON", APIv3, "nonsense", "reply to /api/v3/traces/" + id + " is not the JSON Jaeger sends"},
		{"truncated v3", APIv3, whole[:len(whole)/2], "reply to /api/v3/traces/" + id + " is truncated (the JSON ends early)"},
		{"no result", APIv3, `{"data":[]}`, "reply to /api/v3/traces/" + id + ` has no "result" field: is this URL Jaeger's query service`},
		{"bad OTLP", APIv3, `{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"00f067aa0ba902b7"}]}]}]}}`, "reply to /api/v3/traces/" + id + ` has an ID "zz" that is not 32 hex digits`},
		{"v3 without IDs", APIv3, `{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"x"}]}]}]}}`, `has a span ("x") without traceId or spanId`},
		{"v1 no data", APIv1, `{"total":0}`, "reply to /api/traces/" + id + ` has no "data" field`},
		{"v1 truncated", APIv1, string(testdata(t, "v1_trace.json")[:100]), "reply to /api/traces/" + id + " is truncated"},
		{"v1 unknown process", APIv1, `{"data":[{"traceID":"` + id + `","spans":[{"spanID":"00f067aa0ba902b7","processID":"p9"}],"processes":{}}]}`, `names process "p9", which the trace does not list`},
		{"v1 errors", APIv1, `{"data":null,"errors":[{"code":500,"msg":"cassandra down"}]}`, "reply to /api/traces/" + id + " is an error: cassandra down"},
	}
	for _, tc := range cases {
		c, srv := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(tc.body)) }))
		if err := c.UseAPI(tc.api); err != nil {
			t.Fatal(err)
		}
		_, err := c.Trace(context.Background(), id)
		if err == nil || !strings.HasPrefix(err.Error(), "Jaeger ("+srv.URL+"): ") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v\nwant it to contain %q", tc.name, err, tc.want)
		}
		if errors.Is(err, ErrTraceNotFound) {
			t.Errorf("%s: a broken reply is not a missing trace", tc.name)
		}
	}
}

func TestTraceUpstreamFailureIsNotNotFound(t *testing.T) {
	c, srv := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "storage backend unavailable", http.StatusServiceUnavailable)
	}))
	_, err := c.Trace(context.Background(), "0123456789abcdef0123456789abcdef")
	if want := "Jaeger (" + srv.URL + "): HTTP 503: storage backend unavailable"; err == nil || err.Error() != want || errors.Is(err, ErrTraceNotFound) {
		t.Errorf("err = %v, want %q", err, want)
	}
	if _, ok := errors.AsType[*upstream.Error](err); !ok {
		t.Errorf("err is not an *upstream.Error: %T", err)
	}
}

func TestV1SixteenDigitTraceIDs(t *testing.T) {
	// Jaeger v1 prints 64-bit trace IDs with 16 digits; they become the 32-digit OTLP form.
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"data":[{"traceID":"a3ce929d0e0e4736","spans":[
			{"traceID":"a3ce929d0e0e4736","spanID":"00f067aa0ba902b7","operationName":"root","references":[],"startTime":1700000000000001,"duration":1500,"tags":[{"key":"n","type":"int64","value":42},{"key":"ok","type":"bool","value":true},{"key":"f","type":"float64","value":0.25}],"processID":"p1"},
			{"traceID":"a3ce929d0e0e4736","spanID":"00f067aa0ba902b8","operationName":"linked","references":[{"refType":"FOLLOWS_FROM","traceID":"a3ce929d0e0e4736","spanID":"00f067aa0ba902b7"}],"startTime":1700000000000002,"duration":10,"tags":[],"processID":"p1"},
			{"traceID":"a3ce929d0e0e4736","spanID":"00f067aa0ba902b9","operationName":"child","references":[{"refType":"FOLLOWS_FROM","traceID":"a3ce929d0e0e4736","spanID":"00f067aa0ba902b8"},{"refType":"CHILD_OF","traceID":"a3ce929d0e0e4736","spanID":"00f067aa0ba902b7"}],"startTime":1700000000000003,"duration":10,"tags":[],"processID":"p1"}],
			"processes":{"p1":{"serviceName":"svc","tags":[{"key":"host.name","type":"string","value":"h"}]}}}]}`))
	}))
	c.UseAPI(APIv1)
	tr, err := c.Trace(context.Background(), "a3ce929d0e0e4736")
	if err != nil {
		t.Fatal(err)
	}
	s := tr.Spans[0]
	if tr.TraceID != "0000000000000000a3ce929d0e0e4736" || s.TraceID != tr.TraceID {
		t.Errorf("trace IDs %q %q", tr.TraceID, s.TraceID)
	}
	if !s.Start.Equal(time.UnixMicro(1700000000000001)) || s.Duration != 1500*time.Microsecond {
		t.Errorf("start %v duration %v", s.Start, s.Duration)
	}
	if s.Attributes["n"] != "42" || s.Attributes["ok"] != "true" || s.Attributes["f"] != "0.25" {
		t.Errorf("tags %v", s.Attributes)
	}
	if s.Resource["host.name"] != "h" || s.Resource["service.name"] != "svc" || s.Service != "svc" {
		t.Errorf("resource %v service %q", s.Resource, s.Service)
	}
	if p := tr.Spans[1].ParentSpanID; p != "00f067aa0ba902b7" {
		t.Errorf("FOLLOWS_FROM alone: parent %q", p)
	}
	if p := tr.Spans[2].ParentSpanID; p != "00f067aa0ba902b7" {
		t.Errorf("CHILD_OF wins over FOLLOWS_FROM: parent %q", p)
	}
}

func TestUseAPI(t *testing.T) {
	c, j, _ := recorded(t, false)
	if err := c.UseAPI("v2"); err == nil || !strings.Contains(err.Error(), `unknown Jaeger API "v2"`) {
		t.Errorf("err = %v", err)
	}
	if err := c.UseAPI(APIv1); err != nil {
		t.Fatal(err)
	}
	tr, err := c.Trace(context.Background(), recordedTraceID(t))
	if err != nil || tr.API != APIv1 {
		t.Fatalf("trace %v err %v", tr, err)
	}
	if got := strings.Join(j.paths(), " "); got != "/api/traces/"+recordedTraceID(t) {
		t.Errorf("a forced API must not be detected: requests %s", got)
	}
}

func TestFindTracesOnBothAPIs(t *testing.T) {
	var results [][]models.TraceSummary
	for _, v1Only := range []bool{false, true} {
		c, j, _ := recorded(t, v1Only)
		end := time.Now()
		found, err := c.FindTraces(context.Background(), models.TraceSearchQuery{
			Service: "nemotron-backend", Operation: "GET /api/detect", MinDuration: 200 * time.Millisecond,
			Start: end.Add(-15 * time.Minute), End: end, Limit: 5,
		})
		if err != nil {
			t.Fatalf("v1Only=%v: %v", v1Only, err)
		}
		if len(found) < 2 || len(found) > 5 {
			t.Fatalf("v1Only=%v: %d traces", v1Only, len(found))
		}
		for i, s := range found {
			if s.RootService != "nemotron-backend" || s.RootOperation != "GET /api/detect" || s.Spans != 9 ||
				strings.Join(s.Services, ",") != "ai-detector,ai-enrichment,nemotron-backend" ||
				s.Duration < 200*time.Millisecond || s.DurationMs != float64(s.Duration)/1e6 || len(s.TraceID) != 32 {
				t.Errorf("v1Only=%v: hit %d %+v", v1Only, i, s)
			}
			if i > 0 && found[i-1].Duration < s.Duration {
				t.Errorf("v1Only=%v: not slowest first: %v before %v", v1Only, found[i-1].Duration, s.Duration)
			}
		}
		last := j.last().Query()
		want := url.Values{
			"query.service_name": {"nemotron-backend"}, "query.operation_name": {"GET /api/detect"},
			"query.duration_min": {"200ms"}, "query.search_depth": {"5"}, "query.num_traces": {"5"},
			"query.start_time_min": {end.Add(-15 * time.Minute).UTC().Format(time.RFC3339Nano)},
			"query.start_time_max": {end.UTC().Format(time.RFC3339Nano)},
		}
		if v1Only {
			want = url.Values{
				"service": {"nemotron-backend"}, "operation": {"GET /api/detect"}, "minDuration": {"200ms"}, "limit": {"5"},
				"start": {fmt.Sprint(end.Add(-15 * time.Minute).UnixMicro())}, "end": {fmt.Sprint(end.UnixMicro())},
			}
		}
		if last.Encode() != want.Encode() {
			t.Errorf("v1Only=%v: search parameters\n got %s\nwant %s", v1Only, last.Encode(), want.Encode())
		}
		results = append(results, found)
	}
	// Both recordings were taken at the same moment, with the same query.
	if len(results[0]) != len(results[1]) {
		t.Fatalf("v3 found %d traces, v1 %d", len(results[0]), len(results[1]))
	}
	for i := range results[0] {
		a, b := results[0][i], results[1][i]
		if a.TraceID != b.TraceID || a.Spans != b.Spans || a.Duration.Microseconds() != b.Duration.Microseconds() || a.Start.UnixMicro() != b.Start.UnixMicro() {
			t.Errorf("hit %d: v3 %+v v1 %+v", i, a, b)
		}
	}
}

func TestFindTracesEmptyOnBothAPIs(t *testing.T) {
	for _, v1Only := range []bool{false, true} {
		c, _, _ := recorded(t, v1Only)
		found, err := c.FindTraces(context.Background(), models.TraceSearchQuery{Service: "nobody"})
		if err != nil || len(found) != 0 {
			t.Errorf("v1Only=%v: found %v err %v, want none and no error", v1Only, found, err)
		}
	}
}

func TestFindTracesNeedsAService(t *testing.T) {
	c, j, _ := recorded(t, false)
	_, err := c.FindTraces(context.Background(), models.TraceSearchQuery{MinDuration: time.Second})
	if err == nil || !strings.Contains(err.Error(), "a trace search needs a service") {
		t.Errorf("err = %v", err)
	}
	if len(j.paths()) != 0 {
		t.Errorf("asked Jaeger without a service: %v", j.paths())
	}
}

func TestFindTracesDefaultsToTheLastHour(t *testing.T) {
	var got url.Values
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Query()
		w.Write([]byte(`{"data":[]}`))
	}))
	c.UseAPI(APIv1)
	before := time.Now()
	if _, err := c.FindTraces(context.Background(), models.TraceSearchQuery{Service: "a"}); err != nil {
		t.Fatal(err)
	}
	var start, end int64
	fmt.Sscan(got.Get("start"), &start)
	fmt.Sscan(got.Get("end"), &end)
	if end < before.UnixMicro() || end-start != time.Hour.Microseconds() || got.Get("limit") != fmt.Sprint(DefaultTraceLimit) || got.Has("minDuration") || got.Has("operation") {
		t.Errorf("parameters %v", got)
	}
}

// TestSummarise checks the grouping on spans built by hand: roots, a trace whose root is
// missing, the duration from the earliest start to the latest end, and the order.
func TestSummarise(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	span := func(trace, id, parent, service, op string, startMs, durMs int) models.Span {
		return models.Span{TraceID: trace, SpanID: id, ParentSpanID: parent, Service: service, Operation: op,
			Start: t0.Add(time.Duration(startMs) * time.Millisecond), Duration: time.Duration(durMs) * time.Millisecond}
	}
	got := summarise([]models.Span{
		span("t1", "b", "a", "db", "query", 5, 10),
		span("t1", "a", "", "api", "GET /", 0, 100),
		span("t1", "c", "a", "api", "late", 90, 30),           // ends after the root
		span("t2", "x", "gone", "worker", "consume", 50, 400), // root not (yet) in Jaeger
		span("t2", "y", "x", "db", "query", 60, 10),
		span("t3", "q", "", "api", "GET /fast", 10, 5),
	})
	want := []string{
		"t2 worker consume start=50 dur=400 spans=2 services=db,worker",
		"t1 api GET / start=0 dur=120 spans=3 services=api,db",
		"t3 api GET /fast start=10 dur=5 spans=1 services=api",
	}
	var lines []string
	for _, s := range got {
		lines = append(lines, fmt.Sprintf("%s %s %s start=%d dur=%d spans=%d services=%s", s.TraceID, s.RootService, s.RootOperation,
			s.Start.Sub(t0).Milliseconds(), s.Duration.Milliseconds(), s.Spans, strings.Join(s.Services, ",")))
	}
	if !slices.Equal(lines, want) {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	if got[1].DurationMs != 120 {
		t.Errorf("durationMs %v", got[1].DurationMs)
	}
	if !got[0].RootMissing || got[1].RootMissing || got[2].RootMissing {
		t.Errorf("root missing: %v %v %v, want only t2's", got[0].RootMissing, got[1].RootMissing, got[2].RootMissing)
	}
	b, _ := json.Marshal(got[2])
	if !strings.Contains(string(b), `"durationMs":5,`) || strings.Contains(string(b), `"Duration"`) {
		t.Errorf("JSON %s", b)
	}
}

// Panels that read the same trace at once share one read of it: the read is held until every
// caller waits on it (their goroutines show in the shared read), then answered once. Each caller
// gets its own slice: one sorting or cutting its spans leaves the others' alone.
func TestConcurrentReadsOfATraceShareOneRequest(t *testing.T) {
	const callers = 4
	release := make(chan struct{})
	j := &recordedJaeger{t: t}
	var traceReads atomic.Int32
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v3/traces/") {
			traceReads.Add(1)
			<-release
		}
		j.ServeHTTP(w, r)
	}))
	id := recordedTraceID(t)
	if _, _, err := c.Services(t.Context()); err != nil { // detects the API first
		t.Fatal(err)
	}
	traces := make([]*models.Trace, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() { traces[i], errs[i] = c.Trace(t.Context(), id) })
	}
	// Every caller is inside the shared read (the first one in the request, the others waiting
	// for it) before the server answers.
	for waiting, deadline := 0, time.Now().Add(time.Minute); waiting < callers; {
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("after a minute %d of %d callers are in the shared read", waiting, callers)
		}
		waiting = goroutines.In("jaeger.(*Client).shared")
		time.Sleep(10 * time.Millisecond)
	}
	close(release)
	wg.Wait()
	if n := traceReads.Load(); n != 1 {
		t.Errorf("%d requests for one trace read by %d panels at once, want 1", n, callers)
	}
	for i, err := range errs {
		if err != nil || len(traces[i].Spans) != len(traces[0].Spans) {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	traces[0].Spans[0].Operation = "changed by one caller"
	traces[0].Spans = traces[0].Spans[:1]
	if traces[1].Spans[0].Operation == "changed by one caller" || len(traces[1].Spans) == 1 {
		t.Error("one caller's change to its spans shows in another's")
	}
	checkDemoTrace(t, traces[1])
	// Asked again later, the trace is read again: nothing is kept between reads.
	if _, err := c.Trace(t.Context(), id); err != nil || traceReads.Load() != 2 {
		t.Errorf("a later read: %v, %d requests", err, traceReads.Load())
	}
}

// A shared read that Jaeger does not answer in time is every caller's answer, at the one
// timeout: callers do not read again after it (the panels would wait twice the timeout).
func TestASharedReadThatTimesOutIsNotReadAgain(t *testing.T) {
	var reads atomic.Int32
	j := &recordedJaeger{t: t}
	// Long enough for every caller to join the read before it times out, on a loaded machine.
	c, _ := clientWithTimeout(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v3/traces/") {
			reads.Add(1)
			select { // never answers: the client's timeout ends the read
			case <-r.Context().Done():
			case <-time.After(time.Minute):
			}
			return
		}
		j.ServeHTTP(w, r)
	}), 5*time.Second)
	if _, _, err := c.Services(t.Context()); err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, errs[i] = c.Trace(t.Context(), recordedTraceID(t)) })
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	joined := 0
	for joined < len(errs) {
		select {
		case <-done: // the read ended before every caller was seen in it
		default:
			joined = goroutines.In("jaeger.(*Client).shared")
			time.Sleep(10 * time.Millisecond)
			continue
		}
		break
	}
	<-done
	if joined < len(errs) {
		t.Fatalf("only %d of %d callers joined the read before it timed out: the machine is too slow for this test", joined, len(errs))
	}
	for i, err := range errs {
		if err == nil || !strings.Contains(err.Error(), "timed out") {
			t.Errorf("caller %d: %v, want the timeout", i, err)
		}
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads of the trace: the callers of a read that timed out read it again", n)
	}
}
