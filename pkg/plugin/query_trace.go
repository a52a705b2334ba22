package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// gpuJoinStep is the step of the GPU series the trace query reads. Spans last milliseconds to
// seconds, so the finest step Prometheus serves well: each span's window runs to one step after
// its end (see correlate.JoinTrace), so every span gets at least one reading. DCGM's own sampling
// (often 15–30 s) stays the real resolution; the notice says so.
const gpuJoinStep = time.Second

// queryTrace answers the request-level join for one trace: a table with one row per span
// (durations, self time, its own CPU and allocation profile totals, hot function, GPU class and
// figures over its window) and the trace's flame graph. After the trace is read, Pyroscope
// (CPU and allocations) and Prometheus are asked in parallel; an upstream that fails empties its
// columns with a notice naming it, and only a trace that cannot be read at all, with no profile
// to show instead, fails the query.
func (d *Datasource) queryTrace(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	tq, err := models.ParseTraceQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeTrace, err)
	}
	rq := correlate.RequestProfileQuery{
		TraceID: tq.TraceID, LabelSelector: "{}", ProfileTypeID: tq.ProfileTypeID, MaxNodes: tq.MaxNodes,
		From: q.TimeRange.From, To: q.TimeRange.To,
	}
	links := d.traceLinks(ctx)
	pyroErr := d.unavailable(&d.settings.Pyroscope)

	trace, jaegerErr := d.traceFromJaeger(ctx, tq.TraceID)
	if jaegerErr != nil {
		// Without spans there are no rows; the flame graph may still come from the trace_id label.
		if pyroErr != nil {
			return errorResponse(jaegerErr)
		}
		rp, err := d.profileOfTrace(ctx, rq, nil, jaegerErr)
		if err != nil {
			return errorResponse(err)
		}
		spans := frames.TraceSpans(tq.TraceID, nil, tq.ProfileTypeID, tq.AllocTypeID, links)
		spans.Meta.Notices = []data.Notice{frames.Warning(fmt.Sprintf("No span table: could not read trace %s (%v).", tq.TraceID, jaegerErr))}
		return withFrames(spans, flameGraphFrame(rp, tq.ProfileTypeID))
	}

	a := d.traceUpstreams(ctx, tq, rq, trace, pyroErr)
	rows := correlate.JoinTrace(correlate.TraceJoin{
		Trace: trace, CPU: a.cpuSpans(), Alloc: a.alloc,
		GPUSeries: a.gpu, GPUStep: a.gpuStep, GPUsKnown: a.gpuErr == nil,
		Classify: classifier(a.gpu, d.settings.Classify.Thresholds),
		Join:     d.settings.Join,
	})
	kernelNotices := d.spanKernelTimes(ctx, trace.TraceID, rows)
	spans := frames.TraceSpans(trace.TraceID, rows, tq.ProfileTypeID, tq.AllocTypeID, links)
	spans.Meta.Notices = append(d.traceNotices(tq, trace, rows, a), kernelNotices...)
	out := []*data.Frame{spans}
	if a.cpu != nil {
		out = append(out, flameGraphFrame(a.cpu, tq.ProfileTypeID))
	}
	return withFrames(out...)
}

func flameGraphFrame(rp *correlate.RequestProfile, profileTypeID string) *data.Frame {
	f := frames.FlameGraphTree(frames.FlameGraphFrameName, rp.Tree, profileTypeID)
	f.Meta.Notices = dataNotices(rp.Notices)
	return f
}

// traceAnswers is what the upstreams said about one trace; each part has its own error.
type traceAnswers struct {
	cpu    *correlate.RequestProfile
	cpuErr error

	alloc      correlate.SpanProfiles
	allocNotes []string
	allocErr   error

	gpu        []classify.GPUSeries
	gpuStep    time.Duration
	gpuNotices []string
	gpuErr     error
	gpuHosts   []string
}

func (a *traceAnswers) cpuSpans() correlate.SpanProfiles {
	if a.cpu == nil {
		return nil
	}
	return a.cpu.Spans
}

// traceUpstreams asks, in parallel: Pyroscope for the trace's CPU profile (per span and whole),
// Pyroscope for each profiled span's allocations, and Prometheus for the GPUs of the trace's
// hosts. It takes about as long as the slowest of them.
func (d *Datasource) traceUpstreams(ctx context.Context, tq *models.TraceQuery, rq correlate.RequestProfileQuery, trace *jaeger.Trace, pyroErr error) *traceAnswers {
	// A call that panics (fanOut logs it) leaves these errors in place.
	a := &traceAnswers{cpuErr: safe.ErrPanicked, allocErr: safe.ErrPanicked, gpuErr: safe.ErrPanicked}
	fanOut(3, func(i int) {
		switch i {
		case 0:
			if pyroErr != nil {
				a.cpuErr = pyroErr
				return
			}
			a.cpu, a.cpuErr = d.profileOfTrace(ctx, rq, trace, nil)
		case 1:
			if pyroErr != nil {
				a.allocErr = pyroErr
				return
			}
			a.alloc, a.allocNotes, a.allocErr = d.spanAllocations(ctx, tq, trace)
		case 2:
			a.gpu, a.gpuStep, a.gpuHosts, a.gpuNotices, a.gpuErr = d.traceGPUs(ctx, trace)
		}
	})
	return a
}

