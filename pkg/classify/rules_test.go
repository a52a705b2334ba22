package classify

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
)

const rulesFile = "../../provisioning/prometheus/rules/gpu-classification.yml"

// The provisioned rules are the defaults rendered: editing one without the other fails here.
func TestProvisionedRulesAreTheDefaultsRendered(t *testing.T) {
	got, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if want := RulesYAML(DefaultThresholds()); string(got) != want {
		t.Errorf("%s differs from RulesYAML(DefaultThresholds()); regenerate it with\n  go run ./cmd/hsi-rulegen > %s",
			rulesFile, strings.TrimPrefix(rulesFile, "../../"))
	}
}

// Every rule's expression parses, and the expanded classification refers only to DCGM series.
func TestRuleExpressionsParseAndExpand(t *testing.T) {
	p := parser.NewParser(parser.Options{})
	rules := Rules(DefaultThresholds())
	for _, r := range rules {
		if _, err := p.ParseExpr(r.Expr); err != nil {
			t.Errorf("%s%s: %v\n%s", r.Record, r.Alert, err, r.Expr)
		}
	}
	code := ExpandRecords(RecordCode, rules)
	if _, err := p.ParseExpr(code); err != nil {
		t.Fatalf("expanded code: %v\n%s", err, code)
	}
	if strings.Contains(code, "hsi:") || !strings.Contains(code, "max_over_time(DCGM_FI_DEV_SM_CLOCK[1d])") {
		t.Errorf("expansion left a recorded series or lost the clock window:\n%s", code)
	}
	th := DefaultThresholds()
	th.ClockMaxWindow, th.ShareWindow = 6*time.Hour, 90*time.Minute
	th.PCIeGeneration = 5
	y := RulesYAML(th)
	for _, want := range []string{"max_over_time(DCGM_FI_DEV_SM_CLOCK[6h])", "record: hsi:gpu_sm_clock:max6h", "record: hsi:gpu_class_share:ratio1h30m",
		"avg_over_time(hsi:gpu_class:state[1h30m])", "/ 6.304e+10"} {
		if !strings.Contains(y, want) {
			t.Errorf("rules for a 90 min window and Gen5 lack %q", want)
		}
	}
}

func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err != nil {
		t.Fatal("promtool is not on PATH: run testbed/install.sh (or scripts/setup.sh) first; this test runs the rules in Prometheus' own engine")
	}
	return p
}

// The unit tests of the rules file (provisioning/prometheus/tests/gpu-classification.test.yml):
// seed examples, fallbacks, old exporter labels and a gap, checked by promtool.
func TestPromtoolCheckAndTestRules(t *testing.T) {
	pt := promtool(t)
	if out, err := exec.Command(pt, "check", "rules", rulesFile).CombinedOutput(); err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
	test := "../../provisioning/prometheus/tests/gpu-classification.test.yml"
	if out, err := exec.Command(pt, "test", "rules", test).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules %s: %v\n%s", test, err, out)
	}
}

