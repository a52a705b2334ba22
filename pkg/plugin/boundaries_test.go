package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
)

// Boundaries (issue "Hardening"): no resource parameter and no query field can make the backend
// call a host other than the configured upstreams, a path other than their query APIs, or read
// a file outside the configured trace directories. Every upstream here records what it was
// asked; a canary server stands for "anywhere else" and must never be contacted.

// boundaryHit is one request an upstream or the canary received, as it arrived on the wire.
type boundaryHit struct {
	Method     string
	RequestURI string // raw, as sent
	Path       string // decoded
	Query      url.Values
}

// boundaryRecorder records every request before the fake handles it.
type boundaryRecorder struct {
	name string
	mu   sync.Mutex
	hits []boundaryHit
}

func (r *boundaryRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.hits = append(r.hits, boundaryHit{Method: req.Method, RequestURI: req.RequestURI, Path: req.URL.Path, Query: req.URL.Query()})
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
}

// take returns the hits so far and forgets them.
func (r *boundaryRecorder) take() []boundaryHit {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.hits
	r.hits = nil
	return out
}

// boundaryAPI is what one upstream may be asked: its API's paths and query parameters.
type boundaryAPI struct {
	paths  *regexp.Regexp
	params []string
}

// The allow-lists: exactly the routes the plugin's clients use.
var (
	// Connect RPCs are POSTs to fixed procedure paths; nothing travels in the URL.
	pyroscopeAPI = boundaryAPI{paths: regexp.MustCompile(`^/querier\.v1\.QuerierService/(ProfileTypes|LabelNames|LabelValues|SelectSeries|SelectMergeStacktraces|SelectMergeSpanProfile)$`)}
	// client_golang's API paths; a label name only ever comes from the settings' label names.
	prometheusAPI = boundaryAPI{
		paths:  regexp.MustCompile(`^/api/v1/(query|query_range|series|labels|label/[A-Za-z_][A-Za-z0-9_]*/values|status/buildinfo)$`),
		params: []string{"query", "start", "end", "step", "time", "timeout", "match[]", "limit"},
	}
	// Jaeger v3 and v1: a trace's path carries only its 32 hex digits.
	jaegerAPI = boundaryAPI{
		paths: regexp.MustCompile(`^/api/(v3/)?(services|traces|traces/[0-9a-f]{32})$`),
		params: []string{"query.service_name", "query.operation_name", "query.start_time_min", "query.start_time_max",
			"query.search_depth", "query.num_traces", "query.duration_min",
			"service", "operation", "start", "end", "limit", "minDuration"},
	}
)

// boundaryBed is the data source with recording fakes of the three upstreams, a trace directory
// and the canary.
type boundaryBed struct {
	ds                        *Datasource
	pyroscope, prom, jaeger   *boundaryRecorder
	canary                    *boundaryRecorder
	canaryHost, canaryV6Host  string // host:port of the canary on 127.0.0.1 and on [::1] ("" without IPv6)
	jaegerFake                *jaegerFake
	apis                      map[*boundaryRecorder]boundaryAPI
	traceDir                  string
	validTraceID, validSpanID string
}

func newBoundaryBed(t *testing.T, jaegerAPIVersion string) *boundaryBed {
	t.Helper()
	b := &boundaryBed{
		pyroscope: &boundaryRecorder{name: "Pyroscope"}, prom: &boundaryRecorder{name: "Prometheus"},
		jaeger: &boundaryRecorder{name: "Jaeger"}, canary: &boundaryRecorder{name: "canary"},
		validTraceID: "4bf92f3577b34da6a3ce929d0e0e4736", validSpanID: "00f067aa0ba902b7",
	}
	b.apis = map[*boundaryRecorder]boundaryAPI{b.pyroscope: pyroscopeAPI, b.prom: prometheusAPI, b.jaeger: jaegerAPI}

	canary := b.canary.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("CANARY-REACHED"))
	}))
	b.canaryHost = strings.TrimPrefix(serve(t, canary, nil).URL, "http://")
	if l, err := net.Listen("tcp", "[::1]:0"); err == nil {
		s := &httptest.Server{Listener: l, Config: &http.Server{Handler: canary}}
		s.Start()
		t.Cleanup(s.Close)
		b.canaryV6Host = l.Addr().String()
	}

	pyro := &seriesPyroscope{fakePyroscope: &fakePyroscope{types: []string{"process_cpu:cpu:nanoseconds:cpu:nanoseconds"}},
		labelNames: []string{"service_name"}, labelValues: map[string][]string{"service_name": {"nemotron-backend"}}}
	path, h := querierv1connect.NewQuerierServiceHandler(pyro)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	pyroURL := serve(t, mux, b.pyroscope.wrap).URL

	prom := &promFake{GPUs: []fakeGPU{steadyGPU("gpu-node-1", "0", 90, 0.8, 0.3)}}
	promURL := serve(t, http.HandlerFunc(prom.serveHTTP), b.prom.wrap).URL

	b.jaegerFake = &jaegerFake{API: jaegerAPIVersion, Traces: demoTraces(time.Now())}
	jaegerURL := newJaegerFake(t, b.jaegerFake, b.jaeger.wrap).URL

	b.traceDir = filepath.Join(t.TempDir(), "profiles")
	writeFile(t, filepath.Join(b.traceDir, "infer_"+b.validTraceID+".pt.trace.json"), kinetoTrace("infer"))

	b.ds = newTestDatasource(t, map[string]any{
		"pyroscopeUrl": pyroURL, "prometheusUrl": promURL, "jaegerUrl": jaegerURL,
		"traceDirectories": []string{b.traceDir},
	}, nil)
	return b
}

