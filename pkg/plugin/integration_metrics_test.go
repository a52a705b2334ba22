//go:build integration

package plugin

import (
	"encoding/json"
	"maps"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// Metrics, both, label resources and variables against the real Pyroscope and Jaeger of the test
// bed, fed by the demo (TestMain in integration_test.go waits until its profiles are queryable).

var demoServiceNames = []string{"ai-detector", "ai-enrichment", "nemotron-backend"}

// recentQuery asks over the last 10 minutes with a 15 s interval, as a dashboard panel would.
func recentQuery(refID, model string) backend.DataQuery {
	now := time.Now()
	return backend.DataQuery{RefID: refID, QueryType: queryTypeOf(model), JSON: json.RawMessage(model),
		Interval: 15 * time.Second, TimeRange: backend.TimeRange{From: now.Add(-10 * time.Minute), To: now}}
}

func queryTypeOf(model string) string {
	var m struct {
		QueryType string `json:"queryType"`
	}
	_ = json.Unmarshal([]byte(model), &m)
	return m.QueryType
}

// seriesByService checks the frames are series frames and indexes them by service_name.
func seriesByService(t *testing.T, frames []*data.Frame, valueName string) map[string]*data.Frame {
	t.Helper()
	out := map[string]*data.Frame{}
	for _, f := range frames {
		if f.Name != "series" || len(f.Fields) != 2 || f.Fields[0].Name != "time" || f.Fields[1].Name != valueName {
			t.Fatalf("frame %q fields %v, want series with time and %s", f.Name, frameFieldNames(f), valueName)
		}
		svc := f.Fields[1].Labels["service_name"]
		if _, dup := out[svc]; dup {
			t.Errorf("two series for service %q", svc)
		}
		out[svc] = f
	}
	return out
}

func frameFieldNames(f *data.Frame) []string {
	var names []string
	for _, fl := range f.Fields {
		names = append(names, fl.Name)
	}
	return names
}

// values returns a series frame's values and their maximum.
func values(f *data.Frame) ([]float64, float64) {
	var vs []float64
	maxV := math.Inf(-1)
	for i := 0; i < f.Rows(); i++ {
		v := f.Fields[1].At(i).(float64)
		vs = append(vs, v)
		maxV = math.Max(maxV, v)
	}
	return vs, maxV
}

func TestRealMetricsGiveEachDemoServicesCPUInCores(t *testing.T) {
	r := run(t, bedDatasource(t), recentQuery("A", `{"queryType":"metrics",
		"labelSelector":"{service_name=~\"nemotron-backend|ai-detector|ai-enrichment\"}",
		"profileTypeId":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","groupBy":["service_name"]}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	byService := seriesByService(t, r.Frames, "cpu")
	if got := slices.Sorted(maps.Keys(byService)); !slices.Equal(got, demoServiceNames) {
		t.Fatalf("series for %v, want one per demo service %v", got, demoServiceNames)
	}
	cores := float64(runtime.NumCPU())
	for svc, f := range byService {
		vs, maxV := values(f)
		if f.Fields[1].Config.Unit != "cores" || f.Meta.Custom.(map[string]any)["rateCalculated"] != true {
			t.Errorf("%s: unit %q meta %+v", svc, f.Fields[1].Config.Unit, f.Meta)
		}
		if maxV <= 0 {
			t.Errorf("%s: no positive CPU over 10 minutes of traffic: %v", svc, vs)
		}
		for _, v := range vs {
			if v < 0 || v > cores {
				t.Errorf("%s: %v cores is not plausible on a %v-core machine (a missing or double division by the step?)", svc, v, cores)
			}
		}
		t.Logf("%s: %d points, max %.3f cores", svc, len(vs), maxV)
	}
}

func TestRealMetricsGroupByServiceAndLimit(t *testing.T) {
	ds := bedDatasource(t)
	res := run(t, ds,
		recentQuery("all", `{"queryType":"metrics","groupBy":["service_name"]}`),
		recentQuery("top1", `{"queryType":"metrics","groupBy":["service_name"],"limit":1}`),
		recentQuery("top2", `{"queryType":"metrics","groupBy":["service_name"],"limit":2}`),
		recentQuery("merged", `{"queryType":"metrics","labelSelector":"{service_name=~\"ai-.*\"}"}`),
	)
	for ref, r := range res.Responses {
		if r.Error != nil {
			t.Fatalf("%s: %v", ref, r.Error)
		}
	}
	all := seriesByService(t, res.Responses["all"].Frames, "cpu")
	for _, svc := range demoServiceNames {
		if all[svc] == nil {
			t.Errorf("groupBy service_name lacks %s: has %v", svc, slices.Sorted(maps.Keys(all)))
		}
	}
	if n := len(res.Responses["top1"].Frames); n != 1 {
		t.Errorf("limit 1 gave %d series", n)
	}
	if n := len(res.Responses["top2"].Frames); n != 2 {
		t.Errorf("limit 2 gave %d series", n)
	}
	// The top series is the one with the largest total.
	total := func(f *data.Frame) (s float64) {
		vs, _ := values(f)
		for _, v := range vs {
			s += v
		}
		return s
	}
	top := res.Responses["top1"].Frames[0]
	for svc, f := range all {
		if total(f) > total(top)*1.5 {
			t.Errorf("limit 1 kept %v (total %.2f) but %s has %.2f", top.Fields[1].Labels, total(top), svc, total(f))
		}
	}
	merged := res.Responses["merged"].Frames
	if len(merged) != 1 || len(merged[0].Fields[1].Labels) != 0 {
		t.Errorf("no groupBy should merge into one unlabelled series, got %d frames", len(merged))
	}
}

func TestRealMetricsOfMemoryTypes(t *testing.T) {
	res := run(t, bedDatasource(t),
		recentQuery("alloc", `{"queryType":"metrics","labelSelector":"{service_name=\"ai-enrichment\"}","profileTypeId":"memory:alloc_objects:count:space:bytes"}`),
		recentQuery("inuse", `{"queryType":"metrics","labelSelector":"{service_name=\"ai-enrichment\"}","profileTypeId":"memory:inuse_space:bytes:space:bytes"}`),
	)
	alloc, inuse := res.Responses["alloc"], res.Responses["inuse"]
	if alloc.Error != nil || inuse.Error != nil {
		t.Fatalf("alloc: %v; inuse: %v", alloc.Error, inuse.Error)
	}
	if len(alloc.Frames) != 1 || len(inuse.Frames) != 1 {
		t.Fatalf("frames: alloc %d, inuse %d; want one series each", len(alloc.Frames), len(inuse.Frames))
	}
	a, i := alloc.Frames[0], inuse.Frames[0]
	if a.Fields[1].Name != "alloc_objects" || a.Fields[1].Config.Unit != "ops" || a.Meta.Custom == nil {
		t.Errorf("alloc_objects: field %q unit %q meta %+v; want a rate in ops", a.Fields[1].Name, a.Fields[1].Config.Unit, a.Meta)
	}
	if i.Fields[1].Name != "inuse_space" || i.Fields[1].Config.Unit != "bytes" || i.Meta.Custom != nil {
		t.Errorf("inuse_space: field %q unit %q meta %+v; want bytes as they are", i.Fields[1].Name, i.Fields[1].Config.Unit, i.Meta)
	}
	if _, maxA := values(a); maxA <= 0 {
		t.Errorf("ai-enrichment allocates heavily, yet alloc_objects peaks at %v per second", maxA)
	}
	if vs, maxI := values(i); maxI <= 0 || maxI > 1<<34 {
		t.Errorf("inuse_space of ai-enrichment peaks at %v bytes: %v", maxI, vs)
	}
}

func TestRealBothGivesFlameGraphAndSeries(t *testing.T) {
	r := run(t, bedDatasource(t), recentQuery("A", `{"queryType":"both","labelSelector":"{service_name=\"nemotron-backend\"}",
		"profileTypeId":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","groupBy":["service_name"]}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if len(r.Frames) != 2 || r.Frames[0].Name != "response" || r.Frames[1].Name != "series" {
		t.Fatalf("frames %v, want the flame graph then one series", frameNames(r.Frames))
	}
	if !hasFunction(r.Frames[0], "main.dbQuery") || r.Frames[0].Rows() < 2 {
		t.Errorf("flame graph of %d rows lacks main.dbQuery", r.Frames[0].Rows())
	}
	if r.Frames[1].Fields[1].Labels["service_name"] != "nemotron-backend" {
		t.Errorf("series labels %v", r.Frames[1].Fields[1].Labels)
	}
	for _, f := range r.Frames {
		if f.Meta != nil && len(f.Meta.Notices) > 0 {
			t.Errorf("frame %q has notices %v", f.Name, f.Meta.Notices)
		}
	}
	// Both halves count the same samples: cores × step (15 s) × 1e9, summed over the points,
	// is the flame graph's total CPU nanoseconds. Samples at the range's edges may fall on
	// either side of a step boundary, hence the tolerance.
	vs, _ := values(r.Frames[1])
	var seriesNs float64
	for _, v := range vs {
		seriesNs += v * 15 * 1e9
	}
	flameNs := float64(r.Frames[0].Fields[1].At(0).(int64))
	if flameNs <= 0 || math.Abs(seriesNs-flameNs)/flameNs > 0.15 {
		t.Errorf("series add up to %.0f ns of CPU, the flame graph to %.0f ns: the rate conversion is off", seriesNs, flameNs)
	}
	t.Logf("series %.3gs of CPU, flame graph %.3gs", seriesNs/1e9, flameNs/1e9)
}

func TestRealBothKeepsTheFlameGraphWhenSeriesFail(t *testing.T) {
	// An invalid minStep fails only the series half; the flame graph must still come back.
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": bed.PyroscopeURL, "minStep": "often"}, nil)
	r := run(t, ds, recentQuery("A", `{"queryType":"both","labelSelector":"{service_name=\"nemotron-backend\"}"}`)).Responses["A"]
	if r.Error != nil || len(r.Frames) != 1 || r.Frames[0].Rows() < 2 {
		t.Fatalf("error %v, frames %v", r.Error, frameNames(r.Frames))
	}
	wantNotice(t, r.Frames[0], "series unavailable", "jsonData.minStep")
}

func TestRealLabelResourcesListTheDemosServices(t *testing.T) {
	ds := bedDatasource(t)
	code, body := getResource(t, ds, "/services", nil)
	if code != 200 {
		t.Fatalf("services: HTTP %d %s", code, body)
	}
	services := decodeStrings(t, body)
	for _, svc := range demoServiceNames {
		if !slices.Contains(services, svc) {
			t.Errorf("services %v lack %s", services, svc)
		}
	}

	code, body = getResource(t, ds, "/label-names", map[string]string{"selector": `{service_name="nemotron-backend"}`})
	if code != 200 {
		t.Fatalf("label-names: HTTP %d %s", code, body)
	}
	names := decodeStrings(t, body)
	if !slices.Contains(names, "service_name") {
		t.Errorf("label names %v lack service_name", names)
	}
	for _, n := range names {
		if strings.HasPrefix(n, "__") {
			t.Errorf("internal label %q not hidden: %v", n, names)
		}
	}

	code, body = getResource(t, ds, "/label-values", map[string]string{"label": "service_name", "selector": `{service_name=~"ai-.*"}`})
	if got := decodeStrings(t, body); code != 200 || !slices.Equal(got, []string{"ai-detector", "ai-enrichment"}) {
		t.Errorf("label-values: HTTP %d %v, want the two ai- services", code, got)
	}

	code, body = getResource(t, ds, "/label-values", map[string]string{"label": "service_name", "selector": `{service_name=~"("}`})
	if code != 400 || !strings.Contains(body, `parameter \"selector\"`) {
		t.Errorf("bad regex: HTTP %d %s", code, body)
	}
}

func TestRealVariablesAnswerAgainstTheServers(t *testing.T) {
	ds := bedDatasource(t)
	ok := func(query string) []variableValue {
		t.Helper()
		code, values, body := variable(t, ds, query, nil)
		if code != 200 {
			t.Fatalf("%s: HTTP %d %s", query, code, body)
		}
		return values
	}

	types := ok("profile_types()")
	if !slices.Contains(types, variableValue{"process_cpu - cpu", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"}) {
		t.Errorf("profile_types() = %v", types)
	}
	for _, q := range []string{"services()", "label_values(service_name)", "trace_services()"} {
		got := texts(ok(q))
		for _, svc := range demoServiceNames {
			if !slices.Contains(got, svc) {
				t.Errorf("%s = %v, lacks %s", q, got, svc)
			}
		}
	}
	if got := texts(ok(`label_values({service_name="ai-detector"}, service_name)`)); !slices.Equal(got, []string{"ai-detector"}) {
		t.Errorf("label_values with selector = %v", got)
	}
	if got := texts(ok("label_names()")); !slices.Contains(got, "service_name") || slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "__") }) {
		t.Errorf("label_names() = %v", got)
	}

	traces := ok("trace_ids(nemotron-backend)")
	if len(traces) == 0 {
		t.Fatal("trace_ids(nemotron-backend) found no traces of the demo's traffic")
	}
	prev := time.Duration(math.MaxInt64)
	for _, v := range traces {
		parts := strings.Split(v.Text, " · ")
		if len(parts) != 3 || parts[0] != v.Value || len(v.Value) != 32 || parts[1] == "" {
			t.Fatalf("option %+v is not <traceId> · <rootOperation> · <duration>", v)
		}
		d, err := time.ParseDuration(parts[2])
		if err != nil || d <= 0 {
			t.Fatalf("option %+v: duration %q", v, parts[2])
		}
		if d > prev {
			t.Errorf("trace_ids not slowest first: %v after %v", d, prev)
		}
		prev = d
	}
	// The demo makes every fourth request slow: asking for at least the median keeps fewer.
	slow := ok("trace_ids(nemotron-backend, " + traceDurationOf(traces[len(traces)/2]).String() + ")")
	if len(slow) == 0 || len(slow) > len(traces) {
		t.Errorf("with a minimum duration: %d traces (of %d)", len(slow), len(traces))
	}
	for _, v := range slow {
		if traceDurationOf(v) < traceDurationOf(traces[len(traces)/2])-time.Millisecond {
			t.Errorf("%+v is shorter than the minimum duration", v)
		}
	}

	code, _, body := variable(t, ds, "label_values({service_name=\"x\"})", nil)
	if code != 400 || !strings.Contains(body, "missing the label name after the selector") {
		t.Errorf("parse error: HTTP %d %s", code, body)
	}
}

func traceDurationOf(v variableValue) time.Duration {
	parts := strings.Split(v.Text, " · ")
	d, _ := time.ParseDuration(parts[len(parts)-1])
	return d
}
