package otlptrace

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strconv"
	"time"

	jsoniter "github.com/json-iterator/go"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// ReadJSON reads one OTLP JSON TracesData object at the iterator straight into the plugin's
// spans: the same spans as Spans(UnmarshalJSON(b)) (TestReadJSONAgreesWithPdata holds the two
// together, fuzzed), without the reply held whole, pdata's copy of every span, or its copy in
// ours. A trace of 2,000 spans is about a megabyte of JSON; read through pdata it cost 7.5 MB
// of allocations and a search of whole traces (triage's failed requests) its CPU, which is why
// this reader exists (docs/developer-guide.md, "Reading replies"). Field names are read in both
// spellings pdata accepts (camelCase and the proto's snake_case), numbers as numbers or
// strings, enums as numbers or names, unknown fields skipped.
//
// An error of the iterator's (the JSON is malformed, or ends early: io.EOF, or the body's
// io.ErrUnexpectedEOF) is returned as it is, for the caller to say which.
func ReadJSON(iter *jsoniter.Iterator) ([]models.Span, error) {
	r := jsonReader{iter: iter}
	return r.read()
}

// ReadJSONOf is ReadJSON keeping only the spans of the traces keep says yes to: the others'
// attributes and events are skipped, not read (a span whose trace ID comes after them in its
// object is read, then dropped).
func ReadJSONOf(iter *jsoniter.Iterator, keep func(traceID string) bool) ([]models.Span, error) {
	r := jsonReader{iter: iter, keep: keep}
	return r.read()
}

// FailedTraceIDs reads the trace IDs (lower-case hex) of the spans whose status is ERROR,
// skipping everything else: the first of two reads of a search of whole traces, whose second
// (ReadJSONOf) reads only the failed traces' spans. Its errors are ReadJSON's.
func FailedTraceIDs(iter *jsoniter.Iterator) (map[string]bool, error) {
	r := jsonReader{iter: iter, failed: map[string]bool{}}
	_, err := r.read()
	return r.failed, err
}

