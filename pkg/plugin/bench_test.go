package plugin

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/tracing"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// upstreamCalls records the spans the plugin opens for its upstream calls, so a benchmark can set
// a query's wall time against the calls it made, measured in the same query.
type upstreamCalls struct {
	rec  *tracetest.SpanRecorder
	seen int
}

// recordUpstreamCalls makes the SDK's default tracer (which upstream.StartSpan uses) record
// into memory until the benchmark ends. Call it before creating the data source.
func recordUpstreamCalls(b *testing.B) *upstreamCalls {
	rec := tracetest.NewSpanRecorder()
	prev := tracing.DefaultTracer()
	tracing.InitDefaultTracer(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("hsi-bench"))
	b.Cleanup(func() { tracing.InitDefaultTracer(prev) })
	return &upstreamCalls{rec: rec}
}

// callTimes sums up the upstream calls ended since the last call: inFlight is the time at least
// one was in flight (for a traceId profile: the Jaeger call, then the slowest of the parallel
// Pyroscope calls), sum their durations added up as if made one after another, slowest the
// longest single call. Only the logical calls count ("Pyroscope SelectMergeStacktraces"), not
// the HTTP requests under them.
func (u *upstreamCalls) callTimes(b *testing.B) (inFlight, sum, slowest time.Duration, calls int) {
	ended := u.rec.Ended()
	spans := ended[u.seen:]
	u.seen = len(ended)
	var iv []upstreamCall
	for _, s := range spans {
		for _, a := range s.Attributes() {
			if string(a.Key) == upstream.SpanAttribute && strings.HasPrefix(s.Name(), a.Value.AsString()+" ") {
				iv = append(iv, upstreamCall{s.StartTime(), s.EndTime()})
				d := s.EndTime().Sub(s.StartTime())
				sum += d
				slowest = max(slowest, d)
			}
		}
	}
	if len(iv) == 0 {
		b.Fatalf("the query made no upstream call that was recorded (%d spans ended)", len(spans))
	}
	return busy(iv), sum, slowest, len(iv)
}

// reportAgainstCalls reports a query's wall time beside the upstream calls it made, all per query
// in milliseconds: the whole query, the time an upstream call was in flight (its critical path),
// all calls added up, and the slowest single call.
func reportAgainstCalls(b *testing.B, n int, wall, inFlight, sum, slowest time.Duration, calls int) {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(n) }
	b.ReportMetric(ms(wall), "wall-ms/op")
	b.ReportMetric(ms(inFlight), "in-flight-ms/op")
	b.ReportMetric(ms(sum), "calls-sum-ms/op")
	b.ReportMetric(ms(slowest), "slowest-call-ms/op")
	b.ReportMetric(float64(calls)/float64(n), "calls/op")
	b.ReportMetric(float64(wall)/float64(inFlight), "x-critical-path")
	b.ReportMetric(float64(wall)/float64(sum), "x-sequential")
}

// BenchmarkTraceProfileFanOut measures a traceId profile query against upstreams with injected
// latency: Jaeger answers the trace in 20 ms, Pyroscope each span profile in 30 ms. The trace
// must come before its spans' profiles, so the critical path is one Jaeger call plus the slowest
// Pyroscope call (about 50 ms); asking span by span in sequence would take 20 + n × 30 ms.
// Both references are measured from the plugin's own spans of its upstream calls in the same
// queries. Reported: wall time as a multiple of each.
func BenchmarkTraceProfileFanOut(b *testing.B) {
	const jaegerDelay, pyroDelay = 20 * time.Millisecond, 30 * time.Millisecond
	for _, spans := range []int{3, 12} {
		b.Run(fmt.Sprintf("spans=%d", spans), func(b *testing.B) {
			calls := recordUpstreamCalls(b)
			start := time.Now().Add(-time.Minute)
			names := make([]string, spans)
			for i := range names {
				names[i] = fmt.Sprintf("service-%d/op", i%3)
			}
			tr := fakeTrace("4bf92f3577b34da6a3ce929d0e0e4736", start, 10*time.Millisecond, names...)
			pyro := &spanPyroscope{bySpan: map[string][]string{}, delay: pyroDelay}
			for i := range tr.Spans {
				tr.Spans[i].Attributes[models.ProfileIDAttribute] = tr.Spans[i].SpanID
				pyro.bySpan[tr.Spans[i].SpanID] = []string{fmt.Sprintf("main.handle;main.work%d 10", i)}
			}
			slowJaeger := func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					time.Sleep(jaegerDelay)
					h.ServeHTTP(w, r)
				})
			}
			ds := newTestDatasource(b, map[string]any{
				"pyroscopeUrl": serveQuerier(b, pyro),
				"jaegerUrl":    newJaegerFake(b, &jaegerFake{Traces: []models.Trace{tr}}, slowJaeger).URL,
			}, nil)
			q := query("A", `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`)
			runOnce := func() {
				forgetKeptReplies(b, ds) // each query a first refresh's: its span profiles asked
				res, err := ds.QueryData(b.Context(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
				if err != nil || res.Responses["A"].Error != nil {
					b.Fatal(err, res.Responses["A"].Error)
				}
				if got := res.Responses["A"].Frames[0].Fields[1].At(0).(int64); got != int64(10*spans) {
					b.Fatalf("total %d", got)
				}
			}
			runOnce() // detects Jaeger's API once, as a long-lived instance does
			calls.callTimes(b)
			var wall, inFlight, sum, slowest time.Duration
			var n, made int
			for b.Loop() {
				t0 := time.Now()
				runOnce()
				wall += time.Since(t0)
				f, s, sl, c := calls.callTimes(b)
				inFlight, sum, slowest, made, n = inFlight+f, sum+s, slowest+sl, made+c, n+1
			}
			if made != n*(1+spans) {
				b.Fatalf("%d upstream calls in %d queries, want one Jaeger call and %d Pyroscope calls each", made, n, spans)
			}
			reportAgainstCalls(b, n, wall, inFlight, sum, slowest, made)
		})
	}
}
