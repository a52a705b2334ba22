package jaeger

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/otlptrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
	jsoniter "github.com/json-iterator/go"
)

// ServiceNameAttribute is the resource attribute naming the service (OpenTelemetry semantic
// conventions); v1 moves it out of the process tags into serviceName.
const ServiceNameAttribute = otlptrace.ServiceNameAttribute

// decodeV3 reads the envelope of Jaeger's v3 HTTP API, {"result": <OTLP JSON TracesData>} or
// {"error": {...}}: the body whole (in a pooled buffer), its spans by a scan of the bytes
// (otlptrace.ScanJSON), and where the scan is unsure (or the reply is an error, or is cut short)
// through the decoder, which reads what the scan does not and says what is wrong. An error field
// wins over a result, as a reply with both is not an answer.
func decodeV3(body io.Reader, path string) ([]models.Span, error) {
	b, err := upstream.ReadPooled(body)
	defer b.Release()
	return decodeV3Read(b.Bytes(), err, path, nil)
}

// decodeV3Read is decodeV3 of what was read of a reply, b, and the read's error, reading
// attributes and events only of the spans whose service full says yes to
// (otlptrace.ScanJSONSkimming; nil: every span's). Where the scan is unsure, the decoder reads
// every span whole.
func decodeV3Read(b []byte, readErr error, path string, full func(service string) bool) ([]models.Span, error) {
	if readErr == nil {
		if spans, ok := otlptrace.ScanJSONSkimming(b, "result", full); ok {
			return spans, nil
		}
	}
	// What was read, then the read's error, as the decoder would have met them.
	return decodeV3With(io.MultiReader(bytes.NewReader(b), failedRead{readErr}), path, otlptrace.ReadJSON)
}

// failedRead is a reader that fails with err (io.EOF when nil).
type failedRead struct{ err error }

func (f failedRead) Read([]byte) (int, error) { return 0, cmp.Or(f.err, io.EOF) }

// decodeV3Failed reads a v3 search's reply (the whole body, b) for its failed traces only: first
// the trace IDs of its failed spans, skipping the rest, then those traces' spans. A triage's
// search reads a service's recent traces to find the few that failed; reading every span of
// every trace into attributes was most of its work.
func decodeV3Failed(b []byte, path string) ([]models.Span, error) {
	// The trace IDs by a scan of the bytes; the decoder where the scan is unsure (and says
	// what is wrong with a malformed reply).
	failed, cut, scanned := otlptrace.ScanFailedTraces(b, "result")
	if !scanned {
		_, err := decodeV3With(bytes.NewReader(b), path, func(iter *jsoniter.Iterator) ([]models.Span, error) {
			var err error
			failed, err = otlptrace.FailedTraceIDs(iter)
			return nil, err
		})
		if err != nil {
			return nil, err
		}
	}
	if len(failed) == 0 {
		return nil, nil
	}
	keep := func(traceID string) bool { return failed[traceID] }
	if scanned {
		// Only the resourceSpans holding the failed traces' spans go to the decoder.
		if spans, ok := otlptrace.ScanJSON(cut, "", keep); ok {
			return spans, nil
		}
		spans, err := otlptrace.ReadJSONOf(jsoniter.ParseBytes(jsoniter.ConfigDefault, cut), keep)
		if err != nil {
			return nil, fmt.Errorf("reply to %s has %w", path, err)
		}
		return spans, nil
	}
	return decodeV3With(bytes.NewReader(b), path, func(iter *jsoniter.Iterator) ([]models.Span, error) {
		return otlptrace.ReadJSONOf(iter, keep)
	})
}

