package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// traceResource calls the data source's resource route as Grafana does (CallResource through
// the HTTP adapter) and returns the status and body.
func traceResource(t *testing.T, ds *Datasource, pathAndQuery string) (int, string) {
	t.Helper()
	path, _, _ := strings.Cut(pathAndQuery, "?")
	var res *backend.CallResourceResponse
	err := ds.CallResource(context.Background(), &backend.CallResourceRequest{
		Method: "GET", Path: path, URL: pathAndQuery,
	}, backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error {
		res = r
		return nil
	}))
	if err != nil || res == nil {
		t.Fatalf("CallResource %s: err %v, response %v", pathAndQuery, err, res)
	}
	return res.Status, string(res.Body)
}

// demoTraces are three traces of the demo's shape, 300 ms, 1.2 s and 80 ms long (plus their
// children's offsets), within the last few minutes.
func demoTraces(now time.Time) []models.Trace {
	return []models.Trace{
		fakeTrace("4bf92f3577b34da6a3ce929d0e0e4736", now.Add(-3*time.Minute), 300*time.Millisecond,
			"nemotron-backend/GET /api/detect", "ai-detector/GET /detect", "ai-enrichment/GET /enrich"),
		fakeTrace("00f067aa0ba902b7a3ce929d0e0e4736", now.Add(-2*time.Minute), 1200*time.Millisecond,
			"nemotron-backend/GET /api/detect", "nemotron-backend/db_query", "ai-detector/GET /detect"),
		fakeTrace("0af7651916cd43dd8448eb211c80319c", now.Add(-time.Minute), 80*time.Millisecond,
			"nemotron-backend/GET /api/detect"),
	}
}

// tracesDS is a data source whose trace store is traces.
func tracesDS(t *testing.T, traces *memTraces) *Datasource {
	t.Helper()
	return withSources(t, map[string]any{}, correlate.Sources{Traces: correlate.Ready[correlate.TraceStore](traces)})
}

// Which API the client reads (v3, or v1 on an older Jaeger) is pkg/jaeger's
// (TestServicesFallsBackToV1AndRemembers, TestFindTracesOnBothAPIs): here, what the routes make of
// the store's answers.
func TestTraceServicesResourceListsThemSorted(t *testing.T) {
	ds := tracesDS(t, &memTraces{services: []string{"nemotron-backend", "ai-enrichment", "ai-detector"}})
	status, body := traceResource(t, ds, "trace-services")
	if want := `["ai-detector","ai-enrichment","nemotron-backend"]`; status != 200 || strings.TrimSpace(body) != want {
		t.Errorf("HTTP %d %s, want sorted %s", status, body, want)
	}

	// A Jaeger that has seen no span yet: an empty list, not null.
	ds = tracesDS(t, &memTraces{services: []string{}})
	if status, body := traceResource(t, ds, "trace-services"); status != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("empty Jaeger: HTTP %d %s", status, body)
	}
}

