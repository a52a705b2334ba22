// Package dashboards checks the dashboards shipped with the plugin: their uids and links, their
// variables, their data sources against the provisioning, and that every query of this plugin
// passes the backend's own validation (and, with -tags integration, answers from the test bed).
package dashboards

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	shipped "github.com/hsi-profiling/hsi-profiling-datasource/internal/dashboards"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/plugin"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/triage"
)

// wantUIDs are the dashboards' uids: links, the README and users' bookmarks depend on them.
var wantUIDs = map[string]string{
	"hsi-request-level-profiling.json": "hsi-request-profiling",
	"hsi-profiling-overview.json":      "hsi-profiling-overview",
	"hsi-gpu-metrics.json":             "hsi-gpu-metrics",
	"hsi-gpu-incidents.json":           "hsi-gpu-incidents",
}

// The dashboards' model and reading are shared with the load test (internal/dashboards).
type (
	dashboard = shipped.Dashboard
	variable  = shipped.Variable
)

func load(t *testing.T) []dashboard {
	t.Helper()
	out, err := shipped.Load("../../dashboards")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestDashboardsHaveStableUIDsAndArePluginIncludes(t *testing.T) {
	ds := load(t)
	seen := map[string]bool{}
	for _, d := range ds {
		if want, ok := wantUIDs[d.File]; !ok || d.UID != want {
			t.Errorf("%s: uid %q, want %q", d.File, d.UID, wantUIDs[d.File])
		}
		seen[d.File] = true
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

var varRef = shipped.VarRef

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
					t.Errorf("%s: variable %s picks data sources of type %q, which provisioning does not install", d.File, v.Name, typ)
				}
			}
		}
		raw, _ := os.ReadFile("../../dashboards/" + d.File)
		for _, m := range varRef.FindAllStringSubmatch(string(raw), -1) {
			name := m[1] + m[2] + m[3]
			if _, ok := defined[name]; !ok && !grafanaVars[name] && !strings.HasPrefix(name, "__") {
				t.Errorf("%s: uses $%s, which is not one of its variables", d.File, name)
			}
		}
		for _, p := range d.Panels {
			if p.Description == "" {
				t.Errorf("%s: panel %q has no description saying how to read it", d.File, p.Title)
			}
			if p.Type == "text" || p.Type == "row" {
				continue
			}
			// Grafana's Dashboard data source reuses another panel's answer: that panel must be
			// one of this dashboard's and ask this plugin.
			if p.Datasource != nil && p.Datasource.UID == "-- Dashboard --" {
				for _, raw := range p.Targets {
					var tgt struct{ PanelID int }
					_ = json.Unmarshal(raw, &tgt)
					source := slices.IndexFunc(d.Panels, func(q shipped.Panel) bool { return q.ID == tgt.PanelID })
					if source < 0 || d.Panels[source].Datasource == nil || !strings.HasPrefix(d.Panels[source].Datasource.UID, "${") {
						t.Errorf("%s: panel %q reuses panel %d, which is not a panel of this dashboard asking a data source", d.File, p.Title, tgt.PanelID)
					}
				}
				continue
			}
			if p.Datasource == nil || !strings.HasPrefix(p.Datasource.UID, "${") {
				t.Errorf("%s: panel %q should take its data source from a variable, has %+v", d.File, p.Title, p.Datasource)
				continue
			}
			name := strings.Trim(p.Datasource.UID, "${}")
			if v, ok := defined[name]; !ok || v.Type != "datasource" {
				t.Errorf("%s: panel %q uses data source variable %s, not defined as a data source variable", d.File, p.Title, name)
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
func sampleValues(traceID string) map[string]string { return shipped.SampleValues(traceID) }

// interpolate replaces the dashboard variables in a target as Grafana would, with values.
func interpolate(target json.RawMessage, values map[string]string) json.RawMessage {
	return shipped.Interpolate(target, values)
}

// pluginTargets lists every target of this plugin's data source, interpolated, by panel.
func pluginTargets(t *testing.T, values map[string]string) map[string][]backend.DataQuery {
	out := map[string][]backend.DataQuery{}
	now := time.Now()
	for name, targets := range shipped.PluginTargets(load(t), values) {
		for _, q := range targets {
			out[name] = append(out[name], backend.DataQuery{
				RefID: q.RefID, QueryType: q.QueryType, JSON: q.JSON,
				TimeRange: backend.TimeRange{From: now.Add(-15 * time.Minute), To: now}, Interval: 15 * time.Second,
				MaxDataPoints: 1000,
			})
		}
	}
	return out
}

func TestEveryPluginQueryPassesTheBackendsValidation(t *testing.T) {
	// No upstream configured: a valid query gets "... is not configured" (an error, or the
	// notice of an empty answer), an invalid one "invalid <type> query: ..." from the same
	// parsing the real answers go through.
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
			// An optional source (kernel traces) left unset is an empty answer whose notice
			// says so; the others an error.
			said := ""
			if r.Error != nil {
				said = r.Error.Error()
			} else if len(r.Frames) > 0 && r.Frames[0].Meta != nil {
				for _, n := range r.Frames[0].Meta.Notices {
					said += n.Text
				}
			}
			if !strings.Contains(said, "is not configured") {
				t.Errorf("%s (%s): %v, notices %q", name, q.JSON, r.Error, said)
			}
		}
	}
	if n < 10 {
		t.Errorf("only %d queries of this plugin in the dashboards", n)
	}
}

