package prometheus

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/dcgm"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// PromQL is built as Prometheus' own AST and printed with String(): user values only ever
// become label matcher values (quoted by the printer), never query text, so a host called
// `x"} or vector(1) #` selects nothing rather than everything.

// maxGPUSelectors bounds how many selectors one filter expands to (one per combination of the
// label aliases present): beyond it the query would be unreadably long and slow.
const maxGPUSelectors = 64

// gpuSelection is a filter expanded over label aliases: a series matches when it matches every
// matcher of any one alternative.
type gpuSelection [][]*labels.Matcher

// exactValuesMatcher matches label name against values exactly: = for one value, =~ with quoted
// alternatives for several (Prometheus anchors regular expressions at both ends).
func exactValuesMatcher(name string, values []string) (*labels.Matcher, error) {
	if len(values) == 1 {
		return labels.NewMatcher(labels.MatchEqual, name, values[0])
	}
	quoted := make([]string, len(values))
	for i, v := range values {
		quoted[i] = regexp.QuoteMeta(v)
	}
	return labels.NewMatcher(labels.MatchRegexp, name, strings.Join(quoted, "|"))
}

// gpuCondition is one filter list: the series must match one of its alternatives (one matcher
// per alias the role's label may have).
type gpuCondition []*labels.Matcher

// buildGPUSelection expands f over the label names each role goes by (aliases: role → label
// names to try). extra matchers (the filter's gpuSelector) join every alternative.
func buildGPUSelection(f models.GPUFilter, aliases func(role string) []string, extra []*labels.Matcher) (gpuSelection, error) {
	var conds []gpuCondition
	add := func(role string, values []string) error {
		if len(values) == 0 {
			return nil
		}
		var c gpuCondition
		for _, name := range aliases(role) {
			m, err := exactValuesMatcher(name, values)
			if err != nil {
				return err
			}
			c = append(c, m)
		}
		if len(c) > 0 {
			conds = append(conds, c)
		}
		return nil
	}
	var indexes, uuids []string
	for _, g := range f.GPUs {
		if models.GPUIndexOrUUID(g) {
			indexes = append(indexes, g)
		} else {
			uuids = append(uuids, g)
		}
	}
	// Indexes and UUIDs are one condition: "GPU 0 or GPU-abc" must not become "and".
	var gpuCond gpuCondition
	for role, values := range map[string][]string{models.RoleGPU: indexes, models.RoleUUID: uuids} {
		if len(values) == 0 {
			continue
		}
		for _, name := range aliases(role) {
			m, err := exactValuesMatcher(name, values)
			if err != nil {
				return nil, err
			}
			gpuCond = append(gpuCond, m)
		}
	}
	if len(gpuCond) > 0 {
		sortGPUMatchers(gpuCond)
		conds = append(conds, gpuCond)
	}
	for _, rv := range []struct {
		role   string
		values []string
	}{{models.RoleHost, f.Hosts}, {models.RoleModel, f.Models}, {models.RolePod, f.Pods}, {models.RoleNamespace, f.Namespaces}} {
		if err := add(rv.role, rv.values); err != nil {
			return nil, err
		}
	}
	sel := gpuSelection{nil}
	for _, c := range conds {
		next := make(gpuSelection, 0, len(sel)*len(c))
		for _, alt := range sel {
			for _, m := range c {
				next = append(next, append(append([]*labels.Matcher(nil), alt...), m))
			}
		}
		if len(next) > maxGPUSelectors {
			return nil, fmt.Errorf("the GPU filter expands to more than %d selectors because several label names are in use for its roles; fix the label names in the data source settings (jsonData.dcgmLabelNames)", maxGPUSelectors)
		}
		sel = next
	}
	for i := range sel {
		sel[i] = append(sel[i], extra...)
	}
	return sel, nil
}

// sortGPUMatchers orders matchers by their text, so the same filter always prints the same query.
func sortGPUMatchers(ms []*labels.Matcher) {
	slices.SortFunc(ms, func(a, b *labels.Matcher) int { return strings.Compare(a.String(), b.String()) })
}

// metricSelector selects metric with the matchers; the __name__ matcher is included as the
// parser would produce it.
func metricSelector(metric string, ms []*labels.Matcher) *parser.VectorSelector {
	name := labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, metric)
	return &parser.VectorSelector{Name: metric, LabelMatchers: append([]*labels.Matcher{name}, ms...)}
}

