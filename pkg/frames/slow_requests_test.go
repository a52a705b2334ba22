package frames

import (
	"encoding/json"
	"math"
	"testing"
	"time"
)

var defaultThresholds = LatencyThresholds{Yellow: 500 * time.Millisecond, Red: time.Second}

func TestLatencyTableColoursByThresholds(t *testing.T) {
	f := LatencyTable([]EndpointLatency{
		{Service: "nemotron-backend", Endpoint: "/api/detect", Histogram: "http_request_duration_seconds", P50: 0.12, P95: 0.6, P99: 1.4, Requests: 120, Good: 96, GoodExact: true},
		{Service: "ai-detector", Endpoint: "/detect", Histogram: "http_request_duration_seconds", P50: 0.07, P95: 0.09, P99: math.NaN(), Requests: 120, Good: math.NaN()},
	}, defaultThresholds, 2*time.Minute)
	if f.Name != "latency" || f.Rows() != 2 {
		t.Fatalf("frame %q rows %d", f.Name, f.Rows())
	}
	p99 := field(t, f, "p99")
	if _, ok := p99.ConcreteAt(1); ok {
		t.Error("an unknown p99 is shown")
	}
	cfg, err := json.Marshal(p99.Config)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"displayNameFromDS":"p99","description":"99th percentile request latency over the panel's time range, from the histogram's buckets (histogram_quantile).","unit":"s","thresholds":{"mode":"absolute","steps":[{"value":null,"color":"green"},{"value":0.5,"color":"yellow"},{"value":1,"color":"red"}]},"color":{"mode":"thresholds"},"custom":{"cellOptions":{"type":"color-background"}}}`
	if string(cfg) != want {
		t.Errorf("p99 config\n got %s\nwant %s", cfg, want)
	}
	checkGolden(t, "slow_requests_latency", f)
	// Goodput: 96 of 120 requests within 500 ms over 2 minutes; unknown where the buckets were not read.
	goodput, share := field(t, f, "goodput"), field(t, f, "goodShare")
	if v, _ := goodput.ConcreteAt(0); v != 0.8 {
		t.Errorf("goodput %v req/s", v)
	}
	if v, _ := share.ConcreteAt(0); v != 0.8 {
		t.Errorf("good share %v", v)
	}
	if _, ok := goodput.ConcreteAt(1); ok {
		t.Error("an unknown goodput is shown")
	}

	custom := LatencyTable(nil, LatencyThresholds{Yellow: 200 * time.Millisecond, Red: 300 * time.Millisecond}, time.Hour)
	steps := field(t, custom, "p50").Config.Thresholds.Steps
	if custom.Rows() != 0 || steps[1].Value != 0.2 || steps[2].Value != 0.3 {
		t.Errorf("configured thresholds: %+v", steps)
	}
}

func TestSlowTracesLinkToTheRequestDashboard(t *testing.T) {
	f := SlowTraces([]SlowTrace{
		{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", RootService: "nemotron-backend", RootOperation: "GET /api/detect",
			Start: traceStart, Duration: 1520 * time.Millisecond, Spans: 9, Services: []string{"ai-detector", "ai-enrichment", "nemotron-backend"}},
		{TraceID: "0af7651916cd43dd8448eb211c80319c", RootService: "nemotron-backend", RootOperation: "GET /api/detect",
			Start: traceStart.Add(time.Second), Duration: 180 * time.Millisecond, Spans: 9, Services: []string{"ai-detector", "ai-enrichment", "nemotron-backend"}},
	}, defaultThresholds, SlowTraceLinks{RequestDashboardUID: "hsi-request-profiling", TraceDatasourceUID: "jaeger-uid"})
	if f.Name != "slow traces" || f.Rows() != 2 {
		t.Fatalf("frame %q rows %d", f.Name, f.Rows())
	}
	links := field(t, f, "traceID").Config.Links
	if len(links) != 2 || links[0].URL != "/d/hsi-request-profiling/hsi-request-level-profiling?var-trace_id=${__value.raw}&${__url_time_range}" ||
		links[1].Internal == nil || links[1].Internal.DatasourceUID != "jaeger-uid" {
		t.Errorf("links %+v", links)
	}
	dur := field(t, f, "duration")
	if dur.Config.Unit != "ms" || dur.Config.Thresholds.Steps[2].Value != 1000 || dur.At(0) != 1520.0 {
		t.Errorf("duration %v config %+v", dur.At(0), dur.Config)
	}
	checkGolden(t, "slow_requests_traces", f)

	other := SlowTraces(nil, defaultThresholds, SlowTraceLinks{RequestDashboardUID: "my-requests"})
	if l := field(t, other, "traceID").Config.Links; len(l) != 1 || l[0].URL != "/d/my-requests?var-trace_id=${__value.raw}&${__url_time_range}" {
		t.Errorf("custom dashboard links %+v", l)
	}
}
