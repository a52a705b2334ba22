package otlptrace

import (
	"bytes"
	"io"
	"maps"
	"strconv"
	"time"

	jsoniter "github.com/json-iterator/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jsonscan"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// ScanJSON is ReadJSON for a reply held whole, in b: it reads the spans by a scan of the bytes
// instead of through the decoder, which makes a string of every key and value it passes. Keys,
// operation names and short attribute values repeat from span to span and are kept once
// (interned), and the spans go into one slice of their number, counted first. On a 2,000-span
// trace the decoder's strings and copies were a quarter of the `trace` query's allocations, and
// reading Jaeger's replies a fifth of the plugin's CPU under load. Where envelope is set, b is an
// object holding the TracesData under that key alone (Jaeger's v3 {"result": ...}); keep, when
// not nil, is ReadJSONOf's: the spans of the traces it says no to are left out.
//
// Array, map and bytes attribute values (Jaeger marks spans with an array, @jaeger@warnings)
// are read by the decoder's own code from their bytes. ok is false whenever the scan is not sure
// to answer as the decoder does: malformed JSON, a field of an unexpected type or null, an
// escaped key, an ID that is not hex, an unknown enum name, a span the decoder refuses,
// deprecated scope spans. The caller then reads the reply with ReadJSON (or ReadJSONOf), which
// reads those or says what is wrong. TestScanJSONAgreesOnEditedReplies holds the two together.
func ScanJSON(b []byte, envelope string, keep func(traceID string) bool) (spans []models.Span, ok bool) {
	return scanJSON(&spanScanner{Scanner: jsonscan.Scanner{B: b}, keep: keep, strs: make(map[string]string, 256)}, envelope)
}

// ScanJSONSkimming is ScanJSON reading the attributes and events only of the spans whose
// service full says yes to; the others come with their IDs, names, times and status, without
// attributes or events. A search's reply holds whole traces, and the callers that ask one
// service's spans, or summaries, read the other services' spans for their trace and times
// only; building their attributes was most of what reading a search cost. The service is known
// where a resourceSpans names its resource before its spans, as Jaeger and the OpenTelemetry
// Collector write them; where it does not, its spans are read whole. A nil full is ScanJSON's
// reading: every span whole.
func ScanJSONSkimming(b []byte, envelope string, full func(service string) bool) (spans []models.Span, ok bool) {
	return scanJSON(&spanScanner{Scanner: jsonscan.Scanner{B: b}, full: full, strs: make(map[string]string, 256)}, envelope)
}

func scanJSON(r *spanScanner, envelope string) (spans []models.Span, ok bool) {
	b, keep := r.B, r.keep
	if keep == nil {
		// Every span has a span ID: counting the key gives the slice's size (an attribute value
		// that spells it, or a link's, only adds room).
		n := bytes.Count(b, []byte(`"spanId"`)) + bytes.Count(b, []byte(`"span_id"`))
		r.out = make([]models.Span, 0, n)
	}
	read := func() bool {
		return r.Object(func(key []byte) bool {
			if k := string(key); k == "resourceSpans" || k == "resource_spans" {
				return r.Array(r.resourceSpans)
			}
			return r.Skip()
		})
	}
	if envelope != "" {
		seen := false
		if !r.Object(func(key []byte) bool {
			if string(key) != envelope || seen || r.Peek() != '{' {
				return false // another field (an error), the key twice, a null result
			}
			seen = true
			return read()
		}) || !seen {
			return nil, false
		}
	} else if r.Peek() != '{' || !read() {
		return nil, false // a null reply is the decoder's
	}
	if !r.End() {
		return nil, false
	}
	if len(r.out) == 0 {
		return nil, true // as ReadJSON: no spans, nil
	}
	return r.out, true
}

// spanScanner is ScanJSON's state.
type spanScanner struct {
	jsonscan.Scanner
	keep    func(traceID string) bool
	full    func(service string) bool // ScanJSONSkimming's
	skim    bool                      // the spans being read are read without attributes and events
	empty   map[string]string         // the attributes of the skimmed spans, shared
	out     []models.Span
	traceID string            // the last trace ID read: a trace's spans share one string
	strs    map[string]string // interned strings
	pairs   [][2]string       // attributes' scratch
	recent  [16]map[string]string
	next    int // the next of recent to replace
}

// maxInterned bounds the interned strings, and maxInternedLen the length of one: past them a
// string is made as the decoder makes it, so that a reply of unique values (request IDs, SQL)
// does not grow the table.
const (
	maxInterned    = 4096
	maxInternedLen = 64
)

func (r *spanScanner) intern(raw []byte) string {
	if s, ok := r.strs[string(raw)]; ok { // looked up without a copy
		return s
	}
	s := string(raw)
	if len(r.strs) < maxInterned && len(raw) <= maxInternedLen {
		r.strs[s] = s
	}
	return s
}

// text reads a string as the decoder's ReadString does; false for null, or anything else.
func (r *spanScanner) text() (string, bool) {
	if r.Peek() != '"' {
		return "", false
	}
	start := r.I
	raw, escaped, ok := r.Str()
	if !ok {
		return "", false
	}
	if !escaped {
		return r.intern(raw), true
	}
	// Escapes (rare in span fields): decoded by the decoder itself, so that they read the same.
	iter := jsoniter.ConfigDefault.BorrowIterator(r.B[start:r.I])
	defer jsoniter.ConfigDefault.ReturnIterator(iter)
	s := iter.ReadString()
	return s, iter.Error == nil
}

func (r *spanScanner) resourceSpans() bool {
	first := len(r.out)
	var resource map[string]string
	r.skim = false // until the resource names a service not read whole
	ok := r.Object(func(key []byte) bool {
		switch string(key) {
		case "resource":
			ok := r.Object(func(key []byte) bool {
				if string(key) == "attributes" {
					var ok bool
					resource, ok = r.attributes(resource)
					return ok
				}
				return r.Skip()
			})
			r.skim = r.full != nil && !r.full(resource[ServiceNameAttribute])
			return ok
		case "scopeSpans", "scope_spans":
			return r.Array(func() bool {
				return r.Object(func(key []byte) bool {
					if string(key) == "spans" {
						return r.Array(r.span)
					}
					return r.Skip()
				})
			})
		case "deprecatedScopeSpans", "deprecated_scope_spans":
			return false // pdata's migration: the decoder's
		}
		return r.Skip()
	})
	if !ok {
		return false
	}
	if resource == nil {
		resource = map[string]string{}
	}
	service := resource[ServiceNameAttribute]
	for i := first; i < len(r.out); i++ {
		r.out[i].Service, r.out[i].Resource = service, resource
	}
	return true
}

// span reads one span, as the decoder's span does.
func (r *spanScanner) span() bool {
	if r.Peek() != '{' {
		return false // a null span, which the decoder refuses for its missing IDs
	}
	var s models.Span
	var start, end uint64
	ok := r.Object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "traceId", "trace_id":
			s.TraceID, ok = r.id(16, r.traceID)
			if s.TraceID != "" {
				r.traceID = s.TraceID
			}
		case "spanId", "span_id":
			s.SpanID, ok = r.id(8, "")
		case "parentSpanId", "parent_span_id":
			s.ParentSpanID, ok = r.id(8, "")
		case "name":
			s.Operation, ok = r.text()
		case "kind":
			var k int32
			k, ok = r.enum(spanKinds)
			s.Kind = kindName(k)
		case "startTimeUnixNano", "start_time_unix_nano":
			start, ok = r.uint64()
		case "endTimeUnixNano", "end_time_unix_nano":
			end, ok = r.uint64()
		case "attributes":
			if r.skim {
				ok = r.Skip()
				break
			}
			s.Attributes, ok = r.attributes(s.Attributes)
		case "events":
			if r.skim {
				ok = r.Skip()
				break
			}
			ok = r.Array(func() bool {
				e, ok := r.event()
				s.Events = append(s.Events, e)
				return ok
			})
		case "status":
			ok = r.Object(func(key []byte) bool {
				switch string(key) {
				case "code":
					code, ok := r.enum(statusCodes)
					switch ptrace.StatusCode(code) {
					case ptrace.StatusCodeError:
						s.Status = models.StatusError
					case ptrace.StatusCodeOk:
						s.Status = models.StatusOK
					default:
						s.Status = ""
					}
					return ok
				case "message":
					var ok bool
					s.StatusMessage, ok = r.text()
					return ok
				}
				return r.Skip()
			})
		default:
			ok = r.Skip()
		}
		return ok
	})
	if !ok || s.TraceID == "" || s.SpanID == "" {
		return false // what the decoder says of a span without IDs is its to say
	}
	if r.keep != nil && !r.keep(s.TraceID) {
		return true
	}
	s.Start = time.Unix(0, int64(start)).UTC()
	e := time.Unix(0, int64(end)).UTC()
	if e.Before(s.Start) {
		return false
	}
	s.Duration = e.Sub(s.Start)
	if s.Attributes == nil {
		if r.skim {
			if r.empty == nil {
				r.empty = map[string]string{}
			}
			s.Attributes = r.empty
		} else {
			s.Attributes = map[string]string{}
		}
	}
	SortEvents(s.Events)
	r.out = append(r.out, s)
	return true
}

