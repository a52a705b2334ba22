//go:build integration

package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// The triage against the test bed's real Prometheus and Jaeger: the simulated incidents of
// fixture-node-d and its pods' kube-state-metrics series (gpusim.FixtureIncidents says what
// happened when), and a demo request that fails with a CUDA out-of-memory error.

// triageRows reads the failures frame: one map per row, field name → value as text.
func triageRows(t *testing.T, res backend.DataResponse, frame string) []map[string]string {
	t.Helper()
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if len(res.Frames) != 1 || res.Frames[0].Name != frame {
		t.Fatalf("frames %v, want %s", res.Frames, frame)
	}
	f := res.Frames[0]
	out := make([]map[string]string, f.Rows())
	for i := range out {
		out[i] = map[string]string{}
		for _, fl := range f.Fields {
			v, ok := fl.ConcreteAt(i)
			if !ok {
				continue
			}
			if ts, isTime := v.(time.Time); isTime {
				out[i][fl.Name] = ts.UTC().Format(time.RFC3339)
				continue
			}
			out[i][fl.Name] = fmt.Sprint(v)
		}
	}
	return out
}

func TestRealTriageClassifiesEverySimulatedIncident(t *testing.T) {
	start, end := fixtureWindow(t)
	ds := bedDatasource(t)
	res := run2(t, ds, backend.DataQuery{RefID: "A", QueryType: models.QueryTypeTriage, Interval: 15 * time.Second,
		JSON: json.RawMessage(`{"queryType":"triage","hosts":["fixture-node-d"]}`), TimeRange: backend.TimeRange{From: start, To: end}})
	rows := triageRows(t, res, "failures")

	at := map[string]time.Time{}
	var oom gpusim.Incident
	for _, in := range gpusim.FixtureIncidents(start, end) {
		if _, ok := at[in.Kind]; !ok {
			at[in.Kind] = in.At // the first of a kind (restarts: the first)
		}
		if in.Kind == gpusim.IncidentOOMKilled {
			oom = in
		}
	}
	type want struct {
		class, gpu string
		at         time.Time
		slack      time.Duration // a rate needs a step or more of the rise
	}
	wants := []want{
		{models.ClassXID, "0", at[gpusim.IncidentXID], 0},
		{models.ClassECC, "1", at[gpusim.IncidentECCDoubleBit], 0},
		{models.ClassRowRemap, "1", at[gpusim.IncidentRowRemapFailure], 0},
		{models.ClassPCIeReplay, "1", at[gpusim.IncidentPCIeReplays], 2 * time.Minute},
		// The GPU was full when its pod's container first crashed.
		{models.ClassMemoryEnvelope, "2", at[gpusim.IncidentContainerRestart], 0},
		{models.ClassContainerOOM, fmt.Sprint(oom.GPU), oom.At, 0},
	}
	var got []string
	for _, r := range rows {
		got = append(got, r["class id"]+" gpu "+r["gpu"]+" at "+r["time"])
	}
	if len(rows) != len(wants) {
		t.Fatalf("failures on fixture-node-d:\n%s\nwant one each of %v", strings.Join(got, "\n"), wants)
	}
	for _, w := range wants {
		i := slices.IndexFunc(rows, func(r map[string]string) bool { return r["class id"] == w.class && r["gpu"] == w.gpu })
		if i < 0 {
			t.Errorf("no %s failure on GPU %s:\n%s", w.class, w.gpu, strings.Join(got, "\n"))
			continue
		}
		r := rows[i]
		ts, _ := time.Parse(time.RFC3339, r["time"])
		if ts.Before(w.at) || ts.After(w.at.Add(w.slack)) {
			t.Errorf("%s dated %s, the incident began at %s", w.class, ts, w.at.UTC().Format(time.RFC3339))
		}
		if r["host"] != "fixture-node-d" || r["first checks"] == "" || r["mitigation"] == "" || r["evidence"] == "" {
			t.Errorf("%s: %v", w.class, r)
		}
		if !strings.Contains(r["mapping"], "driver 550.127.05") || !strings.Contains(r["mapping"], "node fixture-node-d") {
			t.Errorf("%s: mapping %q lacks the node or the driver label", w.class, r["mapping"])
		}
		if !strings.Contains(r["gpu dashboard"], "var-host=fixture-node-d") || !strings.Contains(r["gpu dashboard"], "var-gpu="+w.gpu) {
			t.Errorf("%s: GPU dashboard link %q", w.class, r["gpu dashboard"])
		}
	}
	for i := 1; i < len(rows); i++ {
		if rows[i]["time"] > rows[i-1]["time"] {
			t.Errorf("not newest first: %s after %s", rows[i]["time"], rows[i-1]["time"])
		}
	}
	for _, r := range rows {
		switch r["class id"] {
		case models.ClassXID:
			if !strings.Contains(r["failure"], "XID 79") || !strings.Contains(r["failure"], "fallen off the bus") {
				t.Errorf("XID row: %q", r["failure"])
			}
		case models.ClassContainerOOM:
			if r["pod"] != oom.Pod || r["container"] != oom.Container || !strings.Contains(r["evidence"], "exit code 137") || !strings.Contains(r["evidence"], "memory limit 2.0 GiB") {
				t.Errorf("OOM kill row: %v", r)
			}
		case models.ClassMemoryEnvelope:
			if !strings.Contains(r["evidence"], "llm-prefill-0 container server (reason Error) restarted 2 times") {
				t.Errorf("memory envelope evidence: %s", r["evidence"])
			}
		}
	}

	sig := triageRows(t, run2(t, ds, backend.DataQuery{RefID: "A", QueryType: models.QueryTypeTriage, Interval: 15 * time.Second,
		JSON: json.RawMessage(`{"queryType":"triage","view":"signals","hosts":["fixture-node-d"]}`), TimeRange: backend.TimeRange{From: start, To: end}}), "signals")
	for _, s := range sig {
		if s["status"] != "present" {
			t.Errorf("signal %s %s is %s on the bed: %s", s["class"], s["signal"], s["status"], s["detail"])
		}
	}
}

