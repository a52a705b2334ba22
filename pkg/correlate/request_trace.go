package correlate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// TraceQuery asks for the join of one request.
type TraceQuery struct {
	TraceID string
	// ProfileTypeID is the CPU profile; AllocTypeID the allocations' ("" asks none).
	ProfileTypeID, AllocTypeID string
	MaxNodes                   int64
	// From and To are the panel's range, where the trace_id fallback looks when the trace
	// cannot be read.
	From, To time.Time
	// Join is how spans map to hosts and GPUs; SLO the latency a request should stay under
	// (latencyYellowMs), which runbook 002's lever compares the service's p99 with.
	Join       models.SpanMatch
	SLO        time.Duration
	Thresholds classify.Thresholds
	// SettingsErr says which GPU or join settings are invalid and use their defaults.
	SettingsErr error
}

// TraceAnswer is the join of one request: one row per span, the whole request's profile, and
// what the user must know about them.
type TraceAnswer struct {
	// Trace is nil when it could not be read; Rows is then empty and a notice says why.
	Trace *models.Trace
	// Tree is the trace's tree, for the readers of the answer (the diagnosis).
	Tree *models.SpanTree
	Rows []SpanRow
	// Profile is the whole request's profile; nil when Pyroscope could not say (a notice says why).
	Profile *RequestProfile
	// Notices go with the span table: what each store contributed and what is missing.
	Notices notices.List
	// Engines are the spans serving engines recorded, with their metrics around each.
	Engines []EngineSpan
	// Containers are the profiled spans' containers with cAdvisor's CPU figures around them.
	Containers []ContainerSpan
	// KernelTraces are the analysed kernel traces naming the request (their idle, launch and
	// synchronisation figures are a GPU-idle cause's evidence).
	KernelTraces []*gputrace.Result
	// KernelBaselines counts the other requests a kernels diff of this one would compare it
	// with by default (same directory or bucket prefix, any day, same name before the trace
	// ID); 0 when none, or when the store cannot say.
	KernelBaselines int
	// Lever is runbook 002's lever for the request's service over the panel's range; nil
	// without a range.
	Lever *Lever
}

// GPUJoinStep is the step of the GPU series the trace join reads. Spans last milliseconds to
// seconds, so the finest step Prometheus serves well: each span's window runs to one step after
// its end (see JoinTrace), so every span gets at least one reading. DCGM's own sampling (often
// 15–30 s) stays the real resolution; the notice says so.
const GPUJoinStep = time.Second

