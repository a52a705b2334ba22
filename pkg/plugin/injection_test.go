package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Injection: every free-text value that ends up inside a query language (PromQL for Prometheus,
// label selectors for Pyroscope, search parameters for Jaeger) is either REJECTED with an error
// naming the field, or QUOTED: the recorded outgoing request carries it only as the exact value
// of one matcher (one URL parameter for Jaeger), and the request has the same shape (the same
// nodes, selectors and matcher names) as the one a harmless value gives. The checks parse what
// the recording fakes received with Prometheus' own parser, which Pyroscope uses too.

type outcome string

const (
	rejected outcome = "rejected"
	quoted   outcome = "quoted"
)

// attempt is one hostile value.
type attempt struct{ name, value string }

var attempts = []attempt{
	{"PromQL breakout", `"} or vector(1) or {a="`},
	{"PromQL comment", `x"} or vector(1) #`},
	{"escaped quote", `\"`},
	{"backslashes", `a\b\\`},
	{"regex", `.*`},
	{"matcher trick", `=~".+"`},
	{"Pyroscope breakout", `", __name__=~".+`},
	{"unicode", "ünïcode ✓ \u2028\u202e"},
	{"newline", "a\nb"},
	{"NUL", "a\x00b"},
	{"10k characters", strings.Repeat(`x"`, 5000)},
}

// harmless is what a value field is compared with: the request a normal value gives.
const harmless = "harmless-value"

// sent is one piece of an outgoing request that a user value can reach.
type sent struct {
	lang string // "promql" (an expression), "selector" (a label selector), "param" (a URL or protobuf field)
	key  string // the parameter or field
	text string
}

// injectionBed is the three upstreams as recording fakes, and a data source using them.
type injectionBed struct {
	ds   *Datasource
	prom *recorder
	pyro *recordingPyroscope
	jae  *jaegerFake
}

func newInjectionBed(t *testing.T, jaegerService string) *injectionBed {
	t.Helper()
	b := &injectionBed{prom: &recorder{}, pyro: &recordingPyroscope{}}
	prom := &promFake{GPUs: []fakeGPU{steadyGPU("gpu-node-1", "0", 50, 0.5, 0.2)}, Instant: demoLatencies()}
	promURL := serve(t, http.HandlerFunc(prom.serveHTTP), b.prom.wrap).URL
	tr := fakeTrace(injectionTraceID, time.Now().Add(-10*time.Minute), 100*time.Millisecond, "svc/GET /x", "svc/db")
	for i := range tr.Spans {
		tr.Spans[i].Service = jaegerService
		tr.Spans[i].Attributes["pyroscope.profile.id"] = tr.Spans[i].SpanID
	}
	b.jae = &jaegerFake{Traces: []models.Trace{tr}}
	path, h := querierv1connect.NewQuerierServiceHandler(b.pyro)
	mux := http.NewServeMux()
	mux.Handle(path, h)
	b.ds = newTestDatasource(t, map[string]any{
		"prometheusUrl": promURL, "pyroscopeUrl": serve(t, mux, nil).URL, "jaegerUrl": newJaegerFake(t, b.jae, nil).URL,
	}, nil)
	return b
}

const injectionTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"

// sent lists what the upstreams received.
func (b *injectionBed) sent() []sent {
	out := append(b.prom.sent(), b.pyro.sent()...)
	for _, u := range b.jae.Requests() {
		for k, vs := range u.Query() {
			for _, v := range vs {
				out = append(out, sent{"param", "jaeger " + k, v})
			}
		}
	}
	return out
}

// query runs one query and returns its error text ("" when it answered).
func (b *injectionBed) query(t *testing.T, model map[string]any) string {
	t.Helper()
	raw, err := json.Marshal(model)
	if err != nil {
		t.Fatal(err)
	}
	r := run(t, b.ds, query("A", string(raw))).Responses["A"]
	if r.Error != nil {
		return r.Error.Error()
	}
	return ""
}

// resource calls a resource route and returns its error text ("" on HTTP 200).
func (b *injectionBed) resource(t *testing.T, path string, params map[string]string) string {
	t.Helper()
	code, body := getResource(t, b.ds, path, params)
	if code == http.StatusOK {
		return ""
	}
	var e struct{ Error string }
	if json.Unmarshal([]byte(body), &e) != nil || e.Error == "" {
		t.Fatalf("HTTP %d without an error message: %s", code, body)
	}
	return e.Error
}

// recorder keeps the query and match[] parameters of every Prometheus request (GET or POST form).
type recorder struct {
	mu    sync.Mutex
	items []sent
}

func (rc *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, _ := url.ParseQuery(string(body))
		for k, vs := range r.URL.Query() {
			form[k] = append(form[k], vs...)
		}
		rc.mu.Lock()
		for _, q := range form["query"] {
			rc.items = append(rc.items, sent{"promql", "query", q})
		}
		for _, m := range form["match[]"] {
			rc.items = append(rc.items, sent{"selector", "match[]", m})
		}
		rc.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (rc *recorder) sent() []sent {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.items)
}

// recordingPyroscope answers every call the plugin makes with a small consistent reply and
// records the selectors, profile types, span IDs and label names it was sent.
type recordingPyroscope struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	mu    sync.Mutex
	items []sent
}

