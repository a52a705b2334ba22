package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
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

func TestTraceServicesResourceOnBothAPIs(t *testing.T) {
	for _, api := range []string{jaeger.APIv3, jaeger.APIv1} {
		srv := newJaegerFake(t, &jaegerFake{API: api, Services: []string{"nemotron-backend", "ai-enrichment", "ai-detector"}}, nil)
		ds := newTestDatasource(t, map[string]any{"jaegerUrl": srv.URL}, nil)
		status, body := traceResource(t, ds, "trace-services")
		if want := `["ai-detector","ai-enrichment","nemotron-backend"]`; status != 200 || strings.TrimSpace(body) != want {
			t.Errorf("%s: HTTP %d %s, want sorted %s", api, status, body, want)
		}
	}

	// A Jaeger that has seen no span yet: an empty list, not null.
	srv := newJaegerFake(t, &jaegerFake{Services: []string{}}, nil)
	ds := newTestDatasource(t, map[string]any{"jaegerUrl": srv.URL}, nil)
	if status, body := traceResource(t, ds, "trace-services"); status != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("empty Jaeger: HTTP %d %s", status, body)
	}
}

func TestTracesResourceSearchesSlowestFirstOnBothAPIs(t *testing.T) {
	// Whole microseconds: v1 has no finer times, and the two answers are compared byte for byte.
	now := time.Now().Truncate(time.Microsecond)
	from, to := now.Add(-10*time.Minute).UnixMilli(), now.UnixMilli()
	var bodies []string
	for _, api := range []string{jaeger.APIv3, jaeger.APIv1} {
		fake := &jaegerFake{API: api, Traces: demoTraces(now)}
		srv := newJaegerFake(t, fake, nil)
		ds := newTestDatasource(t, map[string]any{"jaegerUrl": srv.URL}, nil)
		status, body := traceResource(t, ds, fmt.Sprintf("traces?service=nemotron-backend&minDuration=250ms&from=%d&to=%d", from, to))
		if status != 200 {
			t.Fatalf("%s: HTTP %d %s", api, status, body)
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
			t.Fatalf("%s: %v in %s", api, err, body)
		}
		// The 80 ms trace is under minDuration; the 1.2 s one comes first.
		if len(got) != 2 || got[0].TraceID != "00f067aa0ba902b7a3ce929d0e0e4736" || got[1].TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
			t.Fatalf("%s: got %+v", api, got)
		}
		if g := got[0]; g.RootService != "nemotron-backend" || g.RootOperation != "GET /api/detect" || g.Spans != 3 ||
			g.DurationMs != 1203 || strings.Join(g.Services, ",") != "ai-detector,nemotron-backend" {
			t.Errorf("%s: first hit %+v", api, g)
		}
		// The editor's range and the defaults reach Jaeger in its own parameter names.
		var search url.Values
		for _, u := range fake.Requests() {
			if u.Path == "/api/v3/traces" || u.Path == "/api/traces" {
				search = u.Query()
			}
		}
		wantParams := map[string]string{
			"query.service_name": "nemotron-backend", "query.duration_min": "250ms", "query.search_depth": "20",
			"query.start_time_min": time.UnixMilli(from).UTC().Format(time.RFC3339Nano),
			"query.start_time_max": time.UnixMilli(to).UTC().Format(time.RFC3339Nano),
		}
		if api == jaeger.APIv1 {
			wantParams = map[string]string{
				"service": "nemotron-backend", "minDuration": "250ms", "limit": "20",
				"start": fmt.Sprint(from * 1000), "end": fmt.Sprint(to * 1000),
			}
		}
		for k, v := range wantParams {
			if search.Get(k) != v {
				t.Errorf("%s: Jaeger got %s=%q, want %q (all: %v)", api, k, search.Get(k), v, search)
			}
		}
		bodies = append(bodies, body)
	}
	if bodies[0] != bodies[1] {
		t.Errorf("v3 and v1 answer differently:\n%s\n%s", bodies[0], bodies[1])
	}
}

func TestTracesResourceLimitAndEmptyResult(t *testing.T) {
	now := time.Now()
	srv := newJaegerFake(t, &jaegerFake{Traces: demoTraces(now)}, nil)
	ds := newTestDatasource(t, map[string]any{"jaegerUrl": srv.URL}, nil)

	status, body := traceResource(t, ds, "traces?service=nemotron-backend&limit=1")
	var got []models.TraceSummary
	if err := json.Unmarshal([]byte(body), &got); status != 200 || err != nil || len(got) != 1 {
		t.Errorf("limit=1: HTTP %d %s (%v)", status, body, err)
	}
	// Jaeger's v3 search answers 404 "No traces found" when nothing matches: that is an empty
	// list, not an error.
	status, body = traceResource(t, ds, "traces?service=nemotron-backend&minDuration=1h")
	if status != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("no hit: HTTP %d %s", status, body)
	}
}

func TestTracesResourceRejectsBadParameters(t *testing.T) {
	fake := &jaegerFake{}
	srv := newJaegerFake(t, fake, nil)
	ds := newTestDatasource(t, map[string]any{"jaegerUrl": srv.URL}, nil)
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
	if n := len(fake.Requests()); n != 0 {
		t.Errorf("bad parameters reached Jaeger %d times", n)
	}
}

func TestTraceResourcesWithoutOrWithBrokenJaeger(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": "http://127.0.0.1:4040"}, nil)
	for _, path := range []string{"trace-services", "traces?service=a"} {
		status, body := traceResource(t, ds, path)
		if status != 400 || !strings.Contains(body, "Jaeger is not configured: set its URL (jsonData.jaegerUrl)") {
			t.Errorf("not configured, %s: HTTP %d %s", path, status, body)
		}
	}

	down := newJaegerFake(t, &jaegerFake{Down: true}, nil)
	ds = newTestDatasource(t, map[string]any{"jaegerUrl": down.URL}, nil)
	for _, path := range []string{"trace-services", "traces?service=a"} {
		status, body := traceResource(t, ds, path)
		if want := "Jaeger (" + down.URL + "): HTTP 503: storage backend unavailable"; status != 502 || !strings.Contains(body, want) {
			t.Errorf("down, %s: HTTP %d %s, want 502 with %q", path, status, body, want)
		}
	}

	closed := closedURL(t)
	ds = newTestDatasource(t, map[string]any{"jaegerUrl": closed}, nil)
	status, body := traceResource(t, ds, "traces?service=a")
	if want := "Jaeger (" + closed + "): unreachable"; status != 502 || !strings.Contains(body, want) {
		t.Errorf("unreachable: HTTP %d %s, want 502 with %q", status, body, want)
	}
}
