package prometheus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/dcgm"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// Bounds of one GPU query. Prometheus refuses range queries of more than 11,000 points per
// series; the plugin also caps the points a query can return (series limit × steps) so that
// one panel cannot hold gigabytes, raising the step instead.
const (
	MaxPointsPerSeries = 11000
	// maxPointsPerQuery bounds a GPUMetric answer: about 16 MB of points.
	maxPointsPerQuery = 1_000_000
	// maxFigureSamples bounds a GPUFigures answer (GPUs × steps, 12 figures each): about 60 MB.
	maxFigureSamples = 500_000
	// scrapeInterval is dcgm-exporter's default collect interval. Counter rates look back
	// max(4 × it, step + it), as Grafana's $__rate_interval does, so every window holds
	// enough samples for rate().
	dcgmScrapeInterval = 30 * time.Second
	// lookback is Prometheus' default look-back: a gauge sample answers for 5 minutes.
	promLookback = 5 * time.Minute
	// figureConcurrency bounds the parallel queries of GPUFigures.
	figureConcurrency = 4
)

// gpuWindow is a query's time range after alignment and step bounds.
type gpuWindow struct {
	start, end time.Time
	step       time.Duration
	notes      notices.List
}

// planGPUWindow bounds the step: at least 1 s, at least (end−start)/11,000 (Prometheus' limit),
// and at least what keeps series × points within budget. Start and end are aligned down to
// the step, as Grafana's Prometheus data source does, so consecutive refreshes hit the same
// steps (and Prometheus' caches).
func planGPUWindow(start, end time.Time, step time.Duration, series, budget int) (gpuWindow, error) {
	if end.Before(start) {
		return gpuWindow{}, backend.DownstreamError(fmt.Errorf("the time range ends (%s) before it starts (%s)", end.Format(time.RFC3339), start.Format(time.RFC3339)))
	}
	requested := max(step, time.Second)
	span := end.Sub(start).Seconds()
	minStep := time.Duration(math.Ceil(span/MaxPointsPerSeries)) * time.Second
	budgetStep := time.Duration(math.Ceil(span*float64(max(series, 1))/float64(budget))) * time.Second
	w := gpuWindow{step: max(requested, minStep, budgetStep)}
	w.step = (w.step + time.Second - 1).Truncate(time.Second)
	if budgetStep > requested && budgetStep >= minStep {
		w.notes.Infof("step raised from %s to %s to keep up to %d series within %d points; narrow the range or the filter, or lower jsonData.gpuMaxSeries, for finer steps",
			requested, w.step, series, budget)
	}
	w.start, w.end = alignToStep(start, w.step), alignToStep(end, w.step)
	return w, nil
}

func alignToStep(t time.Time, step time.Duration) time.Time {
	ns := t.UnixNano()
	return time.Unix(0, ns-ns%int64(step)).UTC()
}

// counterRateWindow is the range of rate() over counters at this step.
func counterRateWindow(step time.Duration) time.Duration {
	return max(4*dcgmScrapeInterval, step+dcgmScrapeInterval)
}

// gpuGroupingRoles are the roles series are split by at each aggregation.
func gpuGroupingRoles(aggregation string) ([]string, error) {
	switch aggregation {
	case models.AggregationGPU, "":
		return []string{models.RoleHost, models.RoleGPU, models.RoleUUID, models.RoleModel, models.RoleMIG, models.RoleMIGProfile, models.RoleDriver, models.RolePod, models.RoleNamespace, models.RoleContainer}, nil
	case models.AggregationHost:
		return []string{models.RoleHost}, nil
	case models.AggregationFleet:
		return nil, nil
	}
	return nil, backend.DownstreamError(fmt.Errorf("aggregation must be %q, %q or %q, got %q", models.AggregationGPU, models.AggregationHost, models.AggregationFleet, aggregation))
}