// spanAllocations asks each profiled span's allocation profile. Only per-span plans can say which
// span allocated what; otherwise the column stays empty with a note.
func (d *Datasource) spanAllocations(ctx context.Context, tq *models.TraceQuery, trace *jaeger.Trace) (correlate.SpanProfiles, []string, error) {
	plan := correlate.PlanTraceProfile(trace, nil)
	switch {
	case plan.ProfiledSpans == 0:
		return nil, []string{"No span carries pyroscope.profile.id, so no span has a profile of its own: the allocation column is empty."}, nil
	case !plan.PerSpan:
		return nil, []string{fmt.Sprintf("The trace has %d profiled spans, more than the %d asked one by one: per-span allocations are not shown.", plan.ProfiledSpans, correlate.MaxSpanQueries)}, nil
	}
	results := correlate.AskSpanProfiles(ctx, d.pyroscope, tq.AllocTypeID, tq.MaxNodes, nil, plan)
	out := correlate.SpanProfiles{}
	var failed []error
	for _, r := range results {
		if r.Err != nil {
			failed = append(failed, r.Err)
			continue
		}
		out[r.Query.SpanIDs[0]] = r.Tree
	}
	if len(failed) == len(results) {
		return nil, nil, failed[0]
	}
	var notes []string
	if len(failed) > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d span allocation queries failed, so those spans' allocations are empty: %v", len(failed), len(results), failed[0]))
	}
	return out, notes, nil
}

// traceGPUs reads the DCGM figures of the trace's hosts from just before it to a few steps after.
func (d *Datasource) traceGPUs(ctx context.Context, trace *jaeger.Trace) (series []classify.GPUSeries, step time.Duration, hosts, notices []string, err error) {
	prom, err := d.gpuPrometheus() // Prometheus configured, GPU settings valid, DCGM names applied
	if err != nil {
		return nil, 0, nil, nil, err
	}
	hosts = correlate.TraceHosts(trace, d.settings.Join)
	if len(hosts) == 0 {
		return nil, 0, nil, nil, fmt.Errorf("no span of the trace names its host in the resource attribute %q (jsonData.joinHostAttribute)", d.settings.Join.HostAttribute)
	}
	start, end := correlate.TraceWindow(trace)
	series, notices, err = prom.GPUFigures(ctx, models.GPUFilter{Hosts: hosts}, start.Add(-gpuJoinStep), end.Add(3*gpuJoinStep), gpuJoinStep)
	if err != nil {
		return nil, 0, hosts, notices, err
	}
	return series, seriesStep(series, gpuJoinStep), hosts, notices, nil
}

// seriesStep is the step the series came at: GPUFigures may raise the one asked for.
func seriesStep(series []classify.GPUSeries, asked time.Duration) time.Duration {
	step := asked
	for _, s := range series {
		for i := 1; i < len(s.Samples); i++ {
			if d := s.Samples[i].Time.Sub(s.Samples[i-1].Time); d > step {
				step = d
			}
		}
	}
	return step
}

// classifier classifies each GPU's fetched series once, then answers a span's window from those
// results: the dominant class, its share and the evidence of its first reading in the window
// (naming the GPU when the window covers several).
func classifier(series []classify.GPUSeries, th classify.Thresholds) correlate.ClassifyFunc {
	// Keyed by the whole identity: MIG instances of one GPU share its host, index and UUID.
	results := map[classify.GPU][]classify.Result{}
	for _, s := range series {
		results[s.GPU] = classify.ClassifySeries(s, th)
	}
	return func(cut []classify.GPUSeries) (classify.Class, float64, []string) {
		var window []classify.Result
		var from []classify.GPU // the GPU of each result
		for _, c := range cut {
			if len(c.Samples) == 0 {
				continue
			}
			first, last := c.Samples[0].Time, c.Samples[len(c.Samples)-1].Time
			for _, r := range results[c.GPU] {
				if !r.Time.Before(first) && !r.Time.After(last) {
					window = append(window, r)
					from = append(from, c.GPU)
				}
			}
		}
		class, share := classify.Dominant(window)
		for i, r := range window {
			if r.Class != class || len(r.Evidence) == 0 {
				continue
			}
			evidence := slices.Clone(r.Evidence)
			if len(cut) > 1 {
				evidence[0] = from[i].OnHost() + ": " + evidence[0]
			}
			return class, share, evidence
		}
		return class, share, nil
	}
}