// hostile are values that try to leave the API: another host, another path, extra parameters,
// header injection, or just size.
func (b *boundaryBed) hostile() []string {
	c := b.canaryHost
	out := []string{
		"http://" + c + "/x", "https://" + c + "/x", "//" + c + "/x", "@" + c, "user@" + c + "/x", "http:" + c,
		"../../../../etc/passwd", "../api/v1/query", "..%2f..%2fx", "%2e%2e/%2e%2e/x", "%2e%2e%2f%2e%2e%2fx",
		"a%2Fb", "a/b", "/x", "x?canary=1", "x#frag", "x;y=1", "x&service=y", `..\..\x`, `\\` + c + `\x`,
		"x\x00y", "x\r\nX-Injected: 1", "x\nHost: " + c, strings.Repeat("a", 70000),
		"[::1]", "http://[::1]/x", "\u2215..\u2215x", "*", "?", "#",
	}
	if b.canaryV6Host != "" {
		out = append(out, "http://"+b.canaryV6Host+"/x", "//"+b.canaryV6Host)
	}
	return out
}

// hostileIDs are trace and span IDs with something appended to or around a valid one.
func (b *boundaryBed) hostileIDs(valid string) []string {
	return []string{
		valid + "/../../x", valid + "?x=1", valid + "#x", valid + "%2f..", valid + "/", "../" + valid,
		valid + "\r\nX-Injected: 1", valid + "\x00", valid[:len(valid)-1] + "*", valid[:len(valid)-2] + "..", "0x" + valid[2:],
		"http://" + b.canaryHost + "/" + valid, strings.ToUpper(valid) + "G",
	}
}

// check asserts that since the last check every upstream was asked only its own API, the
// canary nothing; it returns how many upstream requests there were.
func (b *boundaryBed) check(t *testing.T, what string) int {
	t.Helper()
	if hits := b.canary.take(); len(hits) > 0 {
		t.Errorf("%s: the canary was contacted: %+v", what, hits)
	}
	n := 0
	for rec, api := range b.apis {
		for _, h := range rec.take() {
			n++
			raw, _, _ := strings.Cut(h.RequestURI, "?")
			if !api.paths.MatchString(h.Path) || !api.paths.MatchString(raw) {
				t.Errorf("%s: %s was asked %s %q, outside its API", what, rec.name, h.Method, h.RequestURI)
			}
			for k := range h.Query {
				if !slices.Contains(api.params, k) {
					t.Errorf("%s: %s was asked %q with parameter %q, not one of its API's", what, rec.name, h.RequestURI, k)
				}
			}
			if strings.ContainsAny(h.RequestURI, "#\\\r\n\x00 ") {
				t.Errorf("%s: %s request line %q carries raw special characters", what, rec.name, h.RequestURI)
			}
		}
	}
	return n
}

// call is one resource call as Grafana makes it.
func (b *boundaryBed) call(t *testing.T, method, pathAndQuery string) (int, string) {
	t.Helper()
	path, _, _ := strings.Cut(pathAndQuery, "?")
	var res *backend.CallResourceResponse
	err := b.ds.CallResource(context.Background(), &backend.CallResourceRequest{Method: method, Path: path, URL: pathAndQuery},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
			if res == nil || r.Status != 0 {
				res = r
			}
			return nil
		}))
	if err != nil || res == nil {
		t.Fatalf("%s %.200q: err %v, response %v", method, pathAndQuery, err, res)
	}
	return res.Status, string(res.Body)
}

