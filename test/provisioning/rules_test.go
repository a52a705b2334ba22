package provisioning

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
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

// Every rule file is loaded by at least one unit-test file, so a new rule file cannot ship with
// only promtool's syntax check.
func TestEveryRuleFileHasUnitTests(t *testing.T) {
	rules, _ := filepath.Glob("../../provisioning/prometheus/rules/*.yml")
	tests, _ := filepath.Glob("../../provisioning/prometheus/tests/*.test.yml")
	loaded := map[string]bool{}
	for _, f := range tests {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var test struct {
			RuleFiles []string `yaml:"rule_files"`
		}
		if err := yaml.Unmarshal(raw, &test); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, r := range test.RuleFiles {
			loaded[filepath.Base(r)] = true
		}
	}
	for _, f := range rules {
		if !loaded[filepath.Base(f)] {
			t.Errorf("%s is in no provisioning/prometheus/tests/*.test.yml rule_files: add its promtool unit tests", f)
		}
	}
}
