//go:build integration

// Package frames asks the plugin binary, as Grafana runs it and against the test bed's real
// servers, for the profile answers users open in Grafana's flame graph, and writes each answer as
// the JSON Grafana's server sends its frontend (/api/ds/query: {"results": {refId: {"frames":
// [{schema, data}]}}}). The frontend tests (npm run test:grafana, npm run test:browser) read them
// with Grafana's own code: @grafana/runtime's toDataQueryResponse and @grafana/flamegraph.
package frames

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

var (
	bed    testbed.Endpoints
	binary string
)

func TestMain(m *testing.M) {
	os.Exit(testbed.MainWithPlugin(m, &bed, testbed.PluginBuild{Path: &binary}))
}

const (
	cpuType     = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	demoBackend = "nemotron-backend"
	// framesDirEnv names the folder the fixtures are written to; the frontend tests read the same.
	framesDirEnv = "HSI_FRAMES_DIR"
)

// fixture is one file: the query as a panel stores it, what the test knows about the request
// from Jaeger itself, and the plugin's answer as Grafana's server hands it to the frontend.
type fixture struct {
	Query   map[string]any `json:"query"`
	From    int64          `json:"from"`
	To      int64          `json:"to"`
	TraceID string         `json:"traceId,omitempty"`
	SpanID  string         `json:"spanId,omitempty"`
	// Services are the services of the request's profiled spans (pyroscope.profile.id set), as
	// Jaeger lists them: those the whole-request flame graph shows (the simulated engine sends
	// spans but no profiles).
	Services []string `json:"profiledServices,omitempty"`
	// Truth is what a generated kernel trace holds (kernels, transfers, launches, syncCalls).
	Truth    map[string]int64 `json:"truth,omitempty"`
	Response json.RawMessage  `json:"response"`
}

func framesDir(t *testing.T) string {
	if dir := os.Getenv(framesDirEnv); dir != "" {
		return dir
	}
	root, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(root, ".testbed", "frames")
}

