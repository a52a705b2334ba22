package prometheus

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// shape lists an expression's node types depth first, with each selector's matcher names and
// types (not values): two queries of the same shape differ only in matcher values.
func shape(e parser.Node) []string {
	var out []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		s := fmt.Sprintf("%T", n)
		switch n := n.(type) {
		case *parser.VectorSelector:
			for _, m := range n.LabelMatchers {
				s += " " + m.Name + m.Type.String()
			}
		case *parser.Call:
			s += " " + n.Func.Name
		case *parser.BinaryExpr:
			s += " " + n.Op.String()
		}
		out = append(out, s)
		return nil
	})
	return out
}

// placeholders is f with each value replaced by a harmless one of the same kind (index or UUID),
// so that the query built from it has the shape the hostile one must keep.
func placeholders(f models.GPUFilter) models.GPUFilter {
	rename := func(kind string, vs []string) []string {
		var out []string
		for i, v := range vs {
			if models.GPUIndexOrUUID(v) {
				out = append(out, fmt.Sprint(9000+i))
			} else {
				out = append(out, fmt.Sprintf("%s-%d", kind, i))
			}
		}
		return out
	}
	return models.GPUFilter{Hosts: rename("host", f.Hosts), GPUs: rename("GPU", f.GPUs), Models: rename("model", f.Models),
		Pods: rename("pod", f.Pods), Namespaces: rename("ns", f.Namespaces), GPUSelector: f.GPUSelector}
}

func nonEmpty(vs ...string) []string {
	var out []string
	for _, v := range vs {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// FuzzGPUQuery builds the PromQL of a gpuMetrics query (and the editor's label lookups) from
// fuzzed filter values. Every query parses, prints back the same, has the shape of the same
// query built from harmless values, and each matcher is exactly what the filter asked: a role
// label matches the user's values and nothing else, any other label is a gpuSelector matcher.
func FuzzGPUQuery(f *testing.F) {
	f.Add("gpu-node-1", "", "0", "NVIDIA A100-SXM4-80GB", "", "", "", uint8(0), uint8(0))
	f.Add("fixture-node-a", "fixture-node-b", "GPU-5fd4", "", "p", "ns", `{job="dcgm"}`, uint8(11), uint8(1))
	f.Add(`x"} or vector(1) #`, `a|.*`, "3", `b\"c`, "new\nline", `) or on() vector(1) or (`, `{cluster=~"prod|dev"}`, uint8(12), uint8(2))
	f.Add(`"} or vector(1) or {a="`, `\`, "GPU-\x00", "ünïcode ✓", `=~".+"`, strings.Repeat("z", 256), `{a!="b", c!~"d"}`, uint8(25), uint8(0))
	f.Add("h", "", "", "", "", "", `{__name__=~".+"}`, uint8(3), uint8(0))
	f.Add("h", "", "", "", "", "", `{a="b"} or vector(1)`, uint8(3), uint8(0))
	cat := NewCatalogue(models.DCGMSettings{})
	c := newClient("http://prometheus.invalid", nil)
	inv := &inventory{metrics: map[string]bool{}, labels: map[string]bool{}}
	for _, n := range cat.MetricNames() {
		inv.metrics[n] = true
	}
	aggs := []string{models.AggregationGPU, models.AggregationHost, models.AggregationFleet}
	f.Fuzz(func(t *testing.T, host1, host2, gpu, model, pod, ns, gpuSelector string, metric, agg uint8) {
		filter := models.GPUFilter{Hosts: nonEmpty(host1, host2), GPUs: nonEmpty(gpu), Models: nonEmpty(model),
			Pods: nonEmpty(pod), Namespaces: nonEmpty(ns), GPUSelector: gpuSelector}
		if err := filter.Normalize(""); err != nil {
			if !strings.Contains(err.Error(), `field "`) {
				t.Fatalf("error %q names no field", err)
			}
			return
		}
		extra, err := filter.Matchers("")
		if err != nil {
			t.Fatalf("a normalised filter's selector fails: %v", err)
		}
		roles, _ := gpuGroupingRoles(aggs[int(agg)%len(aggs)])
		var grouping []string
		for _, r := range roles {
			grouping = append(grouping, bothHostLabels[r]...)
		}
		m := cat.Metrics()[int(metric)%len(cat.Metrics())]
		build := func(f models.GPUFilter) (string, []string) {
			sel, err := buildGPUSelection(f, fixedAliases(bothHostLabels), extra)
			if err != nil {
				t.Fatalf("selection: %v", err)
			}
			p := gpuPlan{sel: sel, grouping: grouping, counterRateWindow: 2 * time.Minute, presenceWindow: time.Hour, limit: 100}
			expr, used, _ := c.gpuMetricQuery(m, inv, p)
			if expr == nil {
				t.Fatalf("%s: no expression with every source present", m.Name)
			}
			var lookups []string
			for _, alt := range sel {
				vs, err := metricNamesSelector(cat.MetricNames(), alt)
				if err != nil {
					t.Fatalf("label lookup selector: %v", err)
				}
				lookups = append(lookups, vs.String())
			}
			return p.limited(m.Aggregate, expr, used).String(), lookups
		}
		q, lookups := build(filter)
		safeQ, safeLookups := build(placeholders(filter))
		e, err := gpuTestParser.ParseExpr(q)
		if err != nil {
			t.Fatalf("built query does not parse: %v\n%s", err, q)
		}
		if again := e.String(); again != q {
			t.Fatalf("query changes when parsed back:\nbuilt  %s\nparsed %s", q, again)
		}
		safe, err := gpuTestParser.ParseExpr(safeQ)
		if err != nil {
			t.Fatalf("placeholder query does not parse: %v", err)
		}
		if got, want := shape(e), shape(safe); !slices.Equal(got, want) {
			t.Fatalf("filter values changed the query's shape:\n%s\nwant the shape of\n%s", q, safeQ)
		}
		for i, l := range lookups {
			vs, err := gpuTestParser.ParseMetricSelector(l)
			if err != nil {
				t.Fatalf("label lookup selector %s does not parse: %v", l, err)
			}
			safeVS, _ := gpuTestParser.ParseMetricSelector(safeLookups[i])
			if len(vs) != len(safeVS) {
				t.Fatalf("lookup selector %s has %d matchers, want %d", l, len(vs), len(safeVS))
			}
			checkMatchers(t, filter, extra, vs)
		}
		for _, vs := range selectorsOf(e) {
			checkMatchers(t, filter, extra, vs.LabelMatchers)
		}
	})
}

