package jaeger

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// v3Search is a v3 Jaeger whose tag search answers nothing (as the in-memory storage does for
// failed requests) and whose v3 search answers reply.
func v3Search(t *testing.T, reply string) *Client {
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v3/services":
			fmt.Fprint(w, `{"services":["svc"]}`)
		case "/api/traces":
			fmt.Fprint(w, `{"data":[]}`)
		case "/api/v3/traces":
			if reply == "404" {
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprint(w, `{"error":{"httpCode":404,"message":"No traces found"}}`)
				return
			}
			fmt.Fprint(w, reply)
		default:
			http.NotFound(w, r)
		}
	}))
	return c
}

// A v3 search's failed traces come back whole (every span, attributes, events, the service),
// the others not at all; a search that found nothing is no failure; a reply cut short says so.
func TestFailedTracesReadsOnlyTheFailedTracesOfASearch(t *testing.T) {
	const failed, ok = "4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c"
	span := func(trace, id, parent string, code int, attrs string) string {
		return fmt.Sprintf(`{"traceId":%q,"spanId":%q,"parentSpanId":%q,"name":"op-%s","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000001000000000","attributes":[%s],"events":[{"timeUnixNano":"1700000000500000000","name":"ev"}],"status":{"code":%d}}`,
			trace, id, parent, id, attrs, code)
	}
	gpu := `{"key":"gpu.index","value":{"intValue":"3"}}`
	reply := `{"result":{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[` +
		span(ok, "0000000000000001", "", 1, gpu) + "," + span(failed, "0000000000000002", "", 0, gpu) + "," +
		span(failed, "0000000000000003", "0000000000000002", 2, gpu) + "," + span(ok, "0000000000000004", "0000000000000001", 0, "") +
		`]}]}]}}`
	q := models.TraceSearchQuery{Service: "svc", Limit: 20}
	traces, err := v3Search(t, reply).FailedTraces(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 1 || traces[0].TraceID != failed || len(traces[0].Spans) != 2 {
		t.Fatalf("traces %+v, want only %s with its 2 spans", traces, failed)
	}
	for _, s := range traces[0].Spans {
		if s.Service != "svc" || s.Attributes["gpu.index"] != "3" || len(s.Events) != 1 || s.Resource["service.name"] != "svc" {
			t.Errorf("span not read whole: %+v", s)
		}
	}
	if traces, err := v3Search(t, "404").FailedTraces(context.Background(), q); err != nil || len(traces) != 0 {
		t.Errorf("no traces found: %v, %v", traces, err)
	}
	if _, err := v3Search(t, reply[:len(reply)/2]).FailedTraces(context.Background(), q); err == nil || !strings.Contains(err.Error(), "is truncated") {
		t.Errorf("a reply cut short: %v", err)
	}
}

// The services of one request chain answer a triage's searches with the same bytes: the reply
// is scanned once, each service still gets its failed traces (its own copy), and a reply that
// differs by a byte is scanned anew and answers its own failures.
func TestFailedTracesScansTheSameReplyOnce(t *testing.T) {
	reply := func(failedSpan string) string {
		return `{"result":{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[` +
			`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"` + failedSpan + `","name":"op","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000001000000000","status":{"code":2}},` +
			`{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"0000000000000009","name":"op","startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000001000000000","status":{}}` +
			`]}]}]}}`
	}
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v3/services":
			fmt.Fprint(w, `{"services":["a","b","c"]}`)
		case "/api/traces":
			fmt.Fprint(w, `{"data":[]}`)
		case "/api/v3/traces":
			if r.URL.Query().Get("query.service_name") == "c" {
				fmt.Fprint(w, reply("0000000000000003"))
				return
			}
			fmt.Fprint(w, reply("0000000000000002"))
		default:
			http.NotFound(w, r)
		}
	}))
	spanOf := func(service string) string {
		traces, err := c.FailedTraces(context.Background(), models.TraceSearchQuery{Service: service, Limit: 20})
		if err != nil || len(traces) != 1 || len(traces[0].Spans) != 1 {
			t.Fatalf("%s: %+v, %v", service, traces, err)
		}
		id := traces[0].Spans[0].SpanID
		traces[0].Spans[0].SpanID = "changed by its caller"
		return traces[0].Spans[0].Operation + " " + traces[0].TraceID + " " + id
	}
	a, b := spanOf("a"), spanOf("b") // b's spans are the kept ones, which a's caller changed
	if a != b || c.scans.kept.Len() != 1 {
		t.Errorf("a %q, b %q: %d replies scanned, want the same reply once", a, b, c.scans.kept.Len())
	}
	if !strings.HasSuffix(b, " 0000000000000002") {
		t.Errorf("a caller's change reached the kept spans: %s", b)
	}
	spanOf("c")
	if c.scans.kept.Len() != 2 {
		t.Errorf("%d replies scanned, want the differing one scanned too", c.scans.kept.Len())
	}
}
