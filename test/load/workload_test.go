//go:build integration

package load

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/dashboards"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

// call is one request Grafana makes of the plugin: a panel's queries in one QueryData, or one
// resource call (an editor's picker or a dashboard variable).
type call struct {
	name     string // the panel or the resource, for messages
	kind     string // its row in the latency table
	queries  []target
	resource string // path and query string, for a resource call
	// alone: the warnings its queries get when the request runs alone ("refID: severity: text",
	// figures as #); written in the warm-up, only read under load.
	alone map[string]bool
}

type target struct {
	refID string
	json  map[string]any
	span  time.Duration // the panel's time range: the last span until now
}

// pluginQueries are the call's queries with their time range ending now, to the second: Grafana
// sends the panels of one refresh one range, so the calls of the same second are read as panels
// of one refresh (the plugin shares their joins and the tail's verdicts, keyed by the range).
func (c *call) pluginQueries() []pluginhost.Query {
	now := time.Now().Truncate(time.Second)
	out := make([]pluginhost.Query, len(c.queries))
	for i, q := range c.queries {
		out[i] = pluginhost.Query{RefID: q.refID, JSON: q.json, From: now.Add(-q.span), To: now}
	}
	return out
}

// kindOf names a query's row in the latency table: its query type, and for profile queries
// which of the four ways it selects samples.
func kindOf(q map[string]any) string {
	qt, _ := q["queryType"].(string)
	if qt != "profile" {
		return qt
	}
	switch {
	case q["traceId"] != nil && q["perService"] == true:
		return "profile (traceId, perService)"
	case q["traceId"] != nil:
		return "profile (traceId)"
	case q["spanSelector"] != nil:
		return "profile (spanSelector)"
	}
	return "profile (labelSelector)"
}

// workload is what the load repeats: every panel of the shipped dashboards and every variable
// they fill from this plugin, as Grafana sends them with the test bed's values; then the query
// types and variants no dashboard uses (whole-request profile per service, span selector, both,
// a diff against a request, local GPUs) and the editors' resource calls.
func workload(t *testing.T, traceID, spanID string) []*call {
	t.Helper()
	root, _ := filepath.Abs("../../dashboards")
	ds, err := dashboards.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	values := dashboards.SampleValues(traceID)
	var out []*call
	spans := map[string]time.Duration{} // dashboard file -> its default time range
	for _, d := range ds {
		spans[d.File] = dashboardSpan(d.Time.From)
		for _, v := range d.Templating.List {
			if v.Type != "query" || v.Datasource == nil || v.Datasource.Type != pluginhost.PluginID {
				continue
			}
			var q string
			if err := json.Unmarshal(dashboards.Interpolate(v.Query, values), &q); err != nil {
				t.Fatalf("%s: variable %s: %v", d.File, v.Name, err)
			}
			now := time.Now()
			path := "variable?" + url.Values{"query": {q}, "from": {fmt.Sprint(now.Add(-spans[d.File]).UnixMilli())},
				"to": {fmt.Sprint(now.UnixMilli())}}.Encode()
			out = append(out, &call{name: d.File + ": variable " + v.Name, kind: "resource variable", resource: path})
		}
	}
	targets := dashboards.PluginTargets(ds, values)
	names := make([]string, 0, len(targets))
	for name := range targets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		file, _, _ := strings.Cut(name, ": ")
		c := &call{name: name, alone: map[string]bool{}}
		for _, tg := range targets[name] {
			var m map[string]any
			if err := json.Unmarshal(tg.JSON, &m); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			c.queries = append(c.queries, target{refID: tg.RefID, json: m, span: spans[file]})
		}
		c.kind = kindOf(c.queries[0].json)
		out = append(out, c)
	}

	const cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	extra := func(name string, qs ...map[string]any) {
		c := &call{name: name, kind: kindOf(qs[0]), alone: map[string]bool{}}
		for i, q := range qs {
			c.queries = append(c.queries, target{refID: string(rune('A' + i)), json: q, span: 15 * time.Minute})
		}
		out = append(out, c)
	}
	extra("whole request per service", map[string]any{"queryType": "profile", "traceId": traceID, "profileTypeId": cpu, "perService": true})
	extra("span flame graph", map[string]any{"queryType": "profile", "labelSelector": `{service_name="nemotron-backend"}`,
		"profileTypeId": cpu, "spanSelector": []string{spanID}})
	extra("flame graph and series", map[string]any{"queryType": "both", "labelSelector": `{service_name=~"ai-.*"}`,
		"profileTypeId": cpu, "groupBy": []string{"service_name"}})
	extra("this request against the last 15 minutes", map[string]any{"queryType": "diff", "labelSelector": `{service_name="nemotron-backend"}`,
		"profileTypeId": cpu, "baseline": map[string]any{"from": "now-15m", "to": "now"}, "comparison": map[string]any{"traceId": traceID}})
	// Two queries in one request, as a panel with two targets sends them.
	extra("local GPUs", map[string]any{"queryType": "gpuLocal", "view": "devices"}, map[string]any{"queryType": "gpuLocal", "view": "class"})

	now := time.Now()
	hour := url.Values{"from": {fmt.Sprint(now.Add(-time.Hour).UnixMilli())}, "to": {fmt.Sprint(now.UnixMilli())}}.Encode()
	for _, path := range []string{
		"upstreams", "profile-types", "services?" + hour, "label-names?selector=" + url.QueryEscape(`{service_name="ai-detector"}`),
		"label-values?label=service_name&" + hour, "trace-services", "traces?service=nemotron-backend&minDuration=100ms&limit=20",
		"gpu-metrics", "gpu-label-values?role=gpu&hosts=gpu-node-1", "kernel-files?traceId=" + traceID,
	} {
		route, _, _ := strings.Cut(path, "?")
		out = append(out, &call{name: "resource " + path, kind: "resource " + route, resource: path})
	}
	return out
}

