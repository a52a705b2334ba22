package jaeger

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/otlptrace"
)

// ServiceNameAttribute is the resource attribute naming the service (OpenTelemetry semantic
// conventions); v1 moves it out of the process tags into serviceName.
const ServiceNameAttribute = otlptrace.ServiceNameAttribute

// v3Reply is the envelope of Jaeger's v3 HTTP API: {"result": <OTLP JSON TracesData>} or
// {"error": {...}}.
type v3Reply struct {
	// Result stays raw: it is OTLP JSON, which the OpenTelemetry collector's decoder reads (hex
	// trace and span IDs, 64-bit integers as strings), unlike plain protojson (base64 IDs).
	Result json.RawMessage `json:"result"`
	Error  *struct {
		HTTPCode int    `json:"httpCode"`
		Message  string `json:"message"`
	} `json:"error"`
}

// v3ResultPrefix is how Jaeger's v3 API (grpc-gateway's marshaller) opens a reply that holds a
// result.
const v3ResultPrefix = `{"result":`

// takeRaw keeps the OTLP JSON of a {"result": …} reply as it is: the OpenTelemetry decoder reads
// (and validates) it once, instead of encoding/json scanning and copying a reply of a thousand
// spans (about a megabyte) first. Any other form (an error, other fields, spaces) is decoded as
// JSON.
func (r *v3Reply) takeRaw(body []byte) bool {
	t := bytes.TrimSpace(body)
	if !bytes.HasPrefix(t, []byte(v3ResultPrefix)) || !bytes.HasSuffix(t, []byte("}")) {
		return false
	}
	payload := bytes.TrimSpace(t[len(v3ResultPrefix) : len(t)-1])
	// The payload must be one object: a trailing field would end in "…}, "error": {…}".
	if len(payload) < 2 || payload[0] != '{' || payload[len(payload)-1] != '}' || bytes.Contains(payload, []byte(`"error":`)) {
		return false
	}
	r.Result = payload
	return true
}

func (r *v3Reply) spans(path string) ([]models.Span, error) {
	if r.Error != nil {
		return nil, fmt.Errorf("reply to %s is an error (code %d): %s", path, r.Error.HTTPCode, r.Error.Message)
	}
	if len(r.Result) == 0 || string(r.Result) == "null" {
		return nil, fmt.Errorf("reply to %s has no \"result\" field: is this URL Jaeger's query service (default port 16686)?", path)
	}
	td, err := otlptrace.UnmarshalJSON(r.Result)
	if err != nil {
		return nil, fmt.Errorf("reply to %s is not the OTLP JSON Jaeger sends: %w", path, err)
	}
	spans, err := otlptrace.Spans(td)
	if err != nil {
		return nil, fmt.Errorf("reply to %s has %w", path, err)
	}
	return spans, nil
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
