//go:build integration

package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"google.golang.org/protobuf/proto"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/faultproxy"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
)

const cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

// part is something a healthy upstream contributes to an answer: a frame with rows, or a field
// of it with at least one value.
type part struct{ frame, field string }

// queryCase is one realistic query of one query type.
type queryCase struct {
	name   string
	json   map[string]any
	window time.Duration
	// uses are the upstreams the query reads. For a faulty upstream not in keep, the query
	// may fail as a whole (it has nothing else to show), naming the upstream.
	uses []string
	// keep lists, per faulty upstream, the parts the other upstreams still give.
	keep map[string][]part
	// say lists, per faulty upstream, what the answer's notices must say besides naming it:
	// each read of that upstream the query makes, degraded on its own.
	say map[string][]string
	// cached gives, for a say entry, the notice that stands for it when the plugin answered that
	// read from what it keeps a minute (Prometheus' series inventory, asked by an earlier round
	// with the upstream healthy): no read was made, so there is no failure to name. How soon the
	// faulty rounds follow the healthy ones depends on the queries' speed, not on the plugin.
	cached map[string]string
}

func queryCases(traceID string, spanIDs []string) []queryCase {
	gpu := map[string]any{"hosts": []string{"gpu-node-1"}}
	with := func(m map[string]any, extra map[string]any) map[string]any {
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	return []queryCase{
		{name: "profile", uses: []string{"Pyroscope"}, json: map[string]any{
			"queryType": "profile", "labelSelector": `{service_name="nemotron-backend"}`, "profileTypeId": cpu}},
		{name: "profile spanSelector", window: time.Hour, uses: []string{"Pyroscope"}, json: map[string]any{
			"queryType": "profile", "labelSelector": `{service_name="nemotron-backend"}`, "profileTypeId": cpu, "spanSelector": spanIDs}},
		{name: "profile traceId", window: time.Hour, uses: []string{"Pyroscope", "Jaeger"}, json: map[string]any{
			"queryType": "profile", "traceId": traceID, "profileTypeId": cpu, "perService": true},
			keep: map[string][]part{"Jaeger": {{"response", ""}}}},
		{name: "metrics", uses: []string{"Pyroscope"}, json: map[string]any{
			"queryType": "metrics", "labelSelector": "{}", "profileTypeId": cpu, "groupBy": []string{"service_name"}}},
		{name: "both", uses: []string{"Pyroscope"}, json: map[string]any{
			"queryType": "both", "labelSelector": `{service_name="nemotron-backend"}`, "profileTypeId": cpu}},
		{name: "diff", uses: []string{"Pyroscope"}, json: map[string]any{
			"queryType": "diff", "labelSelector": `{service_name="nemotron-backend"}`, "profileTypeId": cpu,
			"baseline": map[string]any{"from": "now-10m", "to": "now-5m"}, "comparison": map[string]any{}}},
		{name: "diff traceId", window: time.Hour, uses: []string{"Pyroscope", "Jaeger"}, json: map[string]any{
			"queryType": "diff", "labelSelector": `{service_name="nemotron-backend"}`, "profileTypeId": cpu,
			"baseline": map[string]any{"traceId": traceID}, "comparison": map[string]any{}},
			keep: map[string][]part{"Jaeger": {{"response", ""}, {"diff summary", ""}}}},
		{name: "trace", window: time.Hour, uses: []string{"Pyroscope", "Prometheus", "Jaeger"},
			json: map[string]any{"queryType": "trace", "traceId": traceID, "profileTypeId": cpu},
			keep: map[string][]part{
				"Pyroscope":  {{"spans", "operation"}, {"spans", "gpuUtil"}, {"spans", "gpuKernelTime"}},
				"Prometheus": {{"spans", "operation"}, {"spans", "cpu"}, {"response", ""}, {"spans", "gpuKernelTime"}},
				// Without spans, the flame graph comes from the samples labelled with the trace ID.
				"Jaeger": {{"response", ""}},
			},
			// Around the request: the container's CPU throttling (cAdvisor) and the engine's
			// metrics are read from Prometheus too, each failing with its own warning.
			say:    map[string][]string{"Prometheus": {"No CPU throttling figures for pod ", "No serving-engine metrics"}},
			cached: map[string]string{"No CPU throttling figures for pod ": "Prometheus holds no cAdvisor CPU series"}},
		{name: "slowRequests", uses: []string{"Prometheus", "Jaeger"},
			json: map[string]any{"queryType": "slowRequests", "service": "nemotron-backend"},
			keep: map[string][]part{
				"Prometheus": {{"slow traces", ""}},
				"Jaeger":     {{"latency", ""}},
			}},
		{name: "spanHeatmap", uses: []string{"Jaeger"},
			json: map[string]any{"queryType": "spanHeatmap", "service": "nemotron-backend", "operation": "db_query"}},
		{name: "spanProfile", window: time.Hour, uses: []string{"Jaeger", "Pyroscope"},
			json: map[string]any{"queryType": "spanProfile", "service": "nemotron-backend", "operation": "GET /api/detect", "minDuration": "200ms"}},
		{name: "gpuMetrics", uses: []string{"Prometheus"}, json: with(map[string]any{
			"queryType": "gpuMetrics", "metrics": []string{"gpu_utilization", "temperature"}, "aggregation": "gpu"}, gpu)},
		{name: "gpuClass timeline", uses: []string{"Prometheus"}, json: with(map[string]any{"queryType": "gpuClass", "format": "timeline"}, gpu)},
		{name: "gpuClass summary", uses: []string{"Prometheus"}, json: with(map[string]any{"queryType": "gpuClass", "format": "summary"}, gpu)},
		{name: "gpuLocal", json: map[string]any{"queryType": "gpuLocal"}},
		{name: "kernels", window: time.Hour, json: map[string]any{"queryType": "kernels", "traceId": traceID}},
		// The fixtures' XID, ECC and OOM-kill failures come from Prometheus alone; with Jaeger at
		// fault they stay, and the failed requests' signal says why they are missing.
		{name: "triage", window: 3 * time.Hour, uses: []string{"Prometheus", "Jaeger"}, json: map[string]any{"queryType": "triage"},
			keep: map[string][]part{"Jaeger": {{"failures", "class"}}}},
	}
}

// resourceCase is one resource route call and the upstream it reads ("" for none).
type resourceCase struct {
	path     string
	upstream string
}

func resourceCases(traceID string) []resourceCase {
	return []resourceCase{
		{"upstreams", ""},
		{"profile-types", "Pyroscope"},
		{"services", "Pyroscope"},
		{"label-names", "Pyroscope"},
		{"label-values?label=service_name", "Pyroscope"},
		{"variable?query=" + url.QueryEscape("services()"), "Pyroscope"},
		{"variable?query=" + url.QueryEscape("trace_services()"), "Jaeger"},
		{"variable?query=" + url.QueryEscape("gpu_label_values(host)"), "Prometheus"},
		{"trace-services", "Jaeger"},
		{"traces?service=nemotron-backend", "Jaeger"},
		{"trace-operations?service=nemotron-backend", "Jaeger"},
		{"gpu-metrics", ""}, // the catalogue: no call
		{"gpu-label-values?role=host", "Prometheus"},
		{"kernel-files?traceId=" + traceID, ""},
	}
}

// answer is one query's response, decoded.
type answer struct {
	err    string
	frames []*data.Frame
	// text is the error and every notice, where a user reads what went wrong.
	text string
	raw  []byte // the response as it crosses the wire, for the secrets check
}

func decode(r *pluginv2.DataResponse) answer {
	a := answer{err: r.GetError(), text: r.GetError()}
	a.raw, _ = proto.Marshal(r)
	if len(r.GetFrames()) > 0 {
		fs, err := data.UnmarshalArrowFrames(r.GetFrames())
		if err != nil {
			a.err = fmt.Sprintf("the plugin's frames do not decode: %v", err) // no check passes then
		}
		a.frames = fs
	}
	for _, f := range a.frames {
		if f.Meta != nil {
			for _, n := range f.Meta.Notices {
				a.text += "\n" + n.Text
			}
		}
	}
	return a
}

// has says whether part p is in the answer: the frame with rows, and the field with a value.
func (a answer) has(p part) bool {
	for _, f := range a.frames {
		if f.Name != p.frame || !hasData(f) {
			continue
		}
		if p.field == "" {
			return true
		}
		field, _ := f.FieldByName(p.field)
		for i := 0; field != nil && i < field.Len(); i++ {
			if v, ok := field.ConcreteAt(i); ok && v != nil && fmt.Sprint(v) != "" {
				return true
			}
		}
	}
	return false
}

// hasData says whether a frame holds data: rows, or samples for a flame graph (whose empty
// answer is one root row of 0 samples).
func hasData(f *data.Frame) bool {
	if f.Meta != nil && f.Meta.PreferredVisualization == data.VisTypeFlameGraph {
		return frames.FlameGraphHasSamples(f)
	}
	return f.Rows() > 0
}

// unaffected says whether a is still what base was: the same error, and every frame that had
// rows still has them (the bed's data grows, so more rows are fine).
func (a answer) unaffected(base answer) bool {
	if a.err != base.err {
		return false
	}
	for _, f := range base.frames {
		if hasData(f) && !a.has(part{frame: f.Name}) {
			return false
		}
	}
	return true
}

// shape is the frames' names and whether each has rows, for messages.
func (a answer) shape() string {
	var b strings.Builder
	fmt.Fprintf(&b, "error %q;", a.err)
	for _, f := range a.frames {
		fmt.Fprintf(&b, " %s(%v)", f.Name, hasData(f))
	}
	return b.String()
}

// cause is what a message must say for fault f of the upstream, beyond its name and URL.
func cause(f faultproxy.Fault, upstream string) []string {
	per := func(pyroscope, prometheus, jaeger, tempo string) []string {
		return []string{map[string]string{"Pyroscope": pyroscope, "Prometheus": prometheus, "Jaeger": jaeger, "Tempo": tempo}[upstream]}
	}
	switch f {
	case faultproxy.Down:
		// "connection refused", or "broken pipe" on a pooled connection the server closed.
		return []string{"unreachable ("}
	case faultproxy.Slow:
		return []string{"timed out ("}
	case faultproxy.ServerError:
		return []string{"503"}
	case faultproxy.ClientError:
		// The server's own words, with the credentials it quoted taken out.
		return append(per("authentication failed (", "unauthorized: ", "HTTP 401: ", "HTTP 403: "), "credentials rejected", "[redacted]")
	case faultproxy.Truncated:
		return per("reply cut short", "reply cut short", "is truncated", "is truncated")
	case faultproxy.Invalid:
		return per("invalid reply, not the protobuf Pyroscope sends", "invalid reply, not the JSON Prometheus sends", "is not the JSON Jaeger sends", "Tempo sends")
	case faultproxy.WrongType:
		return per("is not a Pyroscope API reply", "invalid reply, not the JSON Prometheus sends", "is an HTML page", "is an HTML page")
	case faultproxy.Huge:
		return []string{fmt.Sprintf("reply larger than the response limit (%d MiB)", responseLimit>>20)}
	}
	return nil
}

// names checks that text names the upstream, its URL and the fault's cause.
func names(text, upstream, url string, f faultproxy.Fault) error {
	for _, want := range append([]string{upstream + " (" + url + "): "}, cause(f, upstream)...) {
		if !strings.Contains(text, want) {
			return fmt.Errorf("lacks %q", want)
		}
	}
	return nil
}

// run answers one query case and says how long it took. A failed call is an answer with that
// error, which no check accepts (run is called from several goroutines: no t.Fatal).
func run(t *testing.T, h *pluginhost.Host, c queryCase) (answer, time.Duration) {
	window := c.window
	if window == 0 {
		window = 15 * time.Minute
	}
	now := time.Now()
	res, err := h.QueryData(ctxFor(t, time.Minute), pluginhost.Query{RefID: "A", From: now.Add(-window), To: now, JSON: c.json})
	took := time.Since(now)
	if err != nil {
		return answer{err: "QueryData failed: " + err.Error()}, took
	}
	return decode(res.Responses["A"]), took
}

// bound is what any answer may take: one upstream timeout and the margin.
const bound = upstreamTimeout + margin

func TestEveryQueryTypeAndRouteUnderEveryUpstreamFault(t *testing.T) {
	began := time.Now()
	traceID, spanIDs := slowRequest(t)
	traceDir := t.TempDir()
	if _, err := testbed.WriteKernelTrace(traceDir, traceID); err != nil {
		t.Fatal(err)
	}
	sec := newSecrets()
	r := newRig(t, sec, traceDir, "jaeger")
	runMatrix(t, r, queryCases(traceID, spanIDs), resourceCases(traceID), upstreams)
	r.checkCredentials(t)

	// The plugin logged the upstreams' failures, the echoed credentials among them, but never a
	// secret.
	log := r.log.Bytes()
	if !bytes.Contains(log, []byte("credentials rejected")) {
		t.Errorf("the plugin's log lacks the upstreams' error text, so it proves nothing about secrets")
	}
	if s := sec.leaked(log); s != "" {
		i := strings.Index(string(log), s)
		t.Errorf("the plugin's log carries the secret %q: ...%s...", s, log[max(0, i-300):min(len(log), i+100)])
	}
	t.Logf("plugin log: %d bytes; the matrix took %v", len(log), time.Since(began).Round(time.Second))
	checkSpans(t, r, began)
}

// tailCase is the slow tail of the demo's endpoint: each request a join, so every store is read;
// only the trace search is the whole answer. A store at fault degrades each verdict with a
// notice, and is asked once per query (the joins after its failure get it at once), so the tail
// answers within one timeout too.
func tailCase() queryCase {
	return queryCase{name: "tail", window: time.Hour, uses: []string{"Jaeger", "Pyroscope", "Prometheus"},
		json: map[string]any{"queryType": "tail", "service": "nemotron-backend", "operation": "GET /api/detect", "maxTraces": 5, "profileTypeId": cpu},
		keep: map[string][]part{
			"Pyroscope":  {{"tail summary", "answer"}, {"tail requests", "traceID"}},
			"Prometheus": {{"tail summary", "answer"}, {"tail causes", "cause"}, {"tail requests", "traceID"}},
		}}
}

// TestTailUnderEveryUpstreamFault runs the tail in a plugin process of its own: its joins read
// the requests the other cases read, and would fill the caches those cases' checks expect empty
// (the Prometheus inventory a trace query reads its containers' series names from, kept a
// minute), so that a store at fault would not be asked where the checks expect it to fail.
func TestTailUnderEveryUpstreamFault(t *testing.T) {
	traceID, _ := slowRequest(t)
	traceDir := t.TempDir()
	if _, err := testbed.WriteKernelTrace(traceDir, traceID); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, newSecrets(), traceDir, "jaeger")
	runMatrix(t, r, []queryCase{tailCase()}, nil, upstreams)
}

