package tempofake

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// filter is the part of TraceQL this fake reads: one spanset filter of conditions joined by &&,
// each an attribute or intrinsic compared with a literal, optionally piped into select(...).
// Anything else is refused as Tempo refuses a query it cannot parse (HTTP 400), so a query the
// plugin starts sending that the fake does not understand fails the tests rather than being
// answered wrongly.
type filter struct {
	conds  []cond
	selAtt []attrRef // select(span.x, resource.y)
	// mostRecent is the with(most_recent=true) hint: newest traces first.
	mostRecent bool
	// metric is a TraceQL metrics function after the filter (quantile_over_time(duration, ...)
	// or count_over_time()), with its quantiles and its by(...) attributes; "" for a search.
	metric    string
	quantiles []float64
	by        []attrRef
}

// cond is `lhs op value`.
type cond struct {
	lhs   attrRef
	op    string // = != > >= < <=
	str   string // a string literal, or the status keyword (error, ok, unset)
	dur   time.Duration
	isDur bool
}

// attrRef is an intrinsic (name, duration, status, kind) or a scoped attribute (span.x,
// resource.x).
type attrRef struct {
	intrinsic string // "name", "duration", "status", "kind", or "" for an attribute
	scope     string // "span" or "resource" (an unscoped .x is not sent by the plugin)
	key       string
}

func (a attrRef) String() string {
	if a.intrinsic != "" {
		return a.intrinsic
	}
	return a.scope + "." + a.key
}

// parseTraceQL reads q as filter. The error text follows Tempo's ("invalid TraceQL query: parse
// error at line 1, col N: …").
func parseTraceQL(q string) (*filter, error) {
	p := &parser{s: q}
	f := &filter{}
	p.space()
	if !p.eat("{") {
		return nil, p.fail("a spanset filter must start with {")
	}
	p.space()
	if p.eat("}") { // { } matches every span
		return p.pipeline(f)
	}
	for {
		c, err := p.cond()
		if err != nil {
			return nil, err
		}
		f.conds = append(f.conds, c)
		p.space()
		if p.eat("}") {
			break
		}
		if !p.eat("&&") {
			return nil, p.fail("expected && or } (this fake reads only && between conditions)")
		}
		p.space()
	}
	return p.pipeline(f)
}

type parser struct {
	s   string
	pos int
}

func (p *parser) fail(msg string) error {
	return fmt.Errorf("invalid TraceQL query: parse error at line 1, col %d: %s", p.pos+1, msg)
}

func (p *parser) space() {
	for p.pos < len(p.s) && unicode.IsSpace(rune(p.s[p.pos])) {
		p.pos++
	}
}

func (p *parser) eat(tok string) bool {
	if strings.HasPrefix(p.s[p.pos:], tok) {
		p.pos += len(tok)
		return true
	}
	return false
}

func (p *parser) pipeline(f *filter) (*filter, error) {
	// Hints come last: `with (most_recent=true)`, the one hint this fake reads.
	if at := strings.LastIndex(p.s, " with ("); at >= p.pos {
		hint := strings.Join(strings.Fields(p.s[at:]), "")
		if hint != "with(most_recent=true)" {
			return nil, p.fail("this fake reads only the hint with (most_recent=true)")
		}
		f.mostRecent = true
		p.s = p.s[:at]
	}
	p.space()
	if p.pos == len(p.s) {
		return f, nil
	}
	if !p.eat("|") {
		return nil, p.fail("unexpected text after the spanset filter")
	}
	p.space()
	switch {
	case p.eat("quantile_over_time("):
		return p.quantiles(f)
	case p.eat("count_over_time()"):
		f.metric = "count_over_time"
		return p.byClause(f)
	case !p.eat("select("):
		return nil, p.fail("this fake reads only select(...), quantile_over_time(duration, ...) and count_over_time() after |")
	}
	var err error
	if f.selAtt, err = p.attrsToEnd("select"); err != nil {
		return nil, err
	}
	return f, nil
}

// attrsToEnd reads `a, b)` after what's opening parenthesis, which must end the query.
func (p *parser) attrsToEnd(what string) ([]attrRef, error) {
	var out []attrRef
	for {
		p.space()
		a, err := p.attr()
		if err != nil {
			return nil, err
		}
		out = append(out, a)
		p.space()
		if p.eat(")") {
			break
		}
		if !p.eat(",") {
			return nil, p.fail("expected , or ) in " + what)
		}
	}
	p.space()
	if p.pos != len(p.s) {
		return nil, p.fail("unexpected text after " + what + "(...)")
	}
	return out, nil
}

// quantiles reads `duration, 0.5, 0.99) [by (...)]`.
func (p *parser) quantiles(f *filter) (*filter, error) {
	f.metric = "quantile_over_time"
	p.space()
	if !p.eat("duration") {
		return nil, p.fail("this fake takes quantiles of duration only")
	}
	for {
		p.space()
		if p.eat(")") {
			break
		}
		if !p.eat(",") {
			return nil, p.fail("expected , or ) in quantile_over_time")
		}
		p.space()
		w := p.word()
		q, err := strconv.ParseFloat(w, 64)
		if err != nil || q < 0 || q > 1 {
			return nil, p.fail(fmt.Sprintf("%q is not a quantile", w))
		}
		f.quantiles = append(f.quantiles, q)
	}
	if len(f.quantiles) == 0 {
		return nil, p.fail("quantile_over_time needs at least one quantile")
	}
	return p.byClause(f)
}

