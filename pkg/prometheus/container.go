package prometheus

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// containerLabels are cAdvisor's label spellings, newest first: the kubelet's since Kubernetes
// 1.16 (namespace, pod, container), then the older pod_name and container_name. The first
// spelling whose series exist for the pod answers.
var containerLabels = []containerSpelling{
	{"namespace", "pod", "container"},
	{"namespace", "pod_name", "container_name"},
}

// containerSpelling names cAdvisor's namespace, pod and container labels.
type containerSpelling struct{ namespace, pod, container string }

// containerCounters are the counters read as their increase over the window, in the order of
// the figures they fill.
var containerCounters = []string{models.CadvisorPeriods, models.CadvisorThrottledPeriods, models.CadvisorThrottledSeconds, models.CadvisorUsageSeconds}

// ContainerCPU reads cAdvisor's CPU figures of a pod's container over the query's window,
// widened to models.ContainerRateWindow: the increase of its CFS periods, throttled periods,
// throttled seconds and CPU usage, and its quota in CPUs. With no container named, the pod's
// containers are read and the one named after the span's service, else the one with the most
// throttled time, answers (the pause container and
// the pod-level series, container "" or "POD", are left out). A figure without series is NaN
// and named in Missing; only a failed query fails the call.
func (c *Client) ContainerCPU(ctx context.Context, q models.ContainerQuery) (res models.ContainerCPU, err error) {
	if err := q.Validate(); err != nil {
		return res, err
	}
	ctx, span := upstream.StartSpan(ctx, models.Prometheus, "ContainerCPU", attribute.String("hsi.pod", q.Pod))
	defer func() { err = upstream.EndSpan(span, c.wrap(err)) }()
	start, end := q.Window(models.ContainerRateWindow)
	res = models.ContainerCPU{Namespace: q.Namespace, Pod: q.Pod, Container: q.Container, Start: start, End: end,
		Periods: math.NaN(), ThrottledPeriods: math.NaN(), ThrottledSeconds: math.NaN(), UsageSeconds: math.NaN(), QuotaCPUs: math.NaN()}
	spellings := containerLabels
	if ln := c.containers.LabelNames; len(ln) > 0 {
		spellings = append([]containerSpelling{{
			cmp.Or(ln[models.ContainerRoleNamespace], "namespace"), cmp.Or(ln[models.ContainerRolePod], "pod"), cmp.Or(ln[models.ContainerRoleContainer], "container"),
		}}, containerLabels...)
	}
	// Which of cAdvisor's metrics and label spellings Prometheus holds over the window (cached
	// for a minute, as the GPU inventory): a cluster without cAdvisor's series costs no query
	// per pod, and one with the older spelling no query under the newer.
	held := func(string) bool { return true }
	inv, err := c.seriesInventory(ctx, "ContainerInventory", c.containerMetricNames(), start, end)
	switch {
	case err == nil:
		held = inv.hasMetric
		spellings = slices.DeleteFunc(slices.Clone(spellings), func(l containerSpelling) bool { return !inv.labels[l.pod] })
	case !seriesAPIMissing(err):
		return res, err
	}
	for i, l := range spellings {
		got, found, err := c.containerFigures(ctx, q, l.namespace, l.pod, l.container, start, end, held)
		if err != nil {
			return res, err
		}
		if found || i == len(spellings)-1 {
			got.Start, got.End = start, end
			return got, nil
		}
	}
	res.Missing = c.containerMetricNames()[:len(containerCounters)+1]
	return res, nil
}

// containerMetricNames are the names of cAdvisor's series read, as the settings name them: the
// counters, the quota, then the period.
func (c *Client) containerMetricNames() []string {
	out := make([]string, 0, len(containerCounters)+2)
	for _, m := range append(slices.Clone(containerCounters), models.CadvisorQuota, models.CadvisorPeriod) {
		out = append(out, c.containers.Metric(m))
	}
	return out
}