// runMatrix answers every query case and route with every upstream healthy, then with each
// faulted upstream at each fault in turn, and checks each answer (checkQuery, checkRoute), the
// health check and that the process stays up.
func runMatrix(t *testing.T, r *rig, cases []queryCase, routes []resourceCase, faulted []string) {
	// What each query and route answers with every upstream healthy.
	baseline := map[string]answer{}
	baseStatus := map[string]int{}
	// Three tries each: the bed's servers fail now and then on their own (see healthyFailed).
	for _, c := range cases {
		for try := 1; ; try++ {
			a, _ := run(t, r.host, c)
			if len(c.uses) == 0 || (a.err == "" && len(a.frames) > 0) {
				baseline[c.name] = a
				break
			}
			if try == 3 {
				t.Fatalf("%s with every upstream healthy: %s\n%s", c.name, a.shape(), a.text)
			}
		}
	}
	for _, rc := range routes {
		for try := 1; ; try++ {
			res, err := r.host.CallResource(ctxFor(t, time.Minute), rc.path)
			if err == nil && res.Status == http.StatusOK {
				baseStatus[rc.path] = res.Status
				break
			}
			if try == 3 {
				t.Fatalf("%s with every upstream healthy: %v %+v", rc.path, err, res)
			}
		}
	}

	retried := map[string]int{}
	for _, f := range faultproxy.Faults {
		for _, u := range faulted {
			r.set(t, u, f)
			var wg sync.WaitGroup
			var said sync.Once
			for _, c := range cases {
				wg.Go(func() {
					where := fmt.Sprintf("%s %s, %s query", u, f, c.name)
					problems, text := r.checkQuery(t, c, u, f, baseline[c.name])
					if len(problems) > 0 && r.healthyFailed(text, u) {
						t.Logf("%s: retried once, a healthy upstream failed on its own: %s", where, text)
						problems, _ = r.checkQuery(t, c, u, f, baseline[c.name])
					}
					for _, p := range problems {
						t.Errorf("%s: %s", where, p)
					}
				})
			}
			for _, rc := range routes {
				wg.Go(func() {
					where := fmt.Sprintf("%s %s, resource %s", u, f, rc.path)
					problems, text := r.checkRoute(t, rc, u, f, baseStatus[rc.path])
					if len(problems) > 0 && r.healthyFailed(text, u) {
						t.Logf("%s: retried once, a healthy upstream failed on its own: %s", where, text)
						problems, text = r.checkRoute(t, rc, u, f, baseStatus[rc.path])
					}
					for _, p := range problems {
						t.Errorf("%s: %s", where, p)
					}
					if len(problems) == 0 && rc.upstream == u {
						said.Do(func() { t.Logf("%s %s: %s", u, f, text) }) // what users read, for the README
					}
				})
			}
			wg.Wait()
			if n := r.proxies[u].RealRetries(); n > retried[u] {
				t.Logf("%s %s: the real %s failed on its own %d time(s); the proxy asked it again", u, f, u, n-retried[u])
				retried[u] = n
			}

			// The process is up and says which upstream is unwell.
			start := time.Now()
			health, err := r.host.CheckHealth(ctxFor(t, time.Minute))
			switch {
			case err != nil || r.host.Exited():
				t.Fatalf("%s %s: the plugin process is gone (exited %v): %v", u, f, r.host.Exited(), err)
			case time.Since(start) > bound:
				t.Errorf("%s %s: the health check took %v", u, f, time.Since(start))
			case health.Status != pluginv2.CheckHealthResponse_ERROR || !strings.Contains(health.Message, u+": "):
				t.Errorf("%s %s: health %v %q, want an error naming %s", u, f, health.Status, health.Message, u)
			}
			t.Logf("%s %s: health %q", u, f, health.GetMessage())
			if s := r.secrets.leaked([]byte(health.GetMessage() + string(health.GetJsonDetails()))); s != "" {
				t.Errorf("%s %s: the health check carries the secret %q", u, f, s)
			}
			r.set(t, u, faultproxy.None)
		}
	}
}

