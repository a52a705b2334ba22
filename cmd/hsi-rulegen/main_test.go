package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
)

func TestThresholdsComeFromTheSettingsFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"prometheusUrl":"http://p:9090","gpuThresholds":{"memoryBoundPct":90},"pcieGeneration":5}`), 0o644)
	th, err := thresholds(good)
	if err != nil {
		t.Fatal(err)
	}
	if th.MemoryBoundPct != 90 || th.PCIeGeneration != 5 || th.ComputeBoundPct != 80 {
		t.Errorf("thresholds %+v", th)
	}
	if y := classify.RulesYAML(th); !strings.Contains(y, "hsi:gpu_memory_bandwidth:percent > 90") || !strings.Contains(y, "/ 6.304e+10") {
		t.Errorf("rules do not use the file's thresholds")
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"gpuThresholds":{"memoryBoundPct":900}}`), 0o644)
	if _, err := thresholds(bad); err == nil || !strings.Contains(err.Error(), "jsonData.gpuThresholds.memoryBoundPct must be in [0, 100], got 900") {
		t.Errorf("error %v", err)
	}
	if th, err := thresholds(""); err != nil || th != classify.DefaultThresholds() {
		t.Errorf("no file: %+v %v", th, err)
	}
	if _, err := thresholds(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("a missing file is no error")
	}
}
