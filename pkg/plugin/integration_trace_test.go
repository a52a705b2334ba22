//go:build integration

package plugin

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
)

// The request-level join against the real test bed: the demo's spans in Jaeger, its span
// profiles in Pyroscope and the simulated dcgm-exporter (2 GPUs on gpu-node-1) in Prometheus.

// spanRow is one row of the trace query's spans frame, by field name; null cells are absent.
type spanRow map[string]any

func spanRows(t *testing.T, f *data.Frame) []spanRow {
	t.Helper()
	if f.Name != "spans" {
		t.Fatalf("frame %q is not the spans table", f.Name)
	}
	out := make([]spanRow, f.Rows())
	for i := range out {
		out[i] = spanRow{}
		for _, fld := range f.Fields {
			if v, ok := fld.ConcreteAt(i); ok {
				out[i][fld.Name] = v
			}
		}
	}
	return out
}

func (r spanRow) str(name string) string {
	s, _ := r[name].(string)
	return s
}

func (r spanRow) num(name string) (float64, bool) {
	switch v := r[name].(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	}
	return 0, false
}

func findRow(t *testing.T, rows []spanRow, service, operation string) spanRow {
	t.Helper()
	for _, r := range rows {
		if r.str("service") == service && r.str("operation") == operation {
			return r
		}
	}
	t.Fatalf("no span %s/%s among %d rows", service, operation, len(rows))
	return nil
}