// checkQuery answers one query with upstream u at fault f and lists what is wrong with the
// answer; text is the answer's error and notices.
func (r *rig) checkQuery(t *testing.T, c queryCase, u string, f faultproxy.Fault, base answer) (problems []string, text string) {
	url := r.proxies[u].URL()
	a, took := run(t, r.host, c)
	if took > bound {
		problems = append(problems, fmt.Sprintf("took %v, more than the %v timeout and %v margin", took, upstreamTimeout, margin))
	}
	if s := r.secrets.leaked(a.raw); s != "" {
		problems = append(problems, fmt.Sprintf("the answer carries the secret %q", s))
	}
	if strings.HasPrefix(a.err, "QueryData failed") || strings.HasPrefix(a.err, "the plugin's frames") {
		return append(problems, a.err), a.text
	}
	if !slices.Contains(c.uses, u) {
		if !a.unaffected(base) || strings.Contains(a.text, url) {
			problems = append(problems, fmt.Sprintf("a query that does not read %s changed:\n got %s\nwant %s\n%s", u, a.shape(), base.shape(), a.text))
		}
		return problems, a.text
	}
	if err := names(a.text, u, url, f); err != nil {
		problems = append(problems, fmt.Sprintf("no error or notice names the upstream, its URL and the cause: %v\n%s", err, a.text))
	}
	lines := strings.Split(a.text, "\n")
	for _, want := range c.say[u] {
		named := slices.ContainsFunc(lines, func(line string) bool {
			return strings.Contains(line, want) && strings.Contains(line, u+" ("+url+"): ")
		})
		kept := c.cached[want] != "" && slices.ContainsFunc(lines, func(line string) bool { return strings.Contains(line, c.cached[want]) })
		if !named && !kept {
			problems = append(problems, fmt.Sprintf("no notice %q naming %s: %s", want, u, a.text))
		}
	}
	for _, p := range c.keep[u] {
		if !a.has(p) {
			problems = append(problems, fmt.Sprintf("lost %v, which the healthy upstreams give: %s\n%s", p, a.shape(), a.text))
		}
	}
	return problems, a.text
}

