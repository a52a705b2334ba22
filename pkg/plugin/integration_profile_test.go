//go:build integration

package plugin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
)

// Profiles of real requests: the demo's backend, detector and enrichment push span profiles to the
// test bed's Pyroscope and spans to its Jaeger; each test makes its own slow request.

const cpuType = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

var demoServices = []string{"ai-detector", "ai-enrichment", "nemotron-backend"}

// demoRequest sends one request to the demo's backend (slow: "", "db", "model" or "serialize")
// and returns its trace ID.
func demoRequest(t *testing.T, slow string) string {
	t.Helper()
	res, err := http.Get(bed.DemoURL + "/api/detect?slow=" + slow)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	id := res.Header.Get("X-Trace-Id")
	if res.StatusCode != 200 || len(id) != 32 {
		t.Fatalf("demo answered %s with trace ID %q", res.Status, id)
	}
	return id
}

// profiledRequest makes a slow request and waits until its whole-request profile shows every
// service: spans reach Jaeger within a second, profiles reach Pyroscope at the next upload (2 s).
// Sampling is statistical (100 Hz): a service whose 60 ms got no sample gets a fresh request, at
// most three in all.
func profiledRequest(t *testing.T, ds *Datasource, slow, profileType string) (string, *data.Frame) {
	t.Helper()
	var last string
	for range 3 {
		id := demoRequest(t, slow)
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			time.Sleep(time.Second)
			r := run(t, ds, query("A", fmt.Sprintf(`{"queryType":"profile","traceId":%q,"profileTypeId":%q}`, id, profileType))).Responses["A"]
			if r.Error != nil {
				last = r.Error.Error()
				continue
			}
			f := r.Frames[0]
			// CPU samples must match the request's spans; heap samples cannot (see
			// correlate.isHeapProfile), so their notice says they come from the request's period.
			wantMatch := "matched by span ID"
			if strings.HasPrefix(profileType, "memory:") {
				wantMatch = "heap profiles cannot record them"
			}
			if services := serviceNodes(f); slices.Equal(services, demoServices) && strings.Contains(frameNotices(f), wantMatch) {
				return id, f
			} else {
				last = fmt.Sprintf("services with samples: %v; notices: %s", services, frameNotices(f))
			}
		}
	}
	t.Fatalf("no request got samples in all three services: %s", last)
	return "", nil
}

// node is one row of a flame graph frame.
type node struct {
	level       int64
	name        string
	value, self int64
}

func nodes(f *data.Frame) []node {
	names := f.Fields[3].Config.TypeConfig.Enum.Text
	out := make([]node, f.Rows())
	for i := range out {
		out[i] = node{f.Fields[0].At(i).(int64), names[f.Fields[3].At(i).(data.EnumItemIndex)], f.Fields[1].At(i).(int64), f.Fields[2].At(i).(int64)}
	}
	return out
}

func serviceNodes(f *data.Frame) []string {
	var out []string
	for _, n := range nodes(f) {
		if n.level == 1 {
			out = append(out, n.name)
		}
	}
	slices.Sort(out)
	return out
}

// subtree returns the rows under the level-1 node named service.
func subtree(f *data.Frame, service string) []node {
	all := nodes(f)
	for i, n := range all {
		if n.level == 1 && n.name == service {
			j := i + 1
			for j < len(all) && all[j].level > 1 {
				j++
			}
			return all[i:j]
		}
	}
	return nil
}

// functionTotal sums the value of every node named fn (outermost occurrences only).
func functionTotal(rows []node, fn string) int64 {
	var sum int64
	inside := int64(-1)
	for _, n := range rows {
		if inside >= 0 && n.level <= inside {
			inside = -1
		}
		if inside < 0 && n.name == fn {
			sum += n.value
			inside = n.level
		}
	}
	return sum
}