// byClause reads an optional ` by (a, b)` to the end.
func (p *parser) byClause(f *filter) (*filter, error) {
	p.space()
	if p.pos == len(p.s) {
		return f, nil
	}
	if !p.eat("by") {
		return nil, p.fail("unexpected text after the metrics function")
	}
	p.space()
	if !p.eat("(") {
		return nil, p.fail("expected ( after by")
	}
	var err error
	if f.by, err = p.attrsToEnd("by"); err != nil {
		return nil, err
	}
	return f, nil
}

func (p *parser) word() string {
	start := p.pos
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '.' || c == '_' || c == '-' || c == '/' || unicode.IsLetter(rune(c)) || unicode.IsDigit(rune(c)) {
			p.pos++
			continue
		}
		break
	}
	return p.s[start:p.pos]
}

func (p *parser) attr() (attrRef, error) {
	w := p.word()
	switch {
	case w == "name" || w == "duration" || w == "status" || w == "kind":
		return attrRef{intrinsic: w}, nil
	case strings.HasPrefix(w, "span.") && len(w) > 5:
		return attrRef{scope: "span", key: w[5:]}, nil
	case strings.HasPrefix(w, "resource.") && len(w) > 9:
		return attrRef{scope: "resource", key: w[9:]}, nil
	}
	return attrRef{}, p.fail(fmt.Sprintf("%q is not an attribute this fake reads (name, duration, status, span.x, resource.x)", w))
}

func (p *parser) cond() (cond, error) {
	a, err := p.attr()
	if err != nil {
		return cond{}, err
	}
	p.space()
	c := cond{lhs: a}
	for _, op := range []string{">=", "<=", "!=", "=", ">", "<"} {
		if p.eat(op) {
			c.op = op
			break
		}
	}
	if c.op == "" {
		return cond{}, p.fail("expected a comparison")
	}
	p.space()
	switch {
	case a.intrinsic == "duration":
		w := p.word()
		d, err := time.ParseDuration(w)
		if err != nil {
			return cond{}, p.fail(fmt.Sprintf("%q is not a duration", w))
		}
		c.dur, c.isDur = d, true
	case a.intrinsic == "kind":
		c.str = p.word()
		if !slices.Contains([]string{"server", "client", "internal", "producer", "consumer", "unspecified"}, c.str) {
			return cond{}, p.fail(fmt.Sprintf("%q is not a span kind", c.str))
		}
		if c.op != "=" && c.op != "!=" {
			return cond{}, p.fail("kind compares with = or != only")
		}
	case a.intrinsic == "status":
		c.str = p.word()
		if c.str != "error" && c.str != "ok" && c.str != "unset" {
			return cond{}, p.fail(fmt.Sprintf("%q is not a status", c.str))
		}
		if c.op != "=" && c.op != "!=" {
			return cond{}, p.fail("status compares with = or != only")
		}
	default:
		if p.pos >= len(p.s) || p.s[p.pos] != '"' {
			return cond{}, p.fail("this fake compares names and attributes with string literals only")
		}
		rest := p.s[p.pos:]
		lit, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return cond{}, p.fail("unterminated string")
		}
		p.pos += len(lit)
		c.str, _ = strconv.Unquote(lit)
		if c.op != "=" && c.op != "!=" {
			return cond{}, p.fail("strings compare with = or != only in this fake")
		}
	}
	return c, nil
}

// matches says whether the span (with its resource) meets every condition.
func (f *filter) matches(res pcommon.Resource, s ptrace.Span) bool {
	for _, c := range f.conds {
		if !c.matches(res, s) {
			return false
		}
	}
	return true
}

func (c cond) matches(res pcommon.Resource, s ptrace.Span) bool {
	switch c.lhs.intrinsic {
	case "duration":
		d := s.EndTimestamp().AsTime().Sub(s.StartTimestamp().AsTime())
		switch c.op {
		case ">=":
			return d >= c.dur
		case ">":
			return d > c.dur
		case "<=":
			return d <= c.dur
		case "<":
			return d < c.dur
		case "=":
			return d == c.dur
		}
		return d != c.dur
	case "status":
		var st string
		switch s.Status().Code() {
		case ptrace.StatusCodeError:
			st = "error"
		case ptrace.StatusCodeOk:
			st = "ok"
		default:
			st = "unset"
		}
		return (st == c.str) == (c.op == "=")
	case "name":
		return (s.Name() == c.str) == (c.op == "=")
	case "kind":
		return (kindOf(s) == c.str) == (c.op == "=")
	}
	v, ok := lookup(c.lhs, res, s)
	if !ok {
		return false // TraceQL: a missing attribute matches neither = nor !=
	}
	return (v == c.str) == (c.op == "=")
}

// kindOf is the span's kind as TraceQL spells it.
func kindOf(s ptrace.Span) string {
	switch s.Kind() {
	case ptrace.SpanKindServer:
		return "server"
	case ptrace.SpanKindClient:
		return "client"
	case ptrace.SpanKindInternal:
		return "internal"
	case ptrace.SpanKindProducer:
		return "producer"
	case ptrace.SpanKindConsumer:
		return "consumer"
	}
	return "unspecified"
}

// value is what a by(...) attribute or intrinsic holds for the span, false when nothing.
func value(a attrRef, res pcommon.Resource, s ptrace.Span) (string, bool) {
	switch a.intrinsic {
	case "name":
		return s.Name(), true
	case "kind":
		return kindOf(s), true
	case "":
		return lookup(a, res, s)
	}
	return "", false
}

// lookup is a scoped attribute's value as a string.
func lookup(a attrRef, res pcommon.Resource, s ptrace.Span) (string, bool) {
	attrs := s.Attributes()
	if a.scope == "resource" {
		attrs = res.Attributes()
	}
	v, ok := attrs.Get(a.key)
	if !ok {
		return "", false
	}
	return v.AsString(), true
}
