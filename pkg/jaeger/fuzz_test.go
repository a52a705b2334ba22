package jaeger

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// seedReplies adds the replies recorded from the bed's real Jaeger (testdata/README.md), whole
// and cut, plus hand-made damaged ones.
func seedReplies(f *testing.F, files []string, extra ...string) {
	for _, name := range files {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/3])
	}
	for _, e := range extra {
		f.Add([]byte(e))
	}
}

// decodeReply reads a reply as getJSON does: one JSON value from the body.
func decodeReply(data []byte, dst any) bool {
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(dst); err != nil {
		return false
	}
	return true
}

// checkSpans holds for any reply either decoder accepted: at most one span per 10 bytes of
// reply (no amplification), no span without IDs, no negative duration, and the summaries of a
// search account for every span.
func checkSpans(t *testing.T, data []byte, spans []models.Span) {
	t.Helper()
	if len(spans) > len(data)/10+1 {
		t.Fatalf("%d spans out of %d bytes", len(spans), len(data))
	}
	for _, s := range spans {
		if s.SpanID == "" || s.TraceID == "" {
			t.Fatalf("span without IDs: %+v", s)
		}
		if s.Duration < 0 {
			t.Fatalf("span %s has a negative duration %v", s.SpanID, s.Duration)
		}
	}
	models.SortSpans(spans)
	total := 0
	for _, sum := range summarise(spans) {
		total += sum.Spans
		if sum.Duration < 0 || sum.Spans == 0 || len(sum.Services) == 0 {
			t.Fatalf("summary %+v", sum)
		}
	}
	if total != len(spans) {
		t.Fatalf("summaries count %d spans of %d", total, len(spans))
	}
}

// checkReplyError says a decoder's error names the reply it read.
func checkReplyError(t *testing.T, err error, path string) {
	t.Helper()
	if !strings.Contains(err.Error(), "reply to "+path) {
		t.Fatalf("error %q does not name the reply to %s", err, path)
	}
}

// FuzzDecodeV1 feeds arbitrary replies to the v1 JSON decoder (trace and search replies share
// it): no panic, bounded output, errors naming the reply.
func FuzzDecodeV1(f *testing.F) {
	seedReplies(f, []string{"v1_trace.json", "v1_search.json", "v1_search_empty.json", "v1_not_found.json"},
		`{"data":[{"traceID":"a3ce929d0e0e4736","spans":[{"spanID":"1","processID":"p1","duration":-5,"startTime":-1}],"processes":{"p1":{"serviceName":"s"}}}]}`,
		`{"data":[{"spans":[{"spanID":"1","processID":"nope"}]}]}`,
		`{"data":[{"spans":[{"spanID":"1","process":{"serviceName":"x\"} or {"},"duration":9223372036854775807}]}]}`,
		`{"data":[{"spans":[{"spanID":"","operationName":"op"}]}]}`,
		`{"data":null,"errors":[{"code":500,"msg":"boom"}]}`,
		`{"data":[{"spans":[{"spanID":"1","process":{},"tags":[{"key":"k","value":{"a":[1]}}],"references":[{"refType":"FOLLOWS_FROM","spanID":"2"}]}]}]}`,
	)
	const path = "/api/traces/4bf92f3577b34da6a3ce929d0e0e4736"
	f.Fuzz(func(t *testing.T, data []byte) {
		var r v1Reply
		if !decodeReply(data, &r) {
			return
		}
		spans, err := r.spans(path)
		if err != nil {
			checkReplyError(t, err, path)
			return
		}
		checkSpans(t, data, spans)
	})
}

// FuzzDecodeV3 feeds arbitrary replies to the v3 (OTLP JSON, read as it arrives) decoder.
func FuzzDecodeV3(f *testing.F) {
	seedReplies(f, []string{"v3_trace.json", "v3_search.json", "v3_search_empty.json", "v3_not_found.json"},
		`{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"a3ce929d0e0e4736","startTimeUnixNano":"2","endTimeUnixNano":"1"}]}]}]}}`,
		`{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"a3ce929d0e0e4736","startTimeUnixNano":"18446744073709551615","endTimeUnixNano":"1"}]}]}]}}`,
		`{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"name":"no ids"}]}]}]}}`,
		`{"result":{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"zz","spanId":"a3ce929d0e0e4736"}]}]}]}}`,
		`{"error":{"httpCode":404,"message":"trace not found"}}`,
		`{"result":null}`,
	)
	const path = "/api/v3/traces/4bf92f3577b34da6a3ce929d0e0e4736"
	f.Fuzz(func(t *testing.T, data []byte) {
		spans, err := decodeV3(bytes.NewReader(data), path)
		failed, failedErr := decodeV3Failed(data, path)
		// The failed traces' read may pass over what is wrong in spans it does not keep, never
		// fail a reply the whole read takes.
		if err == nil && failedErr != nil {
			t.Fatalf("the whole read takes the reply, the failed traces' read says %v", failedErr)
		}
		if failedErr != nil {
			checkReplyError(t, failedErr, path)
		}
		if err != nil {
			checkReplyError(t, err, path)
			return
		}
		checkSpans(t, data, spans)
		// The failed traces' read answers the spans of the traces with a failed span.
		want := 0
		for _, tr := range failedOnly(spans, APIv3) {
			want += len(tr.Spans)
		}
		if len(failed) != want {
			t.Fatalf("%d spans of failed traces, the whole read has %d", len(failed), want)
		}
	})
}
