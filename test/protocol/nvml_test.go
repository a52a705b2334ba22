//go:build integration

package protocol

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
)

// TestCgoBinaryWithoutDriverAnswersNVMLUnavailable runs the cgo (NVML) build with
// nvmlEnabled on this driverless machine: gpuLocal says NVML is unavailable and names the
// missing library, while the health check and a profile query keep working and the process
// stays up (a call into NVML after the failed Init would have killed it).
func TestCgoBinaryWithoutDriverAnswersNVMLUnavailable(t *testing.T) {
	settings := allUpstreams()
	settings["nvmlEnabled"] = true
	var log bytes.Buffer
	h, err := pluginhost.Start(binaryCGO, pluginhost.DataSource{UID: "hsi-nvml", Name: "HSI Profiling", JSONData: settings}, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)

	now := time.Now()
	var queries []pluginhost.Query
	for _, view := range []string{"devices", "processes", "xid", "series", "class"} {
		queries = append(queries, pluginhost.Query{RefID: view, From: now.Add(-time.Minute), To: now, JSON: map[string]any{"queryType": "gpuLocal", "view": view}})
	}
	queries = append(queries, pluginhost.Query{RefID: "profile", From: now.Add(-15 * time.Minute), To: now, JSON: map[string]any{
		"queryType": "profile", "labelSelector": `{service_name="nemotron-backend"}`, "profileTypeId": "process_cpu:cpu:nanoseconds:cpu:nanoseconds"}})
	for round := range 2 { // twice: the failed Init is remembered, never followed by another NVML call
		res, err := h.QueryData(ctx(t), queries...)
		if err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, log.String())
		}
		for _, view := range []string{"devices", "processes", "xid", "series", "class"} {
			r := res.Responses[view]
			if !strings.Contains(r.Error, "NVML is unavailable: libnvidia-ml.so.1 could not be loaded (ERROR_LIBRARY_NOT_FOUND)") || r.ErrorSource != "downstream" {
				t.Errorf("round %d, %s: error %q (source %q)", round, view, r.Error, r.ErrorSource)
			}
		}
		if p := res.Responses["profile"]; p.Error != "" || len(p.Frames) == 0 {
			t.Errorf("round %d: profile query failed: %q", round, p.Error)
		}
	}

	health, err := h.CheckHealth(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{"Pyroscope: OK (", "Prometheus: OK (", "Jaeger: OK (", "NVML: NVML is unavailable: libnvidia-ml.so.1 could not be loaded"} {
		if !strings.Contains(health.Message, part) {
			t.Errorf("health %q lacks %q", health.Message, part)
		}
	}
	if health.Status != pluginv2.CheckHealthResponse_ERROR {
		t.Errorf("health = %v: NVML is enabled but unavailable", health.Status)
	}
	if h.Exited() {
		t.Fatalf("the plugin process exited\n%s", log.String())
	}
}
