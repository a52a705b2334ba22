// Package dashboards reads the dashboards shipped with the plugin (dashboards/*.json) and turns
// their panels' targets into the queries Grafana would send, variables interpolated with sample
// values. The dashboard test (test/dashboards) and the load test (test/load) share it, so both run
// exactly what the dashboards ask.
package dashboards

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
)

// Dashboard is the part of a dashboard's JSON model the tests read.
type Dashboard struct {
	File       string `json:"-"` // base name, e.g. hsi-gpu-metrics.json
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
	Panels []Panel                   `json:"panels"`
	Links  []map[string]any          `json:"links"`
	Time   struct{ From, To string } `json:"time"`
}

// Variable is a templating variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *DSRef          `json:"datasource"`
	// Sort is Grafana's order of the values: 1 and 5 alphabetical (ascending), 0 as the
	// query answers them.
	Sort int `json:"sort"`
	// Current is the value the dashboard was saved with; Grafana keeps it where the variable's
	// query still offers it.
	Current struct {
		Value any `json:"value"`
	} `json:"current"`
}

// DSRef is a data-source reference of a panel or a variable.
type DSRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

// Panel is a panel with its targets as written in the file.
type Panel struct {
	ID          int               `json:"id"`
	Title       string            `json:"title"`
	Type        string            `json:"type"`
	Description string            `json:"description"`
	Datasource  *DSRef            `json:"datasource"`
	Targets     []json.RawMessage `json:"targets"`
	Options     map[string]any    `json:"options"`
	// Panels are a collapsed row's panels; Load lists them beside the row.
	Panels []Panel `json:"panels"`
}

// Load reads every dashboard in dir.
func Load(dir string) ([]Dashboard, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Dashboard
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		d := Dashboard{File: filepath.Base(f)}
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		// A collapsed row holds its panels inside it: list them with the others, so the tests
		// check and run them too.
		var flat []Panel
		for _, p := range d.Panels {
			flat = append(flat, p)
			flat = append(flat, p.Panels...)
		}
		d.Panels = flat
		out = append(out, d)
	}
	return out, nil
}

// VarRef matches a variable reference in its three syntaxes: ${name} (with :format or .field),
// $name and [[name]]; the name is the first non-empty group.
var VarRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(?:[:.][^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)|\[\[([A-Za-z_][A-Za-z0-9_]*)\]\]`)

// SampleValues are the values the dashboards' variables take in the tests: the test bed's
// services, host and GPU, the pod the bed maps that GPU to (testbed.DemoPods' detector), and
// traceID for the request.
func SampleValues(traceID string) map[string]string {
	return map[string]string{
		"service": "nemotron-backend", "operation": "GET /api/detect", "endpoint": "GET /api/detect", "trace_id": traceID, "host": "gpu-node-1", "gpu": "0",
		"namespace": "inference", "pod": "ai-detector-0",
		"model": "NVIDIA A100-SXM4-80GB", "profile_type": "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
		"baseline_from": "now-2h", "baseline_to": "now-1h",
	}
}

// Interpolate replaces the dashboard variables in a target as Grafana would, with values;
// references without a value stay as they are.
func Interpolate(target json.RawMessage, values map[string]string) json.RawMessage {
	return json.RawMessage(VarRef.ReplaceAllStringFunc(string(target), func(ref string) string {
		m := VarRef.FindStringSubmatch(ref)
		if v, ok := values[m[1]+m[2]+m[3]]; ok {
			return v
		}
		return ref
	}))
}

// Target is one query of a panel as Grafana sends it: refId A, B, ... in the panel's order.
type Target struct {
	RefID     string
	QueryType string
	JSON      json.RawMessage
}

// PluginTargets lists the interpolated targets of every panel of this plugin's data source,
// keyed "file: panel title".
func PluginTargets(ds []Dashboard, values map[string]string) map[string][]Target {
	out := map[string][]Target{}
	for _, d := range ds {
		for _, p := range d.Panels {
			if p.Datasource == nil || p.Datasource.Type != pluginhost.PluginID {
				continue
			}
			name := d.File + ": " + p.Title
			for i, raw := range p.Targets {
				var head struct{ QueryType string }
				_ = json.Unmarshal(raw, &head)
				out[name] = append(out[name], Target{RefID: string(rune('A' + i)), QueryType: head.QueryType, JSON: Interpolate(raw, values)})
			}
		}
	}
	return out
}