// metricNamesSelector selects any of the metric names with the matchers: {__name__=~"A|B", ...}.
func metricNamesSelector(metrics []string, ms []*labels.Matcher) (*parser.VectorSelector, error) {
	quoted := make([]string, len(metrics))
	for i, m := range metrics {
		quoted[i] = regexp.QuoteMeta(m)
	}
	name, err := labels.NewMatcher(labels.MatchRegexp, labels.MetricName, strings.Join(quoted, "|"))
	if err != nil {
		return nil, err
	}
	return &parser.VectorSelector{LabelMatchers: append([]*labels.Matcher{name}, ms...)}, nil
}

func promCall(fn string, args ...parser.Expr) *parser.Call {
	return &parser.Call{Func: parser.Functions[fn], Args: args}
}

func rangeSelector(vs *parser.VectorSelector, r time.Duration) *parser.MatrixSelector {
	return &parser.MatrixSelector{VectorSelector: vs, Range: r}
}

func numberLit(v float64) *parser.NumberLiteral { return &parser.NumberLiteral{Val: v} }

// parenthesized keeps a binary operand's grouping when printed: String() does not add parentheses.
func parenthesized(e parser.Expr) parser.Expr {
	if _, ok := e.(*parser.BinaryExpr); ok {
		return &parser.ParenExpr{Expr: e}
	}
	return e
}

func binaryExpr(op parser.ItemType, lhs, rhs parser.Expr) *parser.BinaryExpr {
	b := &parser.BinaryExpr{Op: op, LHS: parenthesized(lhs), RHS: parenthesized(rhs)}
	_, lnum := lhs.(*parser.NumberLiteral)
	_, rnum := rhs.(*parser.NumberLiteral)
	if !lnum && !rnum {
		card := parser.CardOneToOne
		if op == parser.LOR || op == parser.LAND || op == parser.LUNLESS {
			card = parser.CardManyToMany
		}
		b.VectorMatching = &parser.VectorMatching{Card: card}
	}
	return b
}

// unionExprs joins expressions with "or": a series of an earlier one hides the same GPU's series
// of a later one (or compares label sets without the metric name), so listing sources in order
// of preference takes each GPU's best source.
func unionExprs(es []parser.Expr) parser.Expr {
	if len(es) == 0 {
		return nil
	}
	out := es[0]
	for _, e := range es[1:] {
		out = binaryExpr(parser.LOR, out, e)
	}
	return out
}

func aggregateBy(op string, e parser.Expr, grouping []string) *parser.AggregateExpr {
	var item parser.ItemType
	switch op {
	case aggSum:
		item = parser.SUM
	case aggMax:
		item = parser.MAX
	default:
		item = parser.AVG
	}
	return &parser.AggregateExpr{Op: item, Expr: e, Grouping: grouping}
}

// aggregate combines a per-GPU expression by the plan's grouping, each GPU counted once:
// op by (grouping) (max by (identity, grouping) (e)). dcgm-exporter's --kubernetes-virtual-gpus
// copies a shared GPU's series once per pod sharing it (pod, namespace, container and vgpu
// labels differ, the value does not), so summing or averaging the copies would count the GPU
// once per pod; a GPU's series of one source are one reading, and max takes it (its
// per-process GPU_UTIL and FB_USED series of a shared GPU are below the device's).
func (p gpuPlan) aggregate(op string, e parser.Expr) parser.Expr {
	if len(p.identity) > 0 {
		by := slices.Clone(p.identity)
		for _, l := range p.grouping {
			if !slices.Contains(by, l) {
				by = append(by, l)
			}
		}
		e = &parser.AggregateExpr{Op: parser.MAX, Expr: e, Grouping: by}
	}
	return aggregateBy(op, e, p.grouping)
}

// gpuPlan holds what one GPU query's PromQL depends on besides the metric.
type gpuPlan struct {
	sel gpuSelection
	// grouping is the labels series are aggregated by (aliases of the roles shown).
	grouping []string
	// identity is the labels that name one GPU (aliases of gpuIdentityRoles in use).
	identity []string
	// counterRateWindow is the range of rate() for counters.
	counterRateWindow time.Duration
	// presenceWindow is how far back from the query's end a series counts as present for the
	// series limit (the range plus Prometheus' 5 minute look-back).
	presenceWindow time.Duration
	// limit is the series limit; the query returns at most limit+1 series so that an excess
	// shows without fetching it.
	limit int
}