func (p *recordingPyroscope) record(selector, profileType string, spans []string, matchers ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if selector != "" {
		p.items = append(p.items, sent{"selector", "labelSelector", selector})
	}
	if profileType != "" {
		p.items = append(p.items, sent{"param", "profileTypeId", profileType})
	}
	for _, s := range spans {
		p.items = append(p.items, sent{"param", "spanSelector", s})
	}
	for _, m := range matchers {
		p.items = append(p.items, sent{"selector", "matchers", m})
	}
}

func (p *recordingPyroscope) sent() []sent {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.items)
}

var injectionGraph = &querierv1.FlameGraph{Names: []string{"total", "main"}, Levels: []*querierv1.Level{{Values: []int64{0, 10, 0, 0}}, {Values: []int64{0, 10, 10, 1}}}, Total: 10, MaxSelf: 10}

func (p *recordingPyroscope) SelectMergeStacktraces(_ context.Context, r *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	p.record(r.Msg.LabelSelector, r.Msg.ProfileTypeID, nil)
	return connect.NewResponse(&querierv1.SelectMergeStacktracesResponse{Flamegraph: injectionGraph}), nil
}

func (p *recordingPyroscope) SelectMergeSpanProfile(_ context.Context, r *connect.Request[querierv1.SelectMergeSpanProfileRequest]) (*connect.Response[querierv1.SelectMergeSpanProfileResponse], error) {
	p.record(r.Msg.LabelSelector, r.Msg.ProfileTypeID, r.Msg.SpanSelector)
	return connect.NewResponse(&querierv1.SelectMergeSpanProfileResponse{Flamegraph: injectionGraph}), nil
}

func (p *recordingPyroscope) SelectSeries(_ context.Context, r *connect.Request[querierv1.SelectSeriesRequest]) (*connect.Response[querierv1.SelectSeriesResponse], error) {
	p.record(r.Msg.LabelSelector, r.Msg.ProfileTypeID, nil)
	p.mu.Lock()
	for _, g := range r.Msg.GroupBy {
		p.items = append(p.items, sent{"param", "groupBy", g})
	}
	p.mu.Unlock()
	return connect.NewResponse(&querierv1.SelectSeriesResponse{}), nil
}

func (p *recordingPyroscope) LabelNames(_ context.Context, r *connect.Request[typesv1.LabelNamesRequest]) (*connect.Response[typesv1.LabelNamesResponse], error) {
	p.record("", "", nil, r.Msg.Matchers...)
	return connect.NewResponse(&typesv1.LabelNamesResponse{Names: []string{"service_name"}}), nil
}

