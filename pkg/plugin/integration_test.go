//go:build integration

package plugin

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

// These tests run against the real Prometheus, Pyroscope and Jaeger of the test bed, fed by the
// demo workload (run with -tags integration; scripts/test.sh does).

var bed testbed.Endpoints

func TestMain(m *testing.M) { os.Exit(testbed.MainForTests(m, &bed)) }

func bedDatasource(t *testing.T) *Datasource {
	return newTestDatasource(t, map[string]any{
		"pyroscopeUrl": bed.PyroscopeURL, "prometheusUrl": bed.PrometheusURL, "jaegerUrl": bed.JaegerURL,
	}, nil)
}

func TestRealHealthCheckNamesAllThreeUpstreams(t *testing.T) {
	res := checkHealth(t, bedDatasource(t))
	if res.Status != backend.HealthStatusOk {
		t.Fatalf("health = %v %q", res.Status, res.Message)
	}
	for _, part := range []string{"Pyroscope: OK (", " profile types) · Prometheus: OK (version 2."} {
		if !strings.Contains(res.Message, part) {
			t.Errorf("message %q lacks %q", res.Message, part)
		}
	}
	// The demo's four services at least; more when tests have sent traces of their own (the
	// plugin's, Triton's, the scenarios' randomly named services).
	m := regexp.MustCompile(`\) · Jaeger: OK \((\d+) services, API v3\)`).FindStringSubmatch(res.Message)
	if len(m) < 2 {
		t.Fatalf("message %q does not report Jaeger's services through API v3", res.Message)
	}
	if n, _ := strconv.Atoi(m[1]); n < 4 {
		t.Errorf("message %q reports fewer services than the demo's four", res.Message)
	}
	if strings.Contains(res.Message, "(0 profile types)") {
		t.Errorf("the demo pushes profiles, yet Pyroscope reports none: %q", res.Message)
	}
}

func TestRealProfileQueryShowsTheDemosHotFunctions(t *testing.T) {
	res := run(t, bedDatasource(t),
		query("cpu", `{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}","profileTypeId":"process_cpu:cpu:nanoseconds:cpu:nanoseconds"}`),
		query("alloc", `{"queryType":"profile","labelSelector":"{service_name=\"ai-enrichment\"}","profileTypeId":"memory:alloc_objects:count:space:bytes"}`),
	)
	cases := map[string]struct{ unit, function string }{
		"cpu":   {"ns", "main.dbQuery"},
		"alloc": {"short", "main.extractFeatures"},
	}
	for refID, want := range cases {
		r := res.Responses[refID]
		if r.Error != nil {
			t.Fatalf("%s: %v", refID, r.Error)
		}
		f := r.Frames[0]
		if f.Name != "response" || f.Rows() < 2 || f.Fields[1].Config.Unit != want.unit {
			t.Fatalf("%s: frame %q with %d rows, unit %q", refID, f.Name, f.Rows(), f.Fields[1].Config.Unit)
		}
		if total := f.Fields[1].At(0).(int64); total <= 0 {
			t.Errorf("%s: root total = %d", refID, total)
		}
		if !hasFunction(f, want.function) {
			t.Errorf("%s: flame graph lacks %s", refID, want.function)
		}
	}
}

func TestRealPyroscopeRejectionNamesTheUpstream(t *testing.T) {
	// The plugin checks selectors itself; a range beyond Pyroscope's max_query_length (1 day by
	// default) is something only Pyroscope refuses.
	q := query("A", `{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}"}`)
	q.TimeRange.From = q.TimeRange.To.Add(-40 * 24 * time.Hour)
	res := run(t, bedDatasource(t), q)
	wantError(t, res.Responses["A"], backend.ErrorSourceDownstream, "Pyroscope ("+bed.PyroscopeURL+")")
}

func TestRealProfileTypesResource(t *testing.T) {
	ds := bedDatasource(t)
	rec := httptest.NewRecorder()
	ds.newResourceMux().ServeHTTP(rec, httptest.NewRequest("GET", "/profile-types", nil))
	if rec.Code != 200 {
		t.Fatalf("HTTP %d: %s", rec.Code, rec.Body)
	}
	var types []struct{ ID string }
	if err := json.Unmarshal(rec.Body.Bytes(), &types); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, pt := range types {
		found = found || pt.ID == "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	}
	if !found {
		t.Errorf("profile types %v lack the CPU type", types)
	}

	rec = httptest.NewRecorder()
	ds.newResourceMux().ServeHTTP(rec, httptest.NewRequest("GET", "/profile-types?from=abc", nil))
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), `parameter \"from\" must be Unix milliseconds`) {
		t.Errorf("bad from: HTTP %d %s", rec.Code, rec.Body)
	}
}

func hasFunction(f *data.Frame, name string) bool {
	for _, n := range f.Fields[3].Config.TypeConfig.Enum.Text {
		if n == name {
			return true
		}
	}
	return false
}
