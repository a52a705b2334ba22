//go:build integration

package plugin

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"slices"
	"testing"
)

func TestRealGPUVariablesListHostsAndTheirGPUs(t *testing.T) {
	ds := bedDatasource(t)
	ask := func(query string) []string {
		t.Helper()
		rec := httptest.NewRecorder()
		ds.newResourceMux().ServeHTTP(rec, httptest.NewRequest("GET", "/variable?query="+url.QueryEscape(query), nil))
		if rec.Code != 200 {
			t.Fatalf("%s: HTTP %d %s", query, rec.Code, rec.Body)
		}
		var values []variableValue
		if err := json.Unmarshal(rec.Body.Bytes(), &values); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range values {
			out = append(out, v.Value)
		}
		return out
	}
	// Old (hostname) and new (Hostname) exporters alike, and the demo's simulated host.
	hosts := ask("gpu_label_values(host)")
	for _, want := range []string{"fixture-node-a", "fixture-node-b", "gpu-node-1"} {
		if !slices.Contains(hosts, want) {
			t.Errorf("hosts %v lack %s", hosts, want)
		}
	}
	if gpus := ask(`gpu_label_values(gpu, "gpu-node-1")`); !slices.Equal(gpus, []string{"0", "1"}) {
		t.Errorf("GPUs of gpu-node-1 = %v", gpus)
	}
	if gpus := ask(`gpu_label_values(gpu, "gpu-node-1|fixture-node-b")`); !slices.Equal(gpus, []string{"0", "1", "2", "3"}) {
		t.Errorf("GPUs of two hosts = %v", gpus)
	}
	if models := ask("gpu_label_values(model)"); !slices.Contains(models, "Tesla T4") {
		t.Errorf("models = %v", models)
	}
}