func TestWriteTheFlameGraphsGrafanaReads(t *testing.T) {
	dir := framesDir(t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// A fixture of an earlier run must not pass for this one's.
	old, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	h := startPlugin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	write := func(name string, f fixture, res *backend.QueryDataResponse) {
		t.Helper()
		writeAnswer(t, dir, name, f, res)
	}

	now := time.Now()
	service := map[string]any{"queryType": "profile", "profileTypeId": cpuType, "labelSelector": `{service_name="` + demoBackend + `"}`}
	res := query(t, ctx, h, service, now.Add(-15*time.Minute), now)
	if rows := flameRows(t, res); rows < 2 {
		t.Fatalf("the backend's profile over 15 min has %d rows", rows)
	}
	write("service", fixture{Query: service, From: now.Add(-15 * time.Minute).UnixMilli(), To: now.UnixMilli()}, res)

	traceID, res, from, to := profiledRequest(t, ctx, h)
	request := map[string]any{"queryType": "profile", "profileTypeId": cpuType, "traceId": traceID, "perService": true}
	tr, err := jaeger.New(models.Upstream{Name: "Jaeger", URL: bed.JaegerURL}, http.DefaultClient).Trace(ctx, traceID)
	if err != nil {
		t.Fatal(err)
	}
	var services []string
	var root models.Span
	for _, s := range tr.Spans {
		if s.Attributes[models.ProfileIDAttribute] != "" && !slices.Contains(services, s.Service) {
			services = append(services, s.Service)
		}
		if s.Service == demoBackend && s.ParentSpanID == "" {
			root = s
		}
	}
	slices.Sort(services)
	if root.SpanID == "" {
		t.Fatalf("trace %s has no root span of %s", traceID, demoBackend)
	}
	write("request", fixture{Query: request, From: from.UnixMilli(), To: to.UnixMilli(), TraceID: traceID, Services: services}, res)

	// Exactly what Grafana's trace view asks for its embedded span flame graph: the span ±30 s.
	span := map[string]any{"queryType": "profile", "profileTypeId": cpuType, "labelSelector": `{service_name="` + demoBackend + `"}`,
		"groupBy": []string{}, "spanSelector": []string{root.SpanID}}
	from, to = root.Start.Add(-30*time.Second), root.Start.Add(root.Duration+30*time.Second)
	res = query(t, ctx, h, span, from, to)
	if rows := flameRows(t, res); rows < 2 {
		t.Fatalf("the span profile of %s has %d rows", root.SpanID, rows)
	}
	write("span", fixture{Query: span, From: from.UnixMilli(), To: to.UnixMilli(), TraceID: traceID, SpanID: root.SpanID}, res)

	now = time.Now()
	diff := map[string]any{"queryType": "diff", "profileTypeId": cpuType, "labelSelector": `{service_name="` + demoBackend + `"}`,
		"baseline": map[string]any{"from": "now-15m", "to": "now"}, "comparison": map[string]any{"traceId": traceID}}
	res = query(t, ctx, h, diff, now.Add(-15*time.Minute), now)
	if names := frameNames(t, res); !slices.Equal(names, []string{"response", "diff summary"}) {
		t.Fatalf("diff frames %v, want the flame graph and its summary", names)
	}
	write("diff", fixture{Query: diff, From: now.Add(-15 * time.Minute).UnixMilli(), To: now.UnixMilli(), TraceID: traceID}, res)

	// The request-level join of the same request: spans, flame graph, breakdown and verdict.
	traceQuery := map[string]any{"queryType": "trace", "traceId": traceID, "profileTypeId": cpuType}
	res = query(t, ctx, h, traceQuery, from, to)
	if names := frameNames(t, res); !slices.Equal(names, []string{"spans", "breakdown", "verdict", "response"}) {
		t.Fatalf("trace frames %v", names)
	}
	// The dashboard's stat panel reads the answer in one line on the verdict's first row.
	if answer, _ := res.Responses["A"].Frames[2].FieldByName("answer"); answer == nil || answer.Len() == 0 {
		t.Fatal("the verdict has no answer field")
	} else if line, ok := answer.ConcreteAt(0); !ok || !strings.Contains(line.(string), " request: ") {
		t.Fatalf("the verdict's answer %v", line)
	}
	write("trace", fixture{Query: traceQuery, From: from.UnixMilli(), To: to.UnixMilli(), TraceID: traceID}, res)

	// The Request-Level dashboard's panels each ask for their own part of the same request, as
	// Grafana sends them; each gets its own frame alone, so Grafana shows no frame picker.
	panels := []struct{ name, part, frame string }{
		{"traceVerdict", "verdict", "verdict"}, {"traceBreakdown", "breakdown", "breakdown"}, {"traceSpans", "spans", "spans"},
	}
	var queries []pluginhost.Query
	for _, p := range panels {
		model := map[string]any{"queryType": "trace", "traceId": traceID, "profileTypeId": cpuType, "parts": []string{p.part}}
		queries = append(queries, pluginhost.Query{RefID: p.name, JSON: model, From: from, To: to})
	}
	proto, err := h.QueryData(ctx, queries...)
	if err != nil {
		t.Fatal(err)
	}
	parts, err := backend.FromProto().QueryDataResponse(proto)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range panels {
		r := parts.Responses[p.name]
		if r.Error != nil || len(r.Frames) != 1 || r.Frames[0].Name != p.frame {
			t.Fatalf("%s: error %v, %d frames, want the %s frame alone", p.name, r.Error, len(r.Frames), p.frame)
		}
		one := &backend.QueryDataResponse{Responses: backend.Responses{"A": r}}
		write(p.name, fixture{Query: queries[i].JSON, From: from.UnixMilli(), To: to.UnixMilli(), TraceID: traceID}, one)
	}

	// A service that never pushed a profile: the empty answer a panel gets for a typo.
	empty := map[string]any{"queryType": "profile", "profileTypeId": cpuType, "labelSelector": `{service_name="no-such-service"}`}
	res = query(t, ctx, h, empty, now.Add(-15*time.Minute), now)
	if rows := flameRows(t, res); rows != 1 || res.Responses["A"].Frames[0].Fields[1].At(0) != int64(0) {
		t.Fatalf("a service without profiles has %d rows; want the empty answer, one root row of 0 samples", rows)
	}
	write("empty", fixture{Query: empty, From: now.Add(-15 * time.Minute).UnixMilli(), To: now.UnixMilli()}, res)

	// Profiles to traces from Jaeger: the database step's durations over the last minutes (the
	// slow request among them), and the merged profile of the slow requests.
	now = time.Now()
	heat := map[string]any{"queryType": "spanHeatmap", "service": demoBackend, "operation": "db_query"}
	res = query(t, ctx, h, heat, now.Add(-5*time.Minute), now)
	if names := frameNames(t, res); !slices.Equal(names, []string{"span durations", "exemplar"}) {
		t.Fatalf("span heatmap frames %v, want the heatmap and its exemplars", names)
	}
	write("spanHeatmap", fixture{Query: heat, From: now.Add(-5 * time.Minute).UnixMilli(), To: now.UnixMilli(), TraceID: traceID}, res)
	slow := map[string]any{"queryType": "spanProfile", "service": demoBackend, "operation": root.Operation, "minDuration": "200ms"}
	res = query(t, ctx, h, slow, now.Add(-5*time.Minute), now)
	if rows := flameRows(t, res); rows < 2 {
		t.Fatalf("the merged profile of the slow requests has %d rows", rows)
	}
	write("spanProfile", fixture{Query: slow, From: now.Add(-5 * time.Minute).UnixMilli(), To: now.UnixMilli(), TraceID: traceID}, res)

	// The overview dashboard's "Why is it slow now?" row: the demo endpoint's slow tail over the
	// last minutes (the slow request among it), each panel asking for its own frame.
	tailPanels := []struct{ name, part, frame string }{
		{"tailSummary", "summary", "tail summary"}, {"tailCauses", "causes", "tail causes"}, {"tailRequests", "requests", "tail requests"},
	}
	var tailQueries []pluginhost.Query
	for _, p := range tailPanels {
		model := map[string]any{"queryType": "tail", "service": demoBackend, "operation": root.Operation, "profileTypeId": cpuType, "parts": []string{p.part}}
		tailQueries = append(tailQueries, pluginhost.Query{RefID: p.name, JSON: model, From: now.Add(-10 * time.Minute), To: now})
	}
	proto, err = h.QueryData(ctx, tailQueries...)
	if err != nil {
		t.Fatal(err)
	}
	tails, err := backend.FromProto().QueryDataResponse(proto)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range tailPanels {
		r := tails.Responses[p.name]
		if r.Error != nil || len(r.Frames) != 1 || r.Frames[0].Name != p.frame || r.Frames[0].Rows() == 0 {
			t.Fatalf("%s: error %v, %d frames, want the %s frame alone, with rows", p.name, r.Error, len(r.Frames), p.frame)
		}
		one := &backend.QueryDataResponse{Responses: backend.Responses{"A": r}}
		write(p.name, fixture{Query: tailQueries[i].JSON, From: now.Add(-10 * time.Minute).UnixMilli(), To: now.UnixMilli(), TraceID: traceID}, one)
	}
	t.Logf("frames for the frontend tests written to %s", dir)
}

// startPlugin starts the plugin binary as Grafana does, on the bed's Pyroscope, Prometheus and
// Jaeger; it stops when the test ends.
func startPlugin(t *testing.T) *pluginhost.Host {
	t.Helper()
	h, err := pluginhost.Start(binary, pluginhost.DataSource{UID: "hsi-frames", Name: "HSI Profiling", JSONData: map[string]any{
		"pyroscopeUrl": bed.PyroscopeURL, "prometheusUrl": bed.PrometheusURL, "jaegerUrl": bed.JaegerURL,
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	return h
}

// writeAnswer writes one answer as dir/name.json: the fixture with the plugin's answer in it.
func writeAnswer(t *testing.T, dir, name string, f fixture, res *backend.QueryDataResponse) {
	t.Helper()
	raw, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	f.Response = raw
	out, err := json.MarshalIndent(f, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name+".json"), out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// query sends one query as refId A and fails the test on a transport or query error.
func query(t *testing.T, ctx context.Context, h *pluginhost.Host, model map[string]any, from, to time.Time) *backend.QueryDataResponse {
	t.Helper()
	return queryEvery(t, ctx, h, model, from, to, 0)
}

// queryEvery is query with the panel's interval (0: none).
func queryEvery(t *testing.T, ctx context.Context, h *pluginhost.Host, model map[string]any, from, to time.Time, interval time.Duration) *backend.QueryDataResponse {
	t.Helper()
	proto, err := h.QueryData(ctx, pluginhost.Query{RefID: "A", JSON: model, From: from, To: to, Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	// Grafana's server decodes the plugin's Arrow frames this way before it writes them as JSON.
	res, err := backend.FromProto().QueryDataResponse(proto)
	if err != nil {
		t.Fatal(err)
	}
	if a := res.Responses["A"]; a.Error != nil {
		t.Fatalf("%v: %v", model, a.Error)
	}
	return res
}

func frameNames(t *testing.T, res *backend.QueryDataResponse) []string {
	var names []string
	for _, f := range res.Responses["A"].Frames {
		names = append(names, f.Name)
	}
	return names
}

// flameRows is the row count of the answer's flame graph frame.
func flameRows(t *testing.T, res *backend.QueryDataResponse) int {
	t.Helper()
	frames := res.Responses["A"].Frames
	if len(frames) == 0 || frames[0].Name != "response" || frames[0].Meta == nil || frames[0].Meta.PreferredVisualization != data.VisTypeFlameGraph {
		t.Fatalf("the answer's first frame is not a flame graph: %v", frameNames(t, res))
	}
	return frames[0].Rows()
}

// profiledRequest is a demo request slow in its database step whose whole-request profile the
// plugin answers from span profiles of every service (testbed.SlowRequest), and that profile with
// one frame per service, over the last minute.
func profiledRequest(t *testing.T, ctx context.Context, h *pluginhost.Host) (string, *backend.QueryDataResponse, time.Time, time.Time) {
	t.Helper()
	id, err := testbed.SlowRequest(ctx, bed, testbed.HostNotice(h))
	if err != nil {
		t.Fatal(err)
	}
	to := time.Now()
	from := to.Add(-time.Minute)
	qr := query(t, ctx, h, map[string]any{"queryType": "profile", "profileTypeId": cpuType, "traceId": id, "perService": true}, from, to)
	// The merged graph and one frame per service of the demo.
	if n := len(qr.Responses["A"].Frames); n != 4 {
		t.Fatalf("whole request %s with perService: %d frames, want the merged graph and the demo's 3 services", id, n)
	}
	return id, qr, from, to
}
