package prometheus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// gpuFigure is one reading of classify.Figures and the catalogue entry that answers it (units
// agree: percent, 0..1 ratios, B/s, °C, MHz, W, the raw bitmask).
type gpuFigure struct {
	metric string
	set    func(*classify.Figures, float64)
}

var gpuFigures = []gpuFigure{
	{"gpu_utilization", func(f *classify.Figures, v float64) { f.GPUUtil = v }},
	{"mem_copy_utilization", func(f *classify.Figures, v float64) { f.MemCopyUtil = v }},
	{"sm_active", func(f *classify.Figures, v float64) { f.SMActive = v }},
	{"gr_engine_active", func(f *classify.Figures, v float64) { f.GrEngine = v }},
	{"dram_active", func(f *classify.Figures, v float64) { f.DRAMActive = v }},
	{"tensor_active", func(f *classify.Figures, v float64) { f.Tensor = v }},
	{"pcie_tx", func(f *classify.Figures, v float64) { f.PCIeTx = v }},
	{"pcie_rx", func(f *classify.Figures, v float64) { f.PCIeRx = v }},
	{"temperature", func(f *classify.Figures, v float64) { f.TempC = v }},
	{"sm_clock", func(f *classify.Figures, v float64) { f.SMClockMHz = v }},
	{"power", func(f *classify.Figures, v float64) { f.PowerW = v }},
	{"clock_events", func(f *classify.Figures, v float64) { f.ClockEvents = v }},
	{"fb_used", func(f *classify.Figures, v float64) { f.FBUsed = v }},
	{"fb_free", func(f *classify.Figures, v float64) { f.FBFree = v }},
}

// figuresOf are the figures GPUFigures fetches for filter: those filter.Figures names, else all.
func figuresOf(filter models.GPUFilter) []gpuFigure {
	if len(filter.Figures) == 0 {
		return gpuFigures
	}
	var out []gpuFigure
	for _, fig := range gpuFigures {
		if slices.Contains(filter.Figures, fig.metric) {
			out = append(out, fig)
		}
	}
	return out
}

// seriesPerGPUAndMetric bounds the series index GPUFigures reads to count GPUs: (limit+1) GPUs ×
// metrics × this many series each (a GPU gets a new series when its pod label changes). A fleet
// with more is treated as over the limit, which is always correct, only slower.
const seriesPerGPUAndMetric = 4