func TestRealWholeRequestProfileShowsEachServicesHotFunction(t *testing.T) {
	ds := bedDatasource(t)
	_, f := profiledRequest(t, ds, "db", cpuType)
	if f.Name != "response" || !strings.Contains(frameNotices(f), "matched by span ID") {
		t.Errorf("frame %q, notices %s", f.Name, frameNotices(f))
	}
	// Each service's own handler: the backend's 300 ms slow query, the detector's 60 ms model call;
	// the enrichment service splits its 60 ms between two functions, so at the profiler's 100 Hz
	// its handler is what every request is sure to show.
	hot := map[string]string{"nemotron-backend": "main.dbQuery", "ai-detector": "main.modelPredict", "ai-enrichment": "main.(*service).handleEnrichment"}
	for service, fn := range hot {
		rows := subtree(f, service)
		own, fnTotal := rows[0].value, functionTotal(rows, fn)
		// Plausible: a request spends well under 10 s of CPU in one service, and what the service
		// node holds is at least what its hot function holds.
		if own <= 0 || own > 10e9 || fnTotal <= 0 || fnTotal > own {
			t.Errorf("%s: %d ns in all, %d ns in %s", service, own, fnTotal, fn)
		}
	}
	enrichment := subtree(f, "ai-enrichment")
	if functionTotal(enrichment, "main.extractFeatures")+functionTotal(enrichment, "main.modelPredict") <= 0 {
		t.Errorf("ai-enrichment's samples are in neither of its functions: %v", enrichment)
	}
	// The slow step dominates the backend's CPU: 300 ms of dbQuery against ~10 ms of serialising.
	backend := subtree(f, "nemotron-backend")
	if db := functionTotal(backend, "main.dbQuery"); db*2 < backend[0].value {
		t.Errorf("dbQuery %d ns of the backend's %d ns", db, backend[0].value)
	}
}

func TestRealWholeRequestAllocationsRender(t *testing.T) {
	ds := bedDatasource(t)
	// Go's heap profiles carry no span or trace labels, so the plugin shows the services'
	// allocations in the request's upload period, and says so.
	_, f := profiledRequest(t, ds, "", "memory:alloc_objects:count:space:bytes")
	if f.Fields[1].Config.Unit != "short" {
		t.Errorf("unit %q", f.Fields[1].Config.Unit)
	}
	if n := frameNotices(f); !strings.Contains(n, "[warning] No memory:alloc_objects:count:space:bytes sample carries the span IDs") {
		t.Errorf("notices: %s", n)
	}
	if rows := subtree(f, "ai-enrichment"); functionTotal(rows, "main.extractFeatures") <= 0 {
		t.Errorf("enrichment's allocations lack extractFeatures: %v", rows)
	}
	// alloc_space in bytes, for the same request, through the per-service frames.
	id, _ := profiledRequest(t, ds, "", "memory:alloc_space:bytes:space:bytes")
	r := run(t, ds, query("A", fmt.Sprintf(`{"queryType":"profile","traceId":%q,"profileTypeId":"memory:alloc_space:bytes:space:bytes","perService":true}`, id))).Responses["A"]
	if r.Error != nil || len(r.Frames) != 4 || r.Frames[2].Name != "ai-enrichment" || r.Frames[2].Fields[1].Config.Unit != "bytes" {
		t.Fatalf("per-service frames: %v %v", r.Error, r.Frames)
	}
}

func TestRealSpanFilterReallyFiltersOnPyroscope112(t *testing.T) {
	ds := bedDatasource(t)
	id, _ := profiledRequest(t, ds, "db", cpuType)
	root := backendRootSpan(t, ds, id)

	// Exactly what Grafana's trace view sends for the embedded span flame graph: span ±30 s.
	q := query("span-flamegraph-refId", fmt.Sprintf(`{"refId":"span-flamegraph-refId","queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}","groupBy":[],"profileTypeId":%q,"spanSelector":[%q]}`, cpuType, root.id))
	q.TimeRange = backend.TimeRange{From: root.start.Add(-30 * time.Second), To: root.end.Add(30 * time.Second)}
	unfiltered := q
	unfiltered.JSON = json.RawMessage(fmt.Sprintf(`{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}","profileTypeId":%q}`, cpuType))
	unfiltered.RefID = "all"
	res := run(t, ds, q, unfiltered)
	span, all := res.Responses["span-flamegraph-refId"], res.Responses["all"]
	if span.Error != nil || all.Error != nil {
		t.Fatal(span.Error, all.Error)
	}
	sf, af := span.Frames[0], all.Frames[0]
	if sf.Name != "response" || sf.Rows() < 2 {
		t.Fatalf("span frame %q with %d rows: the trace view shows nothing", sf.Name, sf.Rows())
	}
	spanTotal, allTotal := sf.Fields[1].At(0).(int64), af.Fields[1].At(0).(int64)
	// The traffic generator keeps the backend busy, so the unfiltered minute holds much more.
	if spanTotal >= allTotal {
		t.Errorf("span-filtered total %d ns is not below the unfiltered %d ns: the filter did not filter", spanTotal, allTotal)
	}
	if functionTotal(nodes(sf), "main.dbQuery") <= 0 {
		t.Errorf("the span's profile lacks its own hot function main.dbQuery")
	}

	// A 300 ms window around the span alone still finds its samples: the plugin widens the window
	// it asks Pyroscope for (samples are stamped at upload), never the filter.
	narrow := q
	narrow.RefID = "narrow"
	narrow.TimeRange = backend.TimeRange{From: root.start, To: root.end}
	r := run(t, ds, narrow).Responses["narrow"]
	if r.Error != nil || r.Frames[0].Rows() < 2 || r.Frames[0].Fields[1].At(0).(int64) != spanTotal {
		t.Errorf("span-only window: %v, frame %v", r.Error, r.Frames)
	}
}

