package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPrometheusConfig(t *testing.T) {
	root := t.TempDir()
	jobs := map[string][]string{DemoJob: {"127.0.0.1:1", "127.0.0.1:2"}, GPUJob: {"127.0.0.1:3"}}
	cfg := prometheusConfig(root, jobs)
	if strings.Contains(cfg, "rule_files") {
		t.Errorf("rule files without a rules folder:\n%s", cfg)
	}
	for _, want := range []string{
		"scrape_interval: 1s",
		"  - job_name: dcgm\n    static_configs:\n      - targets: [\"127.0.0.1:3\"]\n",
		"  - job_name: hsi-demo\n    static_configs:\n      - targets: [\"127.0.0.1:1\", \"127.0.0.1:2\"]\n",
	} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config lacks %q:\n%s", want, cfg)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, RulesDir), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg = prometheusConfig(root, jobs)
	if want := "rule_files:\n  - \"" + filepath.Join(root, RulesDir, "*.yml") + "\"\n"; !strings.Contains(cfg, want) {
		t.Errorf("config lacks %q:\n%s", want, cfg)
	}
	if cfg := prometheusConfig(root, nil); strings.Contains(cfg, "scrape_configs") {
		t.Errorf("scrape_configs without jobs:\n%s", cfg)
	}
}

func TestFixtureWindowTravelsThroughTheEnvironment(t *testing.T) {
	e := Endpoints{PrometheusURL: "http://p", PyroscopeURL: "http://y", JaegerURL: "http://j",
		GPUSimulatorURL: "http://g", ScenarioGPUsURL: "http://s", DemoBinary: "/tmp/bed/hsi-demo", FixtureStart: time.Unix(1_780_000_000, 0), FixtureEnd: time.Unix(1_780_007_200, 0)}
	for _, kv := range e.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	got, ok := FromEnv()
	if !ok || !got.FixtureStart.Equal(e.FixtureStart) || !got.FixtureEnd.Equal(e.FixtureEnd) || got.GPUSimulatorURL != e.GPUSimulatorURL ||
		got.ScenarioGPUsURL != e.ScenarioGPUsURL || got.DemoBinary != e.DemoBinary {
		t.Errorf("FromEnv = %+v, %v; want %+v", got, ok, e)
	}
	t.Setenv("HSI_TESTBED_FIXTURE_START", "")
	if got, _ := FromEnv(); !got.FixtureStart.IsZero() {
		t.Errorf("empty variable gives %s", got.FixtureStart)
	}
}