func TestTracesResourceSearchesSlowestFirst(t *testing.T) {
	now := time.Now().Truncate(time.Millisecond)
	from, to := now.Add(-10*time.Minute).UnixMilli(), now.UnixMilli()
	traces := &memTraces{traces: demoTraces(now)}
	ds := tracesDS(t, traces)
	status, body := traceResource(t, ds, fmt.Sprintf("traces?service=nemotron-backend&minDuration=250ms&from=%d&to=%d", from, to))
	if status != 200 {
		t.Fatalf("HTTP %d %s", status, body)
	}
	var got []struct {
		TraceID       string   `json:"traceId"`
		RootService   string   `json:"rootService"`
		RootOperation string   `json:"rootOperation"`
		DurationMs    float64  `json:"durationMs"`
		Spans         int      `json:"spans"`
		Services      []string `json:"services"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	// The 80 ms trace is under minDuration; the 1.2 s one comes first.
	if len(got) != 2 || got[0].TraceID != "00f067aa0ba902b7a3ce929d0e0e4736" || got[1].TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Fatalf("got %+v", got)
	}
	if g := got[0]; g.RootService != "nemotron-backend" || g.RootOperation != "GET /api/detect" || g.Spans != 3 ||
		g.DurationMs != 1203 || strings.Join(g.Services, ",") != "ai-detector,nemotron-backend" {
		t.Errorf("first hit %+v", g)
	}
	// The editor's range and the defaults reach the store; pkg/jaeger tests Jaeger's parameter
	// names for them on both APIs.
	if len(traces.searches) != 1 {
		t.Fatalf("searches %+v", traces.searches)
	}
	if q := traces.searches[0]; q.Service != "nemotron-backend" || q.Operation != "" || q.MinDuration != 250*time.Millisecond || q.Limit != 20 ||
		q.Start.UnixMilli() != from || q.End.UnixMilli() != to {
		t.Errorf("search %+v", q)
	}
}

func TestTracesResourceLimitAndEmptyResult(t *testing.T) {
	ds := tracesDS(t, &memTraces{traces: demoTraces(time.Now())})

	status, body := traceResource(t, ds, "traces?service=nemotron-backend&limit=1")
	var got []models.TraceSummary
	if err := json.Unmarshal([]byte(body), &got); status != 200 || err != nil || len(got) != 1 {
		t.Errorf("limit=1: HTTP %d %s (%v)", status, body, err)
	}
	// Nothing found is an empty list, not an error (Jaeger's v3 404 "No traces found" is one:
	// pkg/jaeger's TestFindTracesEmptyOnBothAPIs).
	status, body = traceResource(t, ds, "traces?service=nemotron-backend&minDuration=1h")
	if status != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("no hit: HTTP %d %s", status, body)
	}
}

func TestTracesResourceRejectsBadParameters(t *testing.T) {
	fake := &memTraces{}
	ds := tracesDS(t, fake)
	cases := map[string]string{
		"traces":                                     `parameter \"service\" is required`,
		"traces?service=a&minDuration=abc":           `parameter \"minDuration\" must be a duration such as 500ms or 1s, got \"abc\"`,
		"traces?service=a&minDuration=-1s":           `parameter \"minDuration\" must be a duration`,
		"traces?service=a&minDuration=500":           `parameter \"minDuration\" must be a duration`,
		"traces?service=a&limit=0":                   `parameter \"limit\" must be a whole number from 1 to 1000, got \"0\"`,
		"traces?service=a&limit=1001":                `parameter \"limit\" must be a whole number from 1 to 1000`,
		"traces?service=a&limit=ten":                 `parameter \"limit\" must be a whole number`,
		"traces?service=a&from=yesterday":            `parameter \"from\" must be Unix milliseconds, got \"yesterday\"`,
		"traces?service=a&from=2000&to=1000":         `parameter \"from\" must be before \"to\"`,
		"traces?service=a&to=1700000000000&from":     `parameter \"from\" must be before \"to\"`,
		"traces?service=a%0D%0AX-Injected:%201":      `parameter \"service\" must be a single line of at most 512 characters`,
		"traces?service=a&operation=GET%00/x":        `parameter \"operation\" must be a single line`,
		"traces?service=" + strings.Repeat("s", 513): `parameter \"service\" must be a single line of at most 512 characters, got \"sss`,
	}
	for path, want := range cases {
		status, body := traceResource(t, ds, path)
		if status != 400 || !strings.Contains(body, want) {
			t.Errorf("%s: HTTP %d %s, want 400 with %s", path, status, body, want)
		}
	}
	// None of them may reach Jaeger.
	if n := len(fake.searches); n != 0 {
		t.Errorf("bad parameters reached Jaeger %d times", n)
	}
}

func TestTraceResourcesWithoutOrWithBrokenJaeger(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": "http://127.0.0.1:4040"}, nil)
	for _, path := range []string{"trace-services", "traces?service=a"} {
		status, body := traceResource(t, ds, path)
		if status != 400 || !strings.Contains(body, "the trace store is not configured: set Jaeger's URL (jsonData.jaegerUrl) or Tempo's (jsonData.tempoUrl)") {
			t.Errorf("not configured, %s: HTTP %d %s", path, status, body)
		}
	}

	// A failing Jaeger: its error as the client files it, 502. (An unreachable one is named the
	// same way: pkg/jaeger's TestFindTracesNamesAnUnreachableJaeger.)
	ds = tracesDS(t, &memTraces{err: errJaegerDown})
	for _, path := range []string{"trace-services", "traces?service=a"} {
		status, body := traceResource(t, ds, path)
		if want := "Jaeger (http://jaeger:16686): HTTP 503: storage backend unavailable"; status != 502 || !strings.Contains(body, want) {
			t.Errorf("down, %s: HTTP %d %s, want 502 with %q", path, status, body, want)
		}
	}
}