// checkRoute calls one resource route with upstream u at fault f and lists what is wrong with
// the reply; text is its body, or the error it carries.
func (r *rig) checkRoute(t *testing.T, rc resourceCase, u string, f faultproxy.Fault, baseStatus int) (problems []string, text string) {
	start := time.Now()
	res, err := r.host.CallResource(ctxFor(t, time.Minute), rc.path)
	if err != nil {
		return []string{err.Error()}, ""
	}
	if took := time.Since(start); took > bound {
		problems = append(problems, fmt.Sprintf("took %v", took))
	}
	if s := r.secrets.leaked(res.Body); s != "" {
		problems = append(problems, fmt.Sprintf("the reply carries the secret %q", s))
	}
	if rc.upstream != u {
		if res.Status != baseStatus {
			problems = append(problems, fmt.Sprintf("a route that does not read %s answers %d %s", u, res.Status, res.Body))
		}
		return problems, string(res.Body)
	}
	var reply struct{ Error string }
	if res.Status != http.StatusBadGateway || json.Unmarshal(res.Body, &reply) != nil {
		return append(problems, fmt.Sprintf("%d %s, want 502 with {\"error\": ...}", res.Status, res.Body)), string(res.Body)
	}
	if err := names(reply.Error, u, r.proxies[u].URL(), f); err != nil {
		problems = append(problems, fmt.Sprintf("%v: %s", err, reply.Error))
	}
	return problems, reply.Error
}

