//go:build integration

package frames

import (
	"context"
	"io"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// The triage's answers the GPU incident dashboard's panels show (dashboards/hsi-gpu-incidents.json):
// the failures of the simulated incidents on fixture-node-d (gpusim.FixtureIncidents), and, on the
// demo's gpu-node-1 over the last 15 minutes, a request that failed with a CUDA OOM: its failures
// (the CUDA OOM's row links its trace), the failed requests and the signals each class read.
// Written after the flame graphs' (frames_test.go), which empties the folder first.
func TestWriteTheTriageGrafanaReads(t *testing.T) {
	dir := framesDir(t)
	h := startPlugin(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Every simulated incident of fixture-node-d over the fixtures' window, as the dashboard asks.
	start, end := bed.FixtureStart, bed.FixtureEnd
	if start.IsZero() || end.Sub(start) != gpusim.FixtureHistory {
		t.Fatalf("the bed has no GPU fixtures (%s..%s); start it with the demo", start, end)
	}
	fixtureHost := map[string]any{"queryType": "triage", "hosts": []string{gpusim.FixtureHostD}}
	res := queryEvery(t, ctx, h, fixtureHost, start, end, 15*time.Second)
	failures := onlyFrame(t, res, "failures")
	classes := column(t, failures, "class id")
	slices.Sort(classes)
	want := []string{models.ClassContainerOOM, models.ClassECC, models.ClassMemoryEnvelope, models.ClassPCIeReplay,
		models.ClassRowRemap, models.ClassXID}
	if !slices.Equal(classes, want) {
		t.Fatalf("failures on %s: classes %v, want one of each of %v", gpusim.FixtureHostD, classes, want)
	}
	for _, name := range []string{"class", "host", "gpu", "pod", "evidence", "mitigation", "gpu dashboard"} {
		for i, v := range column(t, failures, name) {
			if v == "" {
				t.Fatalf("failure %d (%s) has no %s", i, column(t, failures, "class id")[i], name)
			}
		}
	}
	write := func(name string, f fixture, res *backend.QueryDataResponse) {
		t.Helper()
		writeAnswer(t, dir, name, f, res)
	}
	write("triage", fixture{Query: fixtureHost, From: start.UnixMilli(), To: end.UnixMilli()}, res)

	// A demo request that runs out of GPU memory, listed once its spans reach Jaeger.
	traceID := cudaOOMRequest(t)
	demoHost := func(view string) map[string]any {
		return map[string]any{"queryType": "triage", "view": view, "hosts": []string{"gpu-node-1"}}
	}
	var from, to time.Time
	deadline := time.Now().Add(time.Minute)
	for {
		to = time.Now()
		from = to.Add(-15 * time.Minute)
		res = queryEvery(t, ctx, h, demoHost("requests"), from, to, 15*time.Second)
		if slices.Contains(column(t, onlyFrame(t, res, "requests"), "trace ID"), traceID) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the failed request %s is not among the triage's requests after a minute", traceID)
		}
		time.Sleep(time.Second)
	}
	write("triageRequests", fixture{Query: demoHost("requests"), From: from.UnixMilli(), To: to.UnixMilli(), TraceID: traceID}, res)

	res = queryEvery(t, ctx, h, demoHost("failures"), from, to, 15*time.Second)
	live := onlyFrame(t, res, "failures")
	linked := false
	for i, c := range column(t, live, "class id") {
		linked = linked || (c == models.ClassCUDAOOM && column(t, live, "traces")[i] != "")
	}
	if !linked {
		t.Fatalf("gpu-node-1's failures %v: no CUDA OOM linking its trace", column(t, live, "class id"))
	}
	write("triageDemo", fixture{Query: demoHost("failures"), From: from.UnixMilli(), To: to.UnixMilli(), TraceID: traceID}, res)

	res = queryEvery(t, ctx, h, demoHost("signals"), from, to, 15*time.Second)
	if statuses := column(t, onlyFrame(t, res, "signals"), "status"); !slices.Contains(statuses, "present") {
		t.Fatalf("signals of gpu-node-1: statuses %v", statuses)
	}
	write("triageSignals", fixture{Query: demoHost("signals"), From: from.UnixMilli(), To: to.UnixMilli()}, res)
}

// cudaOOMRequest sends the demo a request that fails with PyTorch's CUDA OOM and returns its trace ID.
func cudaOOMRequest(t *testing.T) string {
	t.Helper()
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
	return traceID
}

// onlyFrame is the answer's one frame, which must be named name and have rows.
func onlyFrame(t *testing.T, res *backend.QueryDataResponse, name string) *data.Frame {
	t.Helper()
	frames := res.Responses["A"].Frames
	if len(frames) != 1 || frames[0].Name != name {
		t.Fatalf("frames %v, want one named %s", frameNames(t, res), name)
	}
	if frames[0].Rows() == 0 {
		t.Fatalf("the %s frame has no rows", name)
	}
	return frames[0]
}

// column is a string field's values.
func column(t *testing.T, f *data.Frame, name string) []string {
	t.Helper()
	fl, _ := f.FieldByName(name)
	if fl == nil {
		t.Fatalf("frame %s has no field %q", f.Name, name)
	}
	out := make([]string, fl.Len())
	for i := range out {
		s, ok := fl.At(i).(string)
		if !ok {
			t.Fatalf("field %q of %s is %T, not text", name, f.Name, fl.At(i))
		}
		out[i] = s
	}
	return out
}
