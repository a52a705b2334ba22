//go:build integration

package plugin

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

// TestRealTailRanksAnEndpointsInjectedMix sends an endpoint's traffic through OpenTelemetry's
// OTLP exporter to the bed's Jaeger, as an instrumented service would: 100 requests of a
// randomly named API calling a vLLM engine (its llm_request span with vLLM's latency
// attributes) and then a database that sends no spans; 5 of them slowed, 3 by the engine's
// queue and 2 by the database. The tail query, over real Jaeger search and trace reads, ranks
// the queue first and gives each cause its injected share of the tail's excess within 10
// points.
func TestRealTailRanksAnEndpointsInjectedMix(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 34))
	api, engine, db := randomWord(rng)+"-api", randomWord(rng)+"-vllm", randomWord(rng)+"-db"
	op := "POST /v1/" + randomWord(rng)
	t.Logf("endpoint %s %s, engine %s, database %s", api, op, engine, db)
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Millisecond }
	const n = 100
	slow := map[int]string{7: "queue", 23: "queue", 48: "queue", 61: "downstream", 90: "downstream"}
	injected := map[string]injectedCause{}
	durations := map[string]time.Duration{}
	begin := time.Now().Add(-10 * time.Minute)
	for i := range n {
		queue, prefill, decode, wait := ms(0, 3), ms(20, 40), ms(120, 200), ms(10, 30)
		extra := ms(700, 1100)
		switch slow[i] {
		case "queue":
			queue += extra
		case "downstream":
			wait += extra
		}
		e2e := queue + prefill + decode
		engineAt := 2 * time.Millisecond
		callAt := engineAt + e2e + 2*time.Millisecond
		total := callAt + wait + 3*time.Millisecond
		at := func(k string, d time.Duration) attribute.KeyValue { return attribute.Float64(k, d.Seconds()) }
		id, err := testbed.SendSpans(ctx, bed.JaegerOTLP, begin.Add(time.Duration(i)*5*time.Second), []testbed.SentSpan{
			{Service: api, Name: op, Kind: trace.SpanKindServer, Parent: -1, End: total},
			{Service: api, Name: "POST", Kind: trace.SpanKindClient, Parent: 0, Start: engineAt - time.Millisecond, End: engineAt + e2e + time.Millisecond,
				Attributes: []attribute.KeyValue{attribute.String("server.address", engine)}},
			{Service: engine, Name: "llm_request", Kind: trace.SpanKindServer, Parent: 1, Start: engineAt, End: engineAt + e2e,
				Attributes: []attribute.KeyValue{attribute.String("gen_ai.response.model", "chat-8b"),
					at("gen_ai.latency.time_in_queue", queue), at("gen_ai.latency.time_in_model_prefill", prefill),
					at("gen_ai.latency.time_in_model_decode", decode), at("gen_ai.latency.e2e", e2e)}},
			{Service: api, Name: "SELECT", Kind: trace.SpanKindClient, Parent: 0, Start: callAt, End: callAt + wait,
				Attributes: []attribute.KeyValue{attribute.String("peer.service", db)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		durations[id] = total
		if slow[i] != "" {
			injected[id] = injectedCause{slow[i], extra}
		}
	}
	ds := bedDatasource(t)
	model := fmt.Sprintf(`{"queryType":"tail","service":%q,"operation":%q,"limit":1500}`, api, op)
	// Wait for the very condition checked: Jaeger holds all 100 requests, whole.
	var r backend.DataResponse
	last := ""
	for deadline := time.Now().Add(time.Minute); ; {
		r = run(t, ds, query("A", model)).Responses["A"]
		if r.Error != nil {
			last = r.Error.Error()
		} else if notes := frameNotices(r.Frames[0]); strings.Contains(notes, fmt.Sprintf("from %d span(s) of %s %s in %d trace(s)", n, api, op, n)) &&
			len(tailRows(t, r.Frames[1])) >= 2 {
			break
		} else {
			last = notes
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tail never covered the %d requests sent: %s", n, last)
		}
		time.Sleep(2 * time.Second)
	}
	summary := r.Frames[0].Fields[0].At(0).(string)
	rows := tailRows(t, r.Frames[1])
	t.Logf("%s\n%s", summary, frameNotices(r.Frames[0]))
	for _, row := range rows {
		t.Logf("%-50s share %.2f, %.0f ms at the median, %.0f ms in the tail", row.cause, row.share, row.atMedian, row.inTail)
	}
	tail := tailGroup(t, r.Frames[2], "tail")
	var all []time.Duration
	for _, d := range durations {
		all = append(all, d)
	}
	median := nearestRank(all, 50)
	expected, excess := map[string]float64{}, 0.0
	for _, id := range tail {
		excess += max(durations[id]-median, 0).Seconds()
		if in, ok := injected[id]; ok {
			expected[in.kind] += in.extra.Seconds()
		}
	}
	if len(expected) != 2 {
		t.Fatalf("the tail %v does not hold both slowed kinds", tail)
	}
	for kind := range expected {
		expected[kind] /= excess
	}
	if rows[0].kind != "queue" || !rows[0].standsOut {
		t.Errorf("first cause %s (stands out %t), want the engine's queue", rows[0].cause, rows[0].standsOut)
	}
	// The injected causes: the engine's queue, and the API's wait on the database (the API also
	// waits on the engine's span a millisecond or two each way: another downstream cause).
	injectedRow := func(row tailRow) (string, bool) {
		switch {
		case row.kind == "queue" && strings.Contains(row.cause, engine):
			return "queue", true
		case row.kind == "downstream" && strings.Contains(row.cause, db):
			return "downstream", true
		}
		return "", false
	}
	found := map[string]bool{}
	for _, row := range rows {
		kind, ok := injectedRow(row)
		if !ok {
			if row.share >= 0.1 {
				t.Errorf("%s was not injected, yet has %.0f%% of the excess", row.cause, 100*row.share)
			}
			continue
		}
		found[kind] = true
		if want := expected[kind]; math.Abs(row.share-want) > 0.10 {
			t.Errorf("%s: share %.0f%%, injected %.0f%%", row.cause, 100*row.share, 100*want)
		}
	}
	if len(found) != 2 {
		t.Errorf("the causes name %v of the two injected", found)
	}
	if !strings.HasPrefix(summary, "Queued in "+engine) {
		t.Errorf("the answer does not name the engine's queue: %s", summary)
	}
}

// nearestRank is the p-th percentile of ds by nearest rank, as the tail takes its median.
func nearestRank(ds []time.Duration, p float64) time.Duration {
	sorted := slices.Sorted(slices.Values(ds))
	return sorted[int(math.Ceil(p/100*float64(len(sorted))))-1]
}