// healthyFailed says whether text reports a failure of an upstream other than the faulty one.
// The real bed's servers fail now and then on their own (Pyroscope 1.x sometimes answers a
// query under load with "canceled: stream error"); such a case is asked once more, and must then
// pass: a fault that leaked into another upstream's part would fail both times.
func (r *rig) healthyFailed(text, faulty string) bool {
	for _, u := range upstreams {
		if u != faulty && strings.Contains(text, u+" ("+r.proxies[u].URL()+")") {
			return true
		}
	}
	return false
}

// checkSpans fetches the plugin's own spans from the bed's Jaeger, which the plugin exported
// them to (GF_INSTANCE_OTLP_ADDRESS), and looks for the secrets in every tag, log and process
// attribute.
func checkSpans(t *testing.T, r *rig, since time.Time) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		var raw []byte
		found := map[string]int{}
		for _, u := range upstreams {
			tags, _ := json.Marshal(map[string]string{"hsi.upstream.url": r.proxies[u].URL()})
			q := url.Values{"service": {pluginhost.PluginID}, "tags": {string(tags)}, "limit": {"1000"},
				"start": {fmt.Sprint(since.UnixMicro())}, "end": {fmt.Sprint(time.Now().UnixMicro())}}
			res, err := http.Get(bed.JaegerURL + "/api/traces?" + q.Encode())
			if err != nil {
				t.Fatal(err)
			}
			var body struct {
				Data []json.RawMessage `json:"data"`
			}
			err = json.NewDecoder(res.Body).Decode(&body)
			res.Body.Close()
			if err != nil {
				t.Fatalf("Jaeger's trace search: %v", err)
			}
			found[u] = len(body.Data)
			for _, tr := range body.Data {
				raw = append(raw, tr...)
			}
		}
		// Error text made it into the spans (so a secret in it would have too), yet no secret.
		if found["Pyroscope"] > 0 && found["Prometheus"] > 0 && found["Jaeger"] > 0 &&
			strings.Contains(string(raw), "credentials rejected") {
			if s := r.secrets.leaked(raw); s != "" {
				i := strings.Index(string(raw), s)
				t.Errorf("the plugin's spans carry the secret %q: ...%s...", s, raw[max(0, i-300):min(len(raw), i+100)])
			}
			t.Logf("spans checked: traces per upstream %v, %d bytes", found, len(raw))
			return
		}
		last = fmt.Sprintf("traces per upstream %v, error text present: %v", found, strings.Contains(string(raw), "credentials rejected"))
	}
	t.Errorf("the plugin's spans never reached Jaeger: %s", last)
}
