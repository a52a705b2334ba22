package provisioning

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// The Prometheus rules users load (alerts, GPU classification) must pass promtool's own checks
// and unit tests: promtool is Prometheus' tool, installed with the test bed (testbed/install.sh).
func TestPrometheusRulesPassPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not on PATH: run testbed/install.sh (or scripts/setup.sh) first")
	}
	rules, _ := filepath.Glob("../../provisioning/prometheus/rules/*.yml")
	tests, _ := filepath.Glob("../../provisioning/prometheus/tests/*.test.yml")
	if len(rules) == 0 || len(tests) == 0 {
		t.Fatalf("rules %v, tests %v: expected both", rules, tests)
	}
	for _, f := range rules {
		if out, err := exec.Command(promtool, "check", "rules", f).CombinedOutput(); err != nil {
			t.Errorf("promtool check rules %s: %v\n%s", f, err, out)
		}
	}
	for _, f := range tests {
		if out, err := exec.Command(promtool, "test", "rules", f).CombinedOutput(); err != nil {
			t.Errorf("promtool test rules %s: %v\n%s", f, err, out)
		}
	}
}