// A demo request that fails with PyTorch's CUDA OOM is listed, with its GPU and the GPU's
// framebuffer then, and its failure links it.
func TestRealTriageListsTheRequestThatRanOutOfGPUMemory(t *testing.T) {
	ds := bedDatasource(t)
	res, err := http.Get(bed.DemoURL + "/api/detect?tokens=32768")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	traceID := res.Header.Get("X-Trace-Id")
	if res.StatusCode != http.StatusInternalServerError || len(traceID) != 32 {
		t.Fatalf("demo: HTTP %d, trace %q; want the CUDA OOM's 500", res.StatusCode, traceID)
	}
	query := func(view string) backend.DataResponse {
		now := time.Now()
		return run2(t, ds, backend.DataQuery{RefID: "A", QueryType: models.QueryTypeTriage, Interval: 15 * time.Second,
			JSON:      json.RawMessage(`{"queryType":"triage","view":"` + view + `","hosts":["gpu-node-1"],"classes":["cudaOOM"]}`),
			TimeRange: backend.TimeRange{From: now.Add(-15 * time.Minute), To: now.Add(time.Minute)}})
	}
	// Wait for the very request: its spans reach Jaeger within seconds.
	var row map[string]string
	deadline := time.Now().Add(time.Minute)
	for row == nil {
		for _, r := range triageRows(t, query("requests"), "requests") {
			if r["trace ID"] == traceID {
				row = r
			}
		}
		if row == nil {
			if time.Now().After(deadline) {
				t.Fatalf("the failed request %s is not listed after a minute", traceID)
			}
			time.Sleep(time.Second)
		}
	}
	if row["service"] != "ai-detector" || row["operation"] != "model.predict" || row["gpu"] != "0" || row["host"] != "gpu-node-1" ||
		!strings.HasPrefix(row["error"], "torch.OutOfMemoryError: CUDA out of memory.") || row["framebuffer used"] == "" {
		t.Errorf("request row: %v", row)
	}
	var linked bool
	for _, r := range triageRows(t, query("failures"), "failures") {
		if r["service"] == "ai-detector" && r["operation"] == "model.predict" && r["gpu"] == "0" {
			linked = strings.Contains(r["evidence"], "torch.OutOfMemoryError") && strings.Contains(r["mapping"], "GPU ") && r["traces"] != ""
		}
	}
	if !linked {
		t.Errorf("no CUDA OOM failure of ai-detector's model.predict on GPU 0 with its evidence and link")
	}
}

