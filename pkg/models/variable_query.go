package models

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Template variable queries. Grafana's metricFindQuery sends the variable's query text, already
// interpolated, to the plugin's GET /variable, which parses it here and runs it. The query
// language is a few Prometheus-style functions:
//
//	profile_types()                    Pyroscope's profile types: text "name - sample type", value the ID
//	services()                         Pyroscope's service_name values
//	label_names()                      Pyroscope's label names (internal __...__ ones hidden)
//	label_names({selector})            ... of the series matching the selector
//	label_values(label)                the values of one label
//	label_values({selector}, label)    ... among the series matching the selector
//	trace_services()                   Jaeger's services
//	trace_operations(service)          the service's operations (span names), as Jaeger lists them
//	trace_ids(service)                 the service's traces, slowest first: text
//	trace_ids(service, minDuration)    "<traceId> · <root operation> · <duration>", value the ID
//	gpu_label_values(role)             GPU hosts, indexes, models, ... from the DCGM series (role:
//	gpu_label_values(role, host)       host, gpu, uuid, model, pod, namespace, container, mig),
//	                                   optionally of one host (several: a regex-free list "a|b")
//
// Arguments other than selectors are bare words (nemotron-backend, 500ms) or quoted strings
// ("my service"). Whitespace is free between tokens.

// variableForms are the accepted forms of each function, quoted in parse errors.
var variableForms = map[string][]string{
	"profile_types":    {"profile_types()"},
	"services":         {"services()"},
	"label_names":      {"label_names()", "label_names({selector})"},
	"label_values":     {"label_values(label)", "label_values({selector}, label)"},
	"trace_services":   {"trace_services()"},
	"trace_operations": {"trace_operations(service)"},
	"trace_ids":        {"trace_ids(service)", "trace_ids(service, minDuration)"},
	"gpu_label_values": {"gpu_label_values(role)", "gpu_label_values(role, host)"},
}

// variableFunctions lists the functions in the order messages name them.
var variableFunctions = []string{"profile_types", "services", "label_names", "label_values", "trace_services", "trace_operations", "trace_ids", "gpu_label_values"}

// VariableQuery is a parsed variable query.
type VariableQuery struct {
	Function    string
	Selector    string // label_names, label_values: "{}" when not given
	Label       string // label_values
	Service     string // trace_ids, trace_operations
	MinDuration time.Duration
	Role        string   // gpu_label_values
	Hosts       []string // gpu_label_values: the hosts it is scoped to
}

// UsesJaeger says which upstream the function reads, and so which default time window applies.
func (v VariableQuery) UsesJaeger() bool {
	return v.Function == "trace_services" || v.Function == "trace_operations" || v.Function == "trace_ids"
}

// UsesPrometheus says whether the function reads the GPU series.
func (v VariableQuery) UsesPrometheus() bool { return v.Function == "gpu_label_values" }

// Tokens of the variable query language.
type tokenKind int

const (
	tokEOF tokenKind = iota
	tokWord
	tokString
	tokSelector
	tokLParen
	tokRParen
	tokComma
)

func (k tokenKind) String() string {
	return [...]string{"the end of the query", "a word", "a quoted string", "a selector", `"("`, `")"`, `","`}[k]
}

type token struct {
	kind tokenKind
	text string // words: as written; strings: unquoted; selectors: with their braces
	pos  int    // 1-based character position, as people count
}

// varError is a parse error at a position, with the forms the user may have meant.
func varError(pos int, forms []string, format string, args ...any) error {
	msg := fmt.Sprintf("at position %d: %s", pos, fmt.Sprintf(format, args...))
	if len(forms) > 0 {
		msg += "; expected " + strings.Join(forms, " or ")
	}
	return errors.New(msg)
}

// allForms lists every form, for errors that happen before the function is known.
func allForms() []string {
	var forms []string
	for _, f := range variableFunctions {
		forms = append(forms, variableForms[f]...)
	}
	return forms
}

// lexer splits a query into tokens; it works on runes so positions count characters.
type lexer struct {
	src []rune
	i   int
}

func (l *lexer) next() (token, error) {
	for l.i < len(l.src) && unicode.IsSpace(l.src[l.i]) {
		l.i++
	}
	pos := l.i + 1
	if l.i >= len(l.src) {
		return token{kind: tokEOF, pos: pos}, nil
	}
	c := l.src[l.i]
	switch {
	case c == '(':
		l.i++
		return token{kind: tokLParen, text: "(", pos: pos}, nil
	case c == ')':
		l.i++
		return token{kind: tokRParen, text: ")", pos: pos}, nil
	case c == ',':
		l.i++
		return token{kind: tokComma, text: ",", pos: pos}, nil
	case c == '"' || c == '\'':
		return l.quoted(pos)
	case c == '{':
		return l.selector(pos)
	case isWordRune(c):
		start := l.i
		for l.i < len(l.src) && isWordRune(l.src[l.i]) {
			l.i++
		}
		return token{kind: tokWord, text: string(l.src[start:l.i]), pos: pos}, nil
	}
	return token{}, varError(pos, nil, "unexpected %q", string(c))
}