// JoinRequest answers the request-level join. It reads the trace once, then asks in parallel
// the profile store for the request's CPU profile (per span and whole) and for each profiled
// span's allocations, and the GPU store for the GPUs of the trace's hosts; then it joins them per
// span and adds the kernel time the request's kernel traces attribute to each span. A store that
// fails empties its columns with a notice naming it. It fails only when the trace cannot be read
// and no profile can be shown instead.
func JoinRequest(ctx context.Context, src TraceSources, q TraceQuery) (*TraceAnswer, error) {
	rq := RequestProfileQuery{TraceID: q.TraceID, LabelSelector: "{}", ProfileTypeID: q.ProfileTypeID, MaxNodes: q.MaxNodes, From: q.From, To: q.To}
	trace, traceErr := get(src.Traces, func(t Traces) (*models.Trace, error) { return t.Trace(ctx, q.TraceID) })
	if traceErr != nil {
		// Without spans there are no rows; the flame graph may still come from the trace ID.
		profiles, err := src.Profiles.Get()
		if err != nil {
			return nil, traceErr
		}
		rp, err := ProfileOfTrace(ctx, profiles, rq, nil, traceErr)
		if err != nil {
			return nil, err
		}
		return &TraceAnswer{Profile: rp, Notices: notices.List{{Severity: notices.Warning, Text: fmt.Sprintf("No span table: could not read trace %s (%v).", q.TraceID, traceErr)}}}, nil
	}

	tree := models.NewSpanTree(trace.Spans)
	a := askTraceStores(ctx, src, q, rq, trace, tree)
	rows := JoinTrace(TraceJoin{
		Trace: trace, Tree: tree, CPU: a.cpuSpans(), Alloc: a.alloc,
		GPUSeries: a.gpu, GPUStep: a.gpuStep, GPUsKnown: a.gpuErr == nil,
		Classify: classify.NewWindows(a.gpu, q.Thresholds).Dominant,
		Join:     q.Join,
	})
	attachContainers(rows, a.containers, q.Join)
	attachEngines(rows, trace, a.engines)
	out := &TraceAnswer{Trace: trace, Tree: tree, Rows: rows, Profile: a.cpu, Engines: a.engines, Containers: a.containers}
	kernelNotices, kernelResults, baselines := kernelTimes(ctx, src.Kernels, trace.TraceID, rows)
	out.Notices = traceNotices(q, rows, a)
	if trace.Partial != "" {
		out.Notices.Warnf("The trace store answered part of trace %s (%s): the spans it left out are not in the table, the breakdown or the verdict.", trace.TraceID, trace.Partial)
	}
	out.Notices.Merge(kernelNotices)
	out.KernelTraces, out.KernelBaselines = kernelResults, baselines
	out.Notices.Merge(attachLocalTenants(rows, src.LocalGPUs, src.LocalHost, q.Join))
	out.Notices.Merge(engineNotices(trace, a.engines, a.moreEngines, a.enginesErr))
	out.Notices.Merge(containerNotices(a.containers, a.moreContainers))
	out.Lever = a.lever
	if q.SettingsErr != nil {
		out.Notices.Warnf("Some GPU, join or cAdvisor settings are invalid and use their defaults: %v", q.SettingsErr)
	}
	return out, nil
}

// traceStores is what the stores said about one trace; each part has its own error.
type traceStores struct {
	cpu    *RequestProfile
	cpuErr error

	alloc      SpanProfiles
	allocNotes notices.List
	allocErr   error

	gpu        []classify.GPUSeries
	gpuStep    time.Duration
	gpuNotices notices.List
	gpuErr     error
	gpuHosts   []string

	engines     []EngineSpan
	moreEngines int
	enginesErr  error

	containers     []ContainerSpan
	moreContainers int

	lever *Lever
}

func (a *traceStores) cpuSpans() SpanProfiles {
	if a.cpu == nil {
		return nil
	}
	return a.cpu.Spans
}

// askTraceStores asks the stores in parallel (profiles, allocations, GPUs, engines, the lever's);
// it takes about as long as the slowest of them.
func askTraceStores(ctx context.Context, src TraceSources, q TraceQuery, rq RequestProfileQuery, trace *models.Trace, tree *models.SpanTree) *traceStores {
	// A call that panics (logged) leaves these errors in place.
	a := &traceStores{cpuErr: safe.ErrPanicked, allocErr: safe.ErrPanicked, gpuErr: safe.ErrPanicked}
	a.engines, a.moreEngines = engineSpans(trace)
	var containerQueries []models.ContainerQuery
	a.containers, containerQueries, a.moreContainers = containerSpans(trace, q.Join)
	lr, leverOK := leverRequest(trace, tree, q.Join, a.engines)
	fanOut(6, func(i int) {
		switch {
		case i == 1 && q.AllocTypeID == "":
			a.allocErr = nil // not asked (the tail's verdicts read no allocations)
		case i == 5:
			if len(a.containers) == 0 {
				return
			}
			containers, err := src.Containers.Get()
			if err != nil {
				return // no application Prometheus: the waiting causes' caveat says what would tell
			}
			askContainers(ctx, containers, a.containers, containerQueries)
		case i == 4:
			if leverOK {
				a.lever = LeverOf(ctx, src.Lever, lr, q.Thresholds, q.SLO, q.From, q.To)
			}
		case i == 3:
			if len(a.engines) == 0 {
				return
			}
			engines, err := src.Engines.Get()
			if err != nil {
				a.enginesErr = err
				return
			}
			askEngines(ctx, engines, a.engines)
		case i < 2 && !src.Profiles.Ready():
			// Each part writes its own field: the two run side by side.
			_, err := src.Profiles.Get()
			if i == 0 {
				a.cpuErr = err
			} else {
				a.allocErr = err
			}
		case i == 0:
			profiles, _ := src.Profiles.Get()
			a.cpu, a.cpuErr = ProfileOfTrace(ctx, profiles, rq, trace, nil)
		case i == 1:
			profiles, _ := src.Profiles.Get()
			a.alloc, a.allocNotes, a.allocErr = spanAllocations(ctx, profiles, q, trace)
		default:
			gpus, err := src.GPUs.Get()
			if err != nil {
				a.gpuErr = err
				return
			}
			a.gpu, a.gpuStep, a.gpuHosts, a.gpuNotices, a.gpuErr = traceGPUs(ctx, gpus, q.Join, trace)
		}
	})
	return a
}

