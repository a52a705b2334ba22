package otlptrace

import (
	"bytes"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jsonscan"
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
	s := &scanner{Scanner: jsonscan.Scanner{B: b}, failed: map[string]bool{}}
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
	s := &scanner{Scanner: jsonscan.Scanner{B: b}, failed: map[string]bool{}, cutting: true}
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
		if !s.Object(func(key []byte) bool {
			if string(key) != envelope || seen || s.Peek() != '{' {
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
	s.Space()
	return s.I == len(s.B) // no trailing data
}

// scanner walks a reply's JSON (jsonscan.Scanner). Its methods return false on anything
// FailedTraceIDs might read differently; they validate as they go, so that a true answer is
// about valid JSON.
type scanner struct {
	jsonscan.Scanner
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

// tracesData walks a TracesData object as FailedTraceIDs reads it: resourceSpans, their
// scopeSpans (and deprecatedScopeSpans), their spans.
func (s *scanner) tracesData() bool {
	return s.Object(func(key []byte) bool {
		switch string(key) {
		case "resourceSpans", "resource_spans":
			return s.Array(s.resourceSpans)
		}
		return s.Skip()
	})
}

func (s *scanner) resourceSpans() bool {
	if s.cutting {
		s.Space()
		s.cuts = append(s.cuts, resourceSpansCut{start: s.I})
	}
	ok := s.Object(func(key []byte) bool {
		switch string(key) {
		case "scopeSpans", "scope_spans", "deprecatedScopeSpans", "deprecated_scope_spans":
			return s.Array(s.scopeSpans)
		}
		return s.Skip()
	})
	if s.cutting {
		s.cuts[len(s.cuts)-1].end = s.I
	}
	return ok
}

func (s *scanner) scopeSpans() bool {
	return s.Object(func(key []byte) bool {
		if string(key) == "spans" {
			return s.Array(s.span)
		}
		return s.Skip()
	})
}

// span records the span's trace ID when its status is ERROR.
func (s *scanner) span() bool {
	var id []byte
	failed := false
	ok := s.Object(func(key []byte) bool {
		switch string(key) {
		case "traceId", "trace_id":
			if s.Peek() != '"' {
				return false
			}
			raw, escaped, ok := s.Str()
			if !ok || escaped || !traceIDText(raw) {
				return false
			}
			if !allZeros(raw) {
				id = raw
			}
			return true
		case "status":
			return s.Object(func(key []byte) bool {
				if string(key) != "code" {
					return s.Skip()
				}
				code, ok := s.statusCode()
				failed = code == 2
				return ok
			})
		}
		return s.Skip()
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
	switch c := s.Peek(); {
	case c == '"':
		raw, escaped, ok := s.Str()
		if !ok || escaped {
			return 0, false
		}
		v, known := statusCodes[string(raw)]
		return v, known
	case c == '-' || c >= '0' && c <= '9':
		text, ok := s.Number()
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
