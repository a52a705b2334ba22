package prometheus

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/dcgm"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

var gpuTestParser = parser.NewParser(parser.Options{})

// reparse parses a built query back and checks the printer's text is stable: what Prometheus
// reads is what the AST said.
func reparse(t *testing.T, q string) parser.Expr {
	t.Helper()
	e, err := gpuTestParser.ParseExpr(q)
	if err != nil {
		t.Fatalf("built query does not parse: %v\n%s", err, q)
	}
	if again := e.String(); again != q {
		t.Fatalf("query changes when parsed back:\nbuilt  %s\nparsed %s", q, again)
	}
	return e
}

func selectorsOf(e parser.Node) []*parser.VectorSelector {
	var out []*parser.VectorSelector
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			out = append(out, vs)
		}
		return nil
	})
	return out
}

func functionsOf(e parser.Node) []string {
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if c, ok := n.(*parser.Call); ok {
			out = append(out, c.Func.Name)
		}
		return nil
	})
	return out
}

func matcherOf(vs *parser.VectorSelector, name string) *labels.Matcher {
	for _, m := range vs.LabelMatchers {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// fixedAliases is a role → label names table for building queries without Prometheus.
func fixedAliases(table map[string][]string) func(string) []string {
	return func(role string) []string { return table[role] }
}

var bothHostLabels = map[string][]string{
	models.RoleHost: {"Hostname", "hostname"}, models.RoleGPU: {"gpu"}, models.RoleUUID: {"UUID"},
	models.RoleModel: {"modelName"}, models.RolePod: {"pod", "pod_name"}, models.RoleNamespace: {"namespace"},
}

func testPlan(t *testing.T, f models.GPUFilter, table map[string][]string, grouping []string) gpuPlan {
	t.Helper()
	extra, err := f.Matchers("")
	if err != nil {
		t.Fatal(err)
	}
	sel, err := buildGPUSelection(f, fixedAliases(table), extra)
	if err != nil {
		t.Fatal(err)
	}
	return gpuPlan{sel: sel, grouping: grouping, counterRateWindow: 2 * time.Minute, presenceWindow: time.Hour, limit: 500}
}

func TestHostileFilterValuesStayMatcherValues(t *testing.T) {
	hostile := []string{
		`x"} or vector(1) #`,
		`a|.*`,
		`{}`,
		`b\"c`,
		"new\nline",
		`) or on() vector(1) or (`,
	}
	f := models.GPUFilter{Hosts: hostile, Pods: []string{`p"}[5m]) or vector(2`}, Models: []string{`NVIDIA A100-SXM4-80GB`}}
	p := testPlan(t, f, bothHostLabels, []string{"Hostname", "hostname", "gpu"})
	cat := NewCatalogue(models.DCGMSettings{})
	m, _ := cat.Lookup("gpu_utilization")
	expr, used := p.metricExpr(m, func(string) bool { return true })
	q := p.limited(m.Aggregate, expr, used).String()
	e := reparse(t, q)

	if fns := functionsOf(e); slices.Contains(fns, "vector") {
		t.Fatalf("a filter value became a vector() call: %v\n%s", fns, q)
	}
	sels := selectorsOf(e)
	// 2 host aliases × 2 pod aliases, once in the query and once in the presence expression.
	if len(sels) != 8 {
		t.Fatalf("%d selectors, want 8:\n%s", len(sels), q)
	}
	for _, vs := range sels {
		if vs.Name != "DCGM_FI_DEV_GPU_UTIL" {
			t.Errorf("selector of %q", vs.Name)
		}
		var host *labels.Matcher
		for _, alias := range []string{"Hostname", "hostname"} {
			if m := matcherOf(vs, alias); m != nil {
				host = m
			}
		}
		if host == nil {
			t.Fatalf("selector %s has no host matcher", vs)
		}
		for _, h := range hostile {
			if !host.Matches(h) {
				t.Errorf("host matcher %s does not match the value %q it was built from", host, h)
			}
		}
		for _, other := range []string{"anything", "a", "x", "", "ab"} {
			if host.Matches(other) {
				t.Errorf("host matcher %s matches %q: a value became a pattern", host, other)
			}
		}
		if mm := matcherOf(vs, "modelName"); mm == nil || mm.Type != labels.MatchEqual || mm.Value != "NVIDIA A100-SXM4-80GB" {
			t.Errorf("model matcher %v", mm)
		}
	}
}

func TestSingleValuesUseEqualityAndSeveralAQuotedAlternation(t *testing.T) {
	one, err := exactValuesMatcher("Hostname", []string{"gpu-node-1.example"})
	if err != nil || one.Type != labels.MatchEqual || one.Value != "gpu-node-1.example" {
		t.Errorf("one value: %v %v", one, err)
	}
	several, err := exactValuesMatcher("Hostname", []string{"a.b", "c+d"})
	if err != nil || several.Type != labels.MatchRegexp || several.Value != `a\.b|c\+d` {
		t.Errorf("several values: %v %v", several, err)
	}
	if several.Matches("aXb") || !several.Matches("c+d") {
		t.Errorf("%s treats a dot or plus as a pattern", several)
	}
}

func TestGPUIndexesAndUUIDsAreOneCondition(t *testing.T) {
	f := models.GPUFilter{GPUs: []string{"0", "3", "GPU-5fd4"}}
	sel, err := buildGPUSelection(f, fixedAliases(bothHostLabels), nil)
	if err != nil {
		t.Fatal(err)
	}
	var alts []string
	for _, alt := range sel {
		var ms []string
		for _, m := range alt {
			ms = append(ms, m.String())
		}
		alts = append(alts, strings.Join(ms, ","))
	}
	// "GPU 0, 3 or GPU-5fd4" is either matcher, never both at once.
	if want := []string{`UUID="GPU-5fd4"`, `gpu=~"0|3"`}; !slices.Equal(alts, want) {
		t.Errorf("alternatives %v, want %v", alts, want)
	}
}

func TestMixedExportersGetOneSelectorPerAliasCombination(t *testing.T) {
	f := models.GPUFilter{Hosts: []string{"fixture-node-a", "fixture-node-b"}, Pods: []string{"p"}, GPUSelector: `{job="dcgm"}`}
	p := testPlan(t, f, bothHostLabels, nil)
	var got []string
	for _, alt := range p.sel {
		vs := metricSelector("M", alt)
		got = append(got, vs.String())
	}
	want := []string{
		`M{Hostname=~"fixture-node-a|fixture-node-b",job="dcgm",pod="p"}`,
		`M{Hostname=~"fixture-node-a|fixture-node-b",job="dcgm",pod_name="p"}`,
		`M{hostname=~"fixture-node-a|fixture-node-b",job="dcgm",pod="p"}`,
		`M{hostname=~"fixture-node-a|fixture-node-b",job="dcgm",pod_name="p"}`,
	}
	if !slices.Equal(got, want) {
		t.Errorf("selectors\n%v\nwant\n%v", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestTooManyAliasCombinationsAskForFixedLabelNames(t *testing.T) {
	wide := map[string][]string{}
	for _, r := range models.GPURoles {
		wide[r] = []string{"a_" + r, "b_" + r, "c_" + r}
	}
	f := models.GPUFilter{Hosts: []string{"h"}, GPUs: []string{"0"}, Models: []string{"m"}, Pods: []string{"p"}, Namespaces: []string{"n"}}
	_, err := buildGPUSelection(f, fixedAliases(wide), nil)
	if err == nil || !strings.Contains(err.Error(), "jsonData.dcgmLabelNames") {
		t.Errorf("error %v", err)
	}
}

func TestPreferredSourcesAreJoinedWithOrAndScaled(t *testing.T) {
	p := testPlan(t, models.GPUFilter{}, bothHostLabels, []string{"Hostname", "hostname", "gpu"})
	m, _ := NewCatalogue(models.DCGMSettings{}).Lookup("pcie_tx")
	expr, used := p.metricExpr(m, func(string) bool { return true })
	q := p.limited(m.Aggregate, expr, used).String()
	reparse(t, q)
	want := `sum by (Hostname, hostname, gpu) (DCGM_FI_PROF_PCIE_TX_BYTES or (DCGM_FI_DEV_PCIE_TX_THROUGHPUT * 1024)) and on (Hostname, hostname, gpu) ` +
		`topk(501, group by (Hostname, hostname, gpu) (last_over_time(DCGM_FI_PROF_PCIE_TX_BYTES[1h] @ end()) or last_over_time(DCGM_FI_DEV_PCIE_TX_THROUGHPUT[1h] @ end())))`
	if q != want {
		t.Errorf("got  %s\nwant %s", q, want)
	}
	// Only the sources Prometheus holds are read.
	expr, used = p.metricExpr(m, func(n string) bool { return n == "DCGM_FI_DEV_PCIE_TX_THROUGHPUT" })
	if got := expr.String(); got != `DCGM_FI_DEV_PCIE_TX_THROUGHPUT * 1024` || !slices.Equal(used, []string{"DCGM_FI_DEV_PCIE_TX_THROUGHPUT"}) {
		t.Errorf("old exporter only: %s %v", got, used)
	}
	if expr, _ := p.metricExpr(m, func(string) bool { return false }); expr != nil {
		t.Errorf("no source present gave %s", expr)
	}
}

func TestCountersBecomeRatesAndComputedMetricsKeepPrecedence(t *testing.T) {
	p := testPlan(t, models.GPUFilter{Hosts: []string{"h"}}, map[string][]string{models.RoleHost: {"Hostname"}}, []string{"Hostname"})
	cat := NewCatalogue(models.DCGMSettings{})
	ep, _ := cat.Lookup("energy_power")
	expr, _ := p.metricExpr(ep, func(n string) bool { return n == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION" })
	if got := expr.String(); got != `rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{Hostname="h"}[2m]) * 0.001` {
		t.Errorf("energy_power: %s", got)
	}
	// dcgm-exporter 4.9's counter in J: a rate in W as it is, after the mJ counter where both are.
	expr, _ = p.metricExpr(ep, func(string) bool { return true })
	if got := expr.String(); got != `(rate(DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{Hostname="h"}[2m]) * 0.001) or rate(DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL{Hostname="h"}[2m])` {
		t.Errorf("energy_power, both names: %s", got)
	}
	used, _ := cat.Lookup("fb_used")
	free, _ := cat.Lookup("fb_free")
	classic := func(n string) bool { return !strings.HasSuffix(n, "_BYTES") }
	u, _ := p.metricExpr(used, classic)
	f, _ := p.metricExpr(free, classic)
	pct := combineParts(dcgm.PercentOfTotal, []parser.Expr{u, f})
	got := pct.String()
	if want := `(DCGM_FI_DEV_FB_USED{Hostname="h"} / (DCGM_FI_DEV_FB_USED{Hostname="h"} + DCGM_FI_DEV_FB_FREE{Hostname="h"})) * 100`; got != want {
		t.Errorf("fb_used_percent:\ngot  %s\nwant %s", got, want)
	}
	reparse(t, got)
	// With several aliases each part is an "or", which must stay grouped inside + and /.
	p2 := testPlan(t, models.GPUFilter{Hosts: []string{"h"}}, bothHostLabels, nil)
	u2, _ := p2.metricExpr(used, classic)
	f2, _ := p2.metricExpr(free, classic)
	got2 := combineParts(dcgm.PercentOfTotal, []parser.Expr{u2, f2}).String()
	want2 := `((DCGM_FI_DEV_FB_USED{Hostname="h"} or DCGM_FI_DEV_FB_USED{hostname="h"}) / ((DCGM_FI_DEV_FB_USED{Hostname="h"} or DCGM_FI_DEV_FB_USED{hostname="h"}) + (DCGM_FI_DEV_FB_FREE{Hostname="h"} or DCGM_FI_DEV_FB_FREE{hostname="h"}))) * 100`
	if got2 != want2 {
		t.Errorf("fb_used_percent, two aliases:\ngot  %s\nwant %s", got2, want2)
	}
	reparse(t, got2)
	// dcgm-exporter 4.9's framebuffer in bytes, in MiB after the classic name where both are.
	u3, _ := p.metricExpr(used, func(string) bool { return true })
	if got, want := u3.String(), `DCGM_FI_DEV_FB_USED{Hostname="h"} or (DCGM_FI_DEV_FB_USED_BYTES{Hostname="h"} * 0.00000095367431640625)`; got != want {
		t.Errorf("fb_used, both names:\ngot  %s\nwant %s", got, want)
	}
}

func TestFleetAggregationMatchesOnNoLabels(t *testing.T) {
	p := testPlan(t, models.GPUFilter{}, bothHostLabels, nil)
	m, _ := NewCatalogue(models.DCGMSettings{}).Lookup("temperature")
	expr, used := p.metricExpr(m, func(n string) bool { return n == "DCGM_FI_DEV_GPU_TEMP" })
	q := p.limited(m.Aggregate, expr, used).String()
	reparse(t, q)
	if want := `max(DCGM_FI_DEV_GPU_TEMP) and on () topk(501, group(last_over_time(DCGM_FI_DEV_GPU_TEMP[1h] @ end())))`; q != want {
		t.Errorf("got  %s\nwant %s", q, want)
	}
}

func TestMetricNamesSelectorQuotesNames(t *testing.T) {
	vs, err := metricNamesSelector([]string{"DCGM_FI_DEV_GPU_UTIL", "a:b"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := vs.String(); got != `{__name__=~"DCGM_FI_DEV_GPU_UTIL|a:b"}` {
		t.Errorf("got %s", got)
	}
	reparse(t, vs.String())
}