// sourceExpr is one source across the selection: (rate(M{alt}[w]) or ...) × scale.
func (p gpuPlan) sourceExpr(s Source) parser.Expr {
	alts := make([]parser.Expr, 0, len(p.sel))
	for _, alt := range p.sel {
		var e parser.Expr = metricSelector(s.Metric, alt)
		if s.Counter {
			e = promCall("rate", rangeSelector(e.(*parser.VectorSelector), p.counterRateWindow))
		}
		alts = append(alts, e)
	}
	e := unionExprs(alts)
	if s.Factor() != 1 {
		e = binaryExpr(parser.MUL, e, numberLit(s.Factor()))
	}
	return e
}

// metricExpr is a plain entry's per-GPU expression over the sources present (present says
// which metric names Prometheus holds); nil when none is. A source whose unit is still to be
// read from its HELP text (inventory.resolve decides it) is never read.
func (p gpuPlan) metricExpr(m Metric, present func(string) bool) (parser.Expr, []string) {
	var es []parser.Expr
	var used []string
	for _, s := range m.Sources {
		if present(s.Metric) && s.UnitFromHelp == "" {
			es = append(es, p.sourceExpr(s))
			used = append(used, s.Metric)
		}
	}
	return unionExprs(es), used
}

// combineParts is a computed entry's per-GPU expression from its parts' expressions.
func combineParts(c dcgm.Combiner, parts []parser.Expr) parser.Expr {
	switch c {
	case dcgm.PercentOfTotal:
		return binaryExpr(parser.MUL, binaryExpr(parser.DIV, parts[0], binaryExpr(parser.ADD, parts[0], parts[1])), numberLit(100))
	case dcgm.SumOfParts:
		return binaryExpr(parser.ADD, parts[0], parts[1])
	}
	return nil
}

// presence is group by (grouping) of every selector of the given sources, each looked at over
// the presence window ending at the query's end (@ end()): the same set of groups at every
// step, so "and on (...) topk(limit+1, presence)" keeps the same series over the whole range.
func (p gpuPlan) presence(metrics []string) parser.Expr {
	var es []parser.Expr
	for _, m := range metrics {
		for _, alt := range p.sel {
			vs := metricSelector(m, alt)
			vs.StartOrEnd = parser.END
			es = append(es, promCall("last_over_time", rangeSelector(vs, p.presenceWindow)))
		}
	}
	return &parser.AggregateExpr{Op: parser.GROUP, Expr: unionExprs(es), Grouping: p.grouping}
}

// limited aggregates a per-GPU expression and keeps at most limit+1 groups, chosen by topk
// over the presence expression. Which groups topk keeps among equal values is Prometheus'
// choice, but the same expression over the same data keeps the same groups, so queries built
// on one presence expression (GPUFigures over the limit) keep the same GPUs.
func (p gpuPlan) limited(op string, e parser.Expr, presenceOf []string) parser.Expr {
	agg := p.aggregate(op, e)
	top := &parser.AggregateExpr{Op: parser.TOPK, Param: numberLit(float64(p.limit + 1)), Expr: p.presence(presenceOf)}
	b := binaryExpr(parser.LAND, agg, top)
	b.VectorMatching.On = true
	b.VectorMatching.MatchingLabels = p.grouping
	return b
}

// storedSeries selects the metrics' series across the selection as stored, metric names kept:
// M{alt} or ..., or {__name__=~"A|B", alt} or ... for several metrics. Joining alternatives
// with "or" drops no series: a series hidden by one of the same labels (but another name) on
// the left matches the left's alternative too, so it is there already.
func (p gpuPlan) storedSeries(metrics []string) (parser.Expr, error) {
	alts := make([]parser.Expr, 0, len(p.sel))
	for _, alt := range p.sel {
		if len(metrics) == 1 {
			alts = append(alts, metricSelector(metrics[0], alt))
			continue
		}
		vs, err := metricNamesSelector(metrics, alt)
		if err != nil {
			return nil, err
		}
		alts = append(alts, vs)
	}
	return unionExprs(alts), nil
}
