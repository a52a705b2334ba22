package frames

import (
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Frame names of the slowRequests query.
const (
	LatencyFrameName    = "latency"
	SlowTracesFrameName = "slow traces"
)

// EndpointLatency is one row of the latency table.
type EndpointLatency struct {
	Service, Endpoint string
	// Histogram is the metric the row comes from (without _bucket).
	Histogram string
	// P50, P95 and P99 are seconds; NaN where unknown.
	P50, P95, P99 float64
	// Requests in the range; NaN where unknown.
	Requests float64
	// Good counts the requests answered within the yellow threshold, GoodExact whether that
	// threshold is a bucket boundary (else interpolated); NaN where unknown.
	Good      float64
	GoodExact bool
}

// LatencyThresholds colour latencies: green below Yellow, yellow from it, red from Red.
type LatencyThresholds struct{ Yellow, Red time.Duration }

// LatencyTable is the percentile table: one row per endpoint, the percentile cells coloured by
// the thresholds (field config thresholds with colour-background cells, so Grafana's table shows
// green, yellow and red and alert rules can read the same numbers).
func LatencyTable(rows []EndpointLatency, th LatencyThresholds, window time.Duration) *data.Frame {
	n := len(rows)
	services, endpoints, hists := make([]string, n), make([]string, n), make([]string, n)
	p50, p95, p99, reqs := make([]*float64, n), make([]*float64, n), make([]*float64, n), make([]*float64, n)
	goodput, goodShare := make([]*float64, n), make([]*float64, n)
	for i, r := range rows {
		services[i], endpoints[i], hists[i] = r.Service, r.Endpoint, r.Histogram
		p50[i], p95[i], p99[i], reqs[i] = num(r.P50), num(r.P95), num(r.P99), num(r.Requests)
		if window > 0 {
			goodput[i] = num(r.Good / window.Seconds())
		}
		if r.Requests > 0 {
			goodShare[i] = num(min(r.Good/r.Requests, 1))
		}
	}
	within := fmt.Sprintf("answered within %s (latencyYellowMs), from the histogram's buckets: exact where %s is a bucket bound, else interpolated inside its bucket as histogram_quantile does", th.Yellow, th.Yellow)
	pct := func(name string, q string) *data.FieldConfig {
		cfg := coloured(th, 1, "s")
		cfg.DisplayNameFromDS = name
		cfg.Description = q + " request latency over the panel's time range, from the histogram's buckets (histogram_quantile)."
		return cfg
	}
	f := data.NewFrame(LatencyFrameName,
		data.NewField("service", nil, services).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Service"}),
		data.NewField("endpoint", nil, endpoints).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Endpoint"}),
		data.NewField("p50", nil, p50).SetConfig(pct("p50", "Median")),
		data.NewField("p95", nil, p95).SetConfig(pct("p95", "95th percentile")),
		data.NewField("p99", nil, p99).SetConfig(pct("p99", "99th percentile")),
		data.NewField("requests", nil, reqs).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Requests", Unit: "short", Decimals: ptr(uint16(0)),
			Description: "Requests in the panel's time range (increase of the histogram's _count)."}),
		data.NewField("goodput", nil, goodput).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Goodput", Unit: "reqps",
			Description: "Requests per second " + within + "."}),
		data.NewField("goodShare", nil, goodShare).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Good share", Unit: "percentunit",
			Description: "Share of the requests " + within + "."}),
		data.NewField("histogram", nil, hists).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Histogram"}),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}

// coloured is a field config whose cells take the threshold colour; scale turns the thresholds'
// seconds into the field's unit (1 for seconds, 1000 for milliseconds).
func coloured(th LatencyThresholds, scale float64, unit string) *data.FieldConfig {
	return &data.FieldConfig{
		Unit: unit,
		Thresholds: &data.ThresholdsConfig{Mode: data.ThresholdsModeAbsolute, Steps: []data.Threshold{
			{Value: data.ConfFloat64(math.Inf(-1)), Color: "green"},
			{Value: data.ConfFloat64(th.Yellow.Seconds() * scale), Color: "yellow"},
			{Value: data.ConfFloat64(th.Red.Seconds() * scale), Color: "red"},
		}},
		Color:  map[string]any{"mode": "thresholds"},
		Custom: map[string]any{"cellOptions": map[string]any{"type": "color-background"}},
	}
}

// SlowTrace is one row of the slow-traces table.
type SlowTrace struct {
	TraceID, RootService, RootOperation string
	Start                               time.Time
	Duration                            time.Duration
	Spans                               int
	Services                            []string
}

// SlowTraceLinks says where trace IDs link to.
type SlowTraceLinks struct {
	// RequestDashboardUID is the Request-Level Profiling dashboard, opened with var-trace_id.
	RequestDashboardUID string
	// TraceDatasourceUID and TraceDatasourceType add a second link: the trace in Explore.
	TraceDatasourceUID, TraceDatasourceType string
}

// SlowTraces is the slowest recent traces, slowest first, each trace ID a link to the
// Request-Level Profiling dashboard for it (keeping the panel's time range).
func SlowTraces(traces []SlowTrace, th LatencyThresholds, links SlowTraceLinks) *data.Frame {
	n := len(traces)
	ids, services, ops, all := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	starts := make([]time.Time, n)
	durs := make([]float64, n)
	spans := make([]int64, n)
	for i, t := range traces {
		ids[i], services[i], ops[i], all[i] = t.TraceID, t.RootService, t.RootOperation, strings.Join(t.Services, ", ")
		starts[i], durs[i], spans[i] = t.Start.UTC(), millis(t.Duration), int64(t.Spans)
	}
	durCfg := coloured(th, 1000, "ms")
	durCfg.DisplayNameFromDS = "Duration"
	f := data.NewFrame(SlowTracesFrameName,
		data.NewField("traceID", nil, ids).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Trace ID", Links: slowTraceLinks(links)}),
		data.NewField("rootService", nil, services).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Root service"}),
		data.NewField("rootOperation", nil, ops).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Root operation"}),
		data.NewField("start", nil, starts).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Start"}),
		data.NewField("duration", nil, durs).SetConfig(durCfg),
		data.NewField("spans", nil, spans).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Spans"}),
		data.NewField("services", nil, all).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Services"}),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}

// RequestDashboardSlug is the URL slug of the provisioned Request-Level Profiling dashboard.
const RequestDashboardSlug = "hsi-request-level-profiling"

func slowTraceLinks(l SlowTraceLinks) []data.DataLink {
	path := "/d/" + url.PathEscape(l.RequestDashboardUID)
	if l.RequestDashboardUID == models.DefaultRequestDashboardUID {
		// Grafana finds a dashboard by UID alone and redirects to its slug; the provisioned one's
		// slug is known, so the link is the canonical URL.
		path += "/" + RequestDashboardSlug
	}
	out := []data.DataLink{{Title: "Request-level profile", URL: path + "?var-trace_id=${__value.raw}&${__url_time_range}"}}
	if l.TraceDatasourceUID != "" {
		q := map[string]any{"query": "${__value.raw}"}
		if l.TraceDatasourceType == models.TraceDatasourceTempo {
			q["queryType"] = "traceql"
		}
		out = append(out, data.DataLink{Title: "Open trace", Internal: &data.InternalDataLink{DatasourceUID: l.TraceDatasourceUID, Query: q}})
	}
	return out
}
