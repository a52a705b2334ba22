package plugin

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
)

// BenchmarkTraceProfileFanOut measures a traceId profile query against upstreams with injected
// latency: Jaeger answers the trace in 20 ms, Pyroscope each span profile in 30 ms. The trace
// must come before its spans' profiles, so the critical path is one Jaeger call plus the slowest
// Pyroscope call (50 ms); asking span by span in sequence would take 20 + n × 30 ms. Reported:
// wall time as a multiple of the critical path and of that sequential sum.
func BenchmarkTraceProfileFanOut(b *testing.B) {
	const jaegerDelay, pyroDelay = 20 * time.Millisecond, 30 * time.Millisecond
	for _, spans := range []int{3, 12} {
		b.Run(fmt.Sprintf("spans=%d", spans), func(b *testing.B) {
			start := time.Now().Add(-time.Minute)
			names := make([]string, spans)
			for i := range names {
				names[i] = fmt.Sprintf("service-%d/op", i%3)
			}
			tr := fakeTrace("4bf92f3577b34da6a3ce929d0e0e4736", start, 10*time.Millisecond, names...)
			pyro := &spanPyroscope{bySpan: map[string][]string{}, delay: pyroDelay}
			for i := range tr.Spans {
				tr.Spans[i].Attributes[jaeger.ProfileIDAttribute] = tr.Spans[i].SpanID
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
				"jaegerUrl":    newJaegerFake(b, &jaegerFake{Traces: []jaeger.Trace{tr}}, slowJaeger).URL,
			}, nil)
			q := query("A", `{"queryType":"profile","traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}`)
			runOnce := func() {
				res, err := ds.QueryData(b.Context(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
				if err != nil || res.Responses["A"].Error != nil {
					b.Fatal(err, res.Responses["A"].Error)
				}
				if got := res.Responses["A"].Frames[0].Fields[1].At(0).(int64); got != int64(10*spans) {
					b.Fatalf("total %d", got)
				}
			}
			runOnce() // detects Jaeger's API once, as a long-lived instance does
			var wall time.Duration
			for b.Loop() {
				t0 := time.Now()
				runOnce()
				wall += time.Since(t0)
			}
			perOp := float64(wall) / float64(b.N)
			b.ReportMetric(perOp/float64(jaegerDelay+pyroDelay), "x-critical-path")
			b.ReportMetric(perOp/float64(jaegerDelay+time.Duration(spans)*pyroDelay), "x-sequential")
		})
	}
}
