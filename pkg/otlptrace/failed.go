package otlptrace

import (
	"bytes"

	jsoniter "github.com/json-iterator/go"
)

// ScanFailedTraceIDs is FailedTraceIDs for a reply held whole, in b: the trace IDs of its spans
// whose status is ERROR. It scans the bytes instead of decoding them: a triage's search reads a
// service's recent traces to find the few that failed, and skipping every attribute and event
// through the decoder (which makes a string of every key it passes) was a quarter of the
// plugin's CPU under load. Where envelope is set, b is an object holding the TracesData under
// that key alone (Jaeger's v3 {"result": ...}).
//
// ok is false whenever the scan is not sure to answer as FailedTraceIDs does: malformed JSON, a
// field of an unexpected type, an ID that is not hex, an unknown status name, an escaped key,
// another field beside envelope. The caller then reads the reply with FailedTraceIDs, which says
// what is wrong. FuzzScanFailedTraceIDs holds the two together.
func ScanFailedTraceIDs(b []byte, envelope string) (ids map[string]bool, ok bool) {
	s := &scanner{b: b, failed: map[string]bool{}}
	if !s.reply(envelope) {
		return nil, false
	}
	return s.failed, true
}

// ScanFailedTraces is ScanFailedTraceIDs answering besides, from the same pass, the reply cut to
// the resourceSpans that hold a span of a failed trace, as one TracesData: what ReadJSONOf reads
// of the whole reply when it keeps the failed traces, without the decoder skipping the rest (each
// resourceSpans is copied as it is, so its resource, scopes and spans read as before; a span
// without a trace ID, which the decoder refuses, is left out with the traces that did not fail).
// ok is as ScanFailedTraceIDs'.
func ScanFailedTraces(b []byte, envelope string) (ids map[string]bool, cut []byte, ok bool) {
	s := &scanner{b: b, failed: map[string]bool{}, cutting: true}
	if !s.reply(envelope) {
		return nil, nil, false
	}
	cut = append(make([]byte, 0, 1024), `{"resourceSpans":[`...)
	first := true
	for _, rs := range s.cuts {
		keep := false
		for _, id := range rs.ids {
			keep = keep || s.failed[id]
		}
		if keep {
			if !first {
				cut = append(cut, ',')
			}
			cut, first = append(cut, b[rs.start:rs.end]...), false
		}
	}
	return s.failed, append(cut, "]}"...), true
}

// reply walks the whole reply: the TracesData, in its envelope where one is named, and nothing
// after it.
func (s *scanner) reply(envelope string) bool {
	if envelope != "" {
		seen := false
		if !s.object(func(key []byte) bool {
			if string(key) != envelope || seen || s.peek() != '{' {
				return false // another field (an error), the key twice, a null result
			}
			seen = true
			return s.tracesData()
		}) || !seen {
			return false
		}
	} else if !s.tracesData() {
		return false
	}
	s.space()
	return s.i == len(s.b) // no trailing data
}

// scanner walks JSON in b from i. Its methods return false on anything FailedTraceIDs might read
// differently; they validate as they go, so that a true answer is about valid JSON.
type scanner struct {
	b      []byte
	i      int
	depth  int
	failed map[string]bool

	// cutting: each resourceSpans' bytes and trace IDs are kept in cuts (ScanFailedTraces).
	cutting bool
	cuts    []resourceSpansCut
	lower   []byte // a trace ID in lower case, reused
}

// resourceSpansCut is one resourceSpans of a reply: where its bytes are and the trace IDs of its
// spans (lower-case hex, each once in a row).
type resourceSpansCut struct {
	start, end int
	ids        []string
}

// maxScanDepth bounds nesting; deeper replies go to the decoder (whose own bound is 10,000).
const maxScanDepth = 500