// decodeV3With is decodeV3 with readResult reading the result.
func decodeV3With(body io.Reader, path string, readResult func(*jsoniter.Iterator) ([]models.Span, error)) ([]models.Span, error) {
	in := &endsEarly{r: body}
	iter := jsoniter.Parse(jsoniter.ConfigDefault, in, 32<<10)
	var (
		spans     []models.Span
		hasResult bool
		apiErr    *struct {
			HTTPCode int    `json:"httpCode"`
			Message  string `json:"message"`
		}
		content error // what is wrong with the result's spans
	)
	for f := iter.ReadObject(); f != "" && iter.Error == nil && content == nil; f = iter.ReadObject() {
		switch f {
		case "result":
			if iter.WhatIsNext() == jsoniter.NilValue {
				iter.Skip()
				continue
			}
			hasResult = true
			spans, content = readResult(iter)
		case "error":
			iter.ReadVal(&apiErr)
		default:
			iter.Skip()
		}
	}
	switch {
	case errors.Is(in.err, io.ErrUnexpectedEOF) || errors.Is(iter.Error, errEndsEarly):
		// First: a reply cut short explains whatever its last, half-written span lacks.
		return nil, truncatedError(path, io.ErrUnexpectedEOF)
	case in.err != nil: // the body could not be read (over the response limit, a reset)
		return nil, fmt.Errorf("reading the reply to %s: %w", path, in.err)
	case content != nil && content != iter.Error:
		return nil, fmt.Errorf("reply to %s has %w", path, content)
	case iter.Error != nil:
		// jsoniter quotes the bytes around the fault as they are; Grafana's protocol takes valid
		// UTF-8 only.
		return nil, fmt.Errorf("reply to %s is not the JSON Jaeger sends: %s", path, strings.ToValidUTF8(iter.Error.Error(), "\uFFFD"))
	case apiErr != nil:
		return nil, fmt.Errorf("reply to %s is an error (code %d): %s", path, apiErr.HTTPCode, apiErr.Message)
	case !hasResult:
		return nil, fmt.Errorf("reply to %s has no \"result\" field: is this URL Jaeger's query service (default port 16686)?", path)
	}
	return spans, nil
}

// endsEarly reads a reply for jsoniter, which reads no further than the JSON value it decodes:
// a read past the body's end is the JSON ending early. jsoniter would replace io.EOF by the
// syntax error it then meets, and may drop an error that comes with data: the first read error
// is kept here (err) for the caller to report as it is.
type endsEarly struct {
	r   io.Reader
	err error
}

var errEndsEarly = errors.New("the reply ends before its JSON does")

func (e *endsEarly) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		err = errEndsEarly
	} else if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// v1Reply is the envelope of Jaeger's v1 JSON API (the UI's): {"data": [...], "errors": [...]}.
type v1Reply struct {
	Data   *[]v1Trace `json:"data"`
	Errors []struct {
		Code int    `json:"code"`
		Msg  string `json:"msg"`
	} `json:"errors"`
}

type v1Trace struct {
	TraceID   string               `json:"traceID"`
	Spans     []v1Span             `json:"spans"`
	Processes map[string]v1Process `json:"processes"`
}