// queryOne runs one query model (a map, so hostile strings are JSON-escaped properly).
func (b *boundaryBed) queryOne(t *testing.T, model map[string]any) backend.DataResponse {
	t.Helper()
	raw, err := json.Marshal(model)
	if err != nil {
		t.Fatal(err)
	}
	res, err := b.ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{query("A", string(raw))}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Responses["A"]
}

func short(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%q…(%d bytes)", s[:60], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// resourceParam is one resource parameter and the call it goes into.
type resourceParam struct {
	route, param string
	// fixed is the rest of the query string.
	fixed string
	// strict: every hostile value must be refused with an error naming the parameter, before
	// any upstream is asked.
	strict bool
	// jaegerParam: the value, when accepted, must reach Jaeger intact as this search parameter
	// (v3 name, v1 name): data, never structure.
	jaegerParam [2]string
	// inVariable: the value goes into this variable query, %s replaced by it as a quoted string.
	inVariable string
}

// variableString quotes v as the variable query language reads strings.
func variableString(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(v) + `"`
}

var boundaryResourceParams = []resourceParam{
	{route: "profile-types", param: "from", strict: true},
	{route: "profile-types", param: "to", strict: true},
	{route: "services", param: "from", strict: true},
	// Selectors and label names go into Connect request bodies: data, never a URL.
	{route: "label-names", param: "selector"},
	{route: "label-values", param: "selector", fixed: "label=service_name"},
	{route: "label-values", param: "label"},
	{route: "label-values", param: "to", fixed: "label=service_name", strict: true},
	{route: "variable", param: "query", strict: true},
	{route: "variable", param: "query", inVariable: "trace_ids(%s)", jaegerParam: [2]string{"query.service_name", "service"}},
	{route: "variable", param: "query", inVariable: "trace_ids(nemotron-backend, %s)"},
	{route: "variable", param: "query", inVariable: "label_values(%s)"},
	{route: "variable", param: "query", inVariable: "label_values({service_name=\"x\"}, %s)"},
	{route: "variable", param: "query", inVariable: "label_names(%s)"},
	{route: "variable", param: "query", inVariable: "gpu_label_values(%s)"},
	{route: "variable", param: "query", inVariable: "gpu_label_values(gpu, %s)"},
	{route: "trace-services", param: "service"}, // not a parameter of the route: ignored
	{route: "traces", param: "service", jaegerParam: [2]string{"query.service_name", "service"}},
	{route: "traces", param: "operation", fixed: "service=nemotron-backend", jaegerParam: [2]string{"query.operation_name", "operation"}},
	{route: "traces", param: "minDuration", fixed: "service=nemotron-backend", strict: true},
	{route: "traces", param: "limit", fixed: "service=nemotron-backend", strict: true},
	{route: "traces", param: "from", fixed: "service=nemotron-backend", strict: true},
	{route: "gpu-metrics", param: "url"},
	{route: "gpu-label-values", param: "role", strict: true},
	{route: "gpu-label-values", param: "hosts", fixed: "role=gpu"},
	{route: "gpu-label-values", param: "gpus", fixed: "role=host"},
	{route: "gpu-label-values", param: "models", fixed: "role=host"},
	{route: "gpu-label-values", param: "pods", fixed: "role=host"},
	{route: "gpu-label-values", param: "namespaces", fixed: "role=host"},
	{route: "gpu-label-values", param: "gpuSelector", fixed: "role=host", strict: true},
	{route: "gpu-label-values", param: "url", fixed: "role=host", strict: true}, // unknown parameter: refused
	{route: "kernel-files", param: "traceId", strict: true},
	{route: "upstreams", param: "url"},
	{route: "services", param: "url"},
}

func TestBoundariesResourceParameters(t *testing.T) {
	for _, api := range []string{jaeger.APIv3, jaeger.APIv1} {
		t.Run(api, func(t *testing.T) {
			b := newBoundaryBed(t, api)
			for _, p := range boundaryResourceParams {
				passedOn := 0
				for _, v := range b.hostile() {
					what := fmt.Sprintf("%s?%s=%s", p.route, p.param, short(v))
					given := v
					if p.inVariable != "" {
						given = fmt.Sprintf(p.inVariable, variableString(v))
						what = fmt.Sprintf("%s?%s=%s", p.route, p.param, short(given))
					}
					q := url.Values{p.param: {given}}.Encode()
					if p.fixed != "" {
						q = p.fixed + "&" + q
					}
					status, body := b.call(t, "GET", p.route+"?"+q)
					asked := b.check(t, what)
					if strings.Contains(body, "CANARY") {
						t.Errorf("%s: the canary's answer came back: %s", what, body)
					}
					switch {
					case status == http.StatusBadRequest:
						// Refused: the error says which parameter.
						if !strings.Contains(body, `\"`+p.param+`\"`) && !strings.Contains(body, `parameter \"`) {
							t.Errorf("%s: HTTP 400 %.300s does not name the parameter", what, body)
						}
						if asked > 0 && p.strict {
							t.Errorf("%s: refused only after asking an upstream", what)
						}
					case p.strict:
						t.Errorf("%s: HTTP %d %.300s, want 400 naming %q", what, status, body, p.param)
					case status != http.StatusOK:
						t.Errorf("%s: HTTP %d %.300s", what, status, body)
					}
					if p.jaegerParam[0] != "" && status == http.StatusOK {
						passedOn++
						b.checkJaegerParam(t, what, p.jaegerParam, v)
					}
				}
				if p.jaegerParam[0] != "" && passedOn == 0 {
					t.Errorf("%s %s %s: no value reached Jaeger, so none was checked there", p.route, p.param, p.inVariable)
				}
			}
		})
	}
}

// checkJaegerParam asserts that the last trace search Jaeger received carried want, exactly, as
// the one value of its parameter.
func (b *boundaryBed) checkJaegerParam(t *testing.T, what string, names [2]string, want string) {
	t.Helper()
	reqs := b.jaegerFake.Requests()
	for i := len(reqs) - 1; i >= 0; i-- {
		u := reqs[i]
		if u.Path != "/api/v3/traces" && u.Path != "/api/traces" {
			continue
		}
		got := u.Query()[names[0]]
		if u.Path == "/api/traces" {
			got = u.Query()[names[1]]
		}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: Jaeger's search got %v, want exactly the value given", what, got)
		}
		return
	}
	t.Errorf("%s: answered without a trace search", what)
}

