package correlate

import (
	"context"
	"fmt"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/triage"
)

// TriageSources are the stores the triage reads; each one unavailable or failing leaves its
// classes unread, which the answer's signals and notices say.
type TriageSources struct {
	GPUs   Source[GPUMetrics]
	Kube   Source[KubeStates]
	Traces Source[FailedRequests]
}

// MaxTriageTraces is the most failed traces a triage reads per service: Jaeger's search returns
// the most recent first, so a storm of failures is sampled by its latest.
const MaxTriageTraces = 200

// triageConcurrency bounds the triage's upstream calls at once (DCGM metrics and trace searches).
const triageConcurrency = 4

// Triage reads the range's container terminations, failed requests and GPU health series in
// parallel, then classifies them (triage.Triage). It fails only when every store did (or none
// is set up), with the GPU store's reason first.
func Triage(ctx context.Context, src TriageSources, q *models.TriageQuery, join models.SpanMatch, from, to time.Time, step time.Duration) (*triage.Answer, error) {
	ev := &triage.Evidence{Start: from, End: to, Join: join, Scope: q.GPUFilter, GPU: map[string]*models.GPUMetricResult{}}
	parts := make([]notices.List, 3) // each part's own: they run in parallel
	safe.ForEach("triage", 3, 0, func(part int) error {
		switch part {
		case 0:
			ev.GPU, ev.GPUFailed, ev.GPUErr = triageGPUs(ctx, src.GPUs, q.GPUFilter, from, to, step)
		case 1:
			k, err := get(src.Kube, func(k KubeStates) (models.KubeAnswer, error) {
				return k.ContainerTerminations(ctx, q.GPUFilter, from, to)
			})
			ev.Terminations, ev.Kube.Err, ev.Kube.Missing = k.Terminations, err, k.Missing
			if err == nil && !k.Missing {
				ev.Kube.Detail = fmt.Sprintf("%d container restarts in the range, dated to %s steps", len(k.Terminations), k.Step)
			}
			parts[part] = k.Notices
		case 2:
			var partial error
			ev.FailedTraces, ev.Traces, partial = failedTraces(ctx, src.Traces, q.Services, from, to)
			if partial != nil {
				parts[part].Warnf("Failed requests may be missing: %v", partial)
			}
		}
		return nil
	})
	if ev.GPUErr != nil && ev.Kube.Err != nil && ev.Traces.Err != nil {
		return nil, fmt.Errorf("GPU series: %w; kube-state-metrics: %w; failed requests: %w", ev.GPUErr, ev.Kube.Err, ev.Traces.Err)
	}
	ans := triage.Triage(ev, q.Classes)
	var notes notices.List
	for _, p := range parts {
		notes = append(notes, p...)
	}
	ans.Notices = append(notes, ans.Notices...)
	return ans, nil
}

// triageGPUs reads triage.GPUMetrics per GPU, all at once (askGPUMetrics: one query where the
// store can, else every metric in parallel), so a slow Prometheus costs one timeout, not one per
// wave of metrics. A metric that fails is filed in failed (its signal says so); the answer fails
// only when every metric did.
func triageGPUs(ctx context.Context, src Source[GPUMetrics], f models.GPUFilter, from, to time.Time, step time.Duration) (map[string]*models.GPUMetricResult, map[string]error, error) {
	gpus, err := src.Get()
	if err != nil {
		return nil, nil, err
	}
	names := triage.GPUMetrics
	results, errs := askGPUMetrics(ctx, gpus, names, f, models.AggregationGPU, from, to, step, len(names))
	out, failed := map[string]*models.GPUMetricResult{}, map[string]error{}
	for i, name := range names {
		if errs[i] != nil {
			failed[name] = errs[i]
			out[name] = &models.GPUMetricResult{Metric: models.GPUMetricInfo{Name: name}}
			continue
		}
		out[name] = results[i]
	}
	if len(failed) == len(names) {
		return nil, nil, errs[0]
	}
	return out, failed, nil
}

// failedTraces searches each service (or every service the trace store knows, at most
// MaxTriageServices) for the range's failed traces, in parallel.
// partial is why some searches failed while others answered.
func failedTraces(ctx context.Context, src Source[FailedRequests], services []string, from, to time.Time) (_ []*models.Trace, _ triage.Read, partial error) {
	store, err := src.Get()
	if err != nil {
		return nil, triage.Read{Err: err}, nil
	}
	var read triage.Read
	if len(services) == 0 {
		all, _, err := store.Services(ctx)
		if err != nil {
			return nil, triage.Read{Err: err}, nil
		}
		services = searchableServices(all)
		if len(services) == 0 {
			return nil, triage.Read{Missing: true, Detail: "the trace store knows no service yet"}, nil
		}
		if len(services) > models.MaxTriageServices {
			read.Detail = fmt.Sprintf("the first %d of %d services (alphabetically; set services to search others); ", models.MaxTriageServices, len(services))
			services = services[:models.MaxTriageServices]
		}
	}
	found := make([][]*models.Trace, len(services))
	errs := safe.ForEach("failed traces", len(services), triageConcurrency, func(i int) (err error) {
		found[i], err = store.FailedTraces(ctx, models.TraceSearchQuery{Service: services[i], Start: from, End: to, Limit: MaxTriageTraces})
		return err
	})
	seen := map[string]bool{}
	var out []*models.Trace
	failed, full := 0, 0
	var firstErr error
	for i := range services {
		if errs[i] != nil {
			failed++
			if firstErr == nil {
				firstErr = fmt.Errorf("%s: %w", services[i], errs[i])
			}
			continue
		}
		if len(found[i]) >= MaxTriageTraces {
			full++
		}
		for _, t := range found[i] {
			if !seen[t.TraceID] {
				seen[t.TraceID] = true
				out = append(out, t)
			}
		}
	}
	if failed == len(services) {
		return nil, triage.Read{Err: firstErr}, nil
	}
	read.Detail += fmt.Sprintf("%d failed traces in %d services searched", len(out), len(services)-failed)
	if full > 0 {
		read.Detail += fmt.Sprintf("; %d services had %d or more, so only their most recent are read", full, MaxTriageTraces)
	}
	if failed > 0 {
		read.Detail += fmt.Sprintf("; %d of %d searches failed", failed, len(services))
		partial = fmt.Errorf("%d of %d trace searches failed: %w", failed, len(services), firstErr)
	}
	return out, read, partial
}
