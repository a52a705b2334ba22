package jaeger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf8"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// v3 carries OTLP's status (code 2 is ERROR) and the exception as a span event.
func TestV3ReadsSpanStatusAndExceptionEvents(t *testing.T) {
	reply := `{"result": {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "embedder"}}]},
	  "scopeSpans": [{"spans": [
	    {"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7", "name": "embed_batch", "kind": 2,
	     "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000400000000",
	     "events": [{"timeUnixNano": "1700000000399000000", "name": "exception", "attributes": [
	        {"key": "exception.type", "value": {"stringValue": "torch.OutOfMemoryError"}},
	        {"key": "exception.message", "value": {"stringValue": "CUDA out of memory. Tried to allocate 2.50 GiB"}}]}],
	     "status": {"code": 2, "message": "CUDA out of memory"}},
	    {"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b8", "name": "ok", "kind": 2,
	     "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000400000000", "status": {"code": 1}},
	    {"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b9", "name": "unset", "kind": 2,
	     "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000000400000000"}]}]}]}}`
	spans, err := decodeV3(strings.NewReader(reply), "/api/v3/traces/x")
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 3 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if !s.Failed() || s.StatusMessage != "CUDA out of memory" {
		t.Errorf("status %q %q", s.Status, s.StatusMessage)
	}
	if typ, msg, ok := s.Exception(); !ok || typ != "torch.OutOfMemoryError" || msg != "CUDA out of memory. Tried to allocate 2.50 GiB" {
		t.Errorf("exception %q %q %v", typ, msg, ok)
	}
	if spans[1].Status != models.StatusOK || spans[1].Failed() || spans[2].Status != "" || spans[2].Failed() {
		t.Errorf("statuses %q %q", spans[1].Status, spans[2].Status)
	}
}

// v1 turns OTLP's status into tags (otel.status_code, otel.status_description) and keeps
// OpenTracing's error=true; the exception comes as a log whose "event" field names it.
func TestV1ReadsSpanStatusFromItsTagsAndExceptionsFromLogs(t *testing.T) {
	cases := []struct {
		name         string
		tags         string
		status, desc string
	}{
		{"OTLP error", `[{"key":"otel.status_code","type":"string","value":"ERROR"},{"key":"otel.status_description","type":"string","value":"CUDA out of memory"},{"key":"error","type":"bool","value":true}]`, models.StatusError, "CUDA out of memory"},
		{"OpenTracing error tag", `[{"key":"error","type":"bool","value":true}]`, models.StatusError, ""},
		{"error tag as text", `[{"key":"error","type":"string","value":"true"}]`, models.StatusError, ""},
		{"OK", `[{"key":"otel.status_code","type":"string","value":"OK"}]`, models.StatusOK, ""},
		{"unset", `[{"key":"error","type":"bool","value":false}]`, "", ""},
	}
	for _, c := range cases {
		reply := `{"data": [{"traceID": "4bf92f3577b34da6a3ce929d0e0e4736", "processes": {"p1": {"serviceName": "embedder", "tags": []}},
		  "spans": [{"traceID": "4bf92f3577b34da6a3ce929d0e0e4736", "spanID": "00f067aa0ba902b7", "operationName": "embed_batch",
		    "references": [], "startTime": 1700000000000000, "duration": 400000, "processID": "p1", "tags": ` + c.tags + `,
		    "logs": [{"timestamp": 1700000000399000, "fields": [{"key": "event", "type": "string", "value": "exception"},
		      {"key": "exception.type", "type": "string", "value": "torch.OutOfMemoryError"},
		      {"key": "exception.message", "type": "string", "value": "CUDA out of memory"}]}]}]}]}`
		var r v1Reply
		if err := json.Unmarshal([]byte(reply), &r); err != nil {
			t.Fatal(err)
		}
		spans, err := r.spans("/api/traces/x")
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s := spans[0]
		if s.Status != c.status || s.StatusMessage != c.desc {
			t.Errorf("%s: status %q %q, want %q %q", c.name, s.Status, s.StatusMessage, c.status, c.desc)
		}
		if typ, _, ok := s.Exception(); !ok || typ != "torch.OutOfMemoryError" {
			t.Errorf("%s: exception %q %v", c.name, typ, ok)
		}
	}
}

