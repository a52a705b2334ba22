package plugin

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

func TestFormatTraceDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1234567 * time.Microsecond: "1.235s",
		850 * time.Millisecond:     "850ms",
		12345 * time.Microsecond:   "12.3ms",
		420 * time.Microsecond:     "420µs",
		0:                          "0s",
	} {
		if got := formatTraceDuration(d); got != want {
			t.Errorf("%v: %q, want %q", d, got, want)
		}
	}
}

// variable asks GET /variable and decodes the options.
func variable(t *testing.T, ds *Datasource, query string, extra map[string]string) (int, []variableValue, string) {
	t.Helper()
	params := map[string]string{"query": query}
	for k, v := range extra {
		params[k] = v
	}
	code, body := getResource(t, ds, "/variable", params)
	var values []variableValue
	if code == 200 {
		if err := json.Unmarshal([]byte(body), &values); err != nil {
			t.Fatalf("body %q: %v", body, err)
		}
	}
	return code, values, body
}

func texts(values []variableValue) []string {
	out := []string{}
	for _, v := range values {
		out = append(out, v.Text)
	}
	return out
}

func TestVariablesAnswerFromPyroscope(t *testing.T) {
	fake := labelsFake()
	fake.types = []models.ProfileType{
		{ID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", Name: "process_cpu", SampleType: "cpu"},
		{ID: "memory:alloc_objects:count:space:bytes", Name: "memory", SampleType: "alloc_objects"},
	}
	ds := profilesDS(t, fake, nil)
	last := func() memLabelQuery { calls := fake.labelCalls(); return calls[len(calls)-1] }

	code, values, body := variable(t, ds, "profile_types()", nil)
	if code != 200 || len(values) != 2 || values[0] != (variableValue{"process_cpu - cpu", "process_cpu:cpu:nanoseconds:cpu:nanoseconds"}) ||
		values[1].Text != "memory - alloc_objects" {
		t.Errorf("profile_types: HTTP %d %s", code, body)
	}

	_, values, _ = variable(t, ds, "services()", map[string]string{"from": "1700000000000", "to": "1700000600000"})
	if want := []variableValue{{"ai-detector", "ai-detector"}, {"ai-enrichment", "ai-enrichment"}, {"nemotron-backend", "nemotron-backend"}}; !slices.Equal(values, want) {
		t.Errorf("services = %v", values)
	}
	if r := last(); r.start.UnixMilli() != 1700000000000 || r.end.UnixMilli() != 1700000600000 || r.label != "service_name" {
		t.Errorf("services asked %+v, want the variable's range", r)
	}

	_, values, _ = variable(t, ds, `label_names({service_name="ai-detector"})`, nil)
	if got := texts(values); !slices.Equal(got, []string{"service_name", "span_name"}) {
		t.Errorf("label_names = %v", got)
	}
	if r := last(); r.label != "" || r.selector != `{service_name="ai-detector"}` {
		t.Errorf("label_names asked %+v", r)
	}

	_, values, _ = variable(t, ds, `label_values({service_name="nemotron-backend"}, span_name)`, nil)
	if !slices.Equal(values, []variableValue{{"HTTP GET /api/detect", "HTTP GET /api/detect"}}) {
		t.Errorf("label_values = %v", values)
	}
	if r := last(); r.label != "span_name" || r.selector != `{service_name="nemotron-backend"}` {
		t.Errorf("label_values asked %+v", r)
	}

	code, _, body = variable(t, ds, "label_values(nope-nope)", nil)
	if code != 400 || !strings.Contains(body, `parameter \"query\": at position 14:`) {
		t.Errorf("bad query: HTTP %d %s", code, body)
	}
	code, _, body = variable(t, ds, "label_values(span_name)", map[string]string{"to": "x"})
	if code != 400 || !strings.Contains(body, `parameter \"to\" must be Unix milliseconds`) {
		t.Errorf("bad to: HTTP %d %s", code, body)
	}
	code, values, body = variable(t, ds, "label_values(host_name)", nil)
	if code != 200 || values == nil || len(values) != 0 || strings.TrimSpace(body) != "[]" {
		t.Errorf("no values: HTTP %d %s, want []", code, body)
	}
}

func TestVariablesAnswerFromJaeger(t *testing.T) {
	now := time.Now()
	traces := &memTraces{traces: []models.Trace{
		fakeTrace("0af7651916cd43dd8448eb211c80319c", now.Add(-10*time.Minute), 200*time.Millisecond, "nemotron-backend/POST /api/detect", "ai-detector/predict"),
		fakeTrace("1af7651916cd43dd8448eb211c80319c", now.Add(-9*time.Minute), 3*time.Second, "nemotron-backend/POST /api/detect", "ai-enrichment/enrich"),
		fakeTrace("2af7651916cd43dd8448eb211c80319c", now.Add(-8*time.Minute), 40*time.Millisecond, "nemotron-backend/GET /health"),
	}}
	ds := withSources(t, map[string]any{}, correlate.Sources{Traces: correlate.Ready[correlate.TraceStore](traces)})

	code, values, body := variable(t, ds, "trace_services()", nil)
	if got := texts(values); code != 200 || !slices.Equal(got, []string{"ai-detector", "ai-enrichment", "nemotron-backend"}) {
		t.Errorf("trace_services: HTTP %d %s", code, body)
	}

	code, values, body = variable(t, ds, "trace_ids(nemotron-backend)", nil)
	if code != 200 || len(values) != 3 {
		t.Fatalf("trace_ids: HTTP %d %s", code, body)
	}
	// Slowest first; the root lasts its children's duration plus 1 ms per span (fakeTrace).
	want := []variableValue{
		{"1af7651916cd43dd8448eb211c80319c · POST /api/detect · 3.002s", "1af7651916cd43dd8448eb211c80319c"},
		{"0af7651916cd43dd8448eb211c80319c · POST /api/detect · 202ms", "0af7651916cd43dd8448eb211c80319c"},
		{"2af7651916cd43dd8448eb211c80319c · GET /health · 41ms", "2af7651916cd43dd8448eb211c80319c"},
	}
	if !slices.Equal(values, want) {
		t.Errorf("trace_ids =\n%v\nwant\n%v", values, want)
	}

	_, values, _ = variable(t, ds, "trace_ids(nemotron-backend, 1s)", nil)
	if len(values) != 1 || values[0].Value != "1af7651916cd43dd8448eb211c80319c" {
		t.Errorf("trace_ids with minDuration 1s = %v, want only the 3 s trace", values)
	}

	// The variable's range reaches the trace store: a range before all traces finds none.
	old := now.Add(-48 * time.Hour).UnixMilli()
	code, values, body = variable(t, ds, "trace_ids(nemotron-backend)", map[string]string{"from": strconv.FormatInt(old, 10), "to": strconv.FormatInt(old+3600_000, 10)})
	if code != 200 || len(values) != 0 {
		t.Errorf("old range: HTTP %d %s, want no traces", code, body)
	}
}

func TestVariablesNameTheUpstreamTheyNeed(t *testing.T) {
	// Not configured: the stores as the data source builds them from settings without URLs.
	unset := newTestDatasource(t, map[string]any{}, nil)
	code, _, body := variable(t, unset, "services()", nil)
	if code != 400 || !strings.Contains(body, "Pyroscope is not configured") {
		t.Errorf("services without Pyroscope: HTTP %d %s", code, body)
	}
	code, _, body = variable(t, unset, "trace_services()", nil)
	if code != 400 || !strings.Contains(body, "the trace store is not configured") || !strings.Contains(body, "jsonData.jaegerUrl") || !strings.Contains(body, "jsonData.tempoUrl") {
		t.Errorf("trace_services without Jaeger or Tempo: HTTP %d %s", code, body)
	}
	// Configured but failing: the upstream's error, 502.
	down := withSources(t, map[string]any{}, correlate.Sources{
		Traces:   correlate.Ready[correlate.TraceStore](&memTraces{err: errJaegerDown}),
		Profiles: correlate.Ready[correlate.ProfileStore](&memProfiles{err: errPyroscopeDown}),
	})
	code, _, body = variable(t, down, "trace_ids(svc)", nil)
	if code != 502 || !strings.Contains(body, "Jaeger (") {
		t.Errorf("unreachable Jaeger: HTTP %d %s", code, body)
	}
	code, _, body = variable(t, down, "label_names()", nil)
	if code != 502 || !strings.Contains(body, "Pyroscope (") || !strings.Contains(body, "connection refused") {
		t.Errorf("unreachable Pyroscope: HTTP %d %s", code, body)
	}
}