// dashboardSpan reads a dashboard's default range "now-1h" as 1h; 15 minutes otherwise.
func dashboardSpan(from string) time.Duration {
	if d, err := time.ParseDuration(strings.TrimPrefix(from, "now-")); err == nil && d > 0 {
		return d
	}
	return 15 * time.Minute
}

// slowRequest is a demo request slow in its database step whose whole-request profile the plugin
// answers from span profiles (testbed.SlowRequest), and the backend's profiled root span.
func slowRequest(t *testing.T, h *pluginhost.Host) (traceID, spanID string) {
	t.Helper()
	traceID, err := testbed.SlowRequest(t.Context(), bed, testbed.HostNotice(h))
	if err != nil {
		t.Fatal(err)
	}
	return traceID, profiledRootSpan(t, traceID)
}

// profiledRootSpan is the backend's root span of the trace, the one otel-profiling-go labels its
// samples with (span attribute pyroscope.profile.id), read from Jaeger's HTTP API.
func profiledRootSpan(t *testing.T, traceID string) string {
	t.Helper()
	res, err := http.Get(bed.JaegerURL + "/api/traces/" + traceID)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var reply struct {
		Data []struct {
			Spans []struct {
				SpanID string `json:"spanID"`
				Tags   []struct {
					Key   string `json:"key"`
					Value any    `json:"value"`
				} `json:"tags"`
				ProcessID string `json:"processID"`
			} `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&reply); err != nil || len(reply.Data) == 0 {
		t.Fatalf("Jaeger trace %s: HTTP %d, %v", traceID, res.StatusCode, err)
	}
	tr := reply.Data[0]
	for _, s := range tr.Spans {
		for _, tag := range s.Tags {
			if tag.Key == "pyroscope.profile.id" && tr.Processes[s.ProcessID].ServiceName == "nemotron-backend" {
				return s.SpanID
			}
		}
	}
	t.Fatalf("trace %s: no nemotron-backend span carries pyroscope.profile.id", traceID)
	return ""
}