// checkMatchers says each matcher is one the filter asked for, with the user's values exactly.
func checkMatchers(t *testing.T, f models.GPUFilter, extra []*labels.Matcher, ms []*labels.Matcher) {
	t.Helper()
	var indexes, uuids []string
	for _, g := range f.GPUs {
		if models.GPUIndexOrUUID(g) {
			indexes = append(indexes, g)
		} else {
			uuids = append(uuids, g)
		}
	}
	byRole := map[string][]string{models.RoleHost: f.Hosts, models.RoleGPU: indexes, models.RoleUUID: uuids,
		models.RoleModel: f.Models, models.RolePod: f.Pods, models.RoleNamespace: f.Namespaces}
	roleOf := map[string]string{}
	for role, names := range bothHostLabels {
		for _, n := range names {
			roleOf[n] = role
		}
	}
	for _, m := range ms {
		if m.Name == labels.MetricName {
			continue // the catalogue's names; the shape comparison keeps them in place
		}
		if role, ok := roleOf[m.Name]; ok && len(byRole[role]) > 0 {
			values := byRole[role]
			if len(values) == 1 {
				if m.Type != labels.MatchEqual || m.Value != values[0] {
					t.Fatalf("matcher %s, want %s=%q", m, m.Name, values[0])
				}
				continue
			}
			if m.Type != labels.MatchRegexp {
				t.Fatalf("matcher %s of several values is not a regex alternation", m)
			}
			for _, v := range values {
				if !m.Matches(v) {
					t.Fatalf("matcher %s does not match its value %q", m, v)
				}
			}
			// Only the values, whole: nothing longer, shorter or in between.
			for _, other := range []string{"", values[0] + "x", "x" + values[0], values[0] + values[1], values[0] + "|" + values[1]} {
				if !slices.Contains(values, other) && m.Matches(other) {
					t.Fatalf("matcher %s matches %q: a value became a pattern", m, other)
				}
			}
			continue
		}
		if !slices.ContainsFunc(extra, func(x *labels.Matcher) bool {
			return x.Name == m.Name && x.Type == m.Type && x.Value == m.Value
		}) {
			t.Fatalf("matcher %s comes from no filter value or gpuSelector matcher", m)
		}
	}
}

// FuzzLatencyExpr builds the slowRequests latency queries from fuzzed service and endpoint
// names: the text parses, has the shape of the query for harmless names, and the two values are
// exactly the values of the service and endpoint equality matchers.
func FuzzLatencyExpr(f *testing.F) {
	f.Add("nemotron-backend", "/api/detect", false, uint16(300))
	f.Add("checkout", "", true, uint16(3600))
	f.Add(`x"} or vector(1) or up{a="`, "/a\\b\n", false, uint16(60))
	f.Add(`"} or vector(1) or {a="`, `=~".+"`, true, uint16(90))
	f.Add("\x00", "ünïcode ✓ \u2028", false, uint16(0))
	f.Add(strings.Repeat(`\"`, 5000), "", true, uint16(1))
	hists := []models.LatencyHistogram{demoHist, otelHist}
	f.Fuzz(func(t *testing.T, service, endpoint string, otel bool, rngSeconds uint16) {
		h := hists[0]
		if otel {
			h = hists[1]
		}
		rng := time.Duration(max(rngSeconds, 1)) * time.Second
		placeholder := func(v, p string) string {
			if v == "" {
				return ""
			}
			return p
		}
		for _, build := range []func(string, string) (string, error){
			func(s, e string) (string, error) { return QuantileExpr(h, 0.99, s, e, rng) },
			func(s, e string) (string, error) { return RequestCountExpr(h, s, e, rng) },
		} {
			q, err := build(service, endpoint)
			if err != nil {
				t.Fatalf("query not built: %v", err)
			}
			safeQ, err := build(placeholder(service, "svc"), placeholder(endpoint, "/ep"))
			if err != nil {
				t.Fatal(err)
			}
			e, err := promqlParser.ParseExpr(q)
			if err != nil {
				t.Fatalf("%s does not parse: %v", q, err)
			}
			safe, _ := promqlParser.ParseExpr(safeQ)
			if !slices.Equal(shape(e), shape(safe)) {
				t.Fatalf("values changed the query's shape:\n%s\nwant the shape of\n%s", q, safeQ)
			}
			for _, vs := range selectorsOf(e) {
				for _, m := range vs.LabelMatchers {
					want := ""
					switch {
					case m.Name == labels.MetricName:
						want = h.Metric + strings.TrimPrefix(vs.Name, h.Metric)
					case m.Name == h.EndpointLabel:
						want = endpoint
					case slices.Contains(h.ServiceLabels, m.Name):
						want = service
					default:
						t.Fatalf("unexpected matcher %s in %s", m, q)
					}
					if m.Type != labels.MatchEqual || m.Value != want {
						t.Fatalf("matcher %s, want %s=%q", m, m.Name, want)
					}
				}
			}
		}
	})
}
