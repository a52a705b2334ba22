package jaeger

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// twoServices is a v3 reply of one trace: a span of "front" calling one of "back", each with an
// attribute.
func twoServices(backOp string) string {
	span := func(service, id, parent, name string) string {
		return `{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"` + service + `"}}]},"scopeSpans":[{"spans":[` +
			`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"` + id + `","parentSpanId":"` + parent + `","name":"` + name + `",` +
			`"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000001000000000",` +
			`"attributes":[{"key":"http.route","value":{"stringValue":"/` + name + `"}}]}]}]}`
	}
	return `{"result":{"resourceSpans":[` + span("front", "0000000000000001", "", "GET /chat") + "," +
		span("back", "0000000000000002", "0000000000000001", backOp) + `]}}`
}

// replying serves Jaeger's v3 API answering every search and trace read with the reply last
// stored in the pointer it returns (body first), counting the reads.
func replying(t *testing.T, body string) (*Client, *atomic.Pointer[string], *atomic.Int32) {
	var reply atomic.Pointer[string]
	var reads atomic.Int32
	reply.Store(&body)
	c, _ := client(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v3/services" {
			fmt.Fprint(w, `{"services":["front","back"]}`)
			return
		}
		reads.Add(1)
		fmt.Fprint(w, *reply.Load())
	}))
	return c, &reply, &reads
}

// The panels of one refresh ask the same search one after another, and Jaeger answers the same
// bytes: the reply is read once, each caller gets every span (its own copy), the searched
// service's whole and the others' skimmed; a search of another service reads the same bytes
// anew, for its own spans' attributes; a reply that differs is read anew.
func TestSearchesReadTheSameReplyOnce(t *testing.T) {
	c, reply, reads := replying(t, twoServices("SELECT"))
	search := func(service string) []models.Span {
		t.Helper()
		spans, err := c.SearchSpans(context.Background(), models.TraceSearchQuery{Service: service, Limit: 20})
		if err != nil || len(spans) != 2 {
			t.Fatalf("%s: %+v, %v", service, spans, err)
		}
		return spans
	}
	a := search("front")
	a[0].Operation = "changed by its caller"
	b := search("front")
	if reads.Load() != 2 || c.scans.kept.Len() != 1 {
		t.Fatalf("%d replies fetched, %d read; want 2 fetched, the same bytes read once", reads.Load(), c.scans.kept.Len())
	}
	if b[0].Operation != "GET /chat" || b[1].Operation != "SELECT" {
		t.Errorf("a caller's change reached the next caller: %+v", b)
	}
	if b[0].Attributes["http.route"] != "/GET /chat" || len(b[1].Attributes) != 0 {
		t.Errorf("the search of front: front's span whole, back's skimmed; got %v and %v", b[0].Attributes, b[1].Attributes)
	}

	back := search("back")
	if c.scans.kept.Len() != 2 || back[1].Attributes["http.route"] != "/SELECT" || len(back[0].Attributes) != 0 {
		t.Errorf("the search of back (%d readings kept): back's span whole, front's skimmed; got %v and %v",
			c.scans.kept.Len(), back[1].Attributes, back[0].Attributes)
	}

	second := twoServices("UPDATE")
	reply.Store(&second)
	if s := search("front"); s[1].Operation != "UPDATE" || c.scans.kept.Len() != 3 {
		t.Errorf("a changed reply answered %q (%d readings kept), want it read anew", s[1].Operation, c.scans.kept.Len())
	}
}

// A trace read twice is read once, every span whole, each caller with its own sorted copy.
func TestTraceReadsTheSameReplyOnce(t *testing.T) {
	c, _, reads := replying(t, twoServices("SELECT"))
	for i := range 2 {
		tr, err := c.Trace(context.Background(), "4bf92f3577b34da6a3ce929d0e0e4736")
		if err != nil || len(tr.Spans) != 2 {
			t.Fatalf("read %d: %+v, %v", i, tr, err)
		}
		if tr.Spans[0].Attributes["http.route"] != "/GET /chat" || tr.Spans[1].Attributes["http.route"] != "/SELECT" {
			t.Errorf("read %d: want every span whole, got %v and %v", i, tr.Spans[0].Attributes, tr.Spans[1].Attributes)
		}
		tr.Spans[0], tr.Spans[1] = tr.Spans[1], tr.Spans[0]
	}
	if reads.Load() != 2 || c.scans.kept.Len() != 1 {
		t.Errorf("%d replies fetched, %d read; want 2 fetched, read once", reads.Load(), c.scans.kept.Len())
	}
}

// The replies kept stay within their bounds (recent.Store tests expiry and the bounds' order):
// at most maxScans replies and maxScanSpans spans, a reply over the bound on its own not kept.
func TestReplyScansStayBounded(t *testing.T) {
	f := newReplyScans()
	spans := func(n int) []models.Span { return make([]models.Span, n) }
	for i := range maxScans + 1 {
		f.put(keyOf(fmt.Appendf(nil, "%d", i), readWhole), spans(1))
	}
	if f.kept.Len() != maxScans {
		t.Errorf("%d replies kept, want at most %d", f.kept.Len(), maxScans)
	}
	if _, ok := f.get(keyOf([]byte("0"), readWhole)); ok {
		t.Errorf("the oldest reply kept beyond the bound")
	}
	big := keyOf([]byte("big"), readWhole)
	f.put(big, spans(maxScanSpans-1))
	if _, ok := f.get(big); !ok || f.kept.Weight() > maxScanSpans {
		t.Errorf("%d spans kept, want at most %d with the newest reply", f.kept.Weight(), maxScanSpans)
	}
	f.put(keyOf([]byte("too big"), readWhole), spans(maxScanSpans+1))
	if _, ok := f.get(big); !ok {
		t.Errorf("a reply over the bound on its own displaced the others")
	}
}
