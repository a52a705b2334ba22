package plugin

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
)

func getGPUResource(t *testing.T, ds *Datasource, path string, params url.Values) (int, string) {
	t.Helper()
	if len(params) > 0 {
		path += "?" + params.Encode()
	}
	rec := httptest.NewRecorder()
	ds.newResourceMux().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code, rec.Body.String()
}

func TestGPUMetricsResourceListsTheCatalogueWithOverrides(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{"dcgmMetricNames": map[string]string{"power": "node_gpu_power_watts"}}, nil)
	code, body := getGPUResource(t, ds, "/gpu-metrics", nil)
	if code != 200 {
		t.Fatalf("HTTP %d: %s", code, body)
	}
	var entries []gpuCatalogueEntry
	if err := json.Unmarshal([]byte(body), &entries); err != nil {
		t.Fatal(err)
	}
	byName := map[string]gpuCatalogueEntry{}
	var names []string
	for _, e := range entries {
		byName[e.Name] = e
		names = append(names, e.Name)
	}
	if names[0] != "gpu_utilization" || len(names) < 25 {
		t.Errorf("names %v", names)
	}
	if p := byName["power"]; p.Unit != "watt" || !slices.Equal(p.Sources, []string{"node_gpu_power_watts"}) || p.Description == "" || p.Title != "Power draw" {
		t.Errorf("power %+v", p)
	}
	if f := byName["fb_used_percent"]; !slices.Equal(f.ComputedFrom, []string{"fb_used", "fb_free"}) || len(f.Sources) != 0 {
		t.Errorf("fb_used_percent %+v", f)
	}
	if tx := byName["pcie_tx"]; !slices.Equal(tx.Sources, []string{"DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT"}) || tx.Unit != "Bps" {
		t.Errorf("pcie_tx %+v", tx)
	}

	bad := newTestDatasource(t, map[string]any{"dcgmLabelNames": map[string]string{"rack": "x"}}, nil)
	if code, body := getGPUResource(t, bad, "/gpu-metrics", nil); code != 400 || !strings.Contains(body, `unknown role \"rack\"`) {
		t.Errorf("invalid settings: HTTP %d %s", code, body)
	}
}

func TestGPULabelValuesResourceUnitesAliasesAndScopes(t *testing.T) {
	fake := mixedFleet()
	fake.labelValues["gpu"] = []string{"1", "0"}
	ds := newTestDatasource(t, map[string]any{"prometheusUrl": newGPUPrometheus(t, fake).URL}, nil)
	code, body := getGPUResource(t, ds, "/gpu-label-values", url.Values{"role": {"host"}, "from": {"1700000000000"}, "to": {"1700003600000"}})
	if code != 200 {
		t.Fatalf("HTTP %d: %s", code, body)
	}
	if got := decodeStrings(t, body); !slices.Equal(got, []string{"fixture-node-b", "gpu-node-1"}) {
		t.Errorf("hosts %v", got)
	}
	code, body = getGPUResource(t, ds, "/gpu-label-values", url.Values{"role": {"gpu"}, "hosts": {"gpu-node-1", "fixture-node-b"}})
	if code != 200 || !slices.Equal(decodeStrings(t, body), []string{"0", "1"}) {
		t.Fatalf("gpus: HTTP %d %s", code, body)
	}
	last := fake.matches[len(fake.matches)-1]
	if len(last) != 2 || !strings.Contains(last[0], `Hostname=~"gpu-node-1|fixture-node-b"`) || !strings.Contains(last[1], `hostname=~"gpu-node-1|fixture-node-b"`) {
		t.Errorf("match[] %v: the scope must cover both host label names", last)
	}
}

func TestGPULabelValuesResourceRejectsBadParameters(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{"prometheusUrl": newGPUPrometheus(t, mixedFleet()).URL}, nil)
	cases := []struct {
		params url.Values
		want   string
	}{
		{url.Values{}, `parameter \"role\" must be one of host, gpu, uuid, model, pod, namespace, container, mig, got \"\"`},
		{url.Values{"role": {"rack"}}, `got \"rack\"`},
		{url.Values{"role": {"host"}, "host": {"a"}}, `unknown parameter \"host\"; gpu-label-values takes role, from, to, gpuSelector, hosts, gpus`},
		{url.Values{"role": {"host"}, "hosts": {""}}, `field \"hosts\" item 1 is empty`},
		{url.Values{"role": {"host"}, "gpuSelector": {"{a="}}, `field \"gpuSelector\" is not a label selector`},
		{url.Values{"role": {"host"}, "from": {"yesterday"}}, `parameter \"from\" must be Unix milliseconds`},
	}
	for _, c := range cases {
		code, body := getGPUResource(t, ds, "/gpu-label-values", c.params)
		if code != 400 || !strings.Contains(body, c.want) {
			t.Errorf("%v: HTTP %d %s, want 400 with %s", c.params, code, body, c.want)
		}
	}
	unset := newTestDatasource(t, map[string]any{}, nil)
	if code, body := getGPUResource(t, unset, "/gpu-label-values", url.Values{"role": {"host"}}); code != 400 || !strings.Contains(body, "Prometheus is not configured") {
		t.Errorf("unconfigured: HTTP %d %s", code, body)
	}
	down := closedURL(t)
	failing := newTestDatasource(t, map[string]any{"prometheusUrl": down}, nil)
	if code, body := getGPUResource(t, failing, "/gpu-label-values", url.Values{"role": {"host"}}); code != 502 || !strings.Contains(body, "Prometheus ("+down+")") {
		t.Errorf("unreachable: HTTP %d %s", code, body)
	}
}
