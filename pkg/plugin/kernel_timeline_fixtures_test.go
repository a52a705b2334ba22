//go:build !integration

package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/realdata"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

// TestWriteKernelTimelineFixtures writes the kernel timelines the frontend's trace-view test
// reads (src/__grafana__/timeline.test.ts) into $HSI_FRAMES_DIR, from the plugin in process,
// as test/frames writes them from the plugin binary against a bed: run
//
//	HSI_FRAMES_DIR=/tmp/frames go test -run TestWriteKernelTimelineFixtures ./pkg/plugin/
//	HSI_FRAMES_DIR=/tmp/frames npx jest -c jest.grafana.config.js src/__grafana__/timeline.test.ts
//
// Not built with the integration tag: scripts/test.sh runs those with HSI_FRAMES_DIR set beside
// test/frames, which empties the folder first.
func TestWriteKernelTimelineFixtures(t *testing.T) {
	dir := os.Getenv("HSI_FRAMES_DIR")
	if dir == "" {
		t.Skip("HSI_FRAMES_DIR is not set: nothing to write")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	traces := t.TempDir()
	truth, err := testbed.WriteKernelTimelineTrace(traces)
	if err != nil {
		t.Fatal(err)
	}
	real := filepath.Dir(realdata.Path(t, testbed.ResNetTimelineFile))
	ds := newTestDatasource(t, map[string]any{"traceDirectories": []string{traces, real}}, nil)
	write := func(name string, model map[string]any, extra map[string]any) {
		raw, err := json.Marshal(model)
		if err != nil {
			t.Fatal(err)
		}
		res := timelineAnswer(t, ds, string(raw))
		if r := res.Responses["A"]; r.Error != nil {
			t.Fatalf("%s: %v", name, r.Error)
		}
		answer, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		fixture := map[string]any{"query": model, "from": 0, "to": 0, "response": json.RawMessage(answer)}
		for k, v := range extra {
			fixture[k] = v
		}
		out, err := json.Marshal(fixture)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name+".json"), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("kernelTimeline", map[string]any{"queryType": "kernels", "traceId": testbed.KernelTimelineTraceID, "view": "timeline"},
		map[string]any{"traceId": testbed.KernelTimelineTraceID, "truth": testbed.KernelTimelineTruth(truth)})
	write("kernelTimelineResNet", map[string]any{"queryType": "kernels", "file": testbed.ResNetTimelineFile, "view": "timeline"}, nil)
}