// dashboardPath matches a link to a dashboard, /d/<uid> and its slug when it has one.
var dashboardPath = regexp.MustCompile(`/d/([A-Za-z0-9_-]+)(?:/([A-Za-z0-9_-]+))?`)

// slug is the URL slug Grafana makes of a dashboard's title.
func slug(title string) string {
	return strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(title), "-"), "-")
}

func TestDashboardLinksLeadToShippedDashboards(t *testing.T) {
	ds := load(t)
	titles := map[string]string{}
	for _, d := range ds {
		titles[d.UID] = d.Title
	}
	for _, d := range ds {
		// Header links, text panels and field links alike.
		raw, _ := os.ReadFile("../../dashboards/" + d.File)
		for _, m := range dashboardPath.FindAllStringSubmatch(string(raw), -1) {
			title, ok := titles[m[1]]
			switch {
			case !ok:
				t.Errorf("%s: %s leads to no shipped dashboard", d.File, m[0])
			case m[2] != "" && m[2] != slug(title):
				t.Errorf("%s: %s: the slug of %q is %s", d.File, m[0], title, slug(title))
			}
		}
	}
}

// linkedBothWays are dashboards whose headers link to each other, keeping the time range.
var linkedBothWays = [][2]string{
	{"hsi-gpu-incidents", "hsi-gpu-metrics"},
	{"hsi-gpu-incidents", "hsi-request-profiling"},
}

func TestDashboardsLinkEachOtherBothWays(t *testing.T) {
	byUID := map[string]dashboard{}
	for _, d := range load(t) {
		byUID[d.UID] = d
	}
	links := func(from, to string) bool {
		for _, l := range byUID[from].Links {
			url, _ := l["url"].(string)
			m := dashboardPath.FindStringSubmatch(url)
			if l["type"] == "link" && m != nil && m[1] == to && l["keepTime"] == true {
				return true
			}
		}
		return false
	}
	for _, pair := range linkedBothWays {
		for _, dir := range [][2]string{pair, {pair[1], pair[0]}} {
			if !links(dir[0], dir[1]) {
				t.Errorf("%s has no header link to /d/%s keeping the time range", dir[0], dir[1])
			}
		}
	}
}

// reducers are Grafana's reducer IDs a groupBy may aggregate with (@grafana/data's ReducerID).
var reducers = map[string]bool{"count": true, "countAll": true, "distinctCount": true, "sum": true, "min": true, "max": true,
	"mean": true, "first": true, "last": true, "firstNotNull": true, "lastNotNull": true, "allValues": true, "uniqueValues": true}

