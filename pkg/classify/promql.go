package classify

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// The same classification as PromQL recording rules, so it can run in Prometheus (or a Mimir or
// Thanos ruler) and scale with it. RulesYAML renders them from Thresholds: the provisioned file
// provisioning/prometheus/rules/gpu-classification.yml is RulesYAML(DefaultThresholds()) (a test
// checks it), and `go run ./cmd/hsi-rulegen` renders them for other settings.
//
// Each rule mirrors one step of decide in classify.go, in the same arithmetic order:
// fallbacks with "or" (the left side wins where both exist), the bit tests as
// floor(mask / 2^n) % m, the precedence as one "or" chain in the class order, and the observed
// SM-clock maximum as max_over_time over the same window.

// Recorded series.
const (
	RecordCompute     = "hsi:gpu_compute:percent"
	RecordMemory      = "hsi:gpu_memory_bandwidth:percent"
	RecordPCIeTx      = "hsi:gpu_pcie_tx:bytes_per_second"
	RecordPCIeRx      = "hsi:gpu_pcie_rx:bytes_per_second"
	RecordPCIeLink    = "hsi:gpu_pcie_link:ratio"
	RecordClockEvents = "hsi:gpu_clock_events:bitmask"
	RecordCode        = "hsi:gpu_class:code"
	// RecordState is one 0/1 series per class (label "class"), at every classified step.
	RecordState = "hsi:gpu_class:state"
)

// RecordSMClockMax and RecordShare carry the window in their names ("max1h", "ratio1h"), as
// Prometheus' naming convention asks.
func RecordSMClockMax(th Thresholds) string {
	return "hsi:gpu_sm_clock:max" + PromDuration(th.ClockMaxWindow)
}

// RecordShare is the share of classified steps per class over the trailing window (label
// "class"), for alerts.
func RecordShare(th Thresholds) string {
	return "hsi:gpu_class_share:ratio" + PromDuration(th.ShareWindow)
}

// PromDuration writes d as PromQL does ("1h", "90m" as "1h30m").
func PromDuration(d time.Duration) string { return model.Duration(d).String() }

// Rule is one recording or alerting rule.
type Rule struct {
	Record, Alert string
	Expr          string
	For           string
	Labels        [][2]string // in order
	Annotations   [][2]string
	Comment       string
}

// ClassOrder is the precedence: the "or" chain of hsi:gpu_class:code tries classes in this order.
var ClassOrder = []Class{ThermalThrottled, PowerThrottled, MemoryBound, PCIeBound, ComputeBound, Idle, Balanced}