func (p *recordingPyroscope) LabelValues(_ context.Context, r *connect.Request[typesv1.LabelValuesRequest]) (*connect.Response[typesv1.LabelValuesResponse], error) {
	p.record("", "", nil, r.Msg.Matchers...)
	p.mu.Lock()
	p.items = append(p.items, sent{"param", "label", r.Msg.Name})
	p.mu.Unlock()
	return connect.NewResponse(&typesv1.LabelValuesResponse{Names: []string{"svc"}}), nil
}

var injectionParser = parser.NewParser(parser.Options{})

// shapeAndValues parses one sent piece: its shape (node types, operators, functions, matcher
// names and types: everything but the values) and the matcher or parameter values.
func shapeAndValues(t *testing.T, s sent) (string, []string) {
	t.Helper()
	matchersShape := func(ms []*labels.Matcher) (string, []string) {
		var b strings.Builder
		var values []string
		for _, m := range ms {
			b.WriteString(m.Name + m.Type.String() + ",")
			values = append(values, m.Value)
		}
		return b.String(), values
	}
	switch s.lang {
	case "promql":
		e, err := injectionParser.ParseExpr(s.text)
		if err != nil {
			t.Fatalf("Prometheus was sent a query that does not parse: %v\n%s", err, s.text)
		}
		var b strings.Builder
		var values []string
		parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
			fmt.Fprintf(&b, "%T", n)
			switch n := n.(type) {
			case *parser.VectorSelector:
				sh, vs := matchersShape(n.LabelMatchers)
				b.WriteString("{" + sh + "}")
				values = append(values, vs...)
			case *parser.Call:
				b.WriteString(n.Func.Name)
			case *parser.BinaryExpr:
				b.WriteString(n.Op.String())
			case *parser.StringLiteral:
				values = append(values, n.Val)
			}
			b.WriteString(" ")
			return nil
		})
		return s.key + ":" + b.String(), values
	case "selector":
		if strings.TrimSpace(s.text) == "{}" {
			return s.key + ":{}", nil
		}
		ms, err := injectionParser.ParseMetricSelector(s.text)
		if err != nil {
			t.Fatalf("%s %q does not parse as one label selector: %v", s.key, s.text, err)
		}
		sh, vs := matchersShape(ms)
		return s.key + ":{" + sh + "}", vs
	}
	return s.key, []string{s.text}
}

func shapes(t *testing.T, ss []sent) []string {
	var out []string
	for _, s := range ss {
		sh, _ := shapeAndValues(t, s)
		out = append(out, sh)
	}
	slices.Sort(out)
	return out
}

// checkQuoted: the value reached the upstream, only as whole matcher or parameter values, and the
// requests have the shape the harmless value gives.
func checkQuoted(t *testing.T, value string, got, safe []sent) {
	t.Helper()
	found := false
	for _, s := range got {
		_, values := shapeAndValues(t, s)
		for _, v := range values {
			if v == value {
				found = true
			} else if strings.Contains(v, value) {
				t.Errorf("%s value %q holds the input but is not it", s.key, v)
			}
		}
	}
	if !found {
		t.Errorf("no request carries the value as a matcher or parameter value: %v", got)
	}
	if g, w := shapes(t, got), shapes(t, safe); !slices.Equal(g, w) {
		t.Errorf("the value changed the requests' shape:\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
	}
}

// checkRejected: a clear error naming the field, and the value sent nowhere.
func checkRejected(t *testing.T, errText, field, value string, got []sent) {
	t.Helper()
	if errText == "" {
		t.Fatalf("accepted; want an error naming %s", field)
	}
	if !strings.Contains(errText, field) {
		t.Errorf("error %q does not name %s", errText, field)
	}
	for _, s := range got {
		if strings.Contains(s.text, value) {
			t.Errorf("the rejected value still reached an upstream: %s %q", s.key, s.text)
		}
	}
}

// valueField is a field whose value is a plain value (a host, a service name, a label name).
type valueField struct {
	name  string // as the README's table names it
	field string // what the error must name
	// probe sends value through the field; it returns the answer's error text.
	probe func(t *testing.T, b *injectionBed, value string) string
	// want is the outcome for a value (most fields: one outcome for every attempt).
	want func(value string) outcome
	// jaegerService: the probe puts the value in the Jaeger trace's service name instead.
	jaegerService bool
	// sentAs is the whole value the probe gives the field (default: the value itself).
	sentAs func(value string) string
}

func always(o outcome) func(string) outcome { return func(string) outcome { return o } }

// quotedUpTo: quoted, but values over n bytes are rejected.
func quotedUpTo(n int) func(string) outcome {
	return func(v string) outcome {
		if len(v) > n {
			return rejected
		}
		return quoted
	}
}

// singleLineUpTo: quoted, but multi-line, NUL-holding or longer than n bytes values are rejected.
func singleLineUpTo(n int) func(string) outcome {
	return func(v string) outcome {
		if len(v) > n || strings.ContainsAny(v, "\r\n\x00") {
			return rejected
		}
		return quoted
	}
}

func injectionGPUQuery(queryType, field, value string) map[string]any {
	return map[string]any{"queryType": queryType, field: []string{value}}
}

// quoteArg writes value as a quoted argument of a template variable query.
func quoteArg(value string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value) + `"`
}