type v1Span struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		TraceID string `json:"traceID"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	StartTime int64      `json:"startTime"` // µs since the epoch
	Duration  int64      `json:"duration"`  // µs
	Tags      []v1KV     `json:"tags"`
	Logs      []v1Log    `json:"logs"`
	ProcessID string     `json:"processID"`
	Process   *v1Process `json:"process"` // inline in some replies instead of processes
}

// v1Log is a span event as v1 shows it: its name is the "event" field.
type v1Log struct {
	Timestamp int64  `json:"timestamp"` // µs since the epoch
	Fields    []v1KV `json:"fields"`
}

type v1Process struct {
	ServiceName string `json:"serviceName"`
	Tags        []v1KV `json:"tags"`
}

type v1KV struct {
	Key   string          `json:"key"`
	Value json.RawMessage `json:"value"`
}

func (r *v1Reply) spans(path string) ([]models.Span, error) {
	if r.Data == nil || len(*r.Data) == 0 {
		if len(r.Errors) > 0 {
			var msgs []string
			for _, e := range r.Errors {
				msgs = append(msgs, e.Msg)
			}
			return nil, fmt.Errorf("reply to %s is an error: %s", path, strings.Join(msgs, "; "))
		}
		if r.Data == nil {
			return nil, fmt.Errorf("reply to %s has no \"data\" field: is this URL Jaeger's query service (default port 16686)?", path)
		}
	}
	var out []models.Span
	for _, t := range *r.Data {
		for _, s := range t.Spans {
			if s.SpanID == "" {
				return nil, fmt.Errorf("reply to %s has a span (%q) without spanID", path, s.OperationName)
			}
			p, ok := t.Processes[s.ProcessID]
			if s.Process != nil {
				p, ok = *s.Process, true
			}
			if !ok {
				return nil, fmt.Errorf("reply to %s: span %s names process %q, which the trace does not list", path, s.SpanID, s.ProcessID)
			}
			if s.Duration < 0 || s.Duration > math.MaxInt64/int64(time.Microsecond) {
				return nil, fmt.Errorf("reply to %s: span %s has a duration of %d µs, which no span has", path, s.SpanID, s.Duration)
			}
			traceID := s.TraceID
			if traceID == "" {
				traceID = t.TraceID
			}
			sp := models.Span{
				TraceID:      models.PadTraceID(traceID),
				SpanID:       s.SpanID,
				ParentSpanID: v1Parent(s),
				Service:      p.ServiceName,
				Operation:    s.OperationName,
				Start:        time.UnixMicro(s.StartTime).UTC(),
				Duration:     time.Duration(s.Duration) * time.Microsecond,
				Attributes:   tags(s.Tags),
				Resource:     tags(p.Tags),
			}
			sp.Kind = sp.Attributes[v1KindTag]
			sp.Status, sp.StatusMessage = v1Status(sp.Attributes)
			for _, l := range s.Logs {
				fields := tags(l.Fields)
				name := fields[v1EventField]
				delete(fields, v1EventField)
				sp.Events = append(sp.Events, models.SpanEvent{Name: name, Time: time.UnixMicro(l.Timestamp).UTC(), Attributes: fields})
			}
			otlptrace.SortEvents(sp.Events)
			// v1 moved service.name out of the tags; put it back so both APIs give the same
			// resource.
			if _, ok := sp.Resource[ServiceNameAttribute]; !ok && p.ServiceName != "" {
				sp.Resource[ServiceNameAttribute] = p.ServiceName
			}
			out = append(out, sp)
		}
	}
	return out, nil
}

// v1Parent is the CHILD_OF reference's span, else the FOLLOWS_FROM one (Jaeger's UI does the
// same), else "".
func v1Parent(s v1Span) string {
	parent := ""
	for _, ref := range s.References {
		switch ref.RefType {
		case "CHILD_OF":
			return ref.SpanID
		case "FOLLOWS_FROM":
			if parent == "" {
				parent = ref.SpanID
			}
		}
	}
	return parent
}

// v1Status reads a span's status from the tags Jaeger's v1 API turns OTLP's status into
// (otel.status_code, otel.status_description) and from the older error=true tag.
func v1Status(tags map[string]string) (status, message string) {
	message = tags[v1StatusDescriptionTag]
	switch strings.ToUpper(tags[v1StatusCodeTag]) {
	case "ERROR":
		return models.StatusError, message
	case "OK":
		return models.StatusOK, message
	}
	if strings.EqualFold(tags[v1ErrorTag], "true") {
		return models.StatusError, message
	}
	return "", message
}

// Where v1 keeps what OTLP has as fields: the span kind is a tag, an event's name a log field.
const (
	v1KindTag    = "span.kind"
	v1EventField = "event"
	// The status: OTLP's code and message as tags, and OpenTracing's error tag.
	v1StatusCodeTag        = "otel.status_code"
	v1StatusDescriptionTag = "otel.status_description"
	v1ErrorTag             = "error"
)

func tags(kvs []v1KV) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.Key] = rawString(kv.Value)
	}
	return out
}