func (s *scanner) space() {
	if s.i < len(s.b) && s.b[s.i] > ' ' { // compact JSON: no white space at all
		return
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek is the next byte after white space, 0 at the end.
func (s *scanner) peek() byte {
	s.space()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// null consumes a null.
func (s *scanner) null() bool {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// object walks an object (or null, which has no fields), calling field for each key with the
// scanner at its value; field must consume the value.
func (s *scanner) object(field func(key []byte) bool) bool {
	return s.members('{', '}', func() bool {
		if s.peek() != '"' {
			return false
		}
		key, escaped, ok := s.str()
		// An escaped key is read decoded by the decoder, and an empty one ends its object
		// there: leave both to it.
		if !ok || escaped || len(key) == 0 || s.peek() != ':' {
			return false
		}
		s.i++
		return field(key)
	})
}

// array walks an array (or null), calling elem with the scanner at each element.
func (s *scanner) array(elem func() bool) bool { return s.members('[', ']', elem) }

// members walks the members of the container between open and end (or null, which has none),
// calling member at each; member must consume it.
func (s *scanner) members(open, end byte, member func() bool) bool {
	switch s.peek() {
	case 'n':
		return s.null()
	case open:
	default:
		return false
	}
	if s.depth++; s.depth > maxScanDepth {
		return false
	}
	defer func() { s.depth-- }()
	s.i++
	if s.peek() == end {
		s.i++
		return true
	}
	for {
		if !member() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case end:
			s.i++
			return true
		default:
			return false
		}
	}
}

// str consumes a string at s.i (its opening quote) and returns its raw content; escaped says it
// holds escapes (then the raw content is not its text).
func (s *scanner) str() (raw []byte, escaped, ok bool) {
	start := s.i + 1
	for j := start; j < len(s.b); j++ {
		c := s.b[j]
		if !strStops[c] { // most bytes: one table look-up
			continue
		}
		switch {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], escaped, true
		case c == '\\':
			escaped = true
			if j+1 >= len(s.b) {
				return nil, false, false
			}
			switch s.b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j++
			case 'u':
				if j+5 >= len(s.b) || !isHex4(s.b[j+2:j+6]) {
					return nil, false, false
				}
				j += 5
			default:
				return nil, false, false
			}
		default: // a control character, which JSON strings may not hold
			return nil, false, false
		}
	}
	return nil, false, false
}

// strStops are the bytes a string's scan stops at: its end, an escape, a control character.
var strStops = func() (t [256]bool) {
	for c := range ' ' {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isHex4(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// number consumes a JSON number and returns its text.
func (s *scanner) number() ([]byte, bool) {
	start := s.i
	j := s.i
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	digits := func() int {
		n := 0
		for j < len(s.b) && s.b[j] >= '0' && s.b[j] <= '9' {
			j++
			n++
		}
		return n
	}
	if j < len(s.b) && s.b[j] == '0' {
		j++
	} else if digits() == 0 {
		return nil, false
	}
	if j < len(s.b) && s.b[j] == '.' {
		j++
		if digits() == 0 {
			return nil, false
		}
	}
	if j < len(s.b) && (s.b[j] == 'e' || s.b[j] == 'E') {
		j++
		if j < len(s.b) && (s.b[j] == '+' || s.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	s.i = j
	text := s.b[start:j]
	if j-start > 15 || bytes.ContainsAny(text, "eE") {
		// Valid JSON the decoder may still refuse (an exponent out of its range): judged as
		// it judges a number it skips.
		return text, decoderTakes(text)
	}
	return text, true
}

// decoderTakes says whether jsoniter skips the number, in an array as in a reply, without an
// error.
func decoderTakes(number []byte) bool {
	in := append(append(append(make([]byte, 0, len(number)+2), '['), number...), ']')
	it := jsoniter.ParseBytes(jsoniter.ConfigDefault, in)
	it.Skip()
	return it.Error == nil
}

// skip consumes any one value, checking that it is valid JSON.
func (s *scanner) skip() bool {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) bool { return s.skip() })
	case c == '[':
		return s.array(s.skip)
	case c == '"':
		_, _, ok := s.str()
		return ok
	case c == '-' || c >= '0' && c <= '9':
		_, ok := s.number()
		return ok
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.null()
	}
	return false
}

func (s *scanner) literal(word string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.i += len(word)
		return true
	}
	return false
}

// tracesData walks a TracesData object as FailedTraceIDs reads it: resourceSpans, their
// scopeSpans (and deprecatedScopeSpans), their spans.
func (s *scanner) tracesData() bool {
	return s.object(func(key []byte) bool {
		switch string(key) {
		case "resourceSpans", "resource_spans":
			return s.array(s.resourceSpans)
		}
		return s.skip()
	})
}

func (s *scanner) resourceSpans() bool {
	if s.cutting {
		s.space()
		s.cuts = append(s.cuts, resourceSpansCut{start: s.i})
	}
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "scopeSpans", "scope_spans", "deprecatedScopeSpans", "deprecated_scope_spans":
			return s.array(s.scopeSpans)
		}
		return s.skip()
	})
	if s.cutting {
		s.cuts[len(s.cuts)-1].end = s.i
	}
	return ok
}

