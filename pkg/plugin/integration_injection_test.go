//go:build integration

package plugin

import (
	"encoding/json"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
)

// Against the real Prometheus and Pyroscope of the bed: a breakout attempt that the plugin quotes
// (injection_test.go) reaches the server as one matcher's value, so it matches nothing, while the
// plain value next to it matches the bed's data. Were the value pasted into the query text, the
// attempt would match every series instead.

// series counts the frames of a gpuMetrics answer that hold points.
func series(t *testing.T, ds *Datasource, model string) int {
	t.Helper()
	r := run(t, ds, fixtureQuery(t, "A", model)).Responses["A"]
	if r.Error != nil {
		t.Fatalf("%s: %v", model, r.Error)
	}
	n := 0
	for _, f := range r.Frames {
		if f.Rows() > 0 {
			n++
		}
	}
	return n
}

func TestRealPromQLInjectionMatchesNothing(t *testing.T) {
	ds := gpuBedDatasource(t, nil)
	if n := series(t, ds, `{"queryType":"gpuMetrics","metrics":["gpu_utilization"],"hosts":["fixture-node-a"]}`); n == 0 {
		t.Fatal("the plain host has no series: the bed's fixture is missing, the comparison below would prove nothing")
	}
	for _, host := range []string{
		`fixture-node-a"} or vector(1) or {Hostname=~".+`,
		`fixture-node-a"} or DCGM_FI_DEV_GPU_UTIL or {a="`,
		`.+`,
	} {
		model, _ := json.Marshal(map[string]any{"queryType": "gpuMetrics", "metrics": []string{"gpu_utilization"}, "hosts": []string{host}})
		if n := series(t, ds, string(model)); n != 0 {
			t.Errorf("host %q matched %d series; a quoted value matches no host", host, n)
		}
	}
}

func TestRealPyroscopeSelectorInjectionMatchesNothing(t *testing.T) {
	ds := bedDatasource(t)
	values := func(selector string) []string {
		code, body := getResource(t, ds, "/label-values", map[string]string{"label": "service_name", "selector": selector})
		if code != 200 {
			t.Fatalf("selector %s: HTTP %d %s", selector, code, body)
		}
		return decodeStrings(t, body)
	}
	if got := values(`{service_name="nemotron-backend"}`); len(got) != 1 {
		t.Fatalf("the plain selector lists %v, want the demo's backend: the comparison below would prove nothing", got)
	}
	// The value of service_name is `nemotron-backend", service_name=~".+`: one exact matcher.
	if got := values(`{service_name="nemotron-backend\", service_name=~\".+"}`); len(got) != 0 {
		t.Errorf("a breakout inside a quoted value listed %v; it matches no service", got)
	}

	profile := func(selector string) int {
		model, _ := json.Marshal(map[string]any{"queryType": "profile", "labelSelector": selector})
		r := run(t, ds, query("A", string(model))).Responses["A"]
		if r.Error != nil {
			t.Fatalf("%s: %v", selector, r.Error)
		}
		if !frames.FlameGraphHasSamples(r.Frames[0]) {
			return 0 // the empty answer's one root row
		}
		return r.Frames[0].Rows()
	}
	if profile(`{service_name="nemotron-backend"}`) == 0 {
		t.Fatal("the plain selector has an empty flame graph: the comparison below would prove nothing")
	}
	if n := profile(`{service_name="nemotron-backend\"} or {service_name=~\".+"}`); n != 0 {
		t.Errorf("a breakout inside a quoted value gave a flame graph of %d nodes; it matches no service", n)
	}
}
