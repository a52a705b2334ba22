package plugin

import (
	"encoding/json"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
)

func TestVariableGrammarAcceptsEachForm(t *testing.T) {
	cases := []struct {
		query string
		want  variableQuery
	}{
		{"profile_types()", variableQuery{Function: "profile_types", Selector: "{}"}},
		{"  services ( )  ", variableQuery{Function: "services", Selector: "{}"}},
		{"label_names()", variableQuery{Function: "label_names", Selector: "{}"}},
		{`label_names({service_name="ai-detector"})`, variableQuery{Function: "label_names", Selector: `{service_name="ai-detector"}`}},
		{"label_names( {} )", variableQuery{Function: "label_names", Selector: "{}"}},
		{"label_values(service_name)", variableQuery{Function: "label_values", Selector: "{}", Label: "service_name"}},
		{`label_values( "span_name" )`, variableQuery{Function: "label_values", Selector: "{}", Label: "span_name"}},
		{`label_values({service_name=~"ai-.*"}, span_name)`, variableQuery{Function: "label_values", Selector: `{service_name=~"ai-.*"}`, Label: "span_name"}},
		// A comma, a closing brace and an escaped quote inside the selector's values stay in it.
		{`label_values({span_name=~"a{2},b", host=~'x}'}, service_name)`, variableQuery{Function: "label_values", Selector: `{span_name=~"a{2},b", host=~'x}'}`, Label: "service_name"}},
		{`label_values({span_name="say \"hi\""},span_name)`, variableQuery{Function: "label_values", Selector: `{span_name="say \"hi\""}`, Label: "span_name"}},
		{"trace_services()", variableQuery{Function: "trace_services", Selector: "{}"}},
		{"trace_ids(nemotron-backend)", variableQuery{Function: "trace_ids", Selector: "{}", Service: "nemotron-backend"}},
		{"trace_ids(checkout.v2, 1.5s)", variableQuery{Function: "trace_ids", Selector: "{}", Service: "checkout.v2", MinDuration: 1500 * time.Millisecond}},
		{`trace_ids("my service", "250ms")`, variableQuery{Function: "trace_ids", Selector: "{}", Service: "my service", MinDuration: 250 * time.Millisecond}},
		{`trace_ids('it\'s', 500us)`, variableQuery{Function: "trace_ids", Selector: "{}", Service: "it's", MinDuration: 500 * time.Microsecond}},
		{"trace_ids(svc,1m)", variableQuery{Function: "trace_ids", Selector: "{}", Service: "svc", MinDuration: time.Minute}},
		{"gpu_label_values(host)", variableQuery{Function: "gpu_label_values", Selector: "{}", Role: "host"}},
		{`gpu_label_values(gpu, "gpu-node-1|fixture-node-a")`, variableQuery{Function: "gpu_label_values", Selector: "{}", Role: "gpu", Hosts: []string{"gpu-node-1", "fixture-node-a"}}},
	}
	for _, c := range cases {
		got, err := parseVariableQuery(c.query)
		if err != nil {
			t.Errorf("%s: %v", c.query, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.query, got, c.want)
		}
	}
}