// GPUFigures fetches, in parallel, every figure classify.Figures holds (or those filter.Figures
// names; the others stay NaN) for each GPU matching filter, from start to end at step, and joins
// them per GPU on one step grid.
//
//   - Series are per GPU (classify.GPU: host, gpu index, UUID, model, MIG instance and
//     profile), ordered by host, index, then MIG instance: two MIG instances of one GPU are two.
//   - Samples cover every step from the aligned start to the aligned end; a figure without a
//     value at a step is NaN, and a figure the exporter does not send is NaN throughout, with a
//     notice naming the DCGM names tried. PCIe is in bytes/s (deprecated KB/s series converted).
//     Where a GPU exports several sources of a figure (PCIe in bytes and in KB/s), the
//     preferred one's value is used, as GPUMetric's "or" does; several series of one GPU and
//     source (copies per pod of a shared GPU, a pod label that changed) are one reading: their
//     largest value is used, never their sum.
//   - step is raised to at least 1 s, (end−start)/11,000 and what keeps gpuMaxSeries GPUs within
//     500,000 samples; start and end are aligned down to it. A window shorter than the step gives
//     one sample: Prometheus' latest value within its 5 minute look-back.
//   - At most jsonData.gpuMaxSeries GPUs come back, the same GPUs in every figure, with a notice
//     when more match.
//   - Errors name Prometheus and its URL; notices never fail the call. The first failing query
//     cancels the others.
//
// The figures cost about what Prometheus takes to return their series as stored: the series
// index (no samples) says how many GPUs match; when they fit in the limit, which is the usual
// case, each figure is one plain selector of its sources, its "or" and aggregation done here.
// Only a fleet over the limit pays for PromQL that picks the same GPUs in every figure
// (gpuPlan.limited).
func (c *Client) GPUFigures(ctx context.Context, filter models.GPUFilter, start, end time.Time, step time.Duration) (out []classify.GPUSeries, found notices.List, err error) {
	limit := c.dcgm.SeriesLimit()
	w, err := planGPUWindow(start, end, step, limit+1, maxFigureSamples)
	if err != nil {
		return nil, nil, err
	}
	ctx, span := upstream.StartSpan(ctx, models.Prometheus, "GPUFigures")
	defer func() { err = upstream.EndSpan(span, err) }()

	inv, err := c.inventory(ctx, w.start.Add(-promLookback), w.end)
	if err != nil {
		return nil, nil, err
	}
	q, err := c.prepareGPUQuery(inv, filter, gpuIdentityRoles, w, limit)
	if err != nil {
		return nil, nil, err
	}
	found.Merge(w.notes)
	found.Merge(q.notes)
	var figureMetrics []Metric
	for _, fig := range figuresOf(filter) {
		if m, ok := c.catalogue().Lookup(fig.metric); ok {
			figureMetrics = append(figureMetrics, m)
		}
	}
	inv, unitNotes := c.withUnits(ctx, inv, figureMetrics)
	found.Merge(unitNotes)
	jobs, read, missing, err := c.figureJobs(inv, q.plan, figuresOf(filter))
	if err != nil {
		return nil, nil, err
	}
	found.Merge(missing)
	if len(jobs) == 0 {
		return nil, found, nil
	}

	gpus, series, pods, err := c.countGPUs(ctx, inv, q, read, w)
	if err != nil {
		// A server or proxy without the series API: the ranked queries need none. Any other
		// failure (down, slow, refused) would only fail them again, after as long.
		if !seriesAPIMissing(err) {
			return nil, nil, err
		}
		span.SetAttributes(attribute.String("hsi.gpu_count_error", err.Error()))
		gpus = limit + 1
	}
	overLimit := gpus > limit
	span.SetAttributes(attribute.Int("hsi.gpus", gpus), attribute.Bool("hsi.gpu_limit_exceeded", overLimit))
	if gpus == 0 { // a filter matching nothing: the index says so, no query need read samples
		return nil, found, nil
	}
	g := figureGrid{start: w.start, step: w.step, steps: int(w.end.Sub(w.start)/w.step) + 1}
	tasks, err := c.figureTasks(q.plan, jobs, read, overLimit, series*g.steps)
	if err != nil {
		return nil, nil, err
	}
	byGPU := map[classify.GPU]*classify.GPUSeries{}
	var mu sync.Mutex
	// The figures are needed together: the first failure cancels the queries still to come.
	err = safe.FailFast(ctx, "GPU figure query", len(tasks), figureConcurrency, func(ctx context.Context, i int) error {
		m, ws, err := c.gpuQueryRange(ctx, tasks[i].query, w)
		if err != nil {
			return err
		}
		// Folded as each answer arrives, so that its decoded samples can go before the next.
		mu.Lock()
		defer mu.Unlock()
		found.Merge(ws)
		for _, j := range tasks[i].jobs {
			g.fold(byGPU, jobs[j], m, q.roles, tasks[i].stored, len(tasks[i].jobs) > 1)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for gpu, gs := range byGPU {
		gs.Pods = pods[gpu]
		out = append(out, *gs)
	}
	slices.SortFunc(out, func(a, b classify.GPUSeries) int { return a.GPU.Compare(b.GPU) })
	if len(out) > limit {
		out = out[:limit]
		found.Warnf("more than %d GPUs match; the first %d are used. Narrow the filter or raise jsonData.gpuMaxSeries", limit, limit)
	}
	return out, found, nil
}

// maxBatchedSamples bounds the samples (series × steps) of the one query that reads every stored
// figure at once: a request's spans (a few seconds at one-second steps) and a panel's hour of a
// few GPUs (the GPU state panels, the class table) pay one round trip instead of one per figure,
// and Prometheus one query's overhead. About 1 MB of samples, 3 MB of reply. Bigger reads (a
// day of a fleet) keep one query per figure, each folded and dropped before the next arrives,
// so that they never hold every figure's samples at once.
const maxBatchedSamples = 60_000

// figureTask is one query of GPUFigures and the jobs its answer is folded into.
type figureTask struct {
	query  string
	jobs   []int
	stored bool // the jobs read their series as stored (figureJob.asStored)
}

// figureTasks plans the queries: one per job, or, under the limit and when the series the index
// listed hold at most maxBatchedSamples over the window (samples: series × steps), one for every
// job read as stored (their sources' names in one selector, each series folded into the job
// whose source it is) and one per other job.
func (c *Client) figureTasks(p gpuPlan, jobs []figureJob, read []string, overLimit bool, samples int) ([]figureTask, error) {
	var tasks []figureTask
	var batch []int
	var names []string
	for i, j := range jobs {
		if !overLimit && j.asStored() && samples <= maxBatchedSamples {
			batch = append(batch, i)
			for _, n := range j.sourceNames() {
				if !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
			continue
		}
		e, err := p.figureQuery(j, read, overLimit)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, figureTask{query: e.String(), jobs: []int{i}, stored: !overLimit && j.asStored()})
	}
	if len(batch) > 0 {
		e, err := p.storedSeries(names)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, figureTask{query: e.String(), jobs: batch, stored: true})
	}
	return tasks, nil
}

// figureJob is one figure to fetch: its catalogue entry, the entry's per-GPU expression over
// the sources Prometheus holds, and those sources in order of preference.
type figureJob struct {
	fig     gpuFigure
	metric  Metric
	expr    parser.Expr
	sources []Source // the present sources of a plain entry; none for a computed one
}

// asStored says whether the figure can be read from its series as stored: a plain entry whose
// sources are gauges. Counters need rate() and computed entries arithmetic across metrics, so
// those are left to PromQL.
func (j figureJob) asStored() bool {
	if len(j.metric.ComputedFrom) > 0 || len(j.sources) == 0 {
		return false
	}
	for _, s := range j.sources {
		if s.Counter {
			return false
		}
	}
	return true
}

// sourceNames are the metric names of the job's sources, in order of preference.
func (j figureJob) sourceNames() []string {
	out := make([]string, len(j.sources))
	for i, s := range j.sources {
		out[i] = s.Metric
	}
	return out
}

// figureJobs plans one job per figure Prometheus holds a source of; the others become notices.
// read lists every metric name the jobs read.
func (c *Client) figureJobs(inv *inventory, p gpuPlan, figures []gpuFigure) (jobs []figureJob, read []string, missing notices.List, err error) {
	for _, fig := range figures {
		m, ok := c.catalogue().Lookup(fig.metric)
		if !ok {
			return nil, nil, nil, fmt.Errorf("catalogue lacks %s", fig.metric)
		}
		m = inv.resolve(m)
		expr, used, tried := c.gpuMetricQuery(m, inv, p)
		if expr == nil {
			missing.Warn(gpuMissingNotice(m, tried) + "; its figure is NaN")
			continue
		}
		j := figureJob{fig: fig, metric: m, expr: expr}
		if len(m.ComputedFrom) == 0 {
			for _, s := range m.Sources {
				if inv.hasMetric(s.Metric) {
					j.sources = append(j.sources, s)
				}
			}
		}
		jobs = append(jobs, j)
		for _, u := range used {
			if !slices.Contains(read, u) {
				read = append(read, u)
			}
		}
	}
	return jobs, read, missing, nil
}

// countGPUs counts the GPUs with series of metrics in the window (and its look-back) from the
// series index alone: Prometheus reads no sample to answer /api/v1/series. A count it cannot
// tell (the answer reached the bound it was asked for) is limit+1: over the limit. The same
// label sets say which pods dcgm-exporter mapped each GPU to; series is how many there are.
func (c *Client) countGPUs(ctx context.Context, inv *inventory, q *gpuQuery, metrics []string, w gpuWindow) (gpus, series int, _ map[classify.GPU][]classify.Pod, _ error) {
	matches := make([]string, 0, len(q.plan.sel))
	for _, alt := range q.plan.sel {
		vs, err := metricNamesSelector(metrics, alt)
		if err != nil {
			return 0, 0, nil, err
		}
		matches = append(matches, vs.String())
	}
	bound := (q.plan.limit + 1) * len(metrics) * seriesPerGPUAndMetric
	podRoles := map[string][]string{}
	for _, role := range []string{models.RolePod, models.RoleNamespace} {
		_, fixed := c.dcgm.LabelNames[role]
		podRoles[role] = inv.aliases(c.catalogue(), role, fixed)
	}
	// Of each series, the labels naming its GPU and its pod.
	var keep []string
	for _, roles := range []map[string][]string{q.roles, podRoles} {
		for _, names := range roles {
			keep = append(keep, names...)
		}
	}
	// Prometheus' warnings are left out: one says the answer was cut at the bound, which is
	// handled here; the others come again with the figures' queries.
	sets, err := c.seriesLabels(ctx, matches, w.start.Add(-promLookback), w.end, uint64(bound), keep)
	if err != nil {
		return 0, 0, nil, c.wrap(err)
	}
	if len(sets) >= bound {
		return q.plan.limit + 1, len(sets), nil, nil
	}
	pods := map[classify.GPU][]classify.Pod{}
	for _, ls := range sets {
		gpu := models.GPUOf(gpuRoleLabels(model.Metric(ls), q.roles, gpuIdentityRoles))
		p := gpuRoleLabels(model.Metric(ls), podRoles, []string{models.RolePod, models.RoleNamespace})
		pod := classify.Pod{Namespace: p[models.RoleNamespace], Name: p[models.RolePod]}
		if _, ok := pods[gpu]; !ok {
			pods[gpu] = nil
		}
		if pod.Name != "" && !slices.Contains(pods[gpu], pod) {
			pods[gpu] = append(pods[gpu], pod)
		}
	}
	for _, ps := range pods {
		slices.SortFunc(ps, func(a, b classify.Pod) int {
			return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
		})
	}
	return len(pods), len(sets), pods, nil
}

// seriesLabels asks for the series matching matches, each with the labels named in keep only
// (queryAPI.SeriesLabels; through client_golang's Series for another API).
func (c *Client) seriesLabels(ctx context.Context, matches []string, start, end time.Time, limit uint64, keep []string) ([]model.LabelSet, error) {
	if api, ok := c.api.(interface {
		SeriesLabels(ctx context.Context, matches []string, start, end time.Time, limit uint64, keep []string) ([]model.LabelSet, promv1.Warnings, promv1.Infos, error)
	}); ok {
		sets, _, _, err := api.SeriesLabels(ctx, matches, start, end, limit, keep)
		return sets, err
	}
	sets, _, _, err := c.api.Series(ctx, matches, start, end, promv1.WithLimit(limit))
	return cutLabels(sets, keep), err
}

// seriesAPIMissing says whether the series call failed because the server does not serve the
// series API (404 or 405 from a proxy or a Prometheus-like store, or a request it cannot read),
// rather than because Prometheus is unavailable.
func seriesAPIMissing(err error) bool {
	var pe *promv1.Error
	if !errors.As(err, &pe) {
		return false
	}
	switch pe.Type {
	case promv1.ErrClient:
		return strings.HasSuffix(pe.Msg, ": 404") || strings.HasSuffix(pe.Msg, ": 405")
	case promv1.ErrBadData:
		return true
	}
	return false
}

// figureQuery is the PromQL of one figure. Within the limit, a plain entry is its sources'
// series as stored (figureGrid.fold takes each GPU's preferred source and aggregates) and any
// other entry is aggregated per GPU; over it, every figure keeps the same GPUs through one
// series-limit expression over read, every metric the figures read.
func (p gpuPlan) figureQuery(j figureJob, read []string, overLimit bool) (parser.Expr, error) {
	switch {
	case overLimit:
		return p.limited(j.metric.Aggregate, j.expr, read), nil
	case j.asStored():
		return p.storedSeries(j.sourceNames())
	}
	return p.aggregate(j.metric.Aggregate, j.expr), nil
}

// figureGrid is the step grid of a GPUFigures answer.
type figureGrid struct {
	start time.Time
	step  time.Duration
	steps int
}

// index is the step a sample's timestamp falls on; false outside the grid.
func (g figureGrid) index(t model.Time) (int, bool) {
	k := int(math.Round(float64(t.Time().Sub(g.start)) / float64(g.step)))
	return k, k >= 0 && k < g.steps
}

func (g figureGrid) newSeries(gpu classify.GPU) *classify.GPUSeries {
	gs := &classify.GPUSeries{GPU: gpu, Samples: make([]classify.Sample, g.steps)}
	for k := range gs.Samples {
		gs.Samples[k] = classify.Sample{Time: g.start.Add(time.Duration(k) * g.step), Figures: classify.Missing()}
	}
	return gs
}

// figureSeries is one answered series of a figure: its source's rank in the figure's order of
// preference (0 first), the scale to the catalogue's unit, and its labels without the metric
// name, which is what PromQL's "or" compares.
type figureSeries struct {
	stream *model.SampleStream
	rank   int
	scale  float64
	labels string
}

// fold sets job's figure in each GPU's samples from its answer m. stored says m holds the
// sources' series as stored (names kept, not scaled): then, as PromQL's "A or B × scale" does
// at each step, a source's series hides a less preferred source's series of the same labels,
// and what is left is scaled and aggregated as the catalogue entry says. An aggregated answer
// already has one series per GPU (or per label alias in use, combined the same way).
func (g figureGrid) fold(byGPU map[classify.GPU]*classify.GPUSeries, job figureJob, m model.Matrix, roles map[string][]string, stored, batched bool) {
	rank := map[model.LabelValue]int{}
	for i, s := range job.sources {
		rank[model.LabelValue(s.Metric)] = i
	}
	perGPU := map[classify.GPU][]figureSeries{}
	var order []classify.GPU
	for _, s := range m {
		fs := figureSeries{stream: s, scale: 1}
		if stored {
			r, ok := rank[s.Metric[model.MetricNameLabel]]
			if !ok && len(job.sources) == 1 && !batched {
				ok = true // a server that drops the name of a lone selector's series
			}
			if !ok {
				continue
			}
			fs.rank, fs.scale = r, job.sources[r].Factor()
		}
		gpu := models.GPUOf(gpuRoleLabels(s.Metric, roles, gpuIdentityRoles))
		if _, seen := perGPU[gpu]; !seen {
			order = append(order, gpu)
		}
		perGPU[gpu] = append(perGPU[gpu], fs)
	}
	for _, gpu := range order {
		gs := byGPU[gpu]
		if gs == nil {
			gs = g.newSeries(gpu)
			byGPU[gpu] = gs
		}
		g.set(gs, job, perGPU[gpu])
	}
}

// set writes one GPU's value of the figure at each step from its series.
func (g figureGrid) set(gs *classify.GPUSeries, job figureJob, series []figureSeries) {
	if len(series) == 1 { // the usual case: one series, nothing to prefer or combine
		s := series[0]
		for _, p := range s.stream.Values {
			if k, ok := g.index(p.Timestamp); ok {
				v := float64(p.Value)
				if s.scale != 1 {
					v *= s.scale
				}
				job.fig.set(&gs.Samples[k].Figures, v)
			}
		}
		return
	}
	// Each series on the grid, with which steps it has a value at.
	values := make([][]float64, len(series))
	has := make([][]bool, len(series))
	for i, s := range series {
		values[i], has[i] = make([]float64, g.steps), make([]bool, g.steps)
		for _, p := range s.stream.Values {
			if k, ok := g.index(p.Timestamp); ok {
				values[i][k], has[i][k] = float64(p.Value), true
			}
		}
	}
	// Only series of different sources are compared; their labels are worked out for that.
	if slices.ContainsFunc(series, func(s figureSeries) bool { return s.rank > 0 }) {
		for i := range series {
			series[i].labels = withoutName(series[i].stream.Metric)
		}
	}
	// hiders[i]: the more preferred series of the same labels, which hide series i where they
	// have a value.
	hiders := make([][]int, len(series))
	for i := range series {
		for h := range series {
			if series[h].rank < series[i].rank && series[h].labels == series[i].labels {
				hiders[i] = append(hiders[i], h)
			}
		}
	}
	for k := range g.steps {
		// Series of one GPU and source are one reading: copies per pod of a shared GPU
		// (--kubernetes-virtual-gpus), a pod label that changed. Max takes it once, as
		// gpuPlan.aggregate does in PromQL.
		var agg maxReading
	next:
		for i, s := range series {
			if !has[i][k] {
				continue
			}
			for _, h := range hiders[i] {
				if has[h][k] {
					continue next
				}
			}
			agg.add(values[i][k] * s.scale)
		}
		if agg.n > 0 {
			job.fig.set(&gs.Samples[k].Figures, agg.v)
		}
	}
}

func withoutName(m model.Metric) string {
	c := m.Clone()
	delete(c, model.MetricNameLabel)
	return c.String()
}

// maxReading is the largest of one step's values, as PromQL's max: a NaN is skipped unless
// every value is NaN.
type maxReading struct {
	n int
	v float64
}

func (m *maxReading) add(v float64) {
	m.n++
	if m.n == 1 || m.v < v || math.IsNaN(m.v) {
		m.v = v
	}
}