// gpuIdentityRoles name one GPU (classify.GPU): what GPUFigures groups by.
var gpuIdentityRoles = []string{models.RoleHost, models.RoleGPU, models.RoleUUID, models.RoleModel, models.RoleMIG, models.RoleMIGProfile}

// gpuQuery is what a GPU query is built from: the plan, and which label names carry each role.
type gpuQuery struct {
	plan  gpuPlan
	roles map[string][]string // role → label names grouped by, in order of preference
	notes notices.List
}

// prepareGPUQuery detects label names and expands the filter.
func (c *Client) prepareGPUQuery(inv *inventory, f models.GPUFilter, roles []string, w gpuWindow, limit int) (*gpuQuery, error) {
	cat := c.catalogue()
	q := &gpuQuery{roles: map[string][]string{}}
	present := func(role string) []string {
		_, fixed := c.dcgm.LabelNames[role]
		return inv.aliases(cat, role, fixed)
	}
	for _, role := range roles {
		names := present(role)
		q.roles[role] = names
		q.plan.grouping = append(q.plan.grouping, names...)
	}
	// Without a gpu or UUID label the GPUs of a host cannot be told apart: no identity then.
	if len(present(models.RoleGPU))+len(present(models.RoleUUID)) > 0 {
		for _, role := range gpuIdentityRoles {
			q.plan.identity = append(q.plan.identity, present(role)...)
		}
	}
	filtered := map[string]bool{
		models.RoleHost: len(f.Hosts) > 0, models.RoleModel: len(f.Models) > 0,
		models.RolePod: len(f.Pods) > 0, models.RoleNamespace: len(f.Namespaces) > 0,
	}
	for _, role := range []string{models.RoleHost, models.RoleModel, models.RolePod, models.RoleNamespace} {
		if filtered[role] && len(present(role)) == 0 {
			q.notes.Warnf("no DCGM series carry a %s label (tried %s), so the %s filter matches nothing; name the label in jsonData.dcgmLabelNames.%s",
				role, strings.Join(cat.Aliases(role), ", "), gpuFilterField(role), role)
		}
	}
	if len(f.GPUs) > 0 && len(present(models.RoleGPU))+len(present(models.RoleUUID)) == 0 {
		q.notes.Warn("no DCGM series carry a gpu or UUID label, so the gpus filter matches nothing")
	}
	extra, err := f.Matchers("")
	if err != nil {
		return nil, backend.DownstreamError(err)
	}
	// A filtered role with no label in use still gets the role's names: the query then
	// matches nothing, as the notice says, instead of ignoring the filter.
	aliasesForFilter := func(role string) []string {
		if names := present(role); len(names) > 0 {
			return names
		}
		return cat.Aliases(role)
	}
	if q.plan.sel, err = buildGPUSelection(f, aliasesForFilter, extra); err != nil {
		return nil, backend.DownstreamError(err)
	}
	q.plan.counterRateWindow = counterRateWindow(w.step)
	q.plan.presenceWindow = w.end.Sub(w.start) + promLookback
	q.plan.limit = limit
	return q, nil
}

func gpuFilterField(role string) string {
	switch role {
	case models.RoleHost:
		return "hosts"
	case models.RoleModel:
		return "models"
	case models.RolePod:
		return "pods"
	case models.RoleNamespace:
		return "namespaces"
	}
	return role
}

// gpuMetricQuery is an entry's per-GPU expression over the sources Prometheus holds, with the
// names used and the names tried; nil expression when a needed source is missing.
func (c *Client) gpuMetricQuery(m Metric, inv *inventory, p gpuPlan) (expr parser.Expr, used, tried []string) {
	if len(m.ComputedFrom) == 0 {
		m = inv.resolve(m)
		for _, s := range m.Sources {
			tried = append(tried, s.Metric)
		}
		e, used := p.metricExpr(m, inv.hasMetric)
		return e, used, tried
	}
	var parts []parser.Expr
	complete := true
	for _, name := range m.ComputedFrom {
		part, ok := c.catalogue().Lookup(name)
		if !ok {
			return nil, nil, tried
		}
		e, u, t := c.gpuMetricQuery(part, inv, p)
		tried = append(tried, t...)
		used = append(used, u...)
		if e == nil {
			complete = false
		}
		parts = append(parts, e)
	}
	if !complete {
		return nil, used, tried
	}
	return combineParts(m.Combine, parts), used, tried
}