// containerFigures reads the figures under one label spelling; found is false when no counter
// has a series for the pod.
func (c *Client) containerFigures(ctx context.Context, q models.ContainerQuery, nsLabel, podLabel, ctrLabel string, start, end time.Time, held func(metric string) bool) (models.ContainerCPU, bool, error) {
	ms := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, podLabel, q.Pod)}
	if q.Namespace != "" {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, nsLabel, q.Namespace))
	}
	if q.Container != "" {
		ms = append(ms, labels.MustNewMatcher(labels.MatchEqual, ctrLabel, q.Container))
	} else {
		// Containers only: not the pod's own cgroup (no container label) nor its pause container.
		ms = append(ms, labels.MustNewMatcher(labels.MatchNotEqual, ctrLabel, ""), labels.MustNewMatcher(labels.MatchNotEqual, ctrLabel, "POD"))
	}
	by := []string{nsLabel, podLabel, ctrLabel}
	rng := end.Sub(start)
	exprs := make([]parser.Expr, 0, len(containerCounters)+1)
	name := c.containers.Metric
	for _, m := range containerCounters {
		exprs = append(exprs, aggregateBy("sum", promCall("increase", rangeSelector(metricSelector(name(m), ms), rng)), by))
	}
	maxOver := func(m string) parser.Expr {
		return aggregateBy("max", promCall("max_over_time", rangeSelector(metricSelector(name(m), ms), rng)), by)
	}
	exprs = append(exprs, binaryExpr(parser.DIV, maxOver(models.CadvisorQuota), maxOver(models.CadvisorPeriod)))
	names := make([]string, 0, len(containerCounters)+1)
	for _, m := range append(append([]string(nil), containerCounters...), models.CadvisorQuota) {
		names = append(names, name(m))
	}
	// A figure whose series Prometheus does not hold is missing without a query.
	asked := make([]bool, len(exprs))
	for i := range exprs {
		asked[i] = held(names[i]) && (i < len(containerCounters) || held(name(models.CadvisorPeriod)))
	}
	queries := make([]string, len(exprs))
	vecs := make([]model.Vector, len(exprs))
	errs := safe.ForEach("container figure", len(exprs), engineParallelQueries, func(i int) error {
		expr, err := checked(exprs[i])
		if err != nil || !asked[i] {
			return err
		}
		queries[i] = expr
		vecs[i], _, err = c.instantVector(ctx, expr, end)
		return err
	})
	queries = slices.DeleteFunc(queries, func(q string) bool { return q == "" })
	for _, err := range errs {
		if err != nil {
			return models.ContainerCPU{}, false, err
		}
	}
	// Per container, every figure; the answer is the container asked for, else the one with the
	// most throttled time.
	type key struct{ ns, pod, ctr string }
	figures := map[key][]float64{}
	for i, vec := range vecs {
		for _, s := range vec {
			k := key{string(s.Metric[model.LabelName(nsLabel)]), string(s.Metric[model.LabelName(podLabel)]), string(s.Metric[model.LabelName(ctrLabel)])}
			if figures[k] == nil {
				figures[k] = []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()}
			}
			figures[k][i] = float64(s.Value)
		}
	}
	res := models.ContainerCPU{Namespace: q.Namespace, Pod: q.Pod, Container: q.Container, Queries: queries,
		Periods: math.NaN(), ThrottledPeriods: math.NaN(), ThrottledSeconds: math.NaN(), UsageSeconds: math.NaN(), QuotaCPUs: math.NaN()}
	var best *key
	// The container named after the span's service, else the most throttled time, then the most
	// throttled periods, then the name: one answer.
	more := func(k key, b key) bool {
		if q.Service != "" && (k.ctr == q.Service) != (b.ctr == q.Service) {
			return k.ctr == q.Service
		}
		f, g := figures[k], figures[b]
		return cmp.Or(cmp.Compare(nanZero(f[2]), nanZero(g[2])), cmp.Compare(nanZero(f[1]), nanZero(g[1])), cmp.Compare(b.ctr, k.ctr)) > 0
	}
	for k := range figures {
		if best == nil || more(k, *best) {
			k := k
			best = &k
		}
	}
	if best == nil {
		res.Missing = names
		return res, false, nil
	}
	f := figures[*best]
	res.Namespace, res.Pod, res.Container = best.ns, best.pod, best.ctr
	res.Periods, res.ThrottledPeriods, res.ThrottledSeconds, res.UsageSeconds, res.QuotaCPUs = f[0], f[1], f[2], f[3], f[4]
	for i, v := range f {
		if math.IsNaN(v) {
			res.Missing = append(res.Missing, names[i])
		}
	}
	return res, true, nil
}

func nanZero(v float64) float64 {
	if math.IsNaN(v) {
		return 0
	}
	return v
}
