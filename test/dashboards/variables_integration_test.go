//go:build integration

package dashboards

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	shipped "github.com/hsi-profiling/hsi-profiling-datasource/internal/dashboards"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/plugin"
)

// resolveVariables picks each query variable of the dashboard this plugin answers as Grafana does
// on a first visit: the variable's query, with the variables before it substituted, over the
// range; the value the dashboard was saved with where the query still offers it, else the first
// of its values sorted as the variable says. Variables whose values come from elsewhere keep the
// sample values.
func resolveVariables(t *testing.T, ds *plugin.Datasource, d dashboard, from, to time.Time) map[string]string {
	t.Helper()
	values := sampleValues("")
	for _, v := range d.Templating.List {
		if v.Type != "query" || v.Datasource == nil || v.Datasource.Type != "hsi-profiling-datasource" {
			continue
		}
		var q string
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("%s: variable %s's query is not a string: %s", d.File, v.Name, v.Query)
		}
		q = string(shipped.Interpolate(json.RawMessage(q), values))
		got := variableValues(t, ds, q, from, to)
		if v.Sort == 1 || v.Sort == 5 {
			slices.Sort(got)
		}
		if len(got) == 0 {
			t.Fatalf("%s: variable %s (%s) has no value in the last 15 minutes", d.File, v.Name, q)
		}
		pick, how := got[0], "first"
		if saved, ok := v.Current.Value.(string); ok && slices.Contains(got, saved) {
			pick, how = saved, "saved"
		}
		values[v.Name] = pick
		t.Logf("%s: $%s = %q (%s of %d: %s)", d.File, v.Name, pick, how, len(got), q)
	}
	return values
}

// variableValues calls the variable resource as Grafana's variable editor does.
func variableValues(t *testing.T, ds *plugin.Datasource, query string, from, to time.Time) []string {
	t.Helper()
	// As Grafana sends it: the path alone, the URL with its query.
	u := "variable?" + url.Values{"query": {query}, "from": {strconv.FormatInt(from.UnixMilli(), 10)}, "to": {strconv.FormatInt(to.UnixMilli(), 10)}}.Encode()
	var res *backend.CallResourceResponse
	err := ds.CallResource(context.Background(), &backend.CallResourceRequest{Method: "GET", Path: "variable", URL: u},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { res = r; return nil }))
	if err != nil || res == nil || res.Status != 200 {
		body := ""
		if res != nil {
			body = fmt.Sprintf("HTTP %d %s", res.Status, res.Body)
		}
		t.Fatalf("variable %s: %v %s", query, err, body)
	}
	var vs []struct{ Value string }
	if err := json.Unmarshal(res.Body, &vs); err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Value
	}
	return out
}

// On a first visit Grafana picks each variable's first value: the Request-Level dashboard's
// service and operation are then ones with span profiles, so the merged span profile of the
// operation's slowest spans has samples (a service's first operation by name had none before).
func TestRealVariablesPickOperationsWithSpanProfiles(t *testing.T) {
	jsonData, _ := json.Marshal(map[string]any{"pyroscopeUrl": bed.PyroscopeURL, "prometheusUrl": bed.PrometheusURL, "jaegerUrl": bed.JaegerURL})
	inst, err := plugin.NewDatasource(context.Background(), backend.DataSourceInstanceSettings{UID: "hsi-profiling", JSONData: jsonData})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*plugin.Datasource)
	defer ds.Dispose()
	var last string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(2 * time.Second) {
		to := time.Now()
		from := to.Add(-15 * time.Minute)
		for _, d := range load(t) {
			if d.File != "hsi-request-level-profiling.json" {
				continue
			}
			values := resolveVariables(t, ds, d, from, to)
			for name, qs := range pluginTargets(t, values) {
				if !strings.Contains(name, "merged") {
					continue
				}
				res, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: qs})
				if err != nil {
					t.Fatal(err)
				}
				r := res.Responses[qs[0].RefID]
				if r.Error == nil && len(r.Frames) > 0 && frames.FlameGraphHasSamples(r.Frames[0]) {
					return
				}
				last = fmt.Sprintf("%s for %s %s: %v %v", name, values["service"], values["operation"], r.Error, noticesOf(r))
			}
		}
	}
	t.Errorf("the first service and operation's merged span profile has no samples within a minute: %s", last)
}

func noticesOf(r backend.DataResponse) []string {
	var out []string
	for _, f := range r.Frames {
		if f.Meta != nil {
			for _, n := range f.Meta.Notices {
				out = append(out, n.Text)
			}
		}
	}
	return out
}