func (r *jsonReader) read() ([]models.Span, error) {
	iter := r.iter
	if iter.WhatIsNext() == jsoniter.NilValue {
		iter.Skip()
		return nil, nil
	}
	for f := iter.ReadObject(); f != ""; f = iter.ReadObject() {
		switch f {
		case "resourceSpans", "resource_spans":
			for r.err == nil && iter.ReadArray() {
				r.resourceSpans()
			}
		default:
			iter.Skip()
		}
		if r.err != nil || iter.Error != nil {
			break
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if iter.Error != nil {
		return nil, iter.Error
	}
	if r.failed != nil {
		return nil, nil
	}
	return r.out.spans(), nil
}

// jsonReader is ReadJSON's state: the spans so far and the first thing found wrong.
type jsonReader struct {
	iter    *jsoniter.Iterator
	out     spanList
	err     error
	traceID string      // the last trace ID read: a trace's spans share one string
	pairs   [][2]string // attributes' scratch

	keep   func(traceID string) bool // ReadJSONOf's: the traces whose spans are read
	failed map[string]bool           // FailedTraceIDs': set when only failed trace IDs are read
}

// fail keeps the first error.
func (r *jsonReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// resourceSpans reads one ResourceSpans. Its resource may come after its spans in the JSON, so
// its spans get their service and resource at the end; deprecatedScopeSpans count only where
// scopeSpans are absent (pdata's migration).
func (r *jsonReader) resourceSpans() {
	iter := r.iter
	first := r.out.len()
	var resource map[string]string
	scopes := 0
	var deprecated []models.Span
	for f := iter.ReadObject(); f != "" && r.err == nil; f = iter.ReadObject() {
		switch f {
		case "resource":
			if r.failed != nil {
				iter.Skip() // only trace IDs and statuses are read
				continue
			}
			for f := iter.ReadObject(); f != ""; f = iter.ReadObject() {
				if f == "attributes" {
					resource = r.attributes(resource)
				} else {
					iter.Skip()
				}
			}
		case "scopeSpans", "scope_spans":
			for r.err == nil && iter.ReadArray() {
				scopes++
				r.scopeSpans(r.out.push)
			}
		case "deprecatedScopeSpans", "deprecated_scope_spans":
			for r.err == nil && iter.ReadArray() {
				r.scopeSpans(func(s models.Span) { deprecated = append(deprecated, s) })
			}
		default:
			iter.Skip()
		}
	}
	if scopes == 0 {
		for _, s := range deprecated {
			r.out.push(s)
		}
	}
	if resource == nil {
		resource = map[string]string{}
	}
	service := resource[ServiceNameAttribute]
	for i := first; i < r.out.len(); i++ {
		s := r.out.at(i)
		s.Service, s.Resource = service, resource
	}
}

// scopeSpans reads one ScopeSpans' spans, each to add.
func (r *jsonReader) scopeSpans(add func(models.Span)) {
	iter := r.iter
	for f := iter.ReadObject(); f != "" && r.err == nil; f = iter.ReadObject() {
		if f != "spans" {
			iter.Skip()
			continue
		}
		for r.err == nil && iter.ReadArray() {
			if s, ok := r.span(); ok {
				add(s)
			}
		}
	}
}

// span reads one span; false after an error (kept in r.err), or for a span not kept.
func (r *jsonReader) span() (models.Span, bool) {
	if r.failed != nil {
		r.failedID()
		return models.Span{}, false
	}
	iter := r.iter
	var s models.Span
	var start, end uint64
	for f := iter.ReadObject(); f != "" && r.err == nil; f = iter.ReadObject() {
		if r.keep != nil && s.TraceID != "" && !r.keep(s.TraceID) {
			iter.Skip() // a trace not asked for: its other fields are not read
			continue
		}
		switch f {
		case "traceId", "trace_id":
			s.TraceID = r.id(16, r.traceID)
			if s.TraceID != "" {
				r.traceID = s.TraceID
			}
		case "spanId", "span_id":
			s.SpanID = r.id(8, "")
		case "parentSpanId", "parent_span_id":
			s.ParentSpanID = r.id(8, "")
		case "name":
			s.Operation = iter.ReadString()
		case "kind":
			s.Kind = kind(ptrace.SpanKind(r.enum("span kind", spanKinds)))
		case "startTimeUnixNano", "start_time_unix_nano":
			start = r.uint64(f)
		case "endTimeUnixNano", "end_time_unix_nano":
			end = r.uint64(f)
		case "attributes":
			s.Attributes = r.attributes(s.Attributes)
		case "events":
			for r.err == nil && iter.ReadArray() {
				s.Events = append(s.Events, r.event())
			}
		case "status":
			for f := iter.ReadObject(); f != ""; f = iter.ReadObject() {
				switch f {
				case "code":
					switch ptrace.StatusCode(r.enum("status code", statusCodes)) {
					case ptrace.StatusCodeError:
						s.Status = models.StatusError
					case ptrace.StatusCodeOk:
						s.Status = models.StatusOK
					default:
						s.Status = ""
					}
				case "message":
					s.StatusMessage = iter.ReadString()
				default:
					iter.Skip()
				}
			}
		default:
			iter.Skip()
		}
	}
	if r.err != nil || iter.Error != nil {
		return models.Span{}, false
	}
	if r.keep != nil && s.TraceID != "" && !r.keep(s.TraceID) {
		return models.Span{}, false
	}
	if s.TraceID == "" || s.SpanID == "" {
		r.fail("a span (%q) without traceId or spanId", s.Operation)
		return models.Span{}, false
	}
	s.Start = time.Unix(0, int64(start)).UTC()
	e := time.Unix(0, int64(end)).UTC()
	if e.Before(s.Start) {
		r.fail("a span (%s) that ends before it starts", s.SpanID)
		return models.Span{}, false
	}
	s.Duration = e.Sub(s.Start)
	if s.Attributes == nil {
		s.Attributes = map[string]string{}
	}
	SortEvents(s.Events)
	return s, true
}

// failedID reads one span's trace ID and status, skipping the rest, and notes the trace ID of a
// failed span.
func (r *jsonReader) failedID() {
	iter := r.iter
	id, failed := "", false
	for f := iter.ReadObject(); f != "" && r.err == nil; f = iter.ReadObject() {
		switch f {
		case "traceId", "trace_id":
			id = r.id(16, r.traceID)
			if id != "" {
				r.traceID = id
			}
		case "status":
			for f := iter.ReadObject(); f != ""; f = iter.ReadObject() {
				if f == "code" {
					failed = ptrace.StatusCode(r.enum("status code", statusCodes)) == ptrace.StatusCodeError
				} else {
					iter.Skip()
				}
			}
		default:
			iter.Skip()
		}
	}
	if failed && id != "" && r.err == nil {
		r.failed[id] = true
	}
}

// event reads one span event.
func (r *jsonReader) event() models.SpanEvent {
	iter := r.iter
	var e models.SpanEvent
	var t uint64
	for f := iter.ReadObject(); f != "" && r.err == nil; f = iter.ReadObject() {
		switch f {
		case "timeUnixNano", "time_unix_nano":
			t = r.uint64(f)
		case "name":
			e.Name = iter.ReadString()
		case "attributes":
			e.Attributes = r.attributes(e.Attributes)
		default:
			iter.Skip()
		}
	}
	e.Time = time.Unix(0, int64(t)).UTC()
	if e.Attributes == nil {
		e.Attributes = map[string]string{}
	}
	return e
}

// id reads a hex trace or span ID of n bytes (idOf).
func (r *jsonReader) id(n int, same string) string {
	id, bad := idOf(r.iter.ReadStringAsSlice(), n, same)
	if bad != "" {
		r.fail("%s", bad)
	}
	return id
}

// idOf is the trace or span ID of n bytes that b spells in hex, as the readers keep it: lower-case
// hex, "" when empty or all zeros (pdata's empty ID), same instead of a new string when it spells
// the same ID; bad says what is wrong with b ("" when nothing is).
func idOf(b []byte, n int, same string) (id, bad string) {
	if len(b) == 0 {
		return "", ""
	}
	if len(b) != 2*n {
		return "", fmt.Sprintf("an ID %q that is not %d hex digits", b, 2*n)
	}
	zero, lower := true, true
	for _, c := range b {
		switch {
		case c == '0':
		case c >= '1' && c <= '9', c >= 'a' && c <= 'f':
			zero = false
		case c >= 'A' && c <= 'F':
			zero, lower = false, false
		default:
			return "", fmt.Sprintf("an ID %q that is not hex", b)
		}
	}
	switch {
	case zero:
		return "", ""
	case !lower:
		return string(bytes.ToLower(b)), ""
	case string(b) == same: // compared without a copy
		return same, ""
	}
	return string(b), ""
}

// uint64 reads a number written as a number or a string (OTLP JSON writes 64-bit integers as
// strings).
func (r *jsonReader) uint64(field string) uint64 {
	switch r.iter.WhatIsNext() {
	case jsoniter.NumberValue:
		return r.iter.ReadUint64()
	case jsoniter.StringValue:
		v, err := strconv.ParseUint(r.iter.ReadString(), 10, 64)
		if err != nil {
			r.fail("a %s that is not a number (%v)", field, err)
		}
		return v
	default:
		r.fail("a %s that is neither a number nor a string", field)
		r.iter.Skip()
		return 0
	}
}

// enum reads an enum as its number or its name (values); an unknown name is an error, as in
// pdata and protobuf's own JSON decoder.
func (r *jsonReader) enum(field string, values map[string]int32) int32 {
	switch r.iter.WhatIsNext() {
	case jsoniter.NumberValue:
		return r.iter.ReadInt32()
	case jsoniter.StringValue:
		name := r.iter.ReadString()
		v, ok := values[name]
		if !ok {
			r.fail("a %s %q that OTLP does not know", field, name)
		}
		return v
	default:
		r.fail("a %s that is neither a number nor a name", field)
		r.iter.Skip()
		return 0
	}
}

var (
	spanKinds = map[string]int32{"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2,
		"SPAN_KIND_CLIENT": 3, "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5}
	statusCodes = map[string]int32{"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}
)

// attributes reads a KeyValue array into m (made when nil), values as pcommon.Value.AsString
// writes them; a key given twice keeps its last value, as Attributes does.
// The pairs are gathered first, so that a new map is made at its size (a map grown as its
// entries come was most of a span's allocations).
func (r *jsonReader) attributes(m map[string]string) map[string]string {
	iter := r.iter
	pairs := r.pairs[:0]
	for r.err == nil && iter.ReadArray() {
		var key, value string
		for f := iter.ReadObject(); f != "" && r.err == nil; f = iter.ReadObject() {
			switch f {
			case "key":
				key = iter.ReadString()
			case "value":
				value = r.valueString()
			default:
				iter.Skip()
			}
		}
		pairs = append(pairs, [2]string{key, value})
	}
	if m == nil {
		m = make(map[string]string, len(pairs))
	}
	for _, p := range pairs {
		m[p[0]] = p[1]
	}
	clear(pairs) // the scratch must not keep this reply's strings alive
	r.pairs = pairs[:0]
	return m
}

// valueString reads an AnyValue as AsString prints it. Strings, the common case, are read
// without building a value; other scalars are printed as pcommon does, and arrays and maps are
// built as pcommon values and printed by it (JSON), so that the text is the same.
func (r *jsonReader) valueString() string {
	iter := r.iter
	out := ""
	for f := iter.ReadObject(); f != "" && r.err == nil; f = iter.ReadObject() {
		switch f {
		case "stringValue", "string_value":
			out = iter.ReadString()
		case "arrayValue", "array_value", "kvlistValue", "kvlist_value":
			v := pcommon.NewValueEmpty()
			r.value(f, v)
			out = v.AsString()
		case "stringValueStrindex", "string_value_strindex":
			iter.Skip() // an index into a dictionary trace replies do not carry
			out = ""
		default:
			v := pcommon.NewValueEmpty()
			if r.scalar(f, v) {
				out = v.AsString()
			} else {
				iter.Skip()
			}
		}
	}
	return out
}

// value reads the AnyValue field f into v.
func (r *jsonReader) value(f string, v pcommon.Value) {
	iter := r.iter
	switch f {
	case "stringValue", "string_value":
		v.SetStr(iter.ReadString())
	case "arrayValue", "array_value":
		s := v.SetEmptySlice()
		for f := iter.ReadObject(); f != "" && r.err == nil; f = iter.ReadObject() {
			if f != "values" {
				iter.Skip()
				continue
			}
			for r.err == nil && iter.ReadArray() {
				r.anyValue(s.AppendEmpty())
			}
		}
	case "kvlistValue", "kvlist_value":
		m := v.SetEmptyMap()
		for f := iter.ReadObject(); f != "" && r.err == nil; f = iter.ReadObject() {
			if f != "values" {
				iter.Skip()
				continue
			}
			for r.err == nil && iter.ReadArray() {
				key, kv := "", pcommon.NewValueEmpty()
				for f := iter.ReadObject(); f != "" && r.err == nil; f = iter.ReadObject() {
					switch f {
					case "key":
						key = iter.ReadString()
					case "value":
						r.anyValue(kv)
					default:
						iter.Skip()
					}
				}
				kv.CopyTo(m.PutEmpty(key))
			}
		}
	default:
		if !r.scalar(f, v) {
			iter.Skip()
		}
	}
}

// anyValue reads a whole AnyValue object into v.
func (r *jsonReader) anyValue(v pcommon.Value) {
	for f := r.iter.ReadObject(); f != "" && r.err == nil; f = r.iter.ReadObject() {
		r.value(f, v)
	}
}

// scalar reads the AnyValue field f when it is a bool, an integer, a double or bytes; false
// (nothing read) otherwise.
func (r *jsonReader) scalar(f string, v pcommon.Value) bool {
	iter := r.iter
	switch f {
	case "boolValue", "bool_value":
		v.SetBool(iter.ReadBool())
	case "intValue", "int_value":
		switch iter.WhatIsNext() {
		case jsoniter.StringValue:
			n, err := strconv.ParseInt(iter.ReadString(), 10, 64)
			if err != nil {
				r.fail("an intValue that is not an integer (%v)", err)
			}
			v.SetInt(n)
		default:
			v.SetInt(iter.ReadInt64())
		}
	case "doubleValue", "double_value":
		switch iter.WhatIsNext() {
		case jsoniter.StringValue:
			d, err := strconv.ParseFloat(iter.ReadString(), 64)
			if err != nil {
				r.fail("a doubleValue that is not a number (%v)", err)
			}
			v.SetDouble(d)
		default:
			v.SetDouble(iter.ReadFloat64())
		}
	case "bytesValue", "bytes_value":
		s := iter.ReadString()
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			r.fail("a bytesValue that is not base64 (%v)", err)
		}
		v.SetEmptyBytes().FromRaw(b)
	default:
		return false
	}
	return true
}