// promRange asks the bed's Prometheus directly for one series over [from, to] at 1 s.
func promRange(t *testing.T, expr string, from, to time.Time) []float64 {
	t.Helper()
	u := bed.PrometheusURL + "/api/v1/query_range?" + url.Values{
		"query": {expr}, "start": {strconv.FormatInt(from.Unix(), 10)}, "end": {strconv.FormatInt(to.Unix()+1, 10)}, "step": {"1"},
	}.Encode()
	res, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var reply struct {
		Data struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	var out []float64
	for _, r := range reply.Data.Result {
		for _, v := range r.Values {
			f, _ := strconv.ParseFloat(v[1].(string), 64)
			out = append(out, f)
		}
	}
	return out
}

func TestRealTraceQueryExplainsTheSlowRequest(t *testing.T) {
	ds := bedDatasource(t)
	var (
		r    backend.DataResponse
		took time.Duration
	)
	for attempt := 1; ; attempt++ {
		// Wait until the request's span profiles are in Pyroscope in every service.
		id, _ := profiledRequest(t, ds, "db", cpuType)
		start := time.Now()
		r = run(t, ds, query("A", fmt.Sprintf(`{"queryType":"trace","traceId":%q}`, id))).Responses["A"]
		took = time.Since(start)
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		if len(r.Frames) != 4 || r.Frames[1].Name != "breakdown" || r.Frames[2].Name != "verdict" || r.Frames[3].Name != "response" {
			t.Fatalf("frames %v", r.Frames)
		}
		// The demo's LLM engine has two slots and a small KV cache: the bed's traffic and the
		// other packages' tests, run at the same time, can keep it busy or preempt the request,
		// which then rightly spends its time queued or preempted in the engine rather than in
		// db_query. That is not the request this test means to make: make another.
		queued := engineQueued(r.Frames[2])
		if queued < 50 || attempt == 3 {
			break
		}
		t.Logf("request %s waited %.0f ms in the LLM engine (queued or preempted) behind other requests: sending another", id, queued)
	}
	rows := spanRows(t, r.Frames[0])
	t.Logf("trace query took %v; notices:\n%s", took, frameNotices(r.Frames[0]))

	// The breakdown sums to the request (its root span) and its largest part is in the backend,
	// where db_query spends most of the request.
	requestMs, _ := findRow(t, rows, "nemotron-backend", "GET /api/detect").num("duration")
	b := r.Frames[1]
	var sum float64
	durations, _ := b.FieldByName("duration")
	services, _ := b.FieldByName("service")
	for i := range durations.Len() {
		sum += durations.At(i).(float64)
	}
	if math.Abs(sum-requestMs) > 0.01 || b.Rows() == 0 || services.At(0) != "nemotron-backend" {
		t.Errorf("breakdown sums to %v ms of %v, largest part in %v", sum, requestMs, services.At(0))
	}
	// The verdict's first cause is the backend's time (db_query's CPU, or its wait where the
	// profiles saw less), with evidence.
	v := r.Frames[2]
	vt, _ := v.StringTable(-1, -1)
	t.Logf("verdict:\n%s", vt)
	cause, _ := v.FieldByName("cause")
	evidence, _ := v.FieldByName("evidence")
	if v.Rows() == 0 || !strings.Contains(cause.At(0).(string), "nemotron-backend") || evidence.At(0).(string) == "" {
		t.Errorf("first cause %v: %v", cause.At(0), evidence.At(0))
	}

	// The slow step is the span with the most time of its own: db_query, 15 × 20 ms.
	slowest := slices.MaxFunc(rows, func(a, b spanRow) int {
		x, _ := a.num("self")
		y, _ := b.num("self")
		return int(x - y)
	})
	if slowest.str("operation") != "db_query" || slowest.str("service") != "nemotron-backend" {
		t.Errorf("the span with the most self time is %s/%s", slowest.str("service"), slowest.str("operation"))
	}
	if self, _ := slowest.num("self"); self < 250 {
		t.Errorf("db_query self time %v ms, want about 300", self)
	}
	// db_query has no profile of its own (otel-profiling-go profiles local roots): empty cells.
	db := findRow(t, rows, "nemotron-backend", "db_query")
	if _, ok := db["cpu"]; ok {
		t.Errorf("db_query shows CPU %v without a profile of its own", db["cpu"])
	}
	// The backend's root holds the request's backend CPU; its hot function is main.dbQuery or a
	// function below it in the flame graph.
	root := findRow(t, rows, "nemotron-backend", "GET /api/detect")
	cpu, ok := root.num("cpu")
	if !ok || cpu <= 0 || cpu > 10e9 {
		t.Fatalf("backend root CPU %v", root["cpu"])
	}
	hot := root.str("hotFunction")
	if hot != "main.dbQuery" && !calledBelow(r.Frames[3], "nemotron-backend", "main.dbQuery", hot) {
		t.Errorf("backend hot function %q is neither main.dbQuery nor below it", hot)
	}
	if root.str("profileID") != root.str("spanID") {
		t.Errorf("root profile ID %q, span %q", root.str("profileID"), root.str("spanID"))
	}

	// GPU columns from the live simulator: the detector's spans on GPU 0 (gpu.index on
	// model.predict), the enrichment's on GPU 1, the backend (no gpu.index) on every GPU of its
	// host, listed.
	for _, c := range []struct{ service, op, gpus, gpu string }{
		{"ai-detector", "GET /detect", "0", "0"},
		{"ai-detector", "model.predict", "0", "0"},
		{"ai-enrichment", "enrich", "1", "1"},
		{"nemotron-backend", "GET /api/detect", "0,1", ""},
	} {
		row := findRow(t, rows, c.service, c.op)
		util, ok := row.num("gpuUtil")
		class := row.str("gpuClass")
		if row.str("host") != "gpu-node-1" || row.str("gpus") != c.gpus || !ok || util < 0 || util > 100 ||
			!slices.Contains(classify.Classes, classify.Class(class)) || class == string(classify.NoData) {
			t.Errorf("%s %s: host %q gpus %q util %v class %q", c.service, c.op, row.str("host"), row.str("gpus"), row["gpuUtil"], class)
			continue
		}
		if c.gpu == "" {
			continue
		}
		// The same readings straight from Prometheus over the span's window (start to one
		// second after its end) average to the cell.
		spanStart := row["start"].(time.Time)
		dur, _ := row.num("duration")
		spanEnd := spanStart.Add(time.Duration(dur * float64(time.Millisecond)))
		direct := promRange(t, fmt.Sprintf(`DCGM_FI_DEV_GPU_UTIL{Hostname="gpu-node-1",gpu=%q}`, c.gpu), spanStart.Add(-time.Second), spanEnd.Add(2*time.Second))
		if len(direct) == 0 {
			t.Errorf("%s: Prometheus has no GPU %s utilisation around the span", c.op, c.gpu)
			continue
		}
		lo, hi := slices.Min(direct), slices.Max(direct)
		if util < lo-1e-9 || util > hi+1e-9 {
			t.Errorf("%s: GPU util %v outside the simulator's readings %v..%v around the span", c.op, util, lo, hi)
		}
	}
	// The flame graph is the whole request's.
	if got := serviceNodes(r.Frames[3]); !slices.Equal(got, demoServices) {
		t.Errorf("flame graph services %v", got)
	}
	if n := frameNotices(r.Frames[0]); !strings.Contains(n, "GPU figures for ") || strings.Contains(n, "No GPU columns") || strings.Contains(n, "No CPU column") {
		t.Errorf("notices:\n%s", n)
	}
}

// calledBelow reports whether fn appears under a node named parent in the service's subtree of
// the flame graph.
func calledBelow(f *data.Frame, service, parent, fn string) bool {
	rows := subtree(f, service)
	inside := int64(-1)
	for _, n := range rows {
		if inside >= 0 && n.level <= inside {
			inside = -1
		}
		if inside >= 0 && n.name == fn {
			return true
		}
		if inside < 0 && n.name == parent {
			inside = n.level
		}
	}
	return false
}

func TestRealSlowRequestsListsTheDemosEndpointsAndSlowTraces(t *testing.T) {
	ds := bedDatasource(t)
	// The latency table over the last 15 minutes (the panel's default), the slow traces over the
	// seconds around this test's request: the bed's other tests send slower requests, and a busy
	// bed's 50 slowest of 15 minutes need not hold this one.
	sent := time.Now()
	id := demoRequest(t, "db")
	var lat, slow *data.Frame
	deadline := time.Now().Add(30 * time.Second)
	for {
		q := query("A", `{"queryType":"slowRequests","limit":50}`)
		whole := run(t, ds, q).Responses["A"]
		if whole.Error != nil {
			t.Fatal(whole.Error)
		}
		q.TimeRange = backend.TimeRange{From: sent.Add(-time.Second), To: time.Now()}
		r := run(t, ds, q).Responses["A"]
		r.Frames[0] = whole.Frames[0]
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		lat, slow = r.Frames[0], r.Frames[1]
		// The demo answers before its root span reaches Jaeger: until then the request is listed
		// from its callee's spans, with a notice (checked here too), so wait for the whole trace.
		if i := slices.Index(column(t, slow, "traceID"), id); i >= 0 {
			if column(t, slow, "rootService")[i] == "nemotron-backend" {
				break
			}
			if !strings.Contains(frameNotices(slow), "no root span in the trace store yet") {
				t.Errorf("request %s listed from part of its trace, without a notice: %s", id, frameNotices(slow))
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	table, _ := lat.StringTable(-1, -1)
	t.Logf("latency:\n%s\nslow traces: %d, notices: %s%s", table, slow.Rows(), frameNotices(lat), frameNotices(slow))

	// Every demo endpoint, with ordered, plausible percentiles.
	services, endpoints := column(t, lat, "service"), column(t, lat, "endpoint")
	p50, p95, p99 := column(t, lat, "p50"), column(t, lat, "p95"), column(t, lat, "p99")
	seen := map[string]bool{}
	for i := range endpoints {
		key := services[i] + " " + endpoints[i]
		seen[key] = true
		a, _ := strconv.ParseFloat(p50[i], 64)
		b, _ := strconv.ParseFloat(p95[i], 64)
		c, err := strconv.ParseFloat(p99[i], 64)
		if err != nil || a <= 0 || a > b || b > c || c > 10 {
			t.Errorf("%s: p50 %s p95 %s p99 %s", key, p50[i], p95[i], p99[i])
		}
		if key == "nemotron-backend /api/detect" && c < 0.2 {
			// A request costs about 150 ms, a slow one about 430 ms; every fourth is slow.
			t.Errorf("backend p99 %v s is below a normal request's time", c)
		}
	}
	// Goodput: requests within 500 ms, a bucket bound of the demo's histogram, so exact. A normal
	// request takes about 150 ms and a slow one about 430 ms: most are good.
	goodput, goodShare := column(t, lat, "goodput"), column(t, lat, "goodShare")
	for i := range endpoints {
		rate, err1 := strconv.ParseFloat(goodput[i], 64)
		share, err2 := strconv.ParseFloat(goodShare[i], 64)
		if err1 != nil || err2 != nil || rate <= 0 || share < 0.5 || share > 1 {
			t.Errorf("%s %s: goodput %s req/s, good share %s", services[i], endpoints[i], goodput[i], goodShare[i])
		}
	}
	if strings.Contains(frameNotices(lat), "interpolated") {
		t.Errorf("500 ms is a bucket bound, yet: %s", frameNotices(lat))
	}
	for _, want := range []string{"nemotron-backend /api/detect", "ai-detector /detect", "ai-enrichment /enrich"} {
		if !seen[want] {
			t.Errorf("latency table lacks %s: %v", want, seen)
		}
	}
	// Slowest p99 first (the traffic's slow model calls make the detector's p99 close to the
	// backend's, which waits for them).
	for i := 1; i < len(p99); i++ {
		a, _ := strconv.ParseFloat(p99[i-1], 64)
		b, _ := strconv.ParseFloat(p99[i], 64)
		if a < b {
			t.Errorf("latency rows not slowest first: %v before %v", p99[i-1], p99[i])
		}
	}

	// The slow request is listed, slowest first, with its link.
	ids := column(t, slow, "traceID")
	if !slices.Contains(ids, id) {
		t.Fatalf("slow traces lack %s: %v", id, ids)
	}
	durs, _ := slow.FieldByName("duration")
	for i := 1; i < slow.Rows(); i++ {
		if durs.At(i-1).(float64) < durs.At(i).(float64) {
			t.Errorf("not slowest first at row %d: %v < %v", i, durs.At(i-1), durs.At(i))
		}
	}
	i := slices.Index(ids, id)
	if d := durs.At(i).(float64); d < 300 || d > 10000 {
		t.Errorf("the slow request took %v ms", d)
	}
	if got := column(t, slow, "rootService")[i]; got != "nemotron-backend" {
		t.Errorf("root service %q", got)
	}
	idField, _ := slow.FieldByName("traceID")
	if l := idField.Config.Links; len(l) == 0 || !strings.HasPrefix(l[0].URL, "/d/hsi-request-profiling/hsi-request-level-profiling?var-trace_id=${__value.raw}") {
		t.Errorf("links %+v", l)
	}
}

// engineQueued is the time the verdict's queue and preemption causes explain, in ms.
func engineQueued(verdict *data.Frame) float64 {
	kind, _ := verdict.FieldByName("kind")
	explains, _ := verdict.FieldByName("explains")
	var ms float64
	for i := 0; kind != nil && explains != nil && i < verdict.Rows(); i++ {
		if k, _ := kind.ConcreteAt(i); k == diagnose.CauseQueue || k == diagnose.CausePreempted {
			if x, ok := explains.ConcreteAt(i); ok {
				ms += x.(float64)
			}
		}
	}
	return ms
}
