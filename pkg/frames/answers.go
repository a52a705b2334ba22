package frames

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// The frames of whole answers, empty ones included: a handler hands an answer here and returns
// what comes back. Notices go on the first frame, where Grafana shows them.

// withNotices puts l on the first frame (a frame of its own when there is none).
func withNotices(out data.Frames, l notices.List) data.Frames {
	if len(l) == 0 {
		return out
	}
	if len(out) == 0 {
		out = data.Frames{data.NewFrame("")}
	}
	out[0].AppendNotices(Notices(l)...)
	return out
}

// GPUClasses are the gpuClass query's frames in the asked format: the state timeline, the
// summary with evidence and actions, and the share series for alerting (of classes only, when
// given). Shares alone with no GPU still give one empty share frame, which carries the notices,
// so the panel or alert says why.
func GPUClasses(ans *correlate.GPUClassAnswer, format string, classes []classify.Class) data.Frames {
	all := format == models.GPUClassFormatAll
	var out data.Frames
	if all || format == models.GPUClassFormatTimeline {
		out = append(out, GPUClassTimeline(ans.Results))
	}
	if all || format == models.GPUClassFormatSummary {
		out = append(out, GPUClassSummary(ans.Results))
	}
	if all || format == models.GPUClassFormatShares {
		shares := GPUClassShareFrames(ans.Results, ans.ShareWindow, classes)
		if len(shares) == 0 && !all {
			empty := data.NewFrame(GPUClassShareFrameName, data.NewField("time", nil, []time.Time{}), data.NewField("share", nil, []*float64{}))
			empty.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesMulti, TypeVersion: data.FrameTypeVersion{0, 1}}
			shares = append(shares, empty)
		}
		out = append(out, shares...)
	}
	return withNotices(out, ans.Notices)
}

// KernelTraces are the kernels query's frames: each analysed file's frames (named by the file
// when there are several), or the frames of no trace, keeping their columns.
func KernelTraces(files []gputrace.Found, missed notices.List) data.Frames {
	return perTraceFile(files, missed, KernelFrames)
}

// perTraceFile is the frames of a kernels query's view, build's for each analysed file (named
// by the file when several matched, "Read from" on its first frame), or build's of an empty
// analysis when none was read, keeping their columns; the files that could not be read are
// warnings on the first frame.
func perTraceFile(files []gputrace.Found, missed notices.List, build func(name string, r *gputrace.Result) []*data.Frame) data.Frames {
	var out data.Frames
	for _, f := range files {
		if f.Result == nil {
			continue
		}
		name := ""
		if len(files) > 1 {
			name = f.File.Rel
		}
		fs := build(name, f.Result)
		fs[0].AppendNotices(Info("Read from " + f.File.Rel))
		out = append(out, fs...)
	}
	if len(out) == 0 {
		out = build("", gputrace.NewCollector(gputrace.Limits{}).Result(gputrace.AnalysisOptions{}))
	}
	return withNotices(out, missed)
}

// GPULocal are the frames of one gpuLocal view.
func GPULocal(ans *correlate.LocalGPUAnswer) data.Frames {
	var out data.Frames
	switch ans.View {
	case models.GPULocalDevices:
		out = data.Frames{GPULocalDevices(ans.Devices)}
	case models.GPULocalProcesses:
		out = data.Frames{GPULocalProcesses(ans.Processes)}
	case models.GPULocalXID:
		out = data.Frames{GPULocalXIDs(ans.XIDs)}
	case models.GPULocalSeries:
		out = GPULocalSeries(ans.Series)
	case models.GPULocalClass:
		out = data.Frames{GPUClassTimeline(ans.Classes.Results), GPUClassSummary(ans.Classes.Results)}
		out = withNotices(out, ans.Classes.Notices)
	}
	return withNotices(out, ans.Notices)
}

// GPUMetrics are the gpuMetrics query's frames: each metric's frames, in the query's order,
// and the metrics that failed as warnings (no frame at all when no metric answered anything).
func GPUMetrics(results []*models.GPUMetricResult, failures notices.List) data.Frames {
	var out data.Frames
	for _, res := range results {
		out = append(out, GPUMetricFrames(res)...)
	}
	if len(out) == 0 {
		return out
	}
	return withNotices(out, failures)
}