// traceNotices says, on the spans frame, what each upstream contributed and what is missing.
func (d *Datasource) traceNotices(tq *models.TraceQuery, trace *jaeger.Trace, rows []correlate.SpanRow, a *traceAnswers) []data.Notice {
	var out []data.Notice
	profiled := 0
	for _, r := range rows {
		if r.ProfileID != "" {
			profiled++
		}
	}
	// CPU column and flame graph.
	switch {
	case a.cpuErr != nil:
		out = append(out, frames.Warning(fmt.Sprintf("No CPU column or flame graph: %v", a.cpuErr)))
	case profiled == 0:
		out = append(out, frames.Info(fmt.Sprintf("The %s column is empty: no span carries pyroscope.profile.id, so no span has a profile of its own (the flame graph matches the trace's samples as its notice says).",
			frames.SampleType(tq.ProfileTypeID))))
	case profiled > correlate.MaxSpanQueries:
		out = append(out, frames.Info(fmt.Sprintf("The %s column is empty: the trace has %d profiled spans, more than the %d asked one by one, so samples are known per service only (see the flame graph).",
			frames.SampleType(tq.ProfileTypeID), profiled, correlate.MaxSpanQueries)))
	case !a.cpu.Spans.HasSamples():
		out = append(out, frames.Warning(fmt.Sprintf("The %s column is empty: none of the %d profiled span(s) has span-profile samples of type %s (see the flame graph's notice).",
			frames.SampleType(tq.ProfileTypeID), profiled, tq.ProfileTypeID)))
	}
	// Allocation column.
	switch {
	case a.allocErr != nil:
		out = append(out, frames.Warning(fmt.Sprintf("No allocation column: %v", a.allocErr)))
	case a.alloc != nil && !a.alloc.HasSamples():
		out = append(out, frames.Info(fmt.Sprintf("The %s column is empty: no %s sample carries a span ID. Go's heap profiles (and most other profilers') are taken outside span labels; the request's allocations are in the profile query with traceId and profileTypeId %s, which shows its services' samples around it.",
			frames.SampleType(tq.AllocTypeID), tq.AllocTypeID, tq.AllocTypeID)))
	}
	for _, n := range a.allocNotes {
		out = append(out, frames.Info(n))
	}
	// GPU columns.
	if a.gpuErr != nil {
		out = append(out, frames.Warning(fmt.Sprintf("No GPU columns: %v", a.gpuErr)))
	} else {
		out = append(out, gpuNotice(trace, rows, a, d.settings.Join))
	}
	for _, n := range a.gpuNotices {
		out = append(out, frames.Info("GPU series: "+n))
	}
	if err := d.settings.GPUSettingsErr; err != nil {
		out = append(out, frames.Warning(fmt.Sprintf("Some GPU or join settings are invalid and use their defaults: %v", err)))
	}
	return out
}

// gpuNotice says how spans met GPUs: which hosts had DCGM series, at which resolution.
func gpuNotice(trace *jaeger.Trace, rows []correlate.SpanRow, a *traceAnswers, join models.JoinSettings) data.Notice {
	withSeries := map[string]bool{}
	for _, s := range a.gpu {
		withSeries[s.GPU.Host] = true
	}
	var missing []string
	for _, h := range a.gpuHosts {
		if !withSeries[h] {
			missing = append(missing, h)
		}
	}
	joined, noHost := 0, 0
	for _, r := range rows {
		switch {
		case r.Host == "":
			noHost++
		case r.GPU != nil:
			joined++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GPU figures for %d of %d span(s), over each span's window to %s after its end; DCGM samples every few seconds (30 s by default), so a short span shows the GPU's state around it.", joined, len(rows), a.gpuStep)
	if len(missing) > 0 {
		fmt.Fprintf(&b, " No DCGM series for host(s) %s (from the spans' %q): map them to the exporter's host label with jsonData.joinHostMap.", strings.Join(missing, ", "), join.HostAttribute)
	}
	if noHost > 0 {
		fmt.Fprintf(&b, " %d span(s) name no host (%q).", noHost, join.HostAttribute)
	}
	if joined == 0 {
		return frames.Warning(b.String())
	}
	return frames.Info(b.String())
}

// traceLinks is where the spans frame links to; this data source's UID comes from the request's
// plugin context (Grafana sends it with every query).
func (d *Datasource) traceLinks(ctx context.Context) frames.TraceLinks {
	j := d.settings.Join
	l := frames.TraceLinks{TraceDatasourceUID: j.TraceDatasourceUID, TraceDatasourceType: j.TraceDatasourceType, GPUDashboardUID: j.GPUDashboardUID}
	if ds := backend.PluginConfigFromContext(ctx).DataSourceInstanceSettings; ds != nil {
		l.DatasourceUID, l.DatasourceName = ds.UID, ds.Name
	}
	return l
}