type spanInfo struct {
	id         string
	start, end time.Time
}

func backendRootSpan(t *testing.T, ds *Datasource, traceID string) spanInfo {
	t.Helper()
	jae, err := ds.src.Traces.Get()
	if err != nil {
		t.Fatal(err)
	}
	tr, err := jae.Trace(t.Context(), traceID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tr.Spans {
		if s.Service == "nemotron-backend" && s.ParentSpanID == "" {
			if s.Attributes["pyroscope.profile.id"] != s.SpanID {
				t.Errorf("root span attributes %v lack pyroscope.profile.id", s.Attributes)
			}
			return spanInfo{s.SpanID, s.Start, s.Start.Add(s.Duration)}
		}
	}
	t.Fatalf("trace %s has no backend root span", traceID)
	return spanInfo{}
}

func TestRealDiffShowsTheSlowFunctionOnTheComparisonSide(t *testing.T) {
	ds := bedDatasource(t)
	id, _ := profiledRequest(t, ds, "db", cpuType)
	r := run(t, ds, query("A", fmt.Sprintf(`{"queryType":"diff","profileTypeId":%q,
		"labelSelector":"{service_name=\"nemotron-backend\"}",
		"baseline":{"from":"now-5m","to":"now"},
		"comparison":{"traceId":%q}}`, cpuType, id))).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	diff, summary := r.Frames[0], r.Frames[1]
	if diff.Fields[4].Name != "valueRight" || diff.Fields[5].Name != "selfRight" || diff.Rows() < 3 {
		t.Fatalf("diff frame fields %v, %d rows", diff.Fields, diff.Rows())
	}
	// Both sides are normalised to one total (value the baseline, valueRight the comparison, as
	// Grafana's flame graph reads them); the notice gives the real ones.
	left, right := diff.Fields[1].At(0).(int64), diff.Fields[4].At(0).(int64)
	if ratio := float64(left) / float64(right); ratio < 0.99 || ratio > 1.01 {
		t.Errorf("sides not normalised: %d against %d", left, right)
	}
	if n := frameNotices(diff); !strings.Contains(n, "Baseline: {service_name=\"nemotron-backend\"} over") || !strings.Contains(n, "Comparison: trace "+id) || !strings.Contains(n, "scaled") {
		t.Errorf("notices: %s", n)
	}
	// main.dbQuery's self share grows in the slow request: it is the comparison's biggest gain.
	for i := range summary.Rows() {
		if summary.Fields[0].At(i) == "main.dbQuery" {
			if change := summary.Fields[3].At(i).(float64); change <= 0 {
				t.Errorf("dbQuery changed by %v points", change)
			}
			return
		}
	}
	t.Errorf("diff summary lacks main.dbQuery: %v", summary.Fields[0])
}

func TestRealTraceIDLabelFallbackForOlderSDKs(t *testing.T) {
	ds := bedDatasource(t)
	// The seeds' Python SDK (tag_wrapper) pushed through the legacy /ingest API with trace_id as
	// an ordinary label. This trace is not in Jaeger, so only the label can find it.
	traceID := fmt.Sprintf("%032x", time.Now().UnixNano())
	now := time.Now()
	url := fmt.Sprintf("%s/ingest?name=%s&from=%d&until=%d&format=folded&sampleRate=100&spyName=pyspy&units=samples&aggregationType=sum",
		bed.PyroscopeURL, "legacy-python%7Btrace_id%3D"+traceID+"%7D", now.Add(-10*time.Second).Unix(), now.Unix())
	res, err := http.Post(url, "text/plain", bytes.NewBufferString("app.py:handle;app.py:predict;json.dumps 40\napp.py:handle;app.py:load 10\n"))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("ingest: %s", res.Status)
	}
	var r backend.DataResponse
	for range 20 {
		r = run(t, ds, query("A", fmt.Sprintf(`{"queryType":"profile","traceId":%q}`, traceID))).Responses["A"]
		if r.Error == nil {
			break
		}
		time.Sleep(time.Second)
	}
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	f := r.Frames[0]
	if functionTotal(nodes(f), "json.dumps") != 4e8 { // 40 samples at 100 Hz
		t.Errorf("rows %v", nodes(f))
	}
	// Exactly the 50 labelled samples: on 1.12 the trace_id_selector tried first answers every
	// service's profile, which must not leak into the request's.
	if total := f.Fields[1].At(0).(int64); total != 5e8 {
		t.Errorf("total %d ns, want the 50 labelled samples (5e8 ns)", total)
	}
	if n := frameNotices(f); !strings.Contains(n, "not found") || !strings.Contains(n, "matched the samples labelled trace_id") {
		t.Errorf("notices: %s", n)
	}
}

