// Package provisioning checks the provisioning files users copy: the trace data sources must send
// their trace-to-profile queries to this plugin's data source.
package provisioning

import (
	"os"
	"testing"

	"go.yaml.in/yaml/v3"
)

type datasources struct {
	Datasources []struct {
		Name     string         `yaml:"name"`
		UID      string         `yaml:"uid"`
		Type     string         `yaml:"type"`
		JSONData map[string]any `yaml:"jsonData"`
	} `yaml:"datasources"`
}

func TestTraceDataSourcesLinkToThisPluginsProfiles(t *testing.T) {
	raw, err := os.ReadFile("../../provisioning/datasources/datasources.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f datasources
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	pluginUID := ""
	for _, ds := range f.Datasources {
		if ds.Type == "hsi-profiling-datasource" {
			pluginUID = ds.UID
		}
	}
	if pluginUID == "" {
		t.Fatal("no data source of type hsi-profiling-datasource")
	}
	linked := map[string]bool{}
	for _, ds := range f.Datasources {
		link, ok := ds.JSONData["tracesToProfiles"].(map[string]any)
		if !ok {
			continue
		}
		if link["datasourceUid"] != pluginUID {
			t.Errorf("%s: tracesToProfiles.datasourceUid = %v, want %q", ds.Name, link["datasourceUid"], pluginUID)
		}
		// Grafana builds the label selector from these tags: service.name must become the
		// service_name label Pyroscope and this plugin select on.
		tags, _ := link["tags"].([]any)
		found := false
		for _, tag := range tags {
			m, _ := tag.(map[string]any)
			found = found || m["key"] == "service.name" && m["value"] == "service_name"
		}
		if !found {
			t.Errorf("%s: tracesToProfiles.tags lack service.name → service_name: %v", ds.Name, tags)
		}
		linked[ds.Type] = true
	}
	for _, typ := range []string{"jaeger", "tempo"} {
		if !linked[typ] {
			t.Errorf("no %s data source links its traces to profiles", typ)
		}
	}
}
