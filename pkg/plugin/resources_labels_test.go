package plugin

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
)

// getResource calls one resource route through the plugin's mux, as Grafana's CallResource
// does, with the parameters URL-encoded.
func getResource(t *testing.T, ds *Datasource, path string, params map[string]string) (int, string) {
	t.Helper()
	v := url.Values{}
	for k, val := range params {
		v.Set(k, val)
	}
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	rec := httptest.NewRecorder()
	ds.newResourceMux().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code, rec.Body.String()
}

func decodeStrings(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	if err := json.Unmarshal([]byte(body), &out); err != nil {
		t.Fatalf("body %q is not a JSON list of strings: %v", body, err)
	}
	return out
}

// labelsFake is a profile store with the demo's labels; LabelNames hides the internal ones, as
// the client does (pkg/pyroscope: TestLabelNamesHidesPyroscopesInternalLabels).
func labelsFake() *memProfiles {
	return &memProfiles{
		labelNames: []string{"__name__", "service_name", "span_name", "__profile_type__"},
		labelValues: map[string][]string{
			"service_name": {"nemotron-backend", "ai-detector", "ai-enrichment"},
			"span_name":    {"HTTP GET /api/detect"},
		},
	}
}

func TestServicesResourceListsPyroscopesServiceNames(t *testing.T) {
	fake := labelsFake()
	ds := profilesDS(t, fake, nil)
	code, body := getResource(t, ds, "/services", map[string]string{"from": "1700000000000", "to": "1700003600000"})
	if code != 200 {
		t.Fatalf("HTTP %d: %s", code, body)
	}
	if got := decodeStrings(t, body); !slices.Equal(got, []string{"ai-detector", "ai-enrichment", "nemotron-backend"}) {
		t.Errorf("services = %v", got)
	}
	// Every series: the client sends "{}" as no matcher (TestLabelRequestsSendNoMatcherForEverySeries).
	req := fake.labelCalls()[0]
	if req.label != "service_name" || req.selector != "{}" || req.start.UnixMilli() != 1700000000000 || req.end.UnixMilli() != 1700003600000 {
		t.Errorf("request = %+v", req)
	}
}

func TestLabelNamesResourcePassesTheSelectorAndTheWindow(t *testing.T) {
	fake := labelsFake()
	ds := profilesDS(t, fake, nil)
	code, body := getResource(t, ds, "/label-names", map[string]string{"selector": `{service_name="ai-detector"}`})
	if code != 200 {
		t.Fatalf("HTTP %d: %s", code, body)
	}
	if got := decodeStrings(t, body); !slices.Equal(got, []string{"service_name", "span_name"}) {
		t.Errorf("names = %v", got)
	}
	r := fake.labelCalls()[0]
	if r.label != "" || r.selector != `{service_name="ai-detector"}` {
		t.Errorf("request = %+v", r)
	}
	// Without from/to: the last 24 hours.
	if r.end.Sub(r.start) != 24*time.Hour {
		t.Errorf("default window = %v, want 24 h", r.end.Sub(r.start))
	}
}

func TestLabelValuesResourceListsOneLabelsValues(t *testing.T) {
	fake := labelsFake()
	ds := profilesDS(t, fake, nil)
	code, body := getResource(t, ds, "/label-values", map[string]string{"label": "span_name", "selector": `{service_name=~"nemotron.*"}`})
	if code != 200 {
		t.Fatalf("HTTP %d: %s", code, body)
	}
	if got := decodeStrings(t, body); !slices.Equal(got, []string{"HTTP GET /api/detect"}) {
		t.Errorf("values = %v", got)
	}
	if r := fake.labelCalls()[0]; r.label != "span_name" || r.selector != `{service_name=~"nemotron.*"}` {
		t.Errorf("request = %+v", r)
	}
	code, body = getResource(t, ds, "/label-values", map[string]string{"label": "host_name"})
	if code != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("a label without values: HTTP %d %s, want []", code, body)
	}
}

func TestLabelResourcesRejectBadParametersWith400(t *testing.T) {
	fake := labelsFake()
	ds := profilesDS(t, fake, nil)
	cases := []struct {
		path   string
		params map[string]string
		want   string
	}{
		{"/label-values", nil, `parameter \"label\" is required`},
		{"/label-values", map[string]string{"label": "span-name"}, `parameter \"label\" must be a label name`},
		{"/label-values", map[string]string{"label": "9lives"}, `got \"9lives\"`},
		{"/label-values", map[string]string{"label": "span_name", "selector": `{service_name=}`}, `parameter \"selector\" must be a label selector such as {service_name=\"api\"}`},
		{"/label-names", map[string]string{"selector": `service_name="x"`}, `parameter \"selector\" must be a label selector`},
		{"/label-names", map[string]string{"from": "yesterday"}, `parameter \"from\" must be Unix milliseconds`},
		{"/services", map[string]string{"from": "2000", "to": "1000"}, `parameter \"from\" must be before \"to\"`},
	}
	for _, c := range cases {
		code, body := getResource(t, ds, c.path, c.params)
		if code != 400 || !strings.Contains(body, c.want) || !strings.HasPrefix(body, `{"error":`) {
			t.Errorf("%s %v: HTTP %d %s, want 400 with %s", c.path, c.params, code, body, c.want)
		}
	}
	if n := len(fake.labelCalls()); n != 0 {
		t.Errorf("bad parameters still reached Pyroscope %d times", n)
	}
}

func TestLabelResourcesReportPyroscopeFailuresAs502(t *testing.T) {
	fake := labelsFake()
	fake.err = pyroscopeErr(connect.CodeUnavailable, "store-gateway not ready")
	ds := profilesDS(t, fake, nil)
	for _, p := range []string{"/services", "/label-names", "/label-values?label=service_name"} {
		rec := httptest.NewRecorder()
		ds.newResourceMux().ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code != 502 || !strings.Contains(rec.Body.String(), "Pyroscope (http://pyroscope:4040)") || !strings.Contains(rec.Body.String(), "store-gateway not ready") {
			t.Errorf("%s: HTTP %d %s", p, rec.Code, rec.Body)
		}
	}

	down := profilesDS(t, &memProfiles{err: errPyroscopeDown}, nil)
	if code, body := getResource(t, down, "/services", nil); code != 502 || !strings.Contains(body, "connection refused") {
		t.Errorf("unreachable Pyroscope: HTTP %d %s", code, body)
	}
	unset := newTestDatasource(t, map[string]any{}, nil)
	if code, body := getResource(t, unset, "/label-names", nil); code != 400 || !strings.Contains(body, "jsonData.pyroscopeUrl") {
		t.Errorf("unset Pyroscope: HTTP %d %s", code, body)
	}
}