func TestVariableGrammarErrorsNameThePositionAndTheForm(t *testing.T) {
	labelValuesForms := "expected label_values(label) or label_values({selector}, label)"
	traceIDsForms := "expected trace_ids(service) or trace_ids(service, minDuration)"
	cases := []struct{ query, want string }{
		{"", "is empty; expected profile_types() or services() or label_names() or label_names({selector}) or label_values(label) or label_values({selector}, label) or trace_services() or trace_ids(service) or trace_ids(service, minDuration) or gpu_label_values(role) or gpu_label_values(role, host)"},
		{"gpu_label_values()", "at position 18: missing the role (host, gpu, uuid, model, pod, namespace, container, mig)"},
		{"gpu_label_values(hostname)", `at position 18: expected a role (host, gpu, uuid, model, pod, namespace, container, mig), got "hostname"`},
		{`gpu_label_values(gpu, {a="b"})`, `at position 23: expected a host name, got the selector {a="b"}`},
		{"   ", "is empty; expected profile_types()"},
		{"foo()", `at position 1: unknown function "foo"; expected profile_types() or services()`},
		{"  Services()", `at position 3: unknown function "Services"`},
		{"(service_name)", `at position 1: expected a function name, got "("`},
		{`"services"()`, `at position 1: expected a function name, got the string "services"`},
		{"label_values", `at position 13: expected "(" after label_values, got the end of the query; ` + labelValuesForms},
		{"label_values service_name", `at position 14: expected "(" after label_values, got "service_name"`},
		{"label_values(", "at position 14: expected an argument, got the end of the query; " + labelValuesForms},
		{"label_values()", "at position 14: missing the label name; " + labelValuesForms},
		{`label_values({service_name="a"})`, "at position 32: missing the label name after the selector"},
		{"label_values(service-name)", `at position 14: "service-name" is not a label name (letters, digits and _, not starting with a digit)`},
		{`label_values("")`, `at position 14: "" is not a label name`},
		{"label_values(9lives)", `at position 14: "9lives" is not a label name`},
		{"label_values(a b)", `at position 16: expected "," or ")" after the argument, got "b"`},
		{"label_values(a,)", `at position 16: expected an argument, got ")"`},
		{"label_values(a,,b)", `at position 16: expected an argument, got ","`},
		{"label_values(a) x", `at position 17: unexpected "x" after the closing parenthesis`},
		{"label_values(a))", `at position 16: unexpected ")" after the closing parenthesis`},
		{"label_values(a) ;", `at position 17: unexpected ";"`},
		{`label_values({a="b"}, c, d)`, "at position 26: too many arguments: label_values takes at most 2"},
		{`label_values(c, {a="b"})`, "at position 14: expected a selector such as {service_name=\"api\"}, got \"c\""},
		{`label_values({a="b"}, {c="d"})`, "at position 23: expected a label name, got a selector"},
		{`label_values({a=}, c)`, "at position 14: invalid selector {a=}: "},
		{`label_values({a="b", c)`, `at position 14: the selector opened here is never closed with "}"`},
		{"label_names(service_name)", `at position 13: expected a selector such as {service_name="api"}, got "service_name"; expected label_names() or label_names({selector})`},
		{"label_names({}, {})", "at position 17: too many arguments: label_names takes at most 1"},
		{"services(x)", "at position 10: services takes no arguments; expected services()"},
		{"profile_types({})", "at position 15: profile_types takes no arguments"},
		{"trace_services(jaeger)", "at position 16: trace_services takes no arguments"},
		{"trace_ids()", "at position 11: missing the service; " + traceIDsForms},
		{`trace_ids({service_name="a"})`, "at position 11: expected a service name such as nemotron-backend, got the selector"},
		{`trace_ids("  ")`, `at position 11: expected a service name such as nemotron-backend, got the string "  "`},
		{"trace_ids(svc, fast)", `at position 16: expected a minimum duration such as 500ms or 1.5s, got "fast"; ` + traceIDsForms},
		{"trace_ids(svc, -1s)", `at position 16: expected a minimum duration such as 500ms or 1.5s, got "-1s"`},
		{"trace_ids(svc, 0s)", `got "0s"`},
		{"trace_ids(svc, 1s, 2)", "at position 20: too many arguments: trace_ids takes at most 2"},
		{`trace_ids("svc)`, "at position 11: the string opened here is never closed with \""},
		// Positions count characters, not bytes: "é" is one.
		{"trace_ids(café, soon)", `at position 17: expected a minimum duration such as 500ms or 1.5s, got "soon"`},
		{"label_values(a)\x00", `at position 16: unexpected "\x00"`},
	}
	for _, c := range cases {
		_, err := parseVariableQuery(c.query)
		if err == nil {
			t.Errorf("%q: accepted, want an error containing %q", c.query, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got  %v\n want %s", c.query, err, c.want)
		}
	}
	if _, err := parseVariableQuery("label_values(\xff)"); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
}

func TestFormatTraceDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1234567 * time.Microsecond: "1.235s",
		850 * time.Millisecond:     "850ms",
		12345 * time.Microsecond:   "12.3ms",
		420 * time.Microsecond:     "420µs",
		0:                          "0s",
	} {
		if got := formatTraceDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}