// spanAllocations asks each profiled span's allocation profile. Only per-span plans can say which
// span allocated what; otherwise the column stays empty with a note.
func spanAllocations(ctx context.Context, profiles Profiles, q TraceQuery, trace *models.Trace) (SpanProfiles, notices.List, error) {
	plan := PlanTraceProfile(trace, nil)
	switch {
	case plan.ProfiledSpans == 0:
		return nil, notices.List{{Severity: notices.Info, Text: "No span carries pyroscope.profile.id, so no span has a profile of its own: the allocation column is empty."}}, nil
	case !plan.PerSpan:
		return nil, notices.List{{Severity: notices.Info, Text: fmt.Sprintf("The trace has %d profiled spans, more than the %d asked one by one: per-span allocations are not shown.", plan.ProfiledSpans, MaxSpanQueries)}}, nil
	}
	results := AskSpanProfiles(ctx, profiles, q.AllocTypeID, q.MaxNodes, nil, plan)
	out := SpanProfiles{}
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
	var notes notices.List
	if len(failed) > 0 {
		notes.Warnf("%d of %d span allocation queries failed, so those spans' allocations are empty: %v", len(failed), len(results), failed[0])
	}
	return out, notes, nil
}

// traceGPUs reads the figures of the trace's hosts' GPUs from a step before it to a few steps after.
func traceGPUs(ctx context.Context, gpus GPUFigures, join models.SpanMatch, trace *models.Trace) (series []classify.GPUSeries, step time.Duration, hosts []string, found notices.List, err error) {
	hosts = TraceHosts(trace, join)
	if len(hosts) == 0 {
		return nil, 0, nil, nil, fmt.Errorf("no span of the trace names its host in the resource attribute %q (jsonData.joinHostAttribute)", join.HostAttribute)
	}
	start, end := TraceWindow(trace)
	series, found, err = gpus.GPUFigures(ctx, models.GPUFilter{Hosts: hosts}, start.Add(-GPUJoinStep), end.Add(3*GPUJoinStep), GPUJoinStep)
	if err != nil {
		return nil, 0, hosts, found, err
	}
	return series, seriesStep(series, GPUJoinStep), hosts, found, nil
}

// seriesStep is the step the series came at: the store may raise the one asked for.
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

// kernelTimes fills the rows' GPU kernel time from the request's kernel traces (AttributeKernels)
// and returns those traces, with the number of other requests a kernels diff would compare them
// with when the store can count them (KernelBaselines).
func kernelTimes(ctx context.Context, src Source[KernelTraces], traceID string, rows []SpanRow) (notices.List, []*gputrace.Result, int) {
	kernels, err := src.Get()
	if err != nil || len(rows) == 0 {
		return nil, nil, 0 // no trace directory: the feature is not in use, the column stays empty silently
	}
	var (
		results   []*gputrace.Result
		warnings  notices.List
		baselines int
	)
	if kb, ok := kernels.(KernelBaselines); ok {
		results, baselines, warnings = kb.KernelTracesWithBaseline(ctx, traceID)
	} else {
		results, warnings = kernels.KernelTracesOf(ctx, traceID)
	}
	var out notices.List
	if n := AttributeKernels(rows, traceID, results); n != "" {
		out.Info(n)
	}
	out.Merge(warnings)
	return out, results, baselines
}