// Routes other than the listed ones, and methods other than GET, touch no upstream.
func TestBoundariesUnknownRoutesAndMethods(t *testing.T) {
	b := newBoundaryBed(t, jaeger.APIv3)
	c := b.canaryHost
	for _, path := range []string{
		"proxy?url=http://" + c + "/x", "http://" + c + "/x", "//" + c + "/x", "api/v1/query?query=up",
		"api/v3/traces/" + b.validTraceID, "querier.v1.QuerierService/ProfileTypes", "../upstreams", "upstreams/../../x",
		"traces/" + b.validTraceID, "kernel-files/../../etc/passwd", "kernel-files/%2e%2e/x", "services%2f..%2fx",
	} {
		status, body := b.call(t, "GET", path)
		b.check(t, path)
		if status == http.StatusOK || strings.Contains(body, "CANARY") {
			t.Errorf("GET %s: HTTP %d %.200s, want a refusal", path, status, body)
		}
	}
	for _, route := range []string{"upstreams", "profile-types", "services", "label-names", "label-values", "variable",
		"trace-services", "traces", "gpu-metrics", "gpu-label-values", "kernel-files"} {
		for _, method := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			status, _ := b.call(t, method, route+"?url=http://"+c+"/x")
			if asked := b.check(t, method+" "+route); asked > 0 || status != http.StatusMethodNotAllowed {
				t.Errorf("%s %s: HTTP %d after %d upstream requests, want 405 and none", method, route, status, asked)
			}
		}
	}
}

// queryField is one query field and the query it goes into.
type queryField struct {
	model map[string]any // the rest of the query
	field string         // JSON name; "a.b" is b inside object a
	list  bool           // the field is a list of strings
	// strict: every hostile value must be refused with an error naming the field, before any
	// upstream is asked.
	strict bool
	// idOf: also try hostileIDs built around a valid ID of this kind ("trace", "span").
	idOf string
}

func (f queryField) with(v string) map[string]any {
	m := map[string]any{}
	for k, x := range f.model {
		m[k] = x
	}
	var val any = v
	if f.list {
		val = []string{v}
	}
	if outer, inner, ok := strings.Cut(f.field, "."); ok {
		m[outer] = map[string]any{inner: val}
	} else {
		m[f.field] = val
	}
	return m
}