// ProfileSeries are the metrics half of a profile query: one series frame per series (each
// followed by its exemplar frame when it has exemplars) and the annotations frame last when
// asked, or the heatmap frames; with nothing to show, one empty frame that says why.
func ProfileSeries(ans *correlate.ProfileSeriesAnswer, pq *models.ProfileQuery, links ExemplarLinks, now time.Time) data.Frames {
	l := ans.Notices
	var out data.Frames
	switch {
	case ans.IsHeatmap:
		kind := ProfileExemplars
		if pq.HeatmapType == models.HeatmapSpan {
			kind = SpanExemplars
		}
		out = ProfileHeatmapFrames(ans.Heatmap, pq.ProfileTypeID, ans.Step, kind, links)
		if len(out) == 0 {
			out = data.Frames{HeatmapCells(ProfileHeatmapFrameName, nil, nil, ProfileUnit(pq.ProfileTypeID), ans.Step)}
		}
	case len(ans.Series) == 0:
		// Grafana's Pyroscope data source answers no frame at all; a frame with the reason lets
		// the panel say why it is empty.
		empty := data.NewFrame(SeriesFrameName)
		empty.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeGraph}
		out = data.Frames{empty}
	default:
		out = ProfileSeriesFrames(ans.Series, pq.ProfileTypeID, ans.Step, links)
		if pq.WantsAnnotations() {
			annotations, skipped := AnnotationsFrame(ans.Series, now)
			if annotations != nil {
				out = append(out, annotations)
			}
			if len(skipped) > 0 {
				l.Warnf("%d Pyroscope annotation(s) could not be read and are not shown: %s", len(skipped), strings.Join(skipped, ", "))
			}
		}
	}
	if ans.Empty != "" {
		l.Warn(ans.Empty)
	}
	return withNotices(out, l)
}

// FlameGraphAnswer is a profile query's flame graph with its notices.
func FlameGraphAnswer(ans *correlate.FlameGraphAnswer, profileTypeID string) data.Frames {
	return withNotices(data.Frames{FlameGraph(ans.Tree, profileTypeID)}, ans.Notices)
}

// RequestProfile is a traceId profile query's frames: the whole request's flame graph, one
// service level under the root, then one frame per service, by name, when perService is set.
func RequestProfile(rp *correlate.RequestProfile, profileTypeID string, perService bool) data.Frames {
	out := data.Frames{FlameGraphTree(FlameGraphFrameName, rp.Tree, profileTypeID)}
	out[0].Meta.Notices = Notices(rp.Notices)
	if perService {
		for _, svc := range slices.Sorted(maps.Keys(rp.Services)) {
			out = append(out, FlameGraphTree(svc, rp.Services[svc], profileTypeID))
		}
	}
	return out
}

// Both is the "both" query's answer from its halves, as Grafana's Pyroscope data source gives
// it, except that a failing half is a warning on the other's frames, so a dashboard still shows
// what could be loaded; only both failing fails the query (the upstreams' when both were).
func Both(profile data.Frames, profileErr error, series data.Frames, seriesErr error, profileTypeID string) (data.Frames, error) {
	switch {
	case profileErr != nil && seriesErr != nil:
		err := fmt.Errorf("flame graph failed: %v; series failed: %v", profileErr, seriesErr)
		if backend.IsDownstreamError(profileErr) && backend.IsDownstreamError(seriesErr) {
			return nil, backend.DownstreamError(err)
		}
		return nil, err
	case profileErr != nil:
		// An empty flame graph carries the notice, so the flame graph panel says why it is
		// empty while the time series panel shows the series.
		flame := FlameGraph(nil, profileTypeID)
		flame.AppendNotices(Warning(fmt.Sprintf("flame graph unavailable, series shown: %v", profileErr)))
		return append(data.Frames{flame}, series...), nil
	case seriesErr != nil:
		if len(profile) == 0 {
			profile = data.Frames{FlameGraph(nil, profileTypeID)}
		}
		profile[0].AppendNotices(Warning(fmt.Sprintf("series unavailable, flame graph shown: %v", seriesErr)))
		return profile, nil
	}
	return append(profile, series...), nil
}

// DiffSummaryRows is how many functions the diff summary table lists: the biggest movers.
const DiffSummaryRows = 25

// Diff is the diff query's frames: the diff flame graph, its side with the smaller total scaled
// up to the other's so widths compare each function's share of its side ("this slow request"
// against "this service over the last hour" would otherwise be all baseline), and the summary
// of the biggest movers.
func Diff(base, comp *correlate.DiffSide, profileTypeID string) data.Frames {
	tree := flamegraph.Diff(base.Tree, comp.Tree)
	summary := DiffSummary(tree, DiffSummaryRows) // shares: before scaling, same after
	l := base.Notices
	l.Merge(comp.Notices)
	if few := DiffFewSamples(tree, profileTypeID); few != "" { // before scaling: real totals
		l.Warn(few)
	}
	l.Info(NormaliseDiff(tree, profileTypeID, base.Describe, comp.Describe))
	frame := DiffFlameGraph(tree, profileTypeID)
	frame.Meta.Notices = Notices(l)
	return data.Frames{frame, summary}
}