// variable asks GET /variable and decodes the options.
func variable(t *testing.T, ds *Datasource, query string, extra map[string]string) (int, []variableValue, string) {
	t.Helper()
	params := map[string]string{"query": query}
	for k, v := range extra {
		params[k] = v
	}
	code, body := getResource(t, ds, "/variable", params)
	var values []variableValue
	if code == 200 {
		if err := json.Unmarshal([]byte(body), &values); err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
	}
	return code, values, body
}

func texts(values []variableValue) []string {
	out := []string{}
	for _, v := range values {
		out = append(out, v.Text)
	}
	return out
}

func TestVariablesAnswerFromPyroscope(t *testing.T) {
	fake := labelsFake()
	fake.profileTypes = []*typesv1.ProfileType{
		{ID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", Name: "process_cpu", SampleType: "cpu"},
		{ID: "memory:alloc_objects:count:space:bytes", Name: "memory", SampleType: "alloc_objects"},
	}
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": newSeriesPyroscope(t, fake).URL}, nil)

	code, values, body := variable(t, ds, "profile_types()", nil)
	if code != 200 || len(values) != 2 || values[0] != (variableValue{"process_cpu - cpu", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"}) ||
		values[1].Text != "memory - alloc_objects" {
		t.Errorf("profile_types: HTTP %d %s", code, body)
	}

	_, values, _ = variable(t, ds, "services()", map[string]string{"from": "1700000000000", "to": "1700000600000"})
	if want := []variableValue{{"ai-detector", "ai-detector"}, {"ai-enrichment", "ai-enrichment"}, {"nemotron-backend", "nemotron-backend"}}; !slices.Equal(values, want) {
		t.Errorf("services = %v", values)
	}
	if r := fake.valuesReqs[len(fake.valuesReqs)-1]; r.Start != 1700000000000 || r.End != 1700000600000 || r.Name != "service_name" {
		t.Errorf("services asked %+v, want the variable's range", r)
	}

	_, values, _ = variable(t, ds, `label_names({service_name="ai-detector"})`, nil)
	if got := texts(values); !slices.Equal(got, []string{"service_name", "span_name"}) {
		t.Errorf("label_names = %v", got)
	}
	if m := fake.namesReqs[len(fake.namesReqs)-1].Matchers; !slices.Equal(m, []string{`{service_name="ai-detector"}`}) {
		t.Errorf("label_names matchers = %v", m)
	}

	_, values, _ = variable(t, ds, `label_values({service_name="nemotron-backend"}, span_name)`, nil)
	if !slices.Equal(values, []variableValue{{"HTTP GET /api/detect", "HTTP GET /api/detect"}}) {
		t.Errorf("label_values = %v", values)
	}
	if r := fake.valuesReqs[len(fake.valuesReqs)-1]; r.Name != "span_name" || !slices.Equal(r.Matchers, []string{`{service_name="nemotron-backend"}`}) {
		t.Errorf("label_values asked %+v", r)
	}

	code, _, body = variable(t, ds, "label_values(nope-nope)", nil)
	if code != 400 || !strings.Contains(body, `parameter \"query\": at position 14:`) {
		t.Errorf("bad query: HTTP %d %s", code, body)
	}
	code, _, body = variable(t, ds, "label_values(span_name)", map[string]string{"to": "x"})
	if code != 400 || !strings.Contains(body, `parameter \"to\" must be Unix milliseconds`) {
		t.Errorf("bad to: HTTP %d %s", code, body)
	}
	code, values, body = variable(t, ds, "label_values(host_name)", nil)
	if code != 200 || values == nil || len(values) != 0 || strings.TrimSpace(body) != "[]" {
		t.Errorf("no values: HTTP %d %s, want []", code, body)
	}
}

func TestVariablesAnswerFromJaeger(t *testing.T) {
	now := time.Now()
	jf := &jaegerFake{Traces: []jaeger.Trace{
		fakeTrace("0af7651916cd43dd8448eb211c80319c", now.Add(-10*time.Minute), 200*time.Millisecond, "nemotron-backend/POST /api/detect", "ai-detector/predict"),
		fakeTrace("1af7651916cd43dd8448eb211c80319c", now.Add(-9*time.Minute), 3*time.Second, "nemotron-backend/POST /api/detect", "ai-enrichment/enrich"),
		fakeTrace("2af7651916cd43dd8448eb211c80319c", now.Add(-8*time.Minute), 40*time.Millisecond, "nemotron-backend/GET /health"),
	}}
	jsrv := newJaegerFake(t, jf, nil)
	ds := newTestDatasource(t, map[string]any{"jaegerUrl": jsrv.URL}, nil)

	code, values, body := variable(t, ds, "trace_services()", nil)
	if got := texts(values); code != 200 || !slices.Equal(got, []string{"ai-detector", "ai-enrichment", "nemotron-backend"}) {
		t.Errorf("trace_services: HTTP %d %s", code, body)
	}

	code, values, body = variable(t, ds, "trace_ids(nemotron-backend)", nil)
	if code != 200 || len(values) != 3 {
		t.Fatalf("trace_ids: HTTP %d %s", code, body)
	}
	// Slowest first; the root lasts its children's duration plus 1 ms per span (fakeTrace).
	want := []variableValue{
		{"1af7651916cd43dd8448eb211c80319c · POST /api/detect · 3.002s", "1af7651916cd43dd8448eb211c80319c"},
		{"0af7651916cd43dd8448eb211c80319c · POST /api/detect · 202ms", "0af7651916cd43dd8448eb211c80319c"},
		{"2af7651916cd43dd8448eb211c80319c · GET /health · 41ms", "2af7651916cd43dd8448eb211c80319c"},
	}
	if !slices.Equal(values, want) {
		t.Errorf("trace_ids =\n%v\nwant\n%v", values, want)
	}

	_, values, _ = variable(t, ds, "trace_ids(nemotron-backend, 1s)", nil)
	if len(values) != 1 || values[0].Value != "1af7651916cd43dd8448eb211c80319c" {
		t.Errorf("trace_ids with minDuration 1s = %v, want only the 3 s trace", values)
	}

	// The variable's range reaches Jaeger: a range before all traces finds none.
	old := now.Add(-48 * time.Hour).UnixMilli()
	code, values, body = variable(t, ds, "trace_ids(nemotron-backend)", map[string]string{"from": strconv.FormatInt(old, 10), "to": strconv.FormatInt(old+3600_000, 10)})
	if code != 200 || len(values) != 0 {
		t.Errorf("old range: HTTP %d %s, want no traces", code, body)
	}
}

func TestVariablesNameTheUpstreamTheyNeed(t *testing.T) {
	onlyJaeger := newTestDatasource(t, map[string]any{"jaegerUrl": closedURL(t)}, nil)
	code, _, body := variable(t, onlyJaeger, "services()", nil)
	if code != 400 || !strings.Contains(body, "Pyroscope is not configured") {
		t.Errorf("services without Pyroscope: HTTP %d %s", code, body)
	}
	code, _, body = variable(t, onlyJaeger, "trace_ids(svc)", nil)
	if code != 502 || !strings.Contains(body, "Jaeger (") {
		t.Errorf("unreachable Jaeger: HTTP %d %s", code, body)
	}
	onlyPyro := newTestDatasource(t, map[string]any{"pyroscopeUrl": closedURL(t)}, nil)
	code, _, body = variable(t, onlyPyro, "trace_services()", nil)
	if code != 400 || !strings.Contains(body, "Jaeger is not configured") || !strings.Contains(body, "jsonData.jaegerUrl") {
		t.Errorf("trace_services without Jaeger: HTTP %d %s", code, body)
	}
	code, _, body = variable(t, onlyPyro, "label_names()", nil)
	if code != 502 || !strings.Contains(body, "Pyroscope (") || !strings.Contains(body, "connection refused") {
		t.Errorf("unreachable Pyroscope: HTTP %d %s", code, body)
	}
}