func boundaryQueryFields(b *boundaryBed) []queryField {
	profile := func(qt string) map[string]any {
		return map[string]any{"queryType": qt, "labelSelector": `{service_name="nemotron-backend"}`}
	}
	var out []queryField
	for _, qt := range []string{"profile", "metrics", "both"} {
		out = append(out,
			// Selectors and label names travel in Connect request bodies: data, whatever they say
			// (their quoting is the query-language tests' business).
			queryField{model: profile(qt), field: "labelSelector"},
			queryField{model: profile(qt), field: "profileTypeId", strict: true},
			queryField{model: profile(qt), field: "groupBy", list: true},
			queryField{model: profile(qt), field: "spanSelector", list: true, strict: true, idOf: "span"},
			queryField{model: map[string]any{"queryType": qt}, field: "traceId", strict: true, idOf: "trace"},
		)
	}
	diff := map[string]any{"queryType": "diff", "labelSelector": `{service_name="nemotron-backend"}`}
	out = append(out,
		queryField{model: diff, field: "baseline.traceId", strict: true, idOf: "trace"},
		queryField{model: diff, field: "comparison.traceId", strict: true, idOf: "trace"},
		queryField{model: diff, field: "baseline.spanSelector", list: true, strict: true, idOf: "span"},
		queryField{model: diff, field: "comparison.labelSelector"},
		queryField{model: diff, field: "baseline.from", strict: true},
		queryField{model: diff, field: "comparison.to", strict: true},
		queryField{model: map[string]any{"queryType": "trace"}, field: "traceId", strict: true, idOf: "trace"},
		queryField{model: map[string]any{"queryType": "trace", "traceId": b.validTraceID}, field: "profileTypeId", strict: true},
		queryField{model: map[string]any{"queryType": "trace", "traceId": b.validTraceID}, field: "allocTypeId", strict: true},
		queryField{model: map[string]any{"queryType": "slowRequests"}, field: "service"},
		queryField{model: map[string]any{"queryType": "slowRequests", "service": "nemotron-backend"}, field: "endpoint"},
		queryField{model: map[string]any{"queryType": "slowRequests"}, field: "minDuration", strict: true},
		queryField{model: map[string]any{"queryType": "kernels"}, field: "traceId", strict: true, idOf: "trace"},
		queryField{model: map[string]any{"queryType": "kernels"}, field: "file"},
		queryField{model: map[string]any{"queryType": "kernels", "traceId": b.validTraceID}, field: "view", strict: true},
		queryField{model: map[string]any{"queryType": "gpuLocal"}, field: "view"},
	)
	for _, qt := range []string{"gpuMetrics", "gpuClass"} {
		m := map[string]any{"queryType": qt}
		for _, f := range []string{"hosts", "gpus", "models", "pods", "namespaces"} {
			out = append(out, queryField{model: m, field: f, list: true})
		}
		out = append(out, queryField{model: m, field: "gpuSelector", strict: true})
	}
	out = append(out,
		queryField{model: map[string]any{"queryType": "gpuMetrics"}, field: "metrics", list: true, strict: true},
		queryField{model: map[string]any{"queryType": "gpuMetrics"}, field: "aggregation", strict: true},
		queryField{model: map[string]any{"queryType": "gpuClass"}, field: "format", strict: true},
		queryField{model: map[string]any{"queryType": "gpuClass"}, field: "minStep", strict: true},
	)
	// Fields no query type has: ignored, whatever they say.
	for _, f := range []string{"url", "pyroscopeUrl", "jaegerUrl", "prometheusUrl", "path", "traceDirectories", "selfProfilingUrl"} {
		out = append(out, queryField{model: profile("profile"), field: f})
	}
	return out
}