// SpanHeatmapAnswer is the span heatmap's frames: the heatmap, then its exemplars (only the
// heatmap, which says why, when no span was found).
func SpanHeatmapAnswer(ans *correlate.SpanHeatmapAnswer, profileTypeID string, links TraceLinks) data.Frames {
	out := SpanHeatmap(ans.Heatmap, ans.Found, profileTypeID, links)
	if len(ans.Found.Spans) == 0 {
		out = out[:1]
	}
	return withNotices(out, ans.Notices)
}

// SpanProfile is the span profile's flame graph with its notices.
func SpanProfile(sp *correlate.SpanProfile, profileTypeID string) data.Frames {
	f := FlameGraph(sp.Tree, profileTypeID)
	f.Meta.Notices = append(f.Meta.Notices, Notices(sp.Notices)...)
	return data.Frames{f}
}

// SlowRequests are the slowRequests query's two tables: latency by endpoint and the slowest
// traces, each linking to the Request-Level Profiling dashboard.
func SlowRequests(ans *correlate.SlowRequestsAnswer, th LatencyThresholds, links SlowTraceLinks, parts []string) data.Frames {
	rows := make([]EndpointLatency, 0, len(ans.Latency.Rows))
	for _, r := range ans.Latency.Rows {
		// LatencyQuantiles is 0.5, 0.95, 0.99 in that order.
		rows = append(rows, EndpointLatency{
			Service: r.Service, Endpoint: r.Endpoint, Histogram: r.Metric,
			P50: r.Quantiles[0], P95: r.Quantiles[1], P99: r.Quantiles[2], Requests: r.Requests,
			Good: r.Good, GoodExact: r.GoodExact,
		})
	}
	traces := make([]SlowTrace, 0, len(ans.Traces))
	for _, t := range ans.Traces {
		traces = append(traces, SlowTrace{
			TraceID: t.TraceID, RootService: t.RootService, RootOperation: t.RootOperation,
			Start: t.Start, Duration: t.Duration, Spans: t.Spans, Services: t.Services,
		})
	}
	var out data.Frames
	if len(parts) == 0 || slices.Contains(parts, models.SlowRequestsPartLatency) {
		latency := LatencyTable(rows, th, ans.Latency.Range)
		latency.Meta.Notices = Notices(ans.LatencyNotices)
		out = append(out, latency)
	}
	if len(parts) == 0 || slices.Contains(parts, models.SlowRequestsPartTraces) {
		slow := SlowTraces(traces, th, links)
		slow.Meta.Notices = append(slow.Meta.Notices, Notices(ans.TraceNotices)...)
		out = append(out, slow)
	}
	return out
}

// Request is the trace query's frames: the span table, the latency breakdown and the verdict
// (why, diagnose.Request's answer, which the caller asks for: frames only present), then the
// request's flame graph when there is one; of these, the parts asked (models.TraceParts; none:
// all), in that order. The join's notices go on the first frame. The frames read the answer and
// write nothing to it: built side by side, a request of thousands of spans answers sooner, and
// answers that share one join (one per panel) are built from it apart.
func Request(traceID string, ans *correlate.TraceAnswer, why diagnose.Diagnosis, profileTypeID, allocTypeID string, links TraceLinks, parts []string) (data.Frames, error) {
	if ans.Trace != nil {
		traceID = ans.Trace.TraceID
	}
	wants := func(part string) bool { return len(parts) == 0 || slices.Contains(parts, part) }
	var spans, breakdown, verdict, flame *data.Frame
	errs := safe.ForEach("trace frames", 3, 0, func(i int) error {
		switch {
		case i == 0 && wants(models.TracePartSpans):
			spans = TraceSpans(traceID, ans.Rows, profileTypeID, allocTypeID, links)
		case i == 1:
			if wants(models.TracePartBreakdown) {
				breakdown = TraceBreakdown(why.Breakdown, why.Request)
			}
			if wants(models.TracePartVerdict) {
				verdict = TraceVerdict(traceID, why.Verdict, ans.Lever, profileTypeID, links)
			}
		case i == 2 && wants(models.TracePartFlameGraph) && ans.Profile != nil:
			flame = FlameGraphTree(FlameGraphFrameName, ans.Profile.Tree, profileTypeID)
			flame.Meta.Notices = Notices(ans.Profile.Notices)
		}
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var out data.Frames
	for _, f := range []*data.Frame{spans, breakdown, verdict, flame} {
		if f != nil {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		// Only the flame graph was asked, and the request has none: the join's notices say why.
		out = data.Frames{data.NewFrame(FlameGraphFrameName)}
		out[0].Meta = &data.FrameMeta{Notices: []data.Notice{{Severity: data.NoticeSeverityInfo, Text: "This request has no flame graph (the notices above say why)."}}}
	}
	if out[0].Meta == nil {
		out[0].Meta = &data.FrameMeta{}
	}
	out[0].Meta.Notices = append(Notices(ans.Notices), out[0].Meta.Notices...)
	return out, nil
}