// traceNotices say what each store contributed to the span table and what is missing.
func traceNotices(q TraceQuery, rows []SpanRow, a *traceStores) notices.List {
	var out notices.List
	info, warn := out.Infof, out.Warnf
	profiled := 0
	for _, r := range rows {
		if r.ProfileID != "" {
			profiled++
		}
	}
	cpuType, allocType := models.SampleType(q.ProfileTypeID), models.SampleType(q.AllocTypeID)
	// CPU column and flame graph.
	switch {
	case a.cpuErr != nil:
		warn("No CPU column or flame graph: %v", a.cpuErr)
	case profiled == 0:
		info("The %s column is empty: no span carries pyroscope.profile.id, so no span has a profile of its own (the flame graph matches the trace's samples as its notice says).", cpuType)
	case profiled > MaxSpanQueries:
		info("The %s column is empty: the trace has %d profiled spans, more than the %d asked one by one, so samples are known per service only (see the flame graph).", cpuType, profiled, MaxSpanQueries)
	case !a.cpu.Spans.HasSamples():
		warn("The %s column is empty: none of the %d profiled span(s) has span-profile samples of type %s (see the flame graph's notice).", cpuType, profiled, q.ProfileTypeID)
	}
	// Allocation column.
	switch {
	case a.allocErr != nil:
		warn("No allocation column: %v", a.allocErr)
	case a.alloc != nil && !a.alloc.HasSamples():
		info("The %s column is empty: no %s sample carries a span ID. Go's heap profiles (and most other profilers') are taken outside span labels; the request's allocations are in the profile query with traceId and profileTypeId %s, which shows its services' samples around it.",
			allocType, q.AllocTypeID, q.AllocTypeID)
	}
	out.Merge(a.allocNotes)
	// GPU columns.
	if a.gpuErr != nil {
		warn("No GPU columns: %v", a.gpuErr)
	} else {
		out.Add(gpuJoinNotice(rows, a, q.Join))
	}
	for _, n := range a.gpuNotices {
		out.Add(notices.Notice{Severity: n.Severity, Text: "GPU series: " + n.Text})
	}
	return out
}

// gpuJoinNotice says how spans met GPUs: which hosts had series, at which resolution.
func gpuJoinNotice(rows []SpanRow, a *traceStores, join models.SpanMatch) notices.Notice {
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
	joined, noHost, byPod, shared := 0, 0, 0, 0
	for _, r := range rows {
		switch {
		case r.Host == "":
			noHost++
		case r.GPU != nil:
			joined++
			if r.GPU.ByPod {
				byPod++
			}
			if len(r.GPU.SharedWith) > 0 {
				shared++
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GPU figures for %d of %d span(s), over each span's window to %s after its end; DCGM samples every few seconds (30 s by default), so a short span shows the GPU's state around it.", joined, len(rows), a.gpuStep)
	if len(missing) > 0 {
		fmt.Fprintf(&b, " No DCGM series for host(s) %s (from the spans' %q): map them to the exporter's host label with jsonData.joinHostMap.", strings.Join(missing, ", "), join.HostAttribute)
	}
	if byPod > 0 {
		fmt.Fprintf(&b, " %d of them met the GPUs dcgm-exporter maps to their own pod (%s), the others every GPU of their host.", byPod, PodAttribute)
	}
	if shared > 0 {
		fmt.Fprintf(&b, " %d met a GPU dcgm-exporter maps to other pods too (shared or handed over): its figures are the whole GPU's.", shared)
	}
	if noHost > 0 {
		fmt.Fprintf(&b, " %d span(s) name no host (%q).", noHost, join.HostAttribute)
	}
	if joined == 0 {
		return notices.Notice{Severity: notices.Warning, Text: b.String()}
	}
	return notices.Notice{Severity: notices.Info, Text: b.String()}
}
