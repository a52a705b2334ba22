package tempo

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// replyWith is a client whose every request is answered 200 with body, without a network.
func replyWith(body []byte, contentType string) *Client {
	rt := roundTrip(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {contentType}},
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
	})
	return New(models.Upstream{Name: models.Tempo, URL: "http://tempo.invalid"}, &http.Client{Transport: rt})
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Any reply to a trace fetch is a trace with IDs on every span, or an error; never a panic.
func FuzzTraceReply(f *testing.F) {
	td := oneTrace("0af7651916cd43dd8448eb211c80319c")
	traceBytes, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		f.Fatal(err)
	}
	whole := append([]byte{0x0a}, appendVarint(nil, uint64(len(traceBytes)))...)
	whole = append(whole, traceBytes...)
	f.Add(whole)
	f.Add(append(whole, 0x18, 0x01, 0x22, 0x03, 'c', 'u', 't')) // partial, with its message
	f.Add(whole[:len(whole)/2])
	f.Add([]byte{})
	f.Add([]byte("{\x0a\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00garbage"))
	f.Fuzz(func(t *testing.T, body []byte) {
		tr, err := replyWith(body, mediaTypeProtobuf).Trace(context.Background(), "0af7651916cd43dd8448eb211c80319c")
		if err != nil {
			return
		}
		if len(tr.Spans) == 0 {
			t.Fatal("a trace without spans was answered without the not-found error")
		}
		for _, s := range tr.Spans {
			if s.SpanID == "" || s.TraceID == "" {
				t.Fatalf("span without IDs: %+v", s)
			}
		}
	})
}

// Any reply to a search is traces and spans with IDs and no negative duration, or an error.
func FuzzSearchReply(f *testing.F) {
	f.Add([]byte(`{"traces":[{"traceID":"af7651916cd43dd8448eb211c80319c","rootServiceName":"gateway","rootTraceName":"GET /","startTimeUnixNano":"1796450000000000000","durationMs":900,` +
		`"spanSets":[{"spans":[{"spanID":"00f067aa0ba902b7","name":"GET /","startTimeUnixNano":"1796450000000000000","durationNanos":"900000000",` +
		`"attributes":[{"key":"pyroscope.profile.id","value":{"stringValue":"00f067aa0ba902b7"}}]}],"matched":1}],"serviceStats":{"gateway":{"spanCount":2}}}]}`))
	f.Add([]byte(`{"traces":[{"traceID":"zz","startTimeUnixNano":"x"}]}`))
	f.Add([]byte(`{"traces":[{"traceID":"1","startTimeUnixNano":"1","spanSets":[{"spans":[{"spanID":"1","durationNanos":"-5"}]}]}]}`))
	f.Add([]byte(`<html>`))
	f.Fuzz(func(t *testing.T, body []byte) {
		c := replyWith(body, mediaTypeJSON)
		q := models.TraceSearchQuery{Service: "gateway", Start: time.Unix(1_796_449_000, 0), End: time.Unix(1_796_451_000, 0), Limit: 20}
		if found, err := c.FindTraces(context.Background(), q); err == nil {
			for _, s := range found {
				if !models.IsHexTraceID(s.TraceID) || s.Duration < 0 || len(found) > q.Limit {
					t.Fatalf("summary %+v of %d", s, len(found))
				}
			}
		}
		if spans, err := c.SearchSpans(context.Background(), q); err == nil {
			for _, s := range spans {
				if !models.IsHexTraceID(s.TraceID) || s.Duration < 0 || strings.TrimSpace(s.Service) == "" {
					t.Fatalf("span %+v", s)
				}
			}
		}
	})
}

func appendVarint(b []byte, v uint64) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}