func TestBoundariesQueryFields(t *testing.T) {
	for _, api := range []string{jaeger.APIv3, jaeger.APIv1} {
		t.Run(api, func(t *testing.T) {
			b := newBoundaryBed(t, api)
			for _, f := range boundaryQueryFields(b) {
				values := b.hostile()
				switch f.idOf {
				case "trace":
					values = append(values, b.hostileIDs(b.validTraceID)...)
				case "span":
					values = append(values, b.hostileIDs(b.validSpanID)...)
				}
				name := f.field
				if _, inner, ok := strings.Cut(f.field, "."); ok {
					name = inner
				}
				for _, v := range values {
					what := fmt.Sprintf("%v %s=%s", f.model["queryType"], f.field, short(v))
					r := b.queryOne(t, f.with(v))
					asked := b.check(t, what)
					text := fmt.Sprint(r.Error)
					for _, fr := range r.Frames {
						j, _ := json.Marshal(fr)
						text += string(j)
					}
					if strings.Contains(text, "CANARY") {
						t.Errorf("%s: the canary's answer came back", what)
					}
					switch {
					case r.Error != nil && asked == 0:
						if !strings.Contains(r.Error.Error(), name) {
							t.Errorf("%s: error %q does not name the field", what, r.Error)
						}
					case f.strict:
						t.Errorf("%s: error %v after %d upstream requests, want a refusal naming %q before any", what, r.Error, asked, f.field)
					}
					if f.field == "service" && r.Error == nil && asked > 0 {
						b.checkJaegerParam(t, what, [2]string{"query.service_name", "service"}, strings.TrimSpace(v))
					}
				}
			}
		})
	}
}

// A valid trace ID goes into exactly one path: /api/v3/traces/<id> or /api/traces/<id>, with a
// 16-digit ID padded to the 32 Jaeger stores.
func TestBoundariesTraceIDPathIsExact(t *testing.T) {
	for _, api := range []string{jaeger.APIv3, jaeger.APIv1} {
		b := newBoundaryBed(t, api)
		want := "/api/v3/traces/"
		if api == jaeger.APIv1 {
			want = "/api/traces/"
		}
		// Surrounding white space (a pasted ID) is trimmed, never sent.
		for _, id := range []string{b.validTraceID, strings.ToUpper(b.validTraceID), " " + b.validTraceID + "\r\n", "a3ce929d0e0e4736"} {
			b.queryOne(t, map[string]any{"queryType": "trace", "traceId": id})
			b.check(t, "trace "+id)
			padded := strings.Repeat("0", 32-len(strings.TrimSpace(id))) + strings.ToLower(strings.TrimSpace(id))
			found := false
			for _, u := range b.jaegerFake.Requests() {
				if strings.HasPrefix(u.Path, want) {
					found = true
					if u.Path != want+padded || u.RawQuery != "" {
						t.Errorf("%s trace %q: Jaeger was asked %s, want exactly %s", api, id, u, want+padded)
					}
				}
			}
			if !found {
				t.Errorf("%s trace %q: Jaeger was never asked for the trace", api, id)
			}
			b.jaegerFake.mu.Lock()
			b.jaegerFake.requests = nil
			b.jaegerFake.mu.Unlock()
		}
	}
}

// An upstream that redirects elsewhere does not take the plugin with it: the redirect is an
// error naming the upstream, and the other host is never asked (nor sent the upstream's
// credentials).
func TestBoundariesUpstreamRedirectIsNotFollowed(t *testing.T) {
	canary := &boundaryRecorder{name: "canary"}
	canaryURL := serve(t, canary.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"services": []string{"canary"}, "data": []string{"canary"}})
	})), nil).URL
	redirect := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, canaryURL+r.URL.Path, http.StatusFound)
	}), nil)
	ds := newTestDatasource(t, map[string]any{"jaegerUrl": redirect.URL, "jaegerAuth": "bearer"}, map[string]string{"jaegerBearerToken": "s3cret-token"})
	status, body := traceResource(t, ds, "trace-services")
	if hits := canary.take(); len(hits) > 0 {
		t.Errorf("the plugin followed the redirect to another host: %+v", hits)
	}
	t.Logf("refused: %s", body)
	if status == http.StatusOK || !strings.Contains(body, "Jaeger") || !strings.Contains(body, "redirected to "+canaryURL) {
		t.Errorf("HTTP %d %s, want an error naming Jaeger and where it redirects", status, body)
	}

	// Within the upstream's own address a redirect is followed: a server may move its API.
	var moved *httptest.Server
	moved = serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v3/services" {
			http.Redirect(w, r, moved.URL+"/moved/api/v3/services", http.StatusMovedPermanently)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"services": []string{"moved"}})
	}), nil)
	ds = newTestDatasource(t, map[string]any{"jaegerUrl": moved.URL}, nil)
	if status, body := traceResource(t, ds, "trace-services"); status != http.StatusOK || strings.TrimSpace(body) != `["moved"]` {
		t.Errorf("same-address redirect: HTTP %d %s", status, body)
	}
}

// --- Files ---