func gpuMissingNotice(m Metric, tried []string) string {
	what := m.Title + " (" + m.Name + ")"
	if len(m.ComputedFrom) > 0 {
		what += ", computed from " + strings.Join(m.ComputedFrom, " and ") + ","
	}
	return fmt.Sprintf("%s: Prometheus has no series of %s in this range; enable the field in the exporter's counters file, or name your metric in jsonData.dcgmMetricNames",
		what, strings.Join(tried, " or "))
}

// GPUMetric fetches one catalogue metric (pkg/dcgm) for the GPUs matching filter,
// aggregated per GPU ("gpu"), per host ("host") or over all of them ("fleet"), from start to end
// at step (raised to Prometheus' 11,000-point limit and the plugin's point budget). Series carry
// role-named labels and values in the catalogue's unit, deprecated units converted. A metric
// Prometheus does not hold is no error: the result has no series and a notice naming the DCGM
// names tried. At most jsonData.gpuMaxSeries series come back, with a notice when more match.
func (c *Client) GPUMetric(ctx context.Context, name string, filter models.GPUFilter, aggregation string, start, end time.Time, step time.Duration) (res *models.GPUMetricResult, err error) {
	m, ok := c.catalogue().Lookup(name)
	if !ok {
		return nil, backend.DownstreamError(fmt.Errorf("unknown GPU metric %q; valid metrics are %s", name, strings.Join(dcgm.Names(), ", ")))
	}
	roles, err := gpuGroupingRoles(aggregation)
	if err != nil {
		return nil, err
	}
	if aggregation == "" {
		aggregation = models.AggregationGPU
	}
	limit := c.dcgm.SeriesLimit()
	w, err := planGPUWindow(start, end, step, limit+1, maxPointsPerQuery)
	if err != nil {
		return nil, err
	}
	ctx, span := upstream.StartSpan(ctx, models.Prometheus, "GPUMetric", attribute.String("hsi.gpu_metric", name))
	defer func() { err = upstream.EndSpan(span, err) }()

	inv, err := c.inventory(ctx, w.start.Add(-promLookback), w.end)
	if err != nil {
		return nil, err
	}
	q, err := c.prepareGPUQuery(inv, filter, roles, w, limit)
	if err != nil {
		return nil, err
	}
	inv, unitNotes := c.withUnits(ctx, inv, []Metric{m})
	res = &models.GPUMetricResult{Metric: models.GPUMetricInfo{Name: m.Name, Title: m.Title, Unit: m.Unit}, Aggregation: aggregation, Step: w.step}
	res.Notices.Merge(w.notes)
	res.Notices.Merge(q.notes)
	res.Notices.Merge(unitNotes)
	expr, used, tried := c.gpuMetricQuery(m, inv, q.plan)
	res.Sources = used
	if expr == nil {
		res.Notices.Warn(gpuMissingNotice(m, tried))
		return res, nil
	}
	res.Query = q.plan.limited(m.Aggregate, expr, used).String()
	rangeSelector, warnings, err := c.gpuQueryRange(ctx, res.Query, w)
	if err != nil {
		return nil, err
	}
	res.Notices.Merge(warnings)
	fillMetric(res, rangeSelector, q, roles, limit)
	return res, nil
}