// A model server that runs out of GPU memory while loading its model, sent to the bed's Jaeger
// over OTLP as an instrumented server records it: the triage calls it an OOM at model load, on
// the GPU its span names, with the pod from its resource.
func TestRealTriageTellsAnOOMAtModelLoad(t *testing.T) {
	ds := bedDatasource(t)
	service := fmt.Sprintf("hsi-loader-%d", time.Now().UnixNano())
	res := []attribute.KeyValue{attribute.String("host.name", "gpu-node-1"), attribute.String("k8s.pod.name", "nemotron-llm-0"),
		attribute.String("k8s.namespace.name", "inference")}
	start := time.Now().Add(-3 * time.Second)
	traceID, err := testbed.SendSpans(context.Background(), bed.JaegerOTLP, start, []testbed.SentSpan{
		{Service: service, Name: "POST /v2/repository/models/llama/load", Kind: trace.SpanKindServer, Parent: -1, End: 2 * time.Second,
			Resource: res, Status: codes.Error, StatusMessage: "failed to load model"},
		{Service: service, Name: "load_model", Parent: 0, Start: 10 * time.Millisecond, End: 1900 * time.Millisecond, Resource: res,
			Attributes: []attribute.KeyValue{attribute.String("gpu.index", "1"), attribute.String("model.name", "llama-3-70b"), attribute.String("model.version", "3")},
			Events: []testbed.SentEvent{{Name: "exception", At: 1890 * time.Millisecond, Attributes: []attribute.KeyValue{
				attribute.String("exception.type", testbed.OOMExceptionType), attribute.String("exception.message", testbed.OOMExceptionMessage)}}},
			Status: codes.Error, StatusMessage: testbed.OOMStatusMessage},
	})
	if err != nil {
		t.Fatal(err)
	}
	var row map[string]string
	for deadline := time.Now().Add(time.Minute); row == nil; time.Sleep(time.Second) {
		now := time.Now()
		for _, r := range triageRows(t, run2(t, ds, backend.DataQuery{RefID: "A", QueryType: models.QueryTypeTriage, Interval: 15 * time.Second,
			JSON:      json.RawMessage(`{"queryType":"triage","services":["` + service + `"]}`),
			TimeRange: backend.TimeRange{From: now.Add(-10 * time.Minute), To: now.Add(time.Minute)}}), "failures") {
			if strings.Contains(r["traces"], traceID) {
				row = r
			}
		}
		if row == nil && time.Now().After(deadline) {
			t.Fatalf("the failed load %s is not listed after a minute", traceID)
		}
	}
	if row["class id"] != models.ClassCUDAOOMLoad || row["operation"] != "load_model" || row["gpu"] != "1" || row["host"] != "gpu-node-1" || row["pod"] != "nemotron-llm-0" {
		t.Errorf("load OOM row: %v", row)
	}
	if !strings.Contains(row["mapping"], "model llama-3-70b version 3") || !strings.Contains(row["first checks"], "artifact") {
		t.Errorf("load OOM row's chain and first checks: %q, %q", row["mapping"], row["first checks"])
	}
}
