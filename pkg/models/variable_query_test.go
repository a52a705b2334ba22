package models

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestVariableGrammarAcceptsEachForm(t *testing.T) {
	cases := []struct {
		query string
		want  VariableQuery
	}{
		{"profile_types()", VariableQuery{Function: "profile_types", Selector: "{}"}},
		{"  services ( )  ", VariableQuery{Function: "services", Selector: "{}"}},
		{"label_names()", VariableQuery{Function: "label_names", Selector: "{}"}},
		{`label_names({service_name="ai-detector"})`, VariableQuery{Function: "label_names", Selector: `{service_name="ai-detector"}`}},
		{"label_names( {} )", VariableQuery{Function: "label_names", Selector: "{}"}},
		{"label_values(service_name)", VariableQuery{Function: "label_values", Selector: "{}", Label: "service_name"}},
		{`label_values( "span_name" )`, VariableQuery{Function: "label_values", Selector: "{}", Label: "span_name"}},
		{`label_values({service_name=~"ai-.*"}, span_name)`, VariableQuery{Function: "label_values", Selector: `{service_name=~"ai-.*"}`, Label: "span_name"}},
		// A comma, a closing brace and an escaped quote inside the selector's values stay in it.
		{`label_values({span_name=~"a{2},b", host=~'x}'}, service_name)`, VariableQuery{Function: "label_values", Selector: `{span_name=~"a{2},b", host=~'x}'}`, Label: "service_name"}},
		{`label_values({span_name="say \"hi\""},span_name)`, VariableQuery{Function: "label_values", Selector: `{span_name="say \"hi\""}`, Label: "span_name"}},
		{"trace_services()", VariableQuery{Function: "trace_services", Selector: "{}"}},
		{"trace_operations(nemotron-backend)", VariableQuery{Function: "trace_operations", Selector: "{}", Service: "nemotron-backend"}},
		{"trace_ids(nemotron-backend)", VariableQuery{Function: "trace_ids", Selector: "{}", Service: "nemotron-backend"}},
		{"trace_ids(checkout.v2, 1.5s)", VariableQuery{Function: "trace_ids", Selector: "{}", Service: "checkout.v2", MinDuration: 1500 * time.Millisecond}},
		{`trace_ids("my service", "250ms")`, VariableQuery{Function: "trace_ids", Selector: "{}", Service: "my service", MinDuration: 250 * time.Millisecond}},
		{`trace_ids('it\'s', 500us)`, VariableQuery{Function: "trace_ids", Selector: "{}", Service: "it's", MinDuration: 500 * time.Microsecond}},
		{"trace_ids(svc,1m)", VariableQuery{Function: "trace_ids", Selector: "{}", Service: "svc", MinDuration: time.Minute}},
		{"gpu_label_values(host)", VariableQuery{Function: "gpu_label_values", Selector: "{}", Role: "host"}},
		{`gpu_label_values(gpu, "gpu-node-1|fixture-node-a")`, VariableQuery{Function: "gpu_label_values", Selector: "{}", Role: "gpu", Hosts: []string{"gpu-node-1", "fixture-node-a"}}},
	}
	for _, c := range cases {
		got, err := ParseVariableQuery(c.query)
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
		{"", "is empty; expected profile_types() or services() or label_names() or label_names({selector}) or label_values(label) or label_values({selector}, label) or trace_services() or trace_operations(service) or trace_ids(service) or trace_ids(service, minDuration) or gpu_label_values(role) or gpu_label_values(role, host)"},
		{"trace_operations()", "at position 18: missing the service; expected trace_operations(service)"},
		{"trace_operations(a, b)", "at position 21: too many arguments: trace_operations takes at most 1"},
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
		_, err := ParseVariableQuery(c.query)
		if err == nil {
			t.Errorf("%q: accepted, want an error containing %q", c.query, c.want)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q:\n got  %v\n want %s", c.query, err, c.want)
		}
	}
	if _, err := ParseVariableQuery("label_values(\xff)"); err == nil || !strings.Contains(err.Error(), "not valid UTF-8") {
		t.Errorf("invalid UTF-8: %v", err)
	}
}

// FuzzParseVariableQuery feeds arbitrary text as a variable query, as a dashboard's interpolated
// variable may send anything. Whatever comes in: no panic; an error is one of the three kinds a
// user reads (empty, not UTF-8, or at a position inside the query); a query that parses holds
// what the dispatch relies on (a known function, a valid selector and label, a service).
func FuzzParseVariableQuery(f *testing.F) {
	for _, s := range []string{
		"profile_types()", "services()", `label_names({service_name="ai-detector"})`,
		`label_values({span_name=~"a{2},b", host=~'x}'}, service_name)`, `trace_ids('it\'s', 500us)`,
		"trace_ids(café, soon)", `gpu_label_values(gpu, "gpu-node-1|fixture-node-a")`, "label_values(\xff)",
		`label_values({a="b", c)`, "label_values(a)\x00", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		vq, err := ParseVariableQuery(src)
		if err != nil {
			msg := err.Error()
			var pos int
			n, _ := fmt.Sscanf(msg, "at position %d:", &pos)
			switch {
			case msg == "is not valid UTF-8", strings.HasPrefix(msg, "is empty; expected "):
			case n == 1 && pos >= 1 && pos <= utf8.RuneCountInString(src)+1:
			default:
				t.Fatalf("%q: error %q names no position inside the query", src, msg)
			}
			return
		}
		if _, ok := variableForms[vq.Function]; !ok {
			t.Fatalf("%q: accepted as unknown function %q", src, vq.Function)
		}
		if _, err := NormalizeLabelSelector("selector", vq.Selector); err != nil {
			t.Fatalf("%q: accepted selector %q: %v", src, vq.Selector, err)
		}
		switch vq.Function {
		case "label_values":
			if !ValidLabelName(vq.Label) {
				t.Fatalf("%q: accepted label %q", src, vq.Label)
			}
		case "trace_ids":
			if strings.TrimSpace(vq.Service) == "" || vq.MinDuration < 0 {
				t.Fatalf("%q: accepted service %q, min duration %v", src, vq.Service, vq.MinDuration)
			}
		case "gpu_label_values":
			if !slices.Contains(GPURoles, vq.Role) {
				t.Fatalf("%q: accepted role %q", src, vq.Role)
			}
		}
	})
}
