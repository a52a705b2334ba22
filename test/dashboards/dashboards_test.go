// Package dashboards checks the dashboards shipped with the plugin: their uids and links, their
// variables, their data sources against the provisioning, and that every query of this plugin
// passes the backend's own validation (and, with -tags integration, answers from the test bed).
package dashboards

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/plugin"
)

// wantUIDs are the dashboards' uids: links, the README and users' bookmarks depend on them.
var wantUIDs = map[string]string{
	"hsi-request-level-profiling.json": "hsi-request-profiling",
	"hsi-profiling-overview.json":      "hsi-profiling-overview",
	"hsi-gpu-metrics.json":             "hsi-gpu-metrics",
}

type dashboard struct {
	file       string
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
	Panels []panel                   `json:"panels"`
	Links  []map[string]any          `json:"links"`
	Raw    map[string]any            `json:"-"`
	Time   struct{ From, To string } `json:"time"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *dsRef          `json:"datasource"`
}

type dsRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type panel struct {
	ID          int               `json:"id"`
	Title       string            `json:"title"`
	Type        string            `json:"type"`
	Description string            `json:"description"`
	Datasource  *dsRef            `json:"datasource"`
	Targets     []json.RawMessage `json:"targets"`
	Options     map[string]any    `json:"options"`
}

func load(t *testing.T) []dashboard {
	t.Helper()
	files, _ := filepath.Glob("../../dashboards/*.json")
	var out []dashboard
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := dashboard{file: filepath.Base(f)}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, d)
	}
	return out
}

func TestDashboardsHaveStableUIDsAndArePluginIncludes(t *testing.T) {
	ds := load(t)
	seen := map[string]bool{}
	for _, d := range ds {
		if want, ok := wantUIDs[d.file]; !ok || d.UID != want {
			t.Errorf("%s: uid %q, want %q", d.file, d.UID, wantUIDs[d.file])
		}
		seen[d.file] = true
	}
	var pj struct {
		Includes []struct{ Type, Path string }
	}
	raw, _ := os.ReadFile("../../plugin.json")
	if err := json.Unmarshal(raw, &pj); err != nil {
		t.Fatal(err)
	}
	for file := range wantUIDs {
		if !seen[file] {
			t.Errorf("dashboard %s is missing", file)
		}
		if !slices.ContainsFunc(pj.Includes, func(i struct{ Type, Path string }) bool {
			return i.Type == "dashboard" && i.Path == "dashboards/"+file
		}) {
			t.Errorf("plugin.json does not include dashboards/%s", file)
		}
	}
}

// grafanaVars are Grafana's own variables, which panels may use without defining them.
var grafanaVars = map[string]bool{"__url_time_range": true, "__value": true, "__data": true, "__rate_interval": true,
	"__from": true, "__to": true, "__interval": true, "__field": true, "__series": true, "__all_variables": true}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:[:.][^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)|\[\[([A-Za-z_][A-Za-z0-9_]*)\]\]`)

func TestPanelsUseDefinedVariablesAndProvisionedDataSources(t *testing.T) {
	provisioned := provisionedTypes(t)
	for _, d := range load(t) {
		defined := map[string]variable{}
		for _, v := range d.Templating.List {
			defined[v.Name] = v
		}
		// Data-source variables must name a type the provisioning installs.
		for _, v := range d.Templating.List {
			if v.Type == "datasource" {
				var typ string
				_ = json.Unmarshal(v.Query, &typ)
				if !provisioned[typ] {
					t.Errorf("%s: variable %s picks data sources of type %q, which provisioning does not install", d.file, v.Name, typ)
				}
			}
		}
		raw, _ := os.ReadFile("../../dashboards/" + d.file)
		for _, m := range varRef.FindAllStringSubmatch(string(raw), -1) {
			name := m[1] + m[2] + m[3]
			if _, ok := defined[name]; !ok && !grafanaVars[name] && !strings.HasPrefix(name, "__") {
				t.Errorf("%s: uses $%s, which is not one of its variables", d.file, name)
			}
		}
		for _, p := range d.Panels {
			if p.Description == "" {
				t.Errorf("%s: panel %q has no description saying how to read it", d.file, p.Title)
			}
			if p.Type == "text" {
				continue
			}
			if p.Datasource == nil || !strings.HasPrefix(p.Datasource.UID, "${") {
				t.Errorf("%s: panel %q should take its data source from a variable, has %+v", d.file, p.Title, p.Datasource)
				continue
			}
			name := strings.Trim(p.Datasource.UID, "${}")
			if v, ok := defined[name]; !ok || v.Type != "datasource" {
				t.Errorf("%s: panel %q uses data source variable %s, not defined as a data source variable", d.file, p.Title, name)
			}
		}
	}
}

func provisionedTypes(t *testing.T) map[string]bool {
	raw, err := os.ReadFile("../../provisioning/datasources/datasources.yml")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+type:\s*(\S+)`).FindAllStringSubmatch(string(raw), -1) {
		out[m[1]] = true
	}
	return out
}

// sample values the dashboards' variables take in the tests.
func sampleValues(traceID string) map[string]string {
	return map[string]string{
		"service": "nemotron-backend", "trace_id": traceID, "host": "gpu-node-1", "gpu": "0",
		"model": "NVIDIA A100-SXM4-80GB", "profile_type": "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
		"baseline_from": "now-2h", "baseline_to": "now-1h",
	}
}

// interpolate replaces the dashboard variables in a target as Grafana would, with values.
func interpolate(target json.RawMessage, values map[string]string) json.RawMessage {
	return json.RawMessage(varRef.ReplaceAllStringFunc(string(target), func(ref string) string {
		m := varRef.FindStringSubmatch(ref)
		if v, ok := values[m[1]+m[2]+m[3]]; ok {
			return v
		}
		return ref
	}))
}

// pluginTargets lists every target of this plugin's data source, interpolated, by panel.
func pluginTargets(t *testing.T, values map[string]string) map[string][]backend.DataQuery {
	out := map[string][]backend.DataQuery{}
	now := time.Now()
	for _, d := range load(t) {
		for _, p := range d.Panels {
			if p.Datasource == nil || p.Datasource.Type != plugin.PluginID {
				continue
			}
			for i, raw := range p.Targets {
				var head struct{ QueryType string }
				_ = json.Unmarshal(raw, &head)
				out[d.file+": "+p.Title] = append(out[d.file+": "+p.Title], backend.DataQuery{
					RefID: string(rune('A' + i)), QueryType: head.QueryType, JSON: interpolate(raw, values),
					TimeRange: backend.TimeRange{From: now.Add(-15 * time.Minute), To: now}, Interval: 15 * time.Second,
					MaxDataPoints: 1000,
				})
			}
		}
	}
	return out
}

func TestEveryPluginQueryPassesTheBackendsValidation(t *testing.T) {
	// No upstream configured: a valid query gets "... is not configured", an invalid one
	// "invalid <type> query: ..." from the same parsing the real answers go through.
	inst, err := plugin.NewDatasource(context.Background(), backend.DataSourceInstanceSettings{JSONData: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*plugin.Datasource)
	defer ds.Dispose()
	n := 0
	for name, qs := range pluginTargets(t, sampleValues("4bf92f3577b34da6a3ce929d0e0e4736")) {
		res, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: qs})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			n++
			r := res.Responses[q.RefID]
			if r.Error == nil || !strings.Contains(r.Error.Error(), "is not configured") {
				t.Errorf("%s (%s): %v", name, q.JSON, r.Error)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d queries of this plugin in the dashboards", n)
	}
}