var valueFields = []valueField{
	{name: "gpuMetrics hosts", field: `"hosts"`, want: quotedUpTo(256), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, injectionGPUQuery("gpuMetrics", "hosts", v))
	}},
	{name: "gpuMetrics gpus (UUIDs)", field: `"gpus"`, want: quotedUpTo(256), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, injectionGPUQuery("gpuMetrics", "gpus", v))
	}},
	{name: "gpuMetrics models", field: `"models"`, want: quotedUpTo(256), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, injectionGPUQuery("gpuMetrics", "models", v))
	}},
	{name: "gpuMetrics pods", field: `"pods"`, want: quotedUpTo(256), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, injectionGPUQuery("gpuMetrics", "pods", v))
	}},
	{name: "gpuMetrics namespaces", field: `"namespaces"`, want: quotedUpTo(256), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, injectionGPUQuery("gpuMetrics", "namespaces", v))
	}},
	{name: "gpuClass hosts", field: `"hosts"`, want: quotedUpTo(256), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, injectionGPUQuery("gpuClass", "hosts", v))
	}},
	{name: "slowRequests service (PromQL and Jaeger search)", field: `"service"`, want: singleLineUpTo(512), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, map[string]any{"queryType": "slowRequests", "service": v})
	}},
	{name: "slowRequests endpoint (PromQL and Jaeger operation)", field: `"endpoint"`, want: singleLineUpTo(512), probe: func(t *testing.T, b *injectionBed, v string) string {
		// A space-free endpoint is also searched as "GET <endpoint>" and "POST <endpoint>":
		// a value with a space is one operation, so the value is searched exactly.
		return b.query(t, map[string]any{"queryType": "slowRequests", "service": "svc", "endpoint": "GET " + v})
	}, sentAs: func(v string) string { return "GET " + v }},
	{name: "tail service (Jaeger search)", field: `"service"`, want: singleLineUpTo(512), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, map[string]any{"queryType": "tail", "service": v, "operation": "POST /v1/chat"})
	}},
	{name: "tail operation (Jaeger search)", field: `"operation"`, want: singleLineUpTo(512), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, map[string]any{"queryType": "tail", "service": "svc", "operation": "POST " + v})
	}, sentAs: func(v string) string { return "POST " + v }},
	{name: "profile profileTypeId (its own protobuf field)", field: `"profileTypeId"`, want: always(quoted), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, map[string]any{"queryType": "profile", "profileTypeId": "process_cpu:cpu:nanoseconds:cpu:" + v})
	}, sentAs: func(v string) string { return "process_cpu:cpu:nanoseconds:cpu:" + v }},
	{name: "metrics groupBy", field: `"groupBy"`, want: always(rejected), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, map[string]any{"queryType": "metrics", "groupBy": []string{v}})
	}},
	{name: "profile spanSelector", field: `"spanSelector"`, want: always(rejected), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, map[string]any{"queryType": "profile", "spanSelector": []string{v}})
	}},
	{name: "profile traceId", field: `"traceId"`, want: always(rejected), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, map[string]any{"queryType": "profile", "traceId": v})
	}},
	{name: "diff baseline.traceId", field: `"baseline.traceId"`, want: always(rejected), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, map[string]any{"queryType": "diff", "baseline": map[string]any{"traceId": v}})
	}},
	{name: "trace traceId", field: `"traceId"`, want: always(rejected), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.query(t, map[string]any{"queryType": "trace", "traceId": v})
	}},
	{name: "Jaeger span service name (profile traceId, perService)", field: "", want: always(quoted), jaegerService: true, probe: func(t *testing.T, b *injectionBed, _ string) string {
		return b.query(t, map[string]any{"queryType": "profile", "traceId": injectionTraceID, "perService": true})
	}},
	{name: "resource /label-values label", field: `parameter "label"`, want: always(rejected), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.resource(t, "/label-values", map[string]string{"label": v})
	}},
	{name: "resource /traces service", field: `"service"`, want: singleLineUpTo(512), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.resource(t, "/traces", map[string]string{"service": v})
	}},
	{name: "resource /traces operation", field: `"operation"`, want: singleLineUpTo(512), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.resource(t, "/traces", map[string]string{"service": "svc", "operation": v})
	}},
	{name: "resource /gpu-label-values hosts", field: `"hosts"`, want: quotedUpTo(256), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.resource(t, "/gpu-label-values", map[string]string{"role": "gpu", "hosts": v})
	}},
	{name: "variable label_values(label)", field: `parameter "query"`, want: always(rejected), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.resource(t, "/variable", map[string]string{"query": "label_values(" + quoteArg(v) + ")"})
	}},
	{name: "variable trace_ids(service)", field: `parameter "query"`, want: always(quoted), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.resource(t, "/variable", map[string]string{"query": "trace_ids(" + quoteArg(v) + ")"})
	}},
	{name: "variable gpu_label_values(role, host)", field: `parameter "query"`, want: quotedUpTo(256), probe: func(t *testing.T, b *injectionBed, v string) string {
		return b.resource(t, "/variable", map[string]string{"query": "gpu_label_values(gpu, " + quoteArg(v) + ")"})
	}},
}