// TestTransformationsNameTheFieldsTheyMake follows the fields through each panel's groupBy,
// organize and sortBy as Grafana does (a groupBy aggregate is named "<field> (<reducer>)") and
// checks that later steps and field overrides name fields that exist by then.
func TestTransformationsNameTheFieldsTheyMake(t *testing.T) {
	for _, d := range load(t) {
		raw, _ := os.ReadFile("../../dashboards/" + d.File)
		var model struct {
			Panels []struct {
				Title           string
				Transformations []struct {
					ID      string
					Options json.RawMessage
				}
				FieldConfig struct {
					Overrides []struct {
						Matcher struct{ ID, Options string }
					}
				}
			}
		}
		if err := json.Unmarshal(raw, &model); err != nil {
			t.Fatal(err)
		}
		for _, p := range model.Panels {
			var names map[string]bool // nil: the query's own fields, unknown here
			has := func(step, name string) {
				if names != nil && !names[name] {
					t.Errorf("%s: %s: %s names %q, not a field by then (%v)", d.File, p.Title, step, name, slices.Sorted(maps.Keys(names)))
				}
			}
			for _, tr := range p.Transformations {
				switch tr.ID {
				case "groupBy":
					var o struct {
						Fields map[string]struct {
							Aggregations []string
							Operation    string
						}
					}
					_ = json.Unmarshal(tr.Options, &o)
					names = map[string]bool{}
					for f, c := range o.Fields {
						switch {
						case c.Operation == "groupby":
							names[f] = true
						case c.Operation == "aggregate" && len(c.Aggregations) > 0:
							for _, a := range c.Aggregations {
								if !reducers[a] {
									t.Errorf("%s: %s: groupBy aggregates %s with %q, not a reducer", d.File, p.Title, f, a)
								}
								names[f+" ("+a+")"] = true
							}
						default:
							t.Errorf("%s: %s: groupBy field %s: operation %q with %d aggregations", d.File, p.Title, f, c.Operation, len(c.Aggregations))
						}
					}
				case "organize":
					var o struct{ RenameByName map[string]string }
					_ = json.Unmarshal(tr.Options, &o)
					for from, to := range o.RenameByName {
						has("organize", from)
						if names != nil {
							delete(names, from)
							names[to] = true
						}
					}
				case "filterByValue":
					var o struct{ Filters []struct{ FieldName string } }
					_ = json.Unmarshal(tr.Options, &o)
					for _, f := range o.Filters {
						has("filterByValue", f.FieldName)
					}
				case "filterFieldsByName":
					var o struct{ Include struct{ Names []string } }
					_ = json.Unmarshal(tr.Options, &o)
					kept := map[string]bool{}
					for _, n := range o.Include.Names {
						has("filterFieldsByName", n)
						kept[n] = true
					}
					names = kept
				case "sortBy":
					var o struct{ Sort []struct{ Field string } }
					_ = json.Unmarshal(tr.Options, &o)
					for _, s := range o.Sort {
						has("sortBy", s.Field)
					}
				default:
					t.Errorf("%s: %s: transformation %q: teach this test its fields", d.File, p.Title, tr.ID)
				}
			}
			for _, o := range p.FieldConfig.Overrides {
				if o.Matcher.ID == "byName" {
					has("an override", o.Matcher.Options)
				}
			}
		}
	}
}

// TestTriageTablesKeepTheFramesFieldConfig: Grafana 13's table ignores a data source's own
// custom.hidden, so each field the triage's frames mark hidden (the failures' class id) must be
// hidden by the table panels that show the view, or it shows as a column beside the class; and a
// panel's links override adds its links to a field's own (applyFieldOverrides merges arrays), so
// a field that carries links must not get more, or each cell shows two links to one URL.
func TestTriageTablesKeepTheFramesFieldConfig(t *testing.T) {
	hiddenBy := map[string][]string{} // view → fields the frame marks hidden
	linked := map[string][]string{}   // view → fields with the frame's own links
	ans := &triage.Answer{Failures: []triage.Failure{{}}, Requests: []triage.Request{{}}, Signals: []triage.Signal{{}}}
	for _, view := range models.TriageViews {
		for _, f := range frames.Triage(ans, view, frames.TriageLinks{})[0].Fields {
			if f.Config != nil && f.Config.Custom["hidden"] == true {
				hiddenBy[view] = append(hiddenBy[view], f.Name)
			}
			if f.Config != nil && len(f.Config.Links) > 0 {
				linked[view] = append(linked[view], f.Name)
			}
		}
	}
	if len(linked[models.TriageFailures]) == 0 {
		t.Fatal("the failures frame links no field: this test reads the wrong frame")
	}
	if len(hiddenBy[models.TriageFailures]) == 0 {
		t.Fatal("the failures frame hides no field: this test reads the wrong frame")
	}
	checked := 0
	for _, d := range load(t) {
		raw, _ := os.ReadFile("../../dashboards/" + d.File)
		var model struct {
			Panels []struct {
				Title, Type string
				Targets     []struct{ QueryType, View string }
				FieldConfig struct {
					Overrides []struct {
						Matcher    struct{ ID, Options string }
						Properties []struct {
							ID    string
							Value any
						}
					}
				}
			}
		}
		if err := json.Unmarshal(raw, &model); err != nil {
			t.Fatal(err)
		}
		for _, p := range model.Panels {
			if p.Type != "table" || len(p.Targets) != 1 || p.Targets[0].QueryType != models.QueryTypeTriage {
				continue
			}
			view := cmp.Or(p.Targets[0].View, models.TriageFailures)
			for _, o := range p.FieldConfig.Overrides {
				for _, prop := range o.Properties {
					if o.Matcher.ID == "byName" && prop.ID == "links" && slices.Contains(linked[view], o.Matcher.Options) {
						t.Errorf("%s: %s: an override adds links to %q, which carries the frame's own: each cell would show both", d.File, p.Title, o.Matcher.Options)
					}
				}
			}
			for _, name := range hiddenBy[view] {
				hidden := false
				for _, o := range p.FieldConfig.Overrides {
					for _, prop := range o.Properties {
						hidden = hidden || (o.Matcher.ID == "byName" && o.Matcher.Options == name &&
							(prop.ID == "custom.hidden" || prop.ID == "custom.hideFrom.viz") && prop.Value == true)
					}
				}
				if !hidden {
					t.Errorf("%s: %s: the %s view's field %q is hidden by the frame only: Grafana 13's table shows it; hide it with an override (custom.hidden)",
						d.File, p.Title, view, name)
				}
				checked++
			}
		}
	}
	if checked == 0 {
		t.Error("no triage table panel shows a field its frame hides: this test checks nothing")
	}
}