// The backend and the rules agree step by step on randomised figures drawn around every
// threshold, for each kind of exporter: a promtool test is written from ClassifySeries' answers
// and promtool (Prometheus' engine, evaluating the rules every 30 s over 2 h of 30 s samples)
// must find the same hsi:gpu_class:code at every checked step and the same class shares over
// the trailing hour.
func TestRulesAgreeWithTheBackendOnRandomFigures(t *testing.T) {
	pt := promtool(t)
	const (
		step  = 30 * time.Second
		steps = 241 // 0 .. 2 h: the clock window and the share window both slide fully
	)
	type gpu struct {
		labels string
		e      exporter
		gap    [2]int // steps [from, to) without any sample
	}
	gpus := []gpu{
		{`gpu="0",Hostname="node-a",modelName="NVIDIA A100-SXM4-80GB"`, currentExporter, [2]int{}},
		{`gpu="1",Hostname="node-a",modelName="NVIDIA A100-SXM4-80GB"`, currentExporter, [2]int{}},
		{`gpu="2",Hostname="node-a",modelName="NVIDIA A100-SXM4-80GB"`, defaultCounters, [2]int{}},
		{`gpu="3",Hostname="node-a",modelName="NVIDIA A100-SXM4-80GB"`, oldBitmask, [2]int{}},
		{`gpu="0",hostname="node-b",modelName="Tesla T4"`, oldExporter, [2]int{}},
		{`gpu="1",hostname="node-b",modelName="Tesla T4"`, oldExporter, [2]int{}},
		{`gpu="2",hostname="node-b",modelName="Tesla T4"`, noMemory, [2]int{}},
		// A gap longer than the 5 min lookback: the first 10 steps of it still see the last sample.
		{`gpu="3",hostname="node-b",modelName="Tesla T4",gap="yes"`, currentExporter, [2]int{100, 140}},
	}
	th := DefaultThresholds()
	// A 45 min clock window, so the maximum slides out within the 2 h; the share window stays 1 h.
	th.ClockMaxWindow = 45 * time.Minute
	r := rand.New(rand.NewPCG(42, 7))
	var series strings.Builder
	expected := make([][]Class, len(gpus)) // [gpu][step]
	for gi, g := range gpus {
		raw := make([]Figures, steps)
		present := make([]bool, steps)
		for k := range raw {
			raw[k] = draw(r, g.e)
			present[k] = k < g.gap[0] || k >= g.gap[1]
		}
		if g.gap[1] > 0 {
			// Keep the gapped GPU's clock constant and cool: after a gap Prometheus' clock window
			// holds only real samples while the stepped series repeats the last one for 5 min.
			for k := range raw {
				raw[k].SMClockMHz, raw[k].TempC = 1410, 60
			}
		}
		// What query_range returns: each step the latest sample at most 5 min old.
		stepped := GPUSeries{}
		for k := range raw {
			f := Missing()
			for j := k; j >= 0 && k-j <= 10; j-- {
				if present[j] {
					f = raw[j]
					break
				}
			}
			stepped.Samples = append(stepped.Samples, Sample{Time: time.Unix(0, 0).Add(time.Duration(k) * step), Figures: f})
		}
		for _, res := range ClassifySeries(stepped, th) {
			expected[gi] = append(expected[gi], res.Class)
		}
		writeSeries(&series, g.labels, g.e, raw, present)
	}

	var tests strings.Builder
	for k := 0; k < steps; k += 3 {
		fmt.Fprintf(&tests, "      - expr: %s\n        eval_time: %ds\n        exp_samples:\n", RecordCode, k*30)
		for gi, g := range gpus {
			if c := expected[gi][k]; c != NoData {
				fmt.Fprintf(&tests, "          - labels: '%s{%s}'\n            value: %d\n", RecordCode, g.labels, c.Code())
			}
		}
	}
	// Shares from the hour's 121 evaluations, as counts (exact integers after rounding).
	for k := 120; k < steps; k += 10 {
		fmt.Fprintf(&tests, "      - expr: round(%s{gap=\"\"} * 121)\n        eval_time: %ds\n        exp_samples:\n", RecordShare(th), k*30)
		for gi, g := range gpus {
			if g.gap[1] > 0 || expected[gi][k] == NoData {
				continue
			}
			counts := map[Class]int{}
			for j := k - 120; j <= k; j++ {
				counts[expected[gi][j]]++
			}
			for _, c := range Classes {
				if c != NoData {
					fmt.Fprintf(&tests, "          - labels: '{%s,class=\"%s\"}'\n            value: %d\n", g.labels, c, counts[c])
				}
			}
		}
	}

	dir := t.TempDir()
	rulesCopy := filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(rulesCopy, []byte(RulesYAML(th)), 0o644); err != nil {
		t.Fatal(err)
	}
	testFile := filepath.Join(dir, "agreement.test.yml")
	content := fmt.Sprintf("rule_files:\n  - rules.yml\nevaluation_interval: 30s\ntests:\n  - interval: 30s\n    input_series:\n%s    promql_expr_test:\n%s",
		series.String(), tests.String())
	if err := os.WriteFile(testFile, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	classesSeen := map[Class]int{}
	for _, e := range expected {
		for _, c := range e {
			classesSeen[c]++
		}
	}
	for _, c := range Classes {
		if classesSeen[c] == 0 {
			t.Errorf("the random figures never produce %s: the comparison would not cover it", c)
		}
	}
	out, err := exec.Command(pt, "test", "rules", testFile).CombinedOutput()
	if err != nil {
		msg := string(out)
		if len(msg) > 6000 {
			msg = msg[:6000] + "…"
		}
		t.Fatalf("promtool disagrees with ClassifySeries (test file kept in %s): %v\n%s", testFile, err, msg)
	}
	t.Logf("agreed on %d GPU steps; classes %v", len(gpus)*steps, classesSeen)
}

// writeSeries writes g's figures as the exporter's series in promtool's input format.
func writeSeries(b *strings.Builder, labels string, e exporter, raw []Figures, present []bool) {
	add := func(metric string, on bool, get func(f *Figures) float64) {
		if !on {
			return
		}
		vals := make([]string, len(raw))
		for k := range raw {
			v := get(&raw[k])
			if !present[k] || math.IsNaN(v) {
				vals[k] = "_"
				continue
			}
			vals[k] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		fmt.Fprintf(b, "      - series: '%s{%s}'\n        values: '%s'\n", metric, labels, strings.Join(vals, " "))
	}
	add(MetricSMActive, e.sm, func(f *Figures) float64 { return f.SMActive })
	add(MetricGrEngine, e.gr, func(f *Figures) float64 { return f.GrEngine })
	add(MetricGPUUtil, e.util, func(f *Figures) float64 { return f.GPUUtil })
	add(MetricDRAMActive, e.dram, func(f *Figures) float64 { return f.DRAMActive })
	add(MetricMemCopyUtil, e.memcopy, func(f *Figures) float64 { return f.MemCopyUtil })
	add(MetricPCIeTxBytes, e.pcieBytes, func(f *Figures) float64 { return f.PCIeTx })
	add(MetricPCIeRxBytes, e.pcieBytes, func(f *Figures) float64 { return f.PCIeRx })
	add(MetricPCIeTxKB, e.pcieKB, func(f *Figures) float64 { return f.PCIeTx / 1024 })
	add(MetricPCIeRxKB, e.pcieKB, func(f *Figures) float64 { return f.PCIeRx / 1024 })
	add(MetricTemp, e.tempClock, func(f *Figures) float64 { return f.TempC })
	add(MetricSMClock, e.tempClock, func(f *Figures) float64 { return f.SMClockMHz })
	add(e.bitmask, e.bitmask != "", func(f *Figures) float64 { return f.ClockEvents })
}