func (r *spanScanner) event() (models.SpanEvent, bool) {
	var e models.SpanEvent
	var t uint64
	ok := r.Object(func(key []byte) bool {
		var ok bool
		switch string(key) {
		case "timeUnixNano", "time_unix_nano":
			t, ok = r.uint64()
		case "name":
			e.Name, ok = r.text()
		case "attributes":
			e.Attributes, ok = r.attributes(e.Attributes)
		default:
			ok = r.Skip()
		}
		return ok
	})
	if r.B[r.I-1] != '}' {
		return e, false // a null event: the decoder's
	}
	e.Time = time.Unix(0, int64(t)).UTC()
	if e.Attributes == nil {
		e.Attributes = map[string]string{}
	}
	return e, ok
}

// id reads a hex ID of n bytes as the decoder's id does: lower case, "" for all zeros, same when
// it spells same.
func (r *spanScanner) id(n int, same string) (string, bool) {
	if r.Peek() != '"' {
		return "", false
	}
	raw, escaped, ok := r.Str()
	if !ok || escaped {
		return "", false
	}
	id, bad := idOf(raw, n, same)
	return id, bad == ""
}

// digits is a run of ASCII digits as a uint64; false when it is empty, holds anything else or
// overflows.
func digits(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (1<<64-1-d)/10 {
			return 0, false
		}
		v = 10*v + d
	}
	return v, true
}