// A v3 reply is {"result": …} or {"error": …}: each other form says what is wrong with it.
func TestV3ReplyFormsSayWhatIsWrong(t *testing.T) {
	const path = "/api/v3/traces/x"
	if spans, err := decodeV3(strings.NewReader(" {\"result\":{\"resourceSpans\":[]}}\n"), path); err != nil || len(spans) != 0 {
		t.Errorf("empty result: %v, %v", spans, err)
	}
	for body, want := range map[string]string{
		`{"error":{"httpCode":404,"message":"trace not found"}}`:                       "is an error (code 404): trace not found",
		`{"result":{"resourceSpans":[]},"error":{"httpCode":500,"message":"partial"}}`: "is an error (code 500): partial",
		`{"result":null}`:                `has no "result" field`,
		`{"data":[]}`:                    `has no "result" field`,
		`{"result":{"resourceSpans":[]}`: "is truncated",
		`{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"x"}]}]}]}}`:     `has a span ("x") without traceId or spanId`,
		`{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz"}]}]}]}}`: `has an ID "zz" that is not 32 hex digits`,
		`[]`: "is not the JSON Jaeger sends",
		`{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"startTimeUnixNano":true}]}]}]}}`: "startTimeUnixNano that is neither a number nor a string",
	} {
		_, err := decodeV3(strings.NewReader(body), path)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %v, want it to name %s and say %q", body, err, path, want)
		}
	}
}

// A v3 reply cut anywhere says it is truncated, whether its connection broke (the body's
// io.ErrUnexpectedEOF) or it ended cleanly before its JSON did: never a complaint about a span
// the cut left half-written, never a message that is not valid UTF-8.
func TestV3ReplyCutAnywhereIsTruncated(t *testing.T) {
	whole := testdata(t, "v3_search.json")
	const path = "/api/v3/traces"
	for cut := 1; cut < len(whole)-1; cut += 1 + len(whole)/400 {
		for _, end := range []error{io.ErrUnexpectedEOF, io.EOF} {
			body := io.MultiReader(bytes.NewReader(whole[:cut]), iotest.ErrReader(end))
			_, err := decodeV3(body, path)
			if err == nil || !strings.Contains(err.Error(), "is truncated") || !utf8.ValidString(err.Error()) {
				t.Fatalf("cut at %d of %d (%v): %v", cut, len(whole), end, err)
			}
			_, err = decodeV3Failed(whole[:cut], path)
			if err == nil || !strings.Contains(err.Error(), "is truncated") {
				t.Fatalf("failed traces' read, cut at %d of %d: %v", cut, len(whole), err)
			}
		}
	}
}

// A body that cannot be read to its end (Grafana's response limit, a reset) is that error, kept
// for the upstream error's words ("reply larger than the response limit").
func TestV3ReplyThatCannotBeReadKeepsTheReadError(t *testing.T) {
	whole := testdata(t, "v3_search.json")
	limit := errors.New("response body too large")
	_, err := decodeV3(io.MultiReader(bytes.NewReader(whole[:len(whole)/2]), iotest.ErrReader(limit)), "/api/v3/traces")
	if !errors.Is(err, limit) || !strings.Contains(err.Error(), "reading the reply to /api/v3/traces") {
		t.Errorf("%v", err)
	}
}

// Bytes that are not JSON (nor UTF-8) give an error that says so in valid UTF-8: Grafana's
// protocol refuses any other string.
func TestV3ReplyOfGarbageIsAValidMessage(t *testing.T) {
	_, err := decodeV3(bytes.NewReader([]byte("\xff\xfe{\"result\"\x80")), "/api/v3/traces")
	if err == nil || !strings.Contains(err.Error(), "is not the JSON Jaeger sends") || !utf8.ValidString(err.Error()) {
		t.Errorf("%q", err)
	}
}

// A reply whose connection ends before its Content-Length (a proxy's timeout, a size limit) says
// it is truncated, whether the v3 reply's body or its JSON ends early.
func TestV3ReplyCutBeforeItsLengthIsTruncated(t *testing.T) {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v3/services" {
			w.Write([]byte(`{"services":["a"]}`))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "5000")
		w.Write([]byte(`{"result":{"resourceSpans":[`)) // the server closes the connection short
	}))
	_, err := c.Trace(context.Background(), "4bf92f3577b34da6a3ce929d0e0e4736")
	if err == nil || !strings.Contains(err.Error(), "is truncated") {
		t.Errorf("error %v, want it to say the reply is truncated", err)
	}
}