func (s *scanner) scopeSpans() bool {
	return s.object(func(key []byte) bool {
		if string(key) == "spans" {
			return s.array(s.span)
		}
		return s.skip()
	})
}

// span records the span's trace ID when its status is ERROR.
func (s *scanner) span() bool {
	var id []byte
	failed := false
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "traceId", "trace_id":
			if s.peek() != '"' {
				return false
			}
			raw, escaped, ok := s.str()
			if !ok || escaped || !traceIDText(raw) {
				return false
			}
			if !allZeros(raw) {
				id = raw
			}
			return true
		case "status":
			return s.object(func(key []byte) bool {
				if string(key) != "code" {
					return s.skip()
				}
				code, ok := s.statusCode()
				failed = code == 2
				return ok
			})
		}
		return s.skip()
	})
	if !ok {
		return false
	}
	if id == nil {
		return true
	}
	s.lower = append(s.lower[:0], id...)
	for i, c := range s.lower {
		if c >= 'A' && c <= 'F' {
			s.lower[i] = c + 'a' - 'A'
		}
	}
	if failed {
		s.failed[string(s.lower)] = true
	}
	if s.cutting {
		// Spans of one resourceSpans are mostly one trace's: an ID is kept when it changes.
		rs := &s.cuts[len(s.cuts)-1]
		if n := len(rs.ids); n == 0 || rs.ids[n-1] != string(s.lower) {
			rs.ids = append(rs.ids, string(s.lower))
		}
	}
	return true
}

// statusCode reads a status code given as a small integer or as its OTLP name.
func (s *scanner) statusCode() (int32, bool) {
	switch c := s.peek(); {
	case c == '"':
		raw, escaped, ok := s.str()
		if !ok || escaped {
			return 0, false
		}
		v, known := statusCodes[string(raw)]
		return v, known
	case c == '-' || c >= '0' && c <= '9':
		text, ok := s.number()
		if !ok || len(text) > 9 {
			return 0, false
		}
		v := int32(0)
		for _, d := range bytes.TrimPrefix(text, []byte("-")) {
			if d < '0' || d > '9' {
				return 0, false // a fraction or an exponent: the decoder's to judge
			}
			v = 10*v + int32(d-'0')
		}
		if text[0] == '-' {
			v = -v
		}
		return v, true
	}
	return 0, false
}

// traceIDText says whether raw is a trace ID FailedTraceIDs accepts: empty, or 32 hex digits.
func traceIDText(raw []byte) bool {
	if len(raw) == 0 {
		return true
	}
	if len(raw) != 32 {
		return false
	}
	for _, c := range raw {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

func allZeros(raw []byte) bool {
	for _, c := range raw {
		if c != '0' {
			return false
		}
	}
	return true
}