// uint64 reads a 64-bit integer written as a number or a string of digits.
func (r *spanScanner) uint64() (uint64, bool) {
	switch c := r.Peek(); {
	case c == '"':
		raw, escaped, ok := r.Str()
		if !ok || escaped {
			return 0, false
		}
		return digits(raw)
	case c >= '0' && c <= '9':
		text, ok := r.Number()
		if !ok {
			return 0, false
		}
		return digits(text)
	}
	return 0, false
}

// enum reads an enum as its number or its OTLP name.
func (r *spanScanner) enum(names map[string]int32) (int32, bool) {
	switch c := r.Peek(); {
	case c == '"':
		raw, escaped, ok := r.Str()
		if !ok || escaped {
			return 0, false
		}
		v, known := names[string(raw)]
		return v, known
	case c >= '0' && c <= '9':
		text, ok := r.Number()
		if !ok {
			return 0, false
		}
		v, ok := digits(text)
		return int32(v), ok && v <= 1<<31-1
	}
	return 0, false
}

// attributes reads a KeyValue array into m (made at its size when nil), as the decoder's
// attributes does.
func (r *spanScanner) attributes(m map[string]string) (map[string]string, bool) {
	pairs := r.pairs[:0]
	ok := r.Array(func() bool {
		var key, value string
		return r.Object(func(k []byte) bool {
			var ok bool
			switch string(k) {
			case "key":
				key, ok = r.text()
			case "value":
				value, ok = r.value()
			default:
				return r.Skip()
			}
			return ok
		}) && r.B[r.I-1] == '}' && func() bool { pairs = append(pairs, [2]string{key, value}); return true }()
	})
	if ok {
		if m == nil {
			m = r.shared(pairs)
		} else {
			// A second attributes field: added to a copy, as the map read from the first may be
			// another span's too.
			m = maps.Clone(m)
			for _, p := range pairs {
				m[p[0]] = p[1]
			}
		}
	}
	clear(pairs) // the scratch must not keep this reply's strings alive
	r.pairs = pairs[:0]
	return m, ok
}

// shared is a map of pairs: one made for the same pairs before when one of the last few is (the
// spans of one instrumentation often carry the same attributes, internal spans often none, and
// a resource repeats in every ResourceSpans of its service), else a new one, kept for the next.
// The spans' maps are read-only (models.Span), so they can be one.
func (r *spanScanner) shared(pairs [][2]string) map[string]string {
	for _, m := range r.recent {
		if m != nil && len(m) == len(pairs) && holds(m, pairs) {
			return m
		}
	}
	m := make(map[string]string, len(pairs))
	for _, p := range pairs {
		m[p[0]] = p[1]
	}
	if len(m) == len(pairs) { // a key given twice: not kept, as it matches no pairs
		r.recent[r.next] = m
		r.next = (r.next + 1) % len(r.recent)
	}
	return m
}

