package plugin

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// memLatencies are the rows of the demo's histogram (demoLatencies as the client reads them): the backend's /api/detect with a slow
// tail, the detector's /detect fast.
func memLatencies() models.LatencyResult {
	row := func(service, endpoint string, q ...float64) models.EndpointLatency {
		return models.EndpointLatency{Metric: "http_request_duration_seconds", Service: service, Endpoint: endpoint,
			Quantiles: q, Requests: 120, Good: math.NaN()}
	}
	return models.LatencyResult{Rows: []models.EndpointLatency{
		row("nemotron-backend", "/api/detect", 0.12, 0.6, 1.4),
		row("ai-detector", "/detect", 0.07, 0.09, 0.1),
	}}
}

// slowTraces are requests of the last minutes: the backend's of several durations, one that only
// the detector saw, and one of Jaeger's own (which must not be listed).
func slowTraces() []models.Trace {
	now := time.Now().Add(-5 * time.Minute)
	mk := func(prefix string, offset time.Duration, dur time.Duration, spans ...string) models.Trace {
		return fakeTrace(prefix+strings.Repeat("0", 32-len(prefix)-1)+"1", now.Add(offset), dur, spans...)
	}
	backend := []string{"nemotron-backend/GET /api/detect", "ai-detector/GET /detect", "ai-enrichment/GET /enrich"}
	return []models.Trace{
		mk("a1", 0, 100*time.Millisecond, backend...),
		mk("a2", time.Second, 1500*time.Millisecond, backend...),
		mk("a3", 2*time.Second, 700*time.Millisecond, backend...),
		mk("a4", 3*time.Second, 300*time.Millisecond, backend...),
		mk("b1", 4*time.Second, 2*time.Second, "ai-detector/GET /detect"),
		mk("c1", 5*time.Second, 5*time.Second, "jaeger/GetTrace"),
	}
}

type slowBed struct {
	ds      *Datasource
	metrics *memMetrics
	traces  *memTraces
}

func newSlowBed(t *testing.T, promDown, jaegerDown bool, settings map[string]any) *slowBed {
	t.Helper()
	metrics := &memMetrics{latency: memLatencies()}
	traces := &memTraces{traces: slowTraces()}
	if promDown {
		metrics.err = errPrometheusDown
	}
	if jaegerDown {
		traces.err = errJaegerDown
	}
	if settings == nil {
		settings = map[string]any{}
	}
	ds := withSources(t, settings, correlate.Sources{
		Metrics: correlate.Ready[correlate.MetricStore](metrics),
		Traces:  correlate.Ready[correlate.TraceStore](traces),
	})
	return &slowBed{ds: ds, metrics: metrics, traces: traces}
}

func (b *slowBed) query(t *testing.T, model string) backend.DataResponse {
	t.Helper()
	return run(t, b.ds, query("A", model)).Responses["A"]
}

func column(t *testing.T, f *data.Frame, name string) []string {
	t.Helper()
	fld, i := f.FieldByName(name)
	if i < 0 {
		t.Fatalf("frame %q has no field %q", f.Name, name)
	}
	out := make([]string, f.Rows())
	for i := range out {
		v, ok := fld.ConcreteAt(i)
		if !ok {
			v = "-"
		}
		out[i] = fmt.Sprint(v)
	}
	return out
}