// f64 writes a float64 so that PromQL parses back the same value.
func f64(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Rules returns the recording rules and two alerts for th, in evaluation order (one group: each
// rule sees the ones above it at the same timestamp).
func Rules(th Thresholds) []Rule {
	c, m := RecordCompute, RecordMemory
	valid := fmt.Sprintf("(%s and %s)", c, m)
	ce := RecordClockEvents
	conds := map[Class]string{
		ThermalThrottled: fmt.Sprintf(`%s
  and (
      floor(%s / 32) %% 4 > 0
    or
      ((%s or %s) > %s and %s < %s * %s) unless %s
  )`, valid, ce, MetricTemp, MetricTempCelsius, f64(th.ThermalTempC), MetricSMClock, f64(th.ThermalClockRatio), RecordSMClockMax(th), ce),
		PowerThrottled: fmt.Sprintf("%s and (floor(%s / 4) %% 2 > 0 or floor(%s / 128) %% 2 > 0)", valid, ce, ce),
		MemoryBound:    fmt.Sprintf("%s > %s and %s < %s", m, f64(th.MemoryBoundPct), c, f64(th.MemoryBoundMaxComputePct)),
		PCIeBound: fmt.Sprintf("%s > %s and %s <= %s and %s <= %s", RecordPCIeLink, f64(th.PCIeBoundLinkShare),
			c, f64(th.ComputeBoundPct), m, f64(th.MemoryBoundPct)),
		ComputeBound: fmt.Sprintf("%s > %s and %s < %s", c, f64(th.ComputeBoundPct), m, f64(th.ComputeBoundMaxMemoryPct)),
		Idle:         fmt.Sprintf("%s < %s and %s", c, f64(th.IdleBelowPct), m),
		Balanced:     valid,
	}
	var chain []string
	for _, cl := range ClassOrder {
		chain = append(chain, fmt.Sprintf("# %d %s\n(\n  %s\n) * 0 + %d", cl.Code(), cl, conds[cl], cl.Code()))
	}

	rules := []Rule{
		{Record: c, Expr: fmt.Sprintf("%s * 100 or %s * 100 or %s * 100 or %s * 100 or %s", MetricSMActive, MetricSMActiveRatio, MetricGrEngine, MetricGrEngineRatio, MetricGPUUtil),
			Comment: "Compute figure in percent: SM_ACTIVE, else GR_ENGINE_ACTIVE (ratios; DCGM 4.6 names after the classic ones), else GPU_UTIL."},
		{Record: m, Expr: fmt.Sprintf("%s / %s * 100 or %s / %s * 100 or %s", MetricDRAMActive, f64(th.DRAMActivePeak), MetricDRAMActiveRatio, f64(th.DRAMActivePeak), MetricMemCopyUtil),
			Comment: fmt.Sprintf("Memory-bandwidth figure in percent: DRAM_ACTIVE over its practical peak (%s), else MEM_COPY_UTIL.", f64(th.DRAMActivePeak))},
		{Record: RecordPCIeTx, Expr: fmt.Sprintf("%s or %s or %s * 1024", MetricPCIeTxBytes, MetricPCIeTxPerS, MetricPCIeTxKB),
			Comment: "PCIe bytes per second: the profiling counter, else dcgm-exporter 4.10's name for it (taken in bytes/s as\n" +
				"its name says; the plugin itself reads its unit from the HELP text), else the deprecated KB/s series."},
		{Record: RecordPCIeRx, Expr: fmt.Sprintf("%s or %s or %s * 1024", MetricPCIeRxBytes, MetricPCIeRxPerS, MetricPCIeRxKB)},
		{Record: RecordPCIeLink, Expr: fmt.Sprintf("(%s >= %s or %s or %s) / %s", RecordPCIeTx, RecordPCIeRx, RecordPCIeRx, RecordPCIeTx, f64(th.PCIeCapacity())),
			Comment: fmt.Sprintf("Busier PCIe direction over one direction's capacity, Gen%d x%d = %s bytes/s.", th.PCIeGeneration, th.PCIeWidth, f64(th.PCIeCapacity()))},
		{Record: ce, Expr: fmt.Sprintf("%s or %s", MetricClockEvents, MetricClockThrottle),
			Comment: "Clock-event (throttle) bitmask, current name else the older one."},
		{Record: RecordSMClockMax(th), Expr: fmt.Sprintf("max_over_time(%s[%s])", MetricSMClock, PromDuration(th.ClockMaxWindow)),
			Comment: "Observed SM-clock maximum over the window: the \"expected\" clock of the thermal fallback."},
		{Record: RecordCode, Expr: strings.Join(chain, "\nor\n"),
			Comment: "The class as a number (1 compute-bound, 2 memory-bound, 3 pcie-bound, 4 thermal-throttled,\n" +
				"5 power-throttled, 6 idle, 7 balanced); no series where the compute or memory figure is missing.\n" +
				"Precedence is the order of the \"or\" chain: the first class whose condition holds."},
	}
	for _, cl := range Classes {
		if cl == NoData {
			continue
		}
		rules = append(rules, Rule{Record: RecordState, Labels: [][2]string{{"class", string(cl)}},
			Expr: fmt.Sprintf("%s == bool %d", RecordCode, cl.Code())})
	}
	rules[len(rules)-len(Classes)+1].Comment = "One 0/1 series per class, at every classified step."
	rules = append(rules, Rule{Record: RecordShare(th), Expr: fmt.Sprintf("avg_over_time(%s[%s])", RecordState, PromDuration(th.ShareWindow)),
		Comment: "Share of classified steps per class over the window: what alerts compare."})

	share := RecordShare(th)
	for _, a := range []struct {
		name  string
		class Class
	}{{"GPUThermalThrottling", ThermalThrottled}, {"GPUPowerThrottling", PowerThrottled}} {
		rules = append(rules, Rule{
			Alert:  a.name,
			Expr:   fmt.Sprintf("%s{class=%q} > 0.25", share, a.class),
			For:    "10m",
			Labels: [][2]string{{"severity", "warning"}},
			Annotations: [][2]string{
				{"summary", fmt.Sprintf("GPU {{ $labels.gpu }} %s {{ $value | humanizePercentage }} of the last %s", a.class, PromDuration(th.ShareWindow))},
				{"description", Action(a.class)},
			},
		})
	}
	rules[len(rules)-2].Comment = "Alerts: a GPU throttled for over a quarter of the window, for 10 minutes."
	return rules
}

// RulesYAML renders Rules(th) as a Prometheus rule file.
func RulesYAML(th Thresholds) string {
	var b strings.Builder
	b.WriteString(`# GPU workload classification as Prometheus recording rules: the same classes, thresholds,
# fallbacks and precedence as the plugin's backend (pkg/classify), so dashboards, alerts and the
# gpuClass query agree. GENERATED by pkg/classify (RulesYAML) from these thresholds; do not edit:
# render other thresholds with
#   go run ./cmd/hsi-rulegen -settings jsonData.json > gpu-classification.yml
#
`)
	fmt.Fprintf(&b, "# thresholds: %s\n", describeThresholds(th))
	b.WriteString(`#
# DCGM's exporter collects every 30 s by default: classes describe coarse averages. Evaluate these
# rules at the scrape interval or slower; shares count evaluations, so they are shares of time
# only when the evaluation interval is regular.
groups:
  - name: hsi-gpu-classification
    rules:
`)
	for _, r := range Rules(th) {
		if r.Comment != "" {
			for _, line := range strings.Split(r.Comment, "\n") {
				fmt.Fprintf(&b, "      # %s\n", line)
			}
		}
		if r.Record != "" {
			fmt.Fprintf(&b, "      - record: %s\n", r.Record)
		} else {
			fmt.Fprintf(&b, "      - alert: %s\n", r.Alert)
		}
		if strings.Contains(r.Expr, "\n") {
			b.WriteString("        expr: |\n")
			for _, line := range strings.Split(r.Expr, "\n") {
				fmt.Fprintf(&b, "          %s\n", line)
			}
		} else {
			fmt.Fprintf(&b, "        expr: %s\n", yamlScalar(r.Expr))
		}
		if r.For != "" {
			fmt.Fprintf(&b, "        for: %s\n", r.For)
		}
		writeMap(&b, "labels", r.Labels)
		writeMap(&b, "annotations", r.Annotations)
	}
	return b.String()
}

func writeMap(b *strings.Builder, name string, kv [][2]string) {
	if len(kv) == 0 {
		return
	}
	fmt.Fprintf(b, "        %s:\n", name)
	for _, p := range kv {
		fmt.Fprintf(b, "          %s: %s\n", p[0], yamlScalar(p[1]))
	}
}

// yamlScalar writes s plain when YAML reads it back unchanged, else double-quoted.
func yamlScalar(s string) string {
	plain := s != "" && strings.TrimSpace(s) == s && !strings.ContainsAny(s[:1], "{}[]&*!|>'\"%@`#,?:-") &&
		!strings.Contains(s, ": ") && !strings.Contains(s, " #") && !strings.ContainsAny(s, "\"'\n")
	if plain {
		return s
	}
	return strconv.Quote(s)
}

func describeThresholds(th Thresholds) string {
	var parts []string
	for _, k := range NumericThresholdKeys {
		parts = append(parts, k.Key+"="+f64(k.Get(&th)))
	}
	for _, k := range WindowKeys {
		parts = append(parts, k.Key+"="+PromDuration(k.Get(&th)))
	}
	parts = append(parts, fmt.Sprintf("pcieGeneration=%d pcieWidth=%d", th.PCIeGeneration, th.PCIeWidth))
	return strings.Join(parts, " ")
}

// ExpandRecords replaces each recorded series named in expr by its rule's expression, in
// parentheses, until none is left: the classification as one query over the raw DCGM series,
// for ranges the rules were not evaluated over (query_range over history). Names must be used
// bare (no matchers, no range); a range over a recorded series needs a subquery instead.
func ExpandRecords(expr string, rules []Rule) string {
	byName := map[string]string{}
	for _, r := range rules {
		if r.Record != "" && len(r.Labels) == 0 {
			byName[r.Record] = r.Expr
		}
	}
	for range 10 { // rules nest at most a few levels
		changed := false
		expr = recordToken.ReplaceAllStringFunc(expr, func(tok string) string {
			if e, ok := byName[tok]; ok {
				changed = true
				return "(" + stripComments(e) + ")"
			}
			return tok
		})
		if !changed {
			break
		}
	}
	return stripComments(expr)
}

var recordToken = regexp.MustCompile(`hsi:[a-zA-Z0-9_:]+`)

// stripComments drops "# ..." line comments (the code rule labels its "or" terms).
func stripComments(expr string) string {
	lines := strings.Split(expr, "\n")
	for i, l := range lines {
		if j := strings.Index(l, "#"); j >= 0 {
			lines[i] = l[:j]
		}
	}
	return strings.Join(lines, "\n")
}