// fillMetric puts a metric's series, named by role, into its result, at most limit of them,
// with a notice when there are none or more.
func fillMetric(res *models.GPUMetricResult, streams model.Matrix, q *gpuQuery, roles []string, limit int) {
	for _, s := range streams {
		res.Series = append(res.Series, toMetricSeries(s, q.roles, roles))
	}
	sortMetricSeries(res.Series)
	if len(res.Series) == 0 {
		// The inventory is fleet-wide: a filter can still pick only GPUs whose exporter lacks
		// the metric (an old exporter without profiling metrics, say).
		res.Notices.Warnf("%s (%s): no GPU matching the filter has series of %s in this range",
			res.Metric.Title, res.Metric.Name, strings.Join(res.Sources, " or "))
	}
	if len(res.Series) > limit {
		res.Series = res.Series[:limit]
		res.Notices.Warnf("more than %d series match; showing %d. Narrow the filter or raise jsonData.gpuMaxSeries", limit, limit)
	}
}

// GPUMetrics is GPUMetric for several catalogue metrics of one filter, aggregation and window,
// each with its own result or error (results[i], errs[i] for names[i]). They share the inventory
// and the GPUs' plan, and Prometheus answers them in one range query when their points fit one
// query's budget (maxPointsPerQuery, for gpuMaxSeries series of each): a labelled union
// (labelledUnion), split back by part, each result naming its own query. The gpuMetrics panels
// that draw several metrics and the triage's GPU evidence pay one HTTP exchange, not one per
// metric. When Prometheus refuses the union for what it asks (unionRefused), each metric is
// asked alone, so that one metric's failure stays its own; when it is down or slow, that is
// every metric's error, at the cost of one timeout.
func (c *Client) GPUMetrics(ctx context.Context, names []string, filter models.GPUFilter, aggregation string, start, end time.Time, step time.Duration) ([]*models.GPUMetricResult, []error) {
	results, errs := make([]*models.GPUMetricResult, len(names)), make([]error, len(names))
	alone := func(i int) { results[i], errs[i] = c.GPUMetric(ctx, names[i], filter, aggregation, start, end, step) }
	everyAlone := func(idx []int) { // all at once: a slow Prometheus costs one timeout, not one per wave
		safe.ForEach("GPU metric", len(idx), 0, func(j int) error { alone(idx[j]); return nil })
	}
	roles, err := gpuGroupingRoles(aggregation)
	if len(names) < 2 || err != nil {
		everyAlone(indexes(len(names)))
		return results, errs
	}
	if aggregation == "" {
		aggregation = models.AggregationGPU
	}
	var metrics []Metric
	var known []int
	for i, name := range names {
		m, ok := c.catalogue().Lookup(name)
		if !ok {
			alone(i) // its error names the valid metrics
			continue
		}
		metrics, known = append(metrics, m), append(known, i)
	}
	limit := c.dcgm.SeriesLimit()
	w, err := planGPUWindow(start, end, step, limit+1, maxPointsPerQuery)
	if err != nil || len(known) < 2 || (limit+1)*len(known)*(int(w.end.Sub(w.start)/w.step)+1) > maxPointsPerQuery {
		everyAlone(known)
		return results, errs
	}
	ctx, span := upstream.StartSpan(ctx, models.Prometheus, "GPUMetrics", attribute.StringSlice("hsi.gpu_metrics", names))
	defer func() { _ = upstream.EndSpan(span, nil) }()
	inv, err := c.inventory(ctx, w.start.Add(-promLookback), w.end)
	if err == nil {
		var q *gpuQuery
		if q, err = c.prepareGPUQuery(inv, filter, roles, w, limit); err == nil {
			inv, unitNotes := c.withUnits(ctx, inv, metrics)
			var parts []string // each part's query
			var asked []int    // index into names of each part
			for j, m := range metrics {
				i := known[j]
				res := &models.GPUMetricResult{Metric: models.GPUMetricInfo{Name: m.Name, Title: m.Title, Unit: m.Unit}, Aggregation: aggregation, Step: w.step}
				res.Notices.Merge(w.notes)
				res.Notices.Merge(q.notes)
				res.Notices.Merge(unitNotes)
				expr, used, tried := c.gpuMetricQuery(m, inv, q.plan)
				res.Sources = used
				results[i] = res
				if expr == nil {
					res.Notices.Warn(gpuMissingNotice(m, tried))
					continue
				}
				res.Query = q.plan.limited(m.Aggregate, expr, used).String()
				parts, asked = append(parts, res.Query), append(asked, i)
			}
			switch len(parts) {
			case 0:
			case 1:
				results[asked[0]], errs[asked[0]] = nil, nil
				alone(asked[0])
			default:
				if err := c.answerParts(ctx, parts, asked, results, q, roles, w, limit); err != nil {
					span.SetAttributes(attribute.String("hsi.union_error", err.Error()))
					for _, i := range asked {
						results[i] = nil
					}
					if unionRefused(err) {
						everyAlone(asked) // each metric's own answer or error
					} else {
						for _, i := range asked { // unavailable, slow: alone it would be again
							errs[i] = err
						}
					}
				}
			}
			return results, errs
		}
	}
	for _, i := range known {
		results[i], errs[i] = nil, err
	}
	return results, errs
}

