package plugin

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// demoLatencies are the instant answers of the demo's histogram: the backend's /api/detect with
// a slow tail, the detector's /detect fast.
func demoLatencies() map[string][]fakeSample {
	backend := map[string]string{"service": "nemotron-backend", "endpoint": "/api/detect"}
	detector := map[string]string{"service": "ai-detector", "endpoint": "/detect"}
	return map[string][]fakeSample{
		"histogram_quantile(0.5, sum by (le, service, endpoint)":  {{backend, "0.12"}, {detector, "0.07"}},
		"histogram_quantile(0.95, sum by (le, service, endpoint)": {{backend, "0.6"}, {detector, "0.09"}},
		"histogram_quantile(0.99, sum by (le, service, endpoint)": {{backend, "1.4"}, {detector, "0.1"}},
		"increase(http_request_duration_seconds_count":            {{backend, "120"}, {detector, "120"}},
	}
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
	ds   *Datasource
	prom *promFake
	jae  *jaegerFake
}

func newSlowBed(t *testing.T, promDown, jaegerDown bool, settings map[string]any) *slowBed {
	t.Helper()
	prom := &promFake{Instant: demoLatencies(), Down: promDown}
	j := &jaegerFake{Traces: slowTraces(), Down: jaegerDown}
	s := map[string]any{"prometheusUrl": newPromFake(t, prom), "jaegerUrl": newJaegerFake(t, j, nil).URL}
	for k, v := range settings {
		s[k] = v
	}
	return &slowBed{ds: newTestDatasource(t, s, nil), prom: prom, jae: j}
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
	for _, u := range b.jae.Requests() {
		if u.Path == "/api/v3/traces" && strings.HasPrefix(u.Query().Get("query.service_name"), "jaeger") {
			t.Errorf("searched Jaeger's own service: %s", u)
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
	for _, q := range b.prom.Queries() {
		// Each selector names the service and the endpoint, whatever their labels.
		if strings.Count(q, `="/api/detect"`) != strings.Count(q, "_seconds_") || strings.Count(q, `="nemotron-backend"`) != strings.Count(q, "_seconds_") {
			t.Errorf("Prometheus query not narrowed: %s", q)
		}
	}
	var ops []string
	for _, u := range b.jae.Requests() {
		if u.Path != "/api/v3/traces" {
			continue
		}
		p := u.Query()
		if p.Get("query.service_name") != "nemotron-backend" || p.Get("query.duration_min") != "500ms" {
			t.Errorf("Jaeger search %s", u)
		}
		ops = append(ops, p.Get("query.operation_name"))
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
	if r.Frames[0].Rows() != 0 || !strings.Contains(frameNotices(r.Frames[0]), "[warning] No latency table: Prometheus (http://127.0.0.1:") {
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
	if r.Frames[1].Rows() != 0 || !strings.Contains(frameNotices(r.Frames[1]), "[warning] No slow traces: Jaeger (http://127.0.0.1:") {
		t.Errorf("traces %d rows, notices %s", r.Frames[1].Rows(), frameNotices(r.Frames[1]))
	}

	b = newSlowBed(t, true, true, nil)
	wantError(t, b.query(t, `{"queryType":"slowRequests"}`), backend.ErrorSourceDownstream, "latency table: Prometheus (http://127.0.0.1:", "slow traces: Jaeger (http://127.0.0.1:")
}

func TestSlowRequestsSaysWhatToConfigure(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{"jaegerUrl": newJaegerFake(t, &jaegerFake{Traces: slowTraces()}, nil).URL}, nil)
	r := run(t, ds, query("A", `{"queryType":"slowRequests"}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if n := frameNotices(r.Frames[0]); !strings.Contains(n, "Prometheus is not configured: set its URL (jsonData.prometheusUrl)") {
		t.Errorf("notices %s", n)
	}
	// A Prometheus without the histograms: the notice names the metrics read and the setting.
	b := newSlowBed(t, false, false, map[string]any{"latencyHistograms": []map[string]any{{"metric": "rpc_duration_seconds", "serviceLabels": []string{"app"}, "endpointLabel": "method"}}})
	r = b.query(t, `{"queryType":"slowRequests","service":"checkout"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if n := frameNotices(r.Frames[0]); !strings.Contains(n, `No latency histogram has requests of service "checkout", endpoint "" in the panel's time range (read: rpc_duration_seconds_bucket)`) ||
		!strings.Contains(n, "jsonData.latencyHistograms") {
		t.Errorf("notices %s", n)
	}
	wantError(t, b.query(t, `{"queryType":"slowRequests","limit":-2}`), backend.ErrorSourceDownstream, `invalid slowRequests query: field "limit" must be between 1 and 500`)
}