func TestSlowRequestsListsPercentilesAndTheSlowestTraces(t *testing.T) {
	b := newSlowBed(t, false, false, nil)
	r := b.query(t, `{"queryType":"slowRequests","limit":3}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if len(r.Frames) != 2 || r.Frames[0].Name != "latency" || r.Frames[1].Name != "slow traces" {
		t.Fatalf("frames %v", r.Frames)
	}
	lat := r.Frames[0]
	if got := column(t, lat, "endpoint"); !slices.Equal(got, []string{"/api/detect", "/detect"}) {
		t.Errorf("endpoints %v", got)
	}
	if got := column(t, lat, "p99"); !slices.Equal(got, []string{"1.4", "0.1"}) {
		t.Errorf("p99 %v", got)
	}
	if got := column(t, lat, "requests"); !slices.Equal(got, []string{"120", "120"}) {
		t.Errorf("requests %v", got)
	}
	// Slowest first across services, each trace once, at most the limit, Jaeger's own left out.
	tr := r.Frames[1]
	if got := column(t, tr, "traceID"); !slices.Equal(got, []string{
		"b1000000000000000000000000000001", "a2000000000000000000000000000001", "a3000000000000000000000000000001",
	}) {
		t.Errorf("traces %v", got)
	}
	if got := column(t, tr, "rootOperation"); got[1] != "GET /api/detect" {
		t.Errorf("root operations %v", got)
	}
	if got := column(t, tr, "services")[1]; got != "ai-detector, ai-enrichment, nemotron-backend" {
		t.Errorf("services %q", got)
	}
	id, _ := tr.FieldByName("traceID")
	if l := id.Config.Links; len(l) != 1 || l[0].URL != "/d/hsi-request-profiling/hsi-request-level-profiling?var-trace_id=${__value.raw}&${__url_time_range}" {
		t.Errorf("trace links %+v", l)
	}
	for _, q := range b.traces.searches {
		if strings.HasPrefix(q.Service, "jaeger") {
			t.Errorf("searched Jaeger's own service: %+v", q)
		}
	}
	if n := frameNotices(lat) + frameNotices(tr); n != "" {
		t.Errorf("notices:\n%s", n)
	}
}

func TestSlowRequestsNarrowsBothHalvesToTheServiceAndEndpoint(t *testing.T) {
	b := newSlowBed(t, false, false, map[string]any{"latencyYellowMs": 200, "latencyRedMs": 400})
	r := b.query(t, `{"queryType":"slowRequests","service":"nemotron-backend","endpoint":"/api/detect","minDuration":"500ms"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	// pkg/prometheus tests that the PromQL names them, whatever their labels.
	for _, q := range b.metrics.queries() {
		if q.Service != "nemotron-backend" || q.Endpoint != "/api/detect" {
			t.Errorf("latencies not narrowed: %+v", q)
		}
	}
	var ops []string
	for _, q := range b.traces.searches {
		if q.Service != "nemotron-backend" || q.MinDuration != 500*time.Millisecond {
			t.Errorf("trace search %+v", q)
		}
		ops = append(ops, q.Operation)
	}
	slices.Sort(ops)
	if !slices.Equal(ops, []string{"/api/detect", "GET /api/detect", "POST /api/detect"}) {
		t.Errorf("operations searched %v", ops)
	}
	if got := column(t, r.Frames[1], "traceID"); !slices.Equal(got, []string{"a2000000000000000000000000000001", "a3000000000000000000000000000001"}) {
		t.Errorf("traces %v", got)
	}
	// The configured thresholds colour both tables.
	p99, _ := r.Frames[0].FieldByName("p99")
	dur, _ := r.Frames[1].FieldByName("duration")
	if s := p99.Config.Thresholds.Steps; s[1].Value != 0.2 || s[2].Value != 0.4 {
		t.Errorf("p99 thresholds %+v", s)
	}
	if s := dur.Config.Thresholds.Steps; s[1].Value != 200 || s[2].Value != 400 {
		t.Errorf("duration thresholds %+v", s)
	}
}

func TestSlowRequestsKeepsOneHalfWhenTheOtherFails(t *testing.T) {
	b := newSlowBed(t, true, false, nil)
	r := b.query(t, `{"queryType":"slowRequests"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if r.Frames[0].Rows() != 0 || !strings.Contains(frameNotices(r.Frames[0]), "[warning] No latency table: Prometheus (http://prometheus:9090): HTTP 503") {
		t.Errorf("latency %d rows, notices %s", r.Frames[0].Rows(), frameNotices(r.Frames[0]))
	}
	if r.Frames[1].Rows() != 5 {
		t.Errorf("%d slow traces", r.Frames[1].Rows())
	}

	b = newSlowBed(t, false, true, nil)
	r = b.query(t, `{"queryType":"slowRequests"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if r.Frames[0].Rows() != 2 {
		t.Errorf("%d latency rows", r.Frames[0].Rows())
	}
	if r.Frames[1].Rows() != 0 || !strings.Contains(frameNotices(r.Frames[1]), "[warning] No slow traces: Jaeger (http://jaeger:16686): HTTP 503") {
		t.Errorf("traces %d rows, notices %s", r.Frames[1].Rows(), frameNotices(r.Frames[1]))
	}

	b = newSlowBed(t, true, true, nil)
	wantError(t, b.query(t, `{"queryType":"slowRequests"}`), backend.ErrorSourceDownstream, "latency table: Prometheus (http://prometheus:9090): HTTP 503", "slow traces: Jaeger (http://jaeger:16686): HTTP 503")
}

// A panel that shows one half asks for it alone: one frame, the other store not asked; its store
// failing is then the panel's error, as both failing is for the whole answer.
func TestSlowRequestsPartsAskOneHalf(t *testing.T) {
	b := newSlowBed(t, false, false, nil)
	r := b.query(t, `{"queryType":"slowRequests","parts":["traces"]}`)
	if r.Error != nil || len(r.Frames) != 1 || r.Frames[0].Name != "slow traces" || r.Frames[0].Rows() != 5 {
		t.Fatalf("traces alone: %v, %v", r.Error, r.Frames)
	}
	if len(b.metrics.qs) != 0 {
		t.Errorf("Prometheus asked %d times for a panel of traces", len(b.metrics.qs))
	}
	searched := len(b.traces.searches)
	r = b.query(t, `{"queryType":"slowRequests","parts":["latency"]}`)
	if r.Error != nil || len(r.Frames) != 1 || r.Frames[0].Name != "latency" || r.Frames[0].Rows() != 2 {
		t.Fatalf("latency alone: %v, %v", r.Error, r.Frames)
	}
	if len(b.traces.searches) != searched {
		t.Errorf("the trace store searched for a panel of latency: %v", b.traces.searches[searched:])
	}

	b = newSlowBed(t, true, false, nil)
	wantError(t, b.query(t, `{"queryType":"slowRequests","parts":["latency"]}`), backend.ErrorSourceDownstream, "latency table: Prometheus (http://prometheus:9090): HTTP 503")
	if r := b.query(t, `{"queryType":"slowRequests","parts":["traces"]}`); r.Error != nil || r.Frames[0].Rows() != 5 {
		t.Errorf("traces with Prometheus down: %v", r.Error)
	}
	b = newSlowBed(t, false, true, nil)
	wantError(t, b.query(t, `{"queryType":"slowRequests","parts":["traces"]}`), backend.ErrorSourceDownstream, "slow traces: Jaeger (http://jaeger:16686): HTTP 503")
	wantError(t, b.query(t, `{"queryType":"slowRequests","parts":["goodput"]}`), backend.ErrorSourceDownstream, `field "parts": unknown part "goodput": use some of latency, traces (empty: all)`)
}

func TestSlowRequestsSaysWhatToConfigure(t *testing.T) {
	// The stores as the data source builds them from settings without URLs: no wire is asked.
	ds := newTestDatasource(t, map[string]any{}, nil)
	wantError(t, run(t, ds, query("A", `{"queryType":"slowRequests"}`)).Responses["A"], backend.ErrorSourceDownstream,
		"latency table: Prometheus is not configured: set its URL (jsonData.prometheusUrl)", "slow traces: the trace store is not configured: set Jaeger's URL (jsonData.jaegerUrl) or Tempo's (jsonData.tempoUrl)")
	// A Prometheus without the histograms: the notice names the metrics read and the setting.
	b := newSlowBed(t, false, false, map[string]any{"latencyHistograms": []map[string]any{{"metric": "rpc_duration_seconds", "serviceLabels": []string{"app"}, "endpointLabel": "method"}}})
	r := b.query(t, `{"queryType":"slowRequests","service":"checkout"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if n := frameNotices(r.Frames[0]); !strings.Contains(n, `No latency histogram has requests of service "checkout", endpoint "" in the panel's time range (read: rpc_duration_seconds_bucket)`) ||
		!strings.Contains(n, "jsonData.latencyHistograms") {
		t.Errorf("notices %s", n)
	}
	wantError(t, b.query(t, `{"queryType":"slowRequests","limit":-2}`), backend.ErrorSourceDownstream, `invalid slowRequests query: field "limit" must be between 1 and 500`)
}