// errPartsLost is a union's answer whose series lack the part label (a proxy that rewrote the
// query): its parts are asked alone.
var errPartsLost = errors.New("the union's series lost their part label")

// unionRefused says whether a union query failed for what it asked (Prometheus could not run it:
// too many samples, a query or URL too long for a proxy; or its answer lost the part label), so
// that its parts asked alone may answer. A server that is down, slow or failing would fail them
// again, after as long again: that error is every part's.
func unionRefused(err error) bool {
	if errors.Is(err, errPartsLost) {
		return true
	}
	var pe *promv1.Error
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Type {
	case promv1.ErrBadData, promv1.ErrClient, promv1.ErrExec:
		return !strings.HasSuffix(pe.Msg, ": 401") && !strings.HasSuffix(pe.Msg, ": 403")
	}
	return false
}

// answerParts asks the parts' labelled union over the window and folds each part's series into
// its result, as GPUMetric does for one.
func (c *Client) answerParts(ctx context.Context, parts []string, asked []int, results []*models.GPUMetricResult,
	q *gpuQuery, roles []string, w gpuWindow, limit int,
) error {
	union := labelledUnionText(parts)
	matrix, warnings, err := c.gpuQueryRange(ctx, union, w)
	if err != nil {
		return err
	}
	byPart, err := splitParts(matrix, func(s *model.SampleStream) model.Metric { return s.Metric }, len(parts), union)
	if err != nil {
		return c.wrap(fmt.Errorf("%w: %w", errPartsLost, err))
	}
	for j, i := range asked {
		results[i].Notices.Merge(warnings)
		fillMetric(results[i], byPart[j], q, roles, limit)
	}
	return nil
}

func indexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// gpuQueryRange runs one range query and returns its matrix and Prometheus' warnings.
func (c *Client) gpuQueryRange(ctx context.Context, q string, w gpuWindow) (model.Matrix, notices.List, error) {
	val, warnings, _, err := c.api.QueryRange(ctx, q, promv1.Range{Start: w.start, End: w.end, Step: w.step})
	if err != nil {
		return nil, nil, c.wrap(err)
	}
	rangeSelector, ok := val.(model.Matrix)
	if !ok {
		return nil, nil, c.wrap(fmt.Errorf("range query answered a %s, not a matrix: is this URL a Prometheus API?", val.Type()))
	}
	var notes notices.List
	for _, w := range warnings {
		notes.Warn("Prometheus warns: " + w)
	}
	return rangeSelector, notes, nil
}

