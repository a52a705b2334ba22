package tempo

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// searchReply is a SearchResponse as Tempo's frontend writes it (gogo jsonpb): the trace ID
// without its leading zeros, 64-bit numbers as strings, the matched spans in spanSets with the
// selected attributes, span counts per service.
const searchReply = `{"traces":[
 {"traceID":"f067aa0ba902b700f067aa0ba902b7","rootServiceName":"gateway","rootTraceName":"POST /v1/rank","startTimeUnixNano":"1796450000000000000","durationMs":1250,
  "spanSets":[{"spans":[{"spanID":"0102030405060708","name":"score","startTimeUnixNano":"1796450000100000000","durationNanos":"900000000",
    "attributes":[{"key":"pyroscope.profile.id","value":{"stringValue":"0102030405060708"}}]}],"matched":1}],
  "serviceStats":{"gateway":{"spanCount":3},"ranker":{"spanCount":4,"errorCount":1}}},
 {"traceID":"4bf92f3577b34da6a3ce929d0e0e4736","rootServiceName":"<root span not yet received>","startTimeUnixNano":"1796450001000000000","durationMs":300,
  "spanSets":[{"spans":[{"spanID":"1112131415161718","name":"score","startTimeUnixNano":"1796450001000000000","durationNanos":"300000000"}],"matched":1}],
  "serviceStats":{"ranker":{"spanCount":2}}}],
 "metrics":{"inspectedTraces":12,"inspectedBytes":"4096"}}`

func TestFindTracesAsksTraceQLAndReadsTheSummaries(t *testing.T) {
	f := &fakeTempo{search: searchReply}
	c := f.serve(t)
	start := time.Unix(1_796_449_000, 500_000_000)
	found, err := c.FindTraces(context.Background(), models.TraceSearchQuery{Service: "ranker", Operation: "score", MinDuration: 250 * time.Millisecond,
		Start: start, End: start.Add(time.Hour), Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	q := f.asked[0]
	if q.Get("q") != `{ resource.service.name = "ranker" && name = "score" && duration >= 250000000ns } with (most_recent=true)` || q.Get("start") != "1796449000" ||
		q.Get("end") != "1796452601" || q.Get("limit") != "5" || q.Get("spss") != "" {
		t.Errorf("asked %v", q)
	}
	if len(found) != 2 {
		t.Fatalf("found %+v", found)
	}
	a, b := found[0], found[1]
	if a.TraceID != "00f067aa0ba902b700f067aa0ba902b7" || a.RootService != "gateway" || a.RootOperation != "POST /v1/rank" || a.DurationMs != 1250 ||
		a.Spans != 7 || strings.Join(a.Services, ",") != "gateway,ranker" || !a.Start.Equal(time.Unix(1_796_450_000, 0)) || a.RootMissing {
		t.Errorf("first summary %+v", a)
	}
	if !b.RootMissing || b.RootService != "" {
		t.Errorf("a trace whose root has not arrived: %+v", b)
	}
	if _, err := c.FindTraces(context.Background(), models.TraceSearchQuery{}); err == nil {
		t.Error("a search without a service was sent")
	}
}

func TestSearchSpansSelectsTheProfileIDOfEachMatchingSpan(t *testing.T) {
	f := &fakeTempo{search: searchReply}
	c := f.serve(t)
	spans, err := c.SearchSpans(context.Background(), models.TraceSearchQuery{Service: "ranker", Operation: "score", Limit: 50})
	if err != nil {
		t.Fatal(err)
	}
	if q := f.asked[0]; q.Get("q") != `{ resource.service.name = "ranker" && name = "score" } | select(span.pyroscope.profile.id) with (most_recent=true)` || q.Get("spss") != "100" {
		t.Errorf("asked %v", q)
	}
	if len(spans) != 2 || spans[0].TraceID != "00f067aa0ba902b700f067aa0ba902b7" || spans[0].Service != "ranker" || spans[0].Operation != "score" ||
		spans[0].Duration != 900*time.Millisecond || spans[0].Attributes[models.ProfileIDAttribute] != "0102030405060708" {
		t.Errorf("spans %+v", spans)
	}
	if id, _ := spans[0].ProfileID(); id != "0102030405060708" {
		t.Errorf("profile ID %q", id)
	}
}

func TestFailedTracesReadsEachFailedTraceWhole(t *testing.T) {
	a := "00f067aa0ba902b700f067aa0ba902b7"
	f := &fakeTempo{search: searchReply, traces: map[string]ptrace.Traces{a: oneTrace(a)}}
	c := f.serve(t)
	traces, err := c.FailedTraces(context.Background(), models.TraceSearchQuery{Service: "ranker", Operation: "ignored", MinDuration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if q := f.asked[0]; q.Get("q") != `{ resource.service.name = "ranker" && status = error } with (most_recent=true)` || q.Get("limit") != "20" {
		t.Errorf("asked %v", q)
	}
	// The second hit is gone from the store (retention): left out, not an error.
	if len(traces) != 1 || traces[0].TraceID != a || len(traces[0].Spans) != 2 {
		t.Errorf("traces %+v", traces)
	}
}
