package plugin

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

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

func labelsFake() *seriesPyroscope {
	return &seriesPyroscope{
		labelNames: []string{"__name__", "service_name", "span_name", "__profile_type__"},
		labelValues: map[string][]string{
			"service_name": {"nemotron-backend", "ai-detector", "ai-enrichment"},
			"span_name":    {"HTTP GET /api/detect"},
		},
	}
}

func TestServicesResourceListsPyroscopesServiceNames(t *testing.T) {
	fake := labelsFake()
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": newSeriesPyroscope(t, fake).URL}, nil)
	code, body := getResource(t, ds, "/services", map[string]string{"from": "1700000000000", "to": "1700003600000"})
	if code != 200 {
		t.Fatalf("HTTP %d: %s", code, body)
	}
	if got := decodeStrings(t, body); !slices.Equal(got, []string{"ai-detector", "ai-enrichment", "nemotron-backend"}) {
		t.Errorf("services = %v", got)
	}
	req := fake.valuesReqs[0]
	if req.Name != "service_name" || len(req.Matchers) != 0 || req.Start != 1700000000000 || req.End != 1700003600000 {
		t.Errorf("request = %+v", req)
	}
}

func TestLabelNamesResourcePassesTheSelectorAndHidesInternalLabels(t *testing.T) {
	fake := labelsFake()
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": newSeriesPyroscope(t, fake).URL}, nil)
	code, body := getResource(t, ds, "/label-names", map[string]string{"selector": `{service_name="ai-detector"}`})
	if code != 200 {
		t.Fatalf("HTTP %d: %s", code, body)
	}
	if got := decodeStrings(t, body); !slices.Equal(got, []string{"service_name", "span_name"}) {
		t.Errorf("names = %v", got)
	}
	if m := fake.namesReqs[0].Matchers; !slices.Equal(m, []string{`{service_name="ai-detector"}`}) {
		t.Errorf("matchers = %v", m)
	}
	// Without from/to: the last 24 hours.
	if r := fake.namesReqs[0]; r.End-r.Start != 24*3600*1000 {
		t.Errorf("default window = %d ms, want 24 h", r.End-r.Start)
	}
}

func TestLabelValuesResourceListsOneLabelsValues(t *testing.T) {
	fake := labelsFake()
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": newSeriesPyroscope(t, fake).URL}, nil)
	code, body := getResource(t, ds, "/label-values", map[string]string{"label": "span_name", "selector": `{service_name=~"nemotron.*"}`})
	if code != 200 {
		t.Fatalf("HTTP %d: %s", code, body)
	}
	if got := decodeStrings(t, body); !slices.Equal(got, []string{"HTTP GET /api/detect"}) {
		t.Errorf("values = %v", got)
	}
	if r := fake.valuesReqs[0]; r.Name != "span_name" || !slices.Equal(r.Matchers, []string{`{service_name=~"nemotron.*"}`}) {
		t.Errorf("request = %+v", r)
	}
	code, body = getResource(t, ds, "/label-values", map[string]string{"label": "host_name"})
	if code != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("a label without values: HTTP %d %s, want []", code, body)
	}
}

func TestLabelResourcesRejectBadParametersWith400(t *testing.T) {
	fake := labelsFake()
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": newSeriesPyroscope(t, fake).URL}, nil)
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
	if n := len(fake.namesReqs) + len(fake.valuesReqs); n != 0 {
		t.Errorf("bad parameters still reached Pyroscope %d times", n)
	}
}

func TestLabelResourcesReportPyroscopeFailuresAs502(t *testing.T) {
	fake := labelsFake()
	fake.labelsErr = connect.NewError(connect.CodeUnavailable, errString("store-gateway not ready"))
	pyro := newSeriesPyroscope(t, fake)
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": pyro.URL}, nil)
	for _, p := range []string{"/services", "/label-names", "/label-values?label=service_name"} {
		rec := httptest.NewRecorder()
		ds.newResourceMux().ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		if rec.Code != 502 || !strings.Contains(rec.Body.String(), "Pyroscope ("+pyro.URL+")") || !strings.Contains(rec.Body.String(), "store-gateway not ready") {
			t.Errorf("%s: HTTP %d %s", p, rec.Code, rec.Body)
		}
	}

	down := newTestDatasource(t, map[string]any{"pyroscopeUrl": closedURL(t)}, nil)
	if code, body := getResource(t, down, "/services", nil); code != 502 || !strings.Contains(body, "connection refused") {
		t.Errorf("unreachable Pyroscope: HTTP %d %s", code, body)
	}
	unset := newTestDatasource(t, map[string]any{}, nil)
	if code, body := getResource(t, unset, "/label-names", nil); code != 400 || !strings.Contains(body, "jsonData.pyroscopeUrl") {
		t.Errorf("unset Pyroscope: HTTP %d %s", code, body)
	}
}