// toMetricSeries names a stream's labels by role: the first label of the role's names that has a
// value, so GPUs of old (hostname) and new (Hostname) exporters read alike.
func toMetricSeries(s *model.SampleStream, aliases map[string][]string, roles []string) models.GPUMetricSeries {
	out := models.GPUMetricSeries{Labels: gpuRoleLabels(s.Metric, aliases, roles)}
	out.Times = make([]time.Time, 0, len(s.Values))
	out.Values = make([]float64, 0, len(s.Values))
	for _, p := range s.Values {
		out.Times = append(out.Times, p.Timestamp.Time().UTC())
		out.Values = append(out.Values, float64(p.Value))
	}
	return out
}

func gpuRoleLabels(m model.Metric, aliases map[string][]string, roles []string) map[string]string {
	out := map[string]string{}
	for _, role := range roles {
		for _, name := range aliases[role] {
			if v := string(m[model.LabelName(name)]); v != "" {
				out[role] = v
				break
			}
		}
	}
	return out
}

// sortMetricSeries orders series by host, then GPU index as a number, then the other roles.
func sortMetricSeries(ss []models.GPUMetricSeries) {
	slices.SortFunc(ss, func(a, b models.GPUMetricSeries) int { return compareGPURoles(a.Labels, b.Labels) })
}

func compareGPURoles(a, b map[string]string) int {
	if c := models.GPUOf(a).Compare(models.GPUOf(b)); c != 0 {
		return c
	}
	for _, role := range models.GPURoles {
		if c := strings.Compare(a[role], b[role]); c != 0 {
			return c
		}
	}
	return 0
}

// GPULabelValues lists the values of a role's labels (every label name the role goes by) among
// the DCGM series matching filter between start and end: hosts, GPU indexes, UUIDs, models,
// pods, namespaces, containers or MIG instances, for the editor's pickers. GPU indexes sort as
// numbers, the rest as text.
func (c *Client) GPULabelValues(ctx context.Context, role string, filter models.GPUFilter, start, end time.Time) (values []string, err error) {
	if !slices.Contains(models.GPURoles, role) {
		return nil, backend.DownstreamError(fmt.Errorf("unknown GPU label role %q; valid roles are %s", role, strings.Join(models.GPURoles, ", ")))
	}
	if end.Before(start) {
		return nil, backend.DownstreamError(errors.New("the time range ends before it starts"))
	}
	ctx, span := upstream.StartSpan(ctx, models.Prometheus, "GPULabelValues", attribute.String("hsi.gpu_role", role))
	defer func() { err = upstream.EndSpan(span, err) }()

	inv, err := c.inventory(ctx, start, end)
	if err != nil {
		return nil, err
	}
	q, err := c.prepareGPUQuery(inv, filter, []string{role}, gpuWindow{start: start, end: end, step: time.Minute}, c.dcgm.SeriesLimit())
	if err != nil {
		return nil, err
	}
	present := inv.presentMetrics(c.catalogue().MetricNames())
	if len(present) == 0 || len(q.roles[role]) == 0 {
		return []string{}, nil
	}
	var matches []string
	for _, alt := range q.plan.sel {
		vs, err := metricNamesSelector(present, alt)
		if err != nil {
			return nil, backend.DownstreamError(err)
		}
		matches = append(matches, vs.String())
	}
	seen := map[string]bool{}
	values = []string{}
	for _, name := range q.roles[role] {
		vs, _, _, err := c.api.LabelValues(ctx, name, matches, start, end)
		if err != nil {
			return nil, c.wrap(err)
		}
		for _, v := range vs {
			if s := string(v); s != "" && !seen[s] {
				seen[s] = true
				values = append(values, s)
			}
		}
	}
	slices.SortFunc(values, func(a, b string) int {
		ai, aerr := strconv.Atoi(a)
		bi, berr := strconv.Atoi(b)
		if aerr == nil && berr == nil {
			return ai - bi
		}
		return strings.Compare(a, b)
	})
	return values, nil
}