func TestRealPyroscope112IgnoresTraceIDSelectorAndThePluginNeverReliesOnIt(t *testing.T) {
	ds := bedDatasource(t)
	// A real request makes sure the services have samples of the last minutes: that is what
	// 1.12 answers to any trace_id_selector.
	id, _ := profiledRequest(t, ds, "db", cpuType)

	// A trace ID nothing carries: a server that filtered would answer nothing; 1.12 answers the
	// backend's whole profile, and the client finds that out and returns none of it.
	now := time.Now()
	store, err := ds.src.Profiles.Get()
	if err != nil {
		t.Fatal(err)
	}
	pyro := store.(*pyroscope.Client)
	fg, err := pyro.MergedFlameGraph(t.Context(), models.FlameGraphQuery{
		ProfileTypeID: cpuType, LabelSelector: `{service_name="nemotron-backend"}`,
		TraceID: fmt.Sprintf("%032x", now.UnixNano()), Start: now.Add(-5 * time.Minute), End: now, MaxNodes: 100,
	})
	if !errors.Is(err, models.ErrTraceSelectorIgnored) || fg != nil {
		t.Fatalf("random trace ID on 1.12: %v, %v; want ErrTraceSelectorIgnored", fg, err)
	}
	if got := pyro.TraceSelectorSupport(); got != pyroscope.SelectorIgnored {
		t.Errorf("support %v", got)
	}

	// The real request is still matched by span ID, as before.
	r := run(t, ds, query("A", fmt.Sprintf(`{"queryType":"profile","traceId":%q,"profileTypeId":%q}`, id, cpuType))).Responses["A"]
	if r.Error != nil || !strings.Contains(frameNotices(r.Frames[0]), "matched by span ID") {
		t.Errorf("real request: %v, notices %v", r.Error, r.Frames)
	}

	// A fresh data source finds it out within a query: a trace neither Jaeger nor any label knows
	// is an error naming both ways, never the whole hour of every service.
	fresh := bedDatasource(t)
	unknown := fmt.Sprintf("%032x", time.Now().UnixNano())
	r = run(t, fresh, query("A", fmt.Sprintf(`{"queryType":"profile","traceId":%q,"profileTypeId":%q}`, unknown, cpuType))).Responses["A"]
	wantError(t, r, backend.ErrorSourceDownstream, "Jaeger ("+bed.JaegerURL,
		fmt.Sprintf(`carries the label trace_id=%q (this Pyroscope ignores trace_id_selector, as 1.x does`, unknown))
	if got := fresh.profileClient(t).TraceSelectorSupport(); got != pyroscope.SelectorIgnored {
		t.Errorf("fresh data source: support %v", got)
	}
}