func TestInjectionInValueFields(t *testing.T) {
	for _, f := range valueFields {
		t.Run(f.name, func(t *testing.T) {
			safeBed := newInjectionBed(t, harmless)
			f.probe(t, safeBed, harmless)
			safe := safeBed.sent()
			for _, a := range attempts {
				want := f.want(a.value)
				t.Run(a.name+" "+string(want), func(t *testing.T) {
					service := harmless
					if f.jaegerService {
						service = a.value
					}
					b := newInjectionBed(t, service)
					errText := f.probe(t, b, a.value)
					got := b.sent()
					if want == rejected {
						checkRejected(t, errText, f.field, a.value, got)
						return
					}
					if errText != "" {
						t.Fatalf("answered an error: %s", errText)
					}
					whole := a.value
					if f.sentAs != nil {
						whole = f.sentAs(a.value)
					}
					checkQuoted(t, whole, got, safe)
				})
			}
		})
	}
}

// selectorAttempt is a whole label selector given where the plugin accepts one.
type selectorAttempt struct {
	name     string
	selector string
	want     outcome
	value    string // quoted: the hostile value the selector's matcher must carry exactly
}

var selectorAttempts = []selectorAttempt{
	{"or another selector", `{service_name="a"} or {service_name=~".+"}`, rejected, ""},
	{"or vector", `{service_name="a"} or vector(1)`, rejected, ""},
	{"two selectors", `{service_name="a"}, {b="c"}`, rejected, ""},
	{"second line", "{service_name=\"a\"}\n{b=\"c\"}", rejected, ""},
	{"closing early", `{service_name="a"}}`, rejected, ""},
	{"unclosed value", `{service_name="a`, rejected, ""},
	{"Pyroscope breakout text", `{service_name="", __name__=~".+"`, rejected, ""},
	{"a function", `sum({service_name="a"})`, rejected, ""},
	{"hostile value, quoted", `{service_name="\"} or vector(1) or {a=\""}`, quoted, `"} or vector(1) or {a="`},
	{"hostile value with a matcher trick, quoted", `{service_name="\", __name__=~\".+"}`, quoted, `", __name__=~".+`},
}

