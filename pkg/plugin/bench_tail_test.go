package plugin

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/tail"
)

// BenchmarkTailQuery runs the tail query of an endpoint with its defaults (the newest 20
// requests over p95, against 10 median requests: 30 joins) through QueryData, and, side by side
// in each round, the trace query of one of its tail requests: the question the tail answers
// against the one a person would otherwise ask 30 times. The endpoint's traffic is an hour of
// 400 requests (tailScenario: an API calling a vLLM engine and an untraced database, 20 of them
// slowed by the engine's queue, the API's CPU or the database), its hosts' 8 GPUs each in
// Prometheus; the fakes answer with the test bed's latencies (benchJaegerTraceRead for every
// Jaeger call, searches included, benchPyroscopeSpanProfile, benchPrometheusQuery). Each round
// starts with no verdict kept, as a dashboard's first refresh. Metrics: each query's wall time
// and their ratio (goal: the tail ≤ 5× one trace query), each query's peak heap (the tail's
// bounded by its ParallelJoins joins at once, each dropped once diagnosed), the joins per tail
// and the calls per upstream.
func BenchmarkTailQuery(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	to := time.Now().Truncate(time.Minute)
	sc := newTailScenario(2026, 400, tailMix{"queue": 10, "cpu": 6, "downstream": 4}, to)
	for _, tr := range sc.traces {
		tr.Spans[2].Attributes["gpu.index"] = strconv.Itoa(rand.IntN(8))
	}

	jaegerUp, pyroUp, promUp := newBenchUpstream(benchJaegerTraceRead), newBenchUpstream(benchPyroscopeSpanProfile), newBenchUpstream(benchPrometheusQuery)
	jaegerURL := newJaegerFake(b, &jaegerFake{Traces: sc.traces}, jaegerUp.wrap).URL
	path, handler := querierv1connect.NewQuerierServiceHandler(&typedPyroscope{byType: map[string]map[string][]string{cpuTypeID: sc.cpu}})
	mux := http.NewServeMux()
	mux.Handle(path, handler)
	pyroURL := serve(b, mux, pyroUp.wrap).URL
	prom := &promFake{}
	for _, host := range []string{"node-1", "node-2", "node-3"} {
		for i := range 8 {
			prom.GPUs = append(prom.GPUs, steadyGPU(host, strconv.Itoa(i), float64(40+5*i), 0.4+0.05*float64(i), 0.3))
		}
	}
	promURL := serve(b, engineMetrics(http.HandlerFunc(prom.serveHTTP)), promUp.wrap).URL

	ds := newTestDatasource(b, map[string]any{"jaegerUrl": jaegerURL, "pyroscopeUrl": pyroURL, "prometheusUrl": promURL}, nil)
	ctx := backend.WithPluginContext(b.Context(), pluginCtx)
	at := func(q backend.DataQuery) backend.DataQuery {
		q.TimeRange = backend.TimeRange{From: to.Add(-time.Hour), To: to}
		return q
	}
	ask := func(q backend.DataQuery) backend.DataResponse {
		forgetKeptReplies(b, ds) // a first refresh: no Pyroscope reply kept, as no verdict is
		res, err := ds.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pluginCtx, Queries: []backend.DataQuery{q}})
		if err != nil || res.Responses["A"].Error != nil {
			b.Fatal(err, res.Responses["A"].Error)
		}
		return res.Responses["A"]
	}
	tailQ := at(query("A", sc.model(fmt.Sprintf(`,"profileTypeId":%q`, cpuTypeID))))
	// The first round fills the fakes' replies and detects Jaeger's API, as a long-lived
	// instance has done before; its answer names the trace the trace query asks.
	first := ask(tailQ)
	tailIDs := tailGroup(b, first.Frames[2], "tail")
	joins := len(tailIDs) + len(tailGroup(b, first.Frames[2], "median"))
	if len(tailIDs) != 20 || joins != 30 || !strings.Contains(frameNotices(first.Frames[0]), "Diagnosed 20 of the 20 tail") {
		b.Fatalf("the default tail is not 20 requests against 10, all diagnosed: %d, %d\n%s", len(tailIDs), joins, frameNotices(first.Frames[0]))
	}
	traceQ := at(query("A", fmt.Sprintf(`{"queryType":"trace","traceId":%q,"profileTypeId":%q}`, tailIDs[0], cpuTypeID)))
	ask(traceQ)
	for _, u := range []*benchUpstream{jaegerUp, pyroUp, promUp} {
		u.take()
	}

	var n, calls [3]int
	var traceWall, tailWall time.Duration
	var tracePeak, tailPeak uint64
	misses := 0
	for b.Loop() {
		ds.tailVerdicts = tail.Verdicts{} // a first refresh: no verdict kept
		var took time.Duration
		peak, _ := heapDuring(func() {
			t0 := time.Now()
			ask(traceQ)
			took = time.Since(t0)
		})
		traceWall, tracePeak = traceWall+took, max(tracePeak, peak)
		for _, u := range []*benchUpstream{jaegerUp, pyroUp, promUp} {
			_, m, _ := u.take()
			misses += m
		}
		peak, _ = heapDuring(func() {
			t0 := time.Now()
			r := ask(tailQ)
			took = time.Since(t0)
			if len(r.Frames) != 3 || r.Frames[1].Rows() == 0 {
				b.Fatalf("tail frames %v", r.Frames)
			}
		})
		tailWall, tailPeak = tailWall+took, max(tailPeak, peak)
		for i, u := range []*benchUpstream{jaegerUp, pyroUp, promUp} {
			c, m, _ := u.take()
			calls[i] += len(c)
			misses += m
		}
		n[0]++
	}
	if misses > 0 {
		b.Fatalf("%d upstream requests in the measured queries were not asked in the first round: the queries differ", misses)
	}
	rounds := float64(n[0])
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / rounds }
	b.ReportMetric(ms(traceWall), "trace-wall-ms/op")
	b.ReportMetric(ms(tailWall), "tail-wall-ms/op")
	b.ReportMetric(float64(tailWall)/float64(traceWall), "x-trace")
	b.ReportMetric(float64(tracePeak)/(1<<20), "trace-peak-heap-MB")
	b.ReportMetric(float64(tailPeak)/(1<<20), "tail-peak-heap-MB")
	b.ReportMetric(float64(joins), "joins")
	b.ReportMetric(float64(calls[0])/rounds, "tail-jaeger-calls/op")
	b.ReportMetric(float64(calls[1])/rounds, "tail-pyroscope-calls/op")
	b.ReportMetric(float64(calls[2])/rounds, "tail-prometheus-calls/op")
}