// isWordRune allows what service names, label names and durations are made of (ai-detector,
// checkout.v2, 1.5s, 500µs) without quotes.
func isWordRune(c rune) bool {
	return unicode.IsLetter(c) || unicode.IsDigit(c) || strings.ContainsRune("_-.:/@", c)
}

// quoted reads a "double" or 'single' quoted string, in which a backslash takes the next
// character literally (\" or \' for a quote, \\ for a backslash).
func (l *lexer) quoted(pos int) (token, error) {
	quote := l.src[l.i]
	var b strings.Builder
	for l.i++; l.i < len(l.src); l.i++ {
		c := l.src[l.i]
		switch {
		case c == '\\' && l.i+1 < len(l.src):
			l.i++
			b.WriteRune(l.src[l.i])
		case c == quote:
			l.i++
			return token{kind: tokString, text: b.String(), pos: pos}, nil
		default:
			b.WriteRune(c)
		}
	}
	return token{}, varError(pos, nil, "the string opened here is never closed with %c", quote)
}

// selector reads {...} up to the matching brace, skipping braces inside quoted values (a regex
// such as "a{2}" may contain them). The PromQL parser then checks it.
func (l *lexer) selector(pos int) (token, error) {
	start := l.i
	var quote rune
	for l.i++; l.i < len(l.src); l.i++ {
		c := l.src[l.i]
		switch {
		case quote != 0 && c == '\\':
			l.i++
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '}':
			l.i++
			return token{kind: tokSelector, text: string(l.src[start:l.i]), pos: pos}, nil
		}
	}
	return token{}, varError(pos, nil, `the selector opened here is never closed with "}"`)
}

// ParseVariableQuery parses and checks one variable query. Errors give the 1-based character
// position and the forms the user may have meant; the caller names the parameter.
func ParseVariableQuery(src string) (VariableQuery, error) {
	if !utf8.ValidString(src) {
		return VariableQuery{}, errors.New("is not valid UTF-8")
	}
	if strings.TrimSpace(src) == "" {
		return VariableQuery{}, fmt.Errorf("is empty; expected %s", strings.Join(allForms(), " or "))
	}
	l := &lexer{src: []rune(src)}
	name, err := l.next()
	if err != nil {
		return VariableQuery{}, err
	}
	if name.kind != tokWord {
		return VariableQuery{}, varError(name.pos, allForms(), "expected a function name, got %s", describe(name))
	}
	forms, ok := variableForms[name.text]
	if !ok {
		return VariableQuery{}, varError(name.pos, allForms(), "unknown function %q", name.text)
	}
	if t, err := l.next(); err != nil {
		return VariableQuery{}, err
	} else if t.kind != tokLParen {
		return VariableQuery{}, varError(t.pos, forms, `expected "(" after %s, got %s`, name.text, describe(t))
	}

	var args []token
	var closing token
	for {
		t, err := l.next()
		if err != nil {
			return VariableQuery{}, err
		}
		if t.kind == tokRParen && len(args) == 0 {
			closing = t
			break
		}
		switch t.kind {
		case tokWord, tokString, tokSelector:
			args = append(args, t)
		default:
			return VariableQuery{}, varError(t.pos, forms, "expected an argument, got %s", describe(t))
		}
		sep, err := l.next()
		if err != nil {
			return VariableQuery{}, err
		}
		if sep.kind == tokRParen {
			closing = sep
			break
		}
		if sep.kind != tokComma {
			return VariableQuery{}, varError(sep.pos, forms, `expected "," or ")" after the argument, got %s`, describe(sep))
		}
	}
	if t, err := l.next(); err != nil {
		return VariableQuery{}, err
	} else if t.kind != tokEOF {
		return VariableQuery{}, varError(t.pos, forms, "unexpected %s after the closing parenthesis", describe(t))
	}
	return checkVariableArgs(name.text, forms, args, closing)
}

