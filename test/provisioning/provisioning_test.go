// Package provisioning checks the provisioning files users copy: the trace data sources must send
// their trace-to-profile queries to this plugin's data source.
package provisioning

import (
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"go.yaml.in/yaml/v3"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

type datasources struct {
	Datasources []struct {
		Name     string         `yaml:"name"`
		UID      string         `yaml:"uid"`
		Type     string         `yaml:"type"`
		JSONData map[string]any `yaml:"jsonData"`
	} `yaml:"datasources"`
}

// readDatasources reads the provisioned data sources users copy.
func readDatasources(t *testing.T) datasources {
	t.Helper()
	raw, err := os.ReadFile("../../provisioning/datasources/datasources.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f datasources
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestTraceDataSourcesLinkToThisPluginsProfiles(t *testing.T) {
	f := readDatasources(t)
	plugins := map[string]bool{}
	for _, ds := range f.Datasources {
		if ds.Type == "hsi-profiling-datasource" {
			plugins[ds.UID] = true
		}
	}
	if len(plugins) == 0 {
		t.Fatal("no data source of type hsi-profiling-datasource")
	}
	linked := map[string]bool{}
	for _, ds := range f.Datasources {
		link, ok := ds.JSONData["tracesToProfiles"].(map[string]any)
		if !ok {
			continue
		}
		if uid, _ := link["datasourceUid"].(string); !plugins[uid] {
			t.Errorf("%s: tracesToProfiles.datasourceUid = %v, want one of the HSI Profiling data sources %v", ds.Name, link["datasourceUid"], plugins)
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

// Each HSI Profiling data source of the file loads as the plugin reads it, nothing invalid, and
// reads traces from the store its name says: both trace stores have an example.
func TestPluginDataSourcesLoadWithTheirTraceStore(t *testing.T) {
	f := readDatasources(t)
	stores := map[string]bool{}
	for _, ds := range f.Datasources {
		if ds.Type != "hsi-profiling-datasource" {
			continue
		}
		jsonData, _ := json.Marshal(ds.JSONData)
		s, bad, err := models.LoadSettings(backend.DataSourceInstanceSettings{JSONData: jsonData})
		if err != nil || !reflect.DeepEqual(bad, models.Invalid{}) {
			t.Errorf("%s: %v, invalid %+v", ds.Name, err, bad)
			continue
		}
		u, err := s.TraceUpstream()
		if err != nil {
			t.Errorf("%s: %v", ds.Name, err)
			continue
		}
		stores[u.Name] = true
		if u.Name == models.Tempo && s.Join.TraceDatasourceType != models.TraceDatasourceTempo {
			t.Errorf("%s reads Tempo but its span links open %s", ds.Name, s.Join.TraceDatasourceType)
		}
	}
	if !stores[models.Jaeger] || !stores[models.Tempo] {
		t.Errorf("the examples read traces from %v, want both Jaeger and Tempo", stores)
	}
}