func holds(m map[string]string, pairs [][2]string) bool {
	for _, p := range pairs {
		if v, ok := m[p[0]]; !ok || v != p[1] {
			return false
		}
	}
	return true
}

// value reads an AnyValue holding a string, an integer, a bool or a double as
// pcommon.Value.AsString prints it; anything else is the decoder's.
func (r *spanScanner) value() (string, bool) {
	out := ""
	ok := r.Object(func(k []byte) bool {
		var ok bool
		switch string(k) {
		case "stringValue", "string_value":
			out, ok = r.text()
		case "intValue", "int_value":
			out, ok = r.intValue()
		case "boolValue", "bool_value":
			switch {
			case r.Literal("true"):
				out, ok = "true", true
			case r.Literal("false"):
				out, ok = "false", true
			}
		case "doubleValue", "double_value":
			out, ok = r.doubleValue()
		case "arrayValue", "array_value", "kvlistValue", "kvlist_value", "bytesValue", "bytes_value":
			// Rarer (Jaeger's own @jaeger@warnings are an array): read by the decoder from the
			// value's bytes, so that they print as it prints them.
			start := r.I
			if !r.Skip() {
				return false
			}
			out, ok = decodedValue(string(k), r.B[start:r.I])
		case "stringValueStrindex", "string_value_strindex":
			out, ok = "", r.Skip() // an index into a dictionary trace replies do not carry
		default:
			ok = r.Skip() // as the decoder: an unknown field leaves the value as it was
		}
		return ok
	})
	return out, ok && r.B[r.I-1] == '}'
}

// decodedValue is the AnyValue field f, whose JSON is raw, as the decoder reads and prints it.
func decodedValue(f string, raw []byte) (string, bool) {
	iter := jsoniter.ConfigDefault.BorrowIterator(raw)
	defer jsoniter.ConfigDefault.ReturnIterator(iter)
	jr := jsonReader{iter: iter}
	v := pcommon.NewValueEmpty()
	jr.value(f, v)
	if jr.err != nil || iter.Error != nil && iter.Error != io.EOF {
		return "", false
	}
	return v.AsString(), true
}

// intValue reads an integer written as a string or a number, printed back in decimal.
func (r *spanScanner) intValue() (string, bool) {
	var text []byte
	switch c := r.Peek(); {
	case c == '"':
		raw, escaped, ok := r.Str()
		if !ok || escaped {
			return "", false
		}
		text = raw
	case c == '-' || c >= '0' && c <= '9':
		raw, ok := r.Number()
		if !ok {
			return "", false
		}
		text = raw
	default:
		return "", false
	}
	neg := len(text) > 0 && text[0] == '-'
	u, ok := digits(bytes.TrimPrefix(text, []byte("-")))
	if !ok || u > 1<<63 || u == 1<<63 && !neg {
		return "", false
	}
	if len(text) > 1 && text[0] == '0' || neg && (len(text) < 2 || text[1] == '0') {
		// Not as FormatInt prints it (leading zeros, -0): printed from the value.
		n := int64(u)
		if neg {
			n = -n
		}
		return strconv.FormatInt(n, 10), true
	}
	return r.intern(text), true
}

// doubleValue reads a double as the decoder does (its own number reading, strconv for a
// string) and prints it as pcommon does.
func (r *spanScanner) doubleValue() (string, bool) {
	var d float64
	switch c := r.Peek(); {
	case c == '"':
		raw, escaped, ok := r.Str()
		if !ok || escaped {
			return "", false
		}
		v, err := strconv.ParseFloat(string(raw), 64)
		if err != nil {
			return "", false
		}
		d = v
	case c == '-' || c >= '0' && c <= '9':
		text, ok := r.Number()
		if !ok {
			return "", false
		}
		iter := jsoniter.ConfigDefault.BorrowIterator(text)
		d = iter.ReadFloat64()
		failed := iter.Error != nil && iter.Error != io.EOF // the number ends the bytes: EOF
		jsoniter.ConfigDefault.ReturnIterator(iter)
		if failed {
			return "", false
		}
	default:
		return "", false
	}
	return pcommon.NewValueDouble(d).AsString(), true
}

// kindNames are the span kinds as the decoder's kind writes them, without a string per span.
var kindNames = func() map[int32]string {
	m := map[int32]string{}
	for _, v := range spanKinds {
		m[v] = kind(ptrace.SpanKind(v))
	}
	return m
}()

func kindName(k int32) string {
	if s, ok := kindNames[k]; ok {
		return s
	}
	return kind(ptrace.SpanKind(k))
}