// TestTailPanelsNameTheFieldsOfTheirFrame: each panel of the tail row names, in its
// transformations, overrides and options (the bar chart's xField), fields its own part's frame
// has: a renamed field would leave a column unhidden or the bar chart without bars.
func TestTailPanelsNameTheFieldsOfTheirFrame(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	d := diagnose.Tail([]diagnose.TailRequest{{TraceID: "t", Duration: ms(900),
		Causes: []diagnose.Cause{{Kind: "queue", Service: "vllm", Title: "queued in vllm", Explains: ms(600)}}}}, nil, ms(300))
	fields := map[string]map[string]bool{}
	for _, part := range models.TailParts {
		f := frames.Tail(d, frames.TailFigures{}, nil, frames.SlowTraceLinks{}, []string{part})[0]
		fields[part] = map[string]bool{}
		for _, fl := range f.Fields {
			fields[part][fl.Name] = true
			if fl.Config != nil && fl.Config.DisplayNameFromDS != "" {
				fields[part][fl.Config.DisplayNameFromDS] = true
			}
		}
	}
	raw, _ := os.ReadFile("../../dashboards/hsi-profiling-overview.json")
	var model struct {
		Panels []struct {
			Title   string
			Targets []struct {
				QueryType string
				Parts     []string
			}
			Options         map[string]any
			Transformations []struct {
				ID      string
				Options struct{ Include struct{ Names []string } }
			}
			FieldConfig struct {
				Overrides []struct{ Matcher struct{ ID, Options string } }
			}
		}
	}
	if err := json.Unmarshal(raw, &model); err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, p := range model.Panels {
		if len(p.Targets) != 1 || p.Targets[0].QueryType != models.QueryTypeTail {
			continue
		}
		seen++
		if len(p.Targets[0].Parts) != 1 {
			t.Errorf("%s: asks for parts %v, want its own frame alone", p.Title, p.Targets[0].Parts)
			continue
		}
		have := fields[p.Targets[0].Parts[0]]
		var named []string
		for _, tr := range p.Transformations {
			named = append(named, tr.Options.Include.Names...)
		}
		for _, o := range p.FieldConfig.Overrides {
			if o.Matcher.ID == "byName" {
				named = append(named, o.Matcher.Options)
			}
		}
		if x, ok := p.Options["xField"].(string); ok {
			named = append(named, x)
		}
		if ro, ok := p.Options["reduceOptions"].(map[string]any); ok {
			if f, ok := ro["fields"].(string); ok {
				named = append(named, strings.Trim(f, "/^$"))
			}
		}
		for _, n := range named {
			if !have[n] {
				t.Errorf("%s: names %q, which its %s frame lacks", p.Title, n, p.Targets[0].Parts[0])
			}
		}
	}
	if seen != 4 {
		t.Errorf("%d tail panels, want the row's 4 (answer, bar chart, causes, requests)", seen)
	}
}