// checkVariableArgs matches the arguments against the function's forms.
func checkVariableArgs(fn string, forms []string, args []token, closing token) (VariableQuery, error) {
	vq := VariableQuery{Function: fn, Selector: "{}"}
	tooMany := func(max int) error {
		if max == 0 {
			return varError(args[0].pos, forms, "%s takes no arguments", fn)
		}
		return varError(args[max].pos, forms, "too many arguments: %s takes at most %d", fn, max)
	}
	var err error
	switch fn {
	case "profile_types", "services", "trace_services":
		if len(args) > 0 {
			return vq, tooMany(0)
		}
	case "label_names":
		if len(args) > 1 {
			return vq, tooMany(1)
		}
		if len(args) == 1 {
			if vq.Selector, err = selectorArg(args[0], forms); err != nil {
				return vq, err
			}
		}
	case "label_values":
		switch {
		case len(args) == 0:
			return vq, varError(closing.pos, forms, "missing the label name")
		case len(args) > 2:
			return vq, tooMany(2)
		case len(args) == 2:
			if vq.Selector, err = selectorArg(args[0], forms); err != nil {
				return vq, err
			}
		case args[0].kind == tokSelector:
			return vq, varError(closing.pos, forms, "missing the label name after the selector")
		}
		last := args[len(args)-1]
		if last.kind == tokSelector {
			return vq, varError(last.pos, forms, "expected a label name, got a selector")
		}
		if !ValidLabelName(last.text) {
			return vq, varError(last.pos, forms, "%q is not a label name (letters, digits and _, not starting with a digit)", last.text)
		}
		vq.Label = last.text
	case "trace_operations":
		switch {
		case len(args) == 0:
			return vq, varError(closing.pos, forms, "missing the service")
		case len(args) > 1:
			return vq, tooMany(1)
		}
		if args[0].kind == tokSelector || strings.TrimSpace(args[0].text) == "" {
			return vq, varError(args[0].pos, forms, "expected a service name such as nemotron-backend, got %s", describe(args[0]))
		}
		vq.Service = args[0].text
	case "trace_ids":
		switch {
		case len(args) == 0:
			return vq, varError(closing.pos, forms, "missing the service")
		case len(args) > 2:
			return vq, tooMany(2)
		}
		if args[0].kind == tokSelector || strings.TrimSpace(args[0].text) == "" {
			return vq, varError(args[0].pos, forms, "expected a service name such as nemotron-backend, got %s", describe(args[0]))
		}
		vq.Service = args[0].text
		if len(args) == 2 {
			d, derr := time.ParseDuration(strings.TrimSpace(args[1].text))
			if args[1].kind == tokSelector || derr != nil || d <= 0 {
				return vq, varError(args[1].pos, forms, "expected a minimum duration such as 500ms or 1.5s, got %s", describe(args[1]))
			}
			vq.MinDuration = d
		}
	case "gpu_label_values":
		switch {
		case len(args) == 0:
			return vq, varError(closing.pos, forms, "missing the role (%s)", strings.Join(GPURoles, ", "))
		case len(args) > 2:
			return vq, tooMany(2)
		}
		if !slices.Contains(GPURoles, args[0].text) || args[0].kind == tokSelector {
			return vq, varError(args[0].pos, forms, "expected a role (%s), got %s", strings.Join(GPURoles, ", "), describe(args[0]))
		}
		vq.Role = args[0].text
		if len(args) == 2 {
			if args[1].kind == tokSelector {
				return vq, varError(args[1].pos, forms, "expected a host name, got %s", describe(args[1]))
			}
			// A multi-value dashboard variable arrives as "a|b" (its regex format is not used:
			// the hosts become matcher values, never a regex).
			for _, h := range strings.Split(args[1].text, "|") {
				if h = strings.TrimSpace(h); h != "" {
					vq.Hosts = append(vq.Hosts, h)
				}
			}
			// The same bounds as the query's hosts field (count, length).
			f := GPUFilter{Hosts: vq.Hosts}
			if err := f.Normalize(""); err != nil {
				return vq, varError(args[1].pos, forms, "invalid host list: %v", err)
			}
			vq.Hosts = f.Hosts
		}
	}
	return vq, nil
}

// selectorArg validates a selector argument with the query model's own check.
func selectorArg(t token, forms []string) (string, error) {
	if t.kind != tokSelector {
		return "", varError(t.pos, forms, `expected a selector such as {service_name="api"}, got %s`, describe(t))
	}
	s, err := NormalizeLabelSelector("selector", t.text)
	if err != nil {
		_, cause := ParseLabelSelector(t.text)
		return "", varError(t.pos, forms, "invalid selector %s: %v", t.text, cause)
	}
	return s, nil
}

func describe(t token) string {
	switch t.kind {
	case tokWord:
		return fmt.Sprintf("%q", t.text)
	case tokString:
		return fmt.Sprintf("the string %q", t.text)
	case tokSelector:
		return "the selector " + t.text
	}
	return t.kind.String()
}