// selectorField is a field whose value is a label selector.
type selectorField struct {
	name, field string
	probe       func(t *testing.T, b *injectionBed, selector string) string
	// metricName: __name__ matchers are rejected (gpuSelector: the catalogue picks the metric).
	metricName bool
}

var selectorFields = []selectorField{
	{name: "profile labelSelector", field: `"labelSelector"`, probe: func(t *testing.T, b *injectionBed, s string) string {
		return b.query(t, map[string]any{"queryType": "profile", "labelSelector": s})
	}},
	{name: "metrics labelSelector", field: `"labelSelector"`, probe: func(t *testing.T, b *injectionBed, s string) string {
		return b.query(t, map[string]any{"queryType": "metrics", "labelSelector": s})
	}},
	{name: "diff comparison.labelSelector", field: `"comparison.labelSelector"`, probe: func(t *testing.T, b *injectionBed, s string) string {
		return b.query(t, map[string]any{"queryType": "diff", "baseline": map[string]any{"from": "now-2h", "to": "now-1h"},
			"comparison": map[string]any{"labelSelector": s}})
	}},
	{name: "gpuMetrics gpuSelector", field: `"gpuSelector"`, metricName: true, probe: func(t *testing.T, b *injectionBed, s string) string {
		return b.query(t, map[string]any{"queryType": "gpuMetrics", "gpuSelector": s})
	}},
	{name: "resource /label-names selector", field: `parameter "selector"`, probe: func(t *testing.T, b *injectionBed, s string) string {
		return b.resource(t, "/label-names", map[string]string{"selector": s})
	}},
	{name: "resource /label-values selector", field: `parameter "selector"`, probe: func(t *testing.T, b *injectionBed, s string) string {
		return b.resource(t, "/label-values", map[string]string{"selector": s, "label": "service_name"})
	}},
	{name: "variable label_values({selector}, label)", field: `parameter "query"`, probe: func(t *testing.T, b *injectionBed, s string) string {
		return b.resource(t, "/variable", map[string]string{"query": "label_values(" + s + ", service_name)"})
	}},
}

func TestInjectionInSelectorFields(t *testing.T) {
	for _, f := range selectorFields {
		t.Run(f.name, func(t *testing.T) {
			label := func(s string) string {
				if f.metricName {
					// gpuSelector matches labels other than the roles'; same attempts on "cluster".
					return strings.ReplaceAll(s, "service_name", "cluster")
				}
				return s
			}
			safeBed := newInjectionBed(t, harmless)
			f.probe(t, safeBed, label(`{service_name="`+harmless+`"}`))
			safe := safeBed.sent()
			for _, a := range selectorAttempts {
				selector, value := label(a.selector), a.value
				t.Run(a.name+" "+string(a.want), func(t *testing.T) {
					b := newInjectionBed(t, harmless)
					errText := f.probe(t, b, selector)
					got := b.sent()
					if a.want == rejected {
						checkRejected(t, errText, f.field, selector, got)
						return
					}
					if errText != "" {
						t.Fatalf("answered an error: %s", errText)
					}
					checkQuoted(t, value, got, safe)
				})
			}
			if f.metricName {
				b := newInjectionBed(t, harmless)
				checkRejected(t, f.probe(t, b, `{__name__=~".+"}`), f.field, `__name__`, b.sent())
			}
		})
	}
}