// kernelEscapeBed is a trace directory with every way out a file system offers: symlinked files
// and directories pointing outside, relative links, a directory that is itself a link, and
// marker files outside whose content must never come back.
type kernelEscapeBed struct {
	root, dir, linkedDir, outside string
	marker                        string
}

const escapeTraceID = "0af7651916cd43dd8448eb211c80319c"

// uriTrickNames are file names inside the trace directory that decode, as a SQLite URI, to the
// outside export or to options.
var uriTrickNames = []string{"x%2F..%2F..%2Foutside%2Fleak.sqlite", "q?immutable=1&vfs=unix#.sqlite"}

func newKernelEscapeBed(t *testing.T) kernelEscapeBed {
	t.Helper()
	root := t.TempDir()
	k := kernelEscapeBed{root: root, dir: filepath.Join(root, "profiles"), outside: filepath.Join(root, "outside"),
		linkedDir: filepath.Join(root, "profiles-link"), marker: "OUTSIDE_MARKER_7f3a"}
	writeFile(t, filepath.Join(k.dir, "inside.json"), kinetoTrace("inside"))
	// Outside: a Chrome trace and an Nsight export whose kernels are named by the marker, one
	// named for the trace ID so a search by ID would pick it.
	leak := strings.ReplaceAll(kinetoTrace("request "+escapeTraceID), `"gemm"`, `"`+k.marker+`"`)
	writeFile(t, filepath.Join(k.outside, "leak.json"), leak)
	writeFile(t, filepath.Join(k.outside, "leak_"+escapeTraceID+".pt.trace.json"), leak)
	if err := testbed.WriteNsysKernel(filepath.Join(k.outside, "leak.sqlite"), k.marker); err != nil {
		t.Fatal(err)
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(k.outside, "leak.json"), filepath.Join(k.dir, "abs-link.json"))
	link("../../outside/leak.json", filepath.Join(k.dir, "sub", "rel-link.json"))
	link(filepath.Join(k.outside, "leak.sqlite"), filepath.Join(k.dir, "nsys-link.sqlite"))
	link(filepath.Join(k.outside, "leak_"+escapeTraceID+".pt.trace.json"), filepath.Join(k.dir, "req_"+escapeTraceID+".pt.trace.json"))
	link(k.outside, filepath.Join(k.dir, "dir-link"))
	link("..", filepath.Join(k.dir, "parent-link"))
	link(k.dir, k.linkedDir)
	// Names SQLite would read as a path outside or as URI options, were it handed the name
	// unescaped as a URI: they are junk files inside, and must be read as such.
	if err := os.MkdirAll(filepath.Join(k.dir, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range uriTrickNames {
		writeFile(t, filepath.Join(k.dir, name), "not an export")
	}
	return k
}

// answerText is everything a kernels answer shows: error, frames and notices.
func answerText(r backend.DataResponse) string {
	text := fmt.Sprint(r.Error)
	for _, f := range r.Frames {
		j, _ := json.Marshal(f)
		text += string(j)
	}
	return text
}

func TestBoundariesKernelFilesStayInside(t *testing.T) {
	k := newKernelEscapeBed(t)
	// The real outside export is readable: the marker test below can fail.
	if res := answerText(runKernels(t, newTestDatasource(t, map[string]any{"traceDirectories": []string{k.outside}}, nil),
		`{"queryType":"kernels","file":"leak.sqlite"}`)); !strings.Contains(res, k.marker) {
		t.Fatalf("the outside export itself does not show the marker: %.300s", res)
	}
	for _, dir := range []string{k.dir, k.linkedDir} {
		ds := newTestDatasource(t, map[string]any{"traceDirectories": []string{dir}}, nil)
		// Inside still works, through a linked directory too.
		if r := runKernels(t, ds, `{"queryType":"kernels","file":"inside.json"}`); r.Error != nil || r.Frames[0].Rows() != 2 {
			t.Fatalf("%s: inside.json: %v", dir, r.Error)
		}
		for _, file := range []string{
			"../outside/leak.json", "sub/../../outside/leak.json", filepath.Join(k.outside, "leak.json"), "/etc/passwd",
			"abs-link.json", "sub/rel-link.json", "nsys-link.sqlite", "req_" + escapeTraceID + ".pt.trace.json",
			"dir-link/leak.json", "dir-link/leak.sqlite", "parent-link/outside/leak.json", "..%2foutside%2fleak.json", "%2e%2e/outside/leak.json", `..\outside\leak.json`,
			"inside.json\x00.json", "inside.json/", "./../outside/leak.json", "*.json", "dir-link/*", "file://" + filepath.Join(k.outside, "leak.json"),
			strings.Repeat("a/", 600) + "x.json",
		} {
			r := runKernels(t, ds, mustJSON(t, map[string]any{"queryType": "kernels", "file": file}))
			text := answerText(r)
			if strings.Contains(text, k.marker) {
				t.Errorf("%s: file %s: the outside file's content came back", dir, short(file))
			}
			if r.Error == nil && !strings.Contains(text, "inside") {
				// Accepted only when it names a file truly inside (and then it is not the marker).
				t.Errorf("%s: file %s: no error: %.300s", dir, short(file), text)
			}
			if r.Error != nil && !strings.Contains(r.Error.Error(), "file") && !strings.Contains(r.Error.Error(), "trace") {
				t.Errorf("%s: file %s: error %q does not say which file", dir, short(file), r.Error)
			}
		}
		for _, name := range uriTrickNames {
			r := runKernels(t, ds, mustJSON(t, map[string]any{"queryType": "kernels", "file": name}))
			if text := answerText(r); strings.Contains(text, k.marker) || !strings.Contains(text, "not a readable SQLite file") {
				t.Errorf("%s: file %s: want the junk file inside read (and refused by SQLite): %.300s", dir, name, text)
			}
		}
		// By trace ID: the name and the content of the outside files name it; neither counts.
		r := runKernels(t, ds, mustJSON(t, map[string]any{"queryType": "kernels", "traceId": escapeTraceID}))
		if text := answerText(r); strings.Contains(text, k.marker) || strings.Contains(text, "leak") {
			t.Errorf("%s: traceId: an outside file was used: %.400s", dir, text)
		}
		for _, id := range []string{"*", "0af7651916cd43dd*", "../outside", escapeTraceID + "/../x", "leak", escapeTraceID[:31] + "?"} {
			r := runKernels(t, ds, mustJSON(t, map[string]any{"queryType": "kernels", "traceId": id}))
			if r.Error == nil || !strings.Contains(r.Error.Error(), `"traceId"`) {
				t.Errorf("%s: traceId %q: error %v, want one naming traceId", dir, id, r.Error)
			}
		}
		// The listing and the search by trace ID leave out every link that leaves the directory.
		for q, want := range map[string][]string{"": append([]string{"inside.json"}, uriTrickNames...), "?traceId=" + escapeTraceID: {}} {
			status, body := traceResource(t, ds, "kernel-files"+q)
			var got struct{ Files []gputrace.TraceFile }
			if err := json.Unmarshal([]byte(body), &got); status != 200 || err != nil {
				t.Fatalf("%s: kernel-files%s: HTTP %d %s", dir, q, status, body)
			}
			names := []string{}
			for _, f := range got.Files {
				names = append(names, f.Rel)
			}
			slices.Sort(names)
			slices.Sort(want)
			if !slices.Equal(names, want) {
				t.Errorf("%s: kernel-files%s listed %q, want exactly %q", dir, q, names, want)
			}
		}
		for _, id := range []string{"../x", "*", escapeTraceID + "/..", "http://x/" + escapeTraceID} {
			status, body := traceResource(t, ds, "kernel-files?traceId="+url.QueryEscape(id))
			if status != 400 || !strings.Contains(body, `\"traceId\"`) {
				t.Errorf("%s: kernel-files?traceId=%q: HTTP %d %s, want 400 naming traceId", dir, id, status, body)
			}
		}
	}
}

// A configured directory that is a link is resolved at each query: repointing the link changes
// which directory is read, and file names are checked against where it points now (here sub/,
// whose rel-link.json leads outside).
func TestBoundariesKernelFilesDirectoryLinkRepointed(t *testing.T) {
	k := newKernelEscapeBed(t)
	ds := newTestDatasource(t, map[string]any{"traceDirectories": []string{k.linkedDir}}, nil)
	if err := os.Remove(k.linkedDir); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(k.dir, "sub"), k.linkedDir); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{"rel-link.json", "../inside.json", "../abs-link.json"} {
		r := runKernels(t, ds, mustJSON(t, map[string]any{"queryType": "kernels", "file": file}))
		if text := answerText(r); r.Error == nil || strings.Contains(text, k.marker) {
			t.Errorf("file %s: error %v, %.200s", file, r.Error, text)
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The check of a file swapped after it was listed is TestStoreFileSwappedAfterItsChecks in
// pkg/gputrace, beside the store that reads through an os.Root.
