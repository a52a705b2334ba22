package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// seriesOptions are the metrics fields beyond models.ProfileQuery. Grafana's Pyroscope data
// source has no such field and always gets Pyroscope's default (the sum of each step); averaging
// suits instantaneous types such as inuse_space when a step spans several profiles.
type seriesOptions struct {
	Aggregation string `json:"aggregation"`
}

// parseMetricsQuery reads the query of the metrics and both types: Grafana's Pyroscope query
// (labelSelector, profileTypeId, groupBy, limit, maxNodes, spanSelector) plus aggregation.
func parseMetricsQuery(raw json.RawMessage) (*models.ProfileQuery, string, error) {
	pq, err := models.ParseProfileQuery(raw)
	if err != nil {
		return nil, "", err
	}
	var opts seriesOptions
	if err := models.Decode(raw, &opts); err != nil {
		return nil, "", err
	}
	switch opts.Aggregation {
	case "", pyroscope.AggregationSum, pyroscope.AggregationAverage:
	default:
		return nil, "", fmt.Errorf("field \"aggregation\" must be %q (the default) or %q, got %q",
			pyroscope.AggregationSum, pyroscope.AggregationAverage, opts.Aggregation)
	}
	return pq, opts.Aggregation, nil
}

// queryMetrics answers the profile type's values over time: one "series" frame per series, as
// Grafana's Pyroscope data source (see frames.SeriesFrames for the shape and the rates).
func (d *Datasource) queryMetrics(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	pq, agg, err := parseMetricsQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeMetrics, err)
	}
	series, err := d.seriesFrames(ctx, q, pq, agg)
	if err != nil {
		return errorResponse(err)
	}
	return withFrames(series...)
}

// seriesStep is Grafana's rule: the panel's interval, but never below the data source's minStep
// (default 15 s), so a short range does not ask Pyroscope for steps shorter than a profile's
// upload period, which would leave most steps empty and the rest spiky.
func (d *Datasource) seriesStep(q backend.DataQuery) time.Duration {
	return max(q.Interval, d.settings.MinStep)
}

// seriesFrames answers the metrics half of a query: series frames (each followed by its exemplar
// frame when includeExemplars brought any, and the annotations frame last when asked), or, with
// includeHeatmap, heatmap frames. What could not be given as asked is said in notices on the
// first frame: a server without SelectHeatmap gets the series instead of failing the query.
func (d *Datasource) seriesFrames(ctx context.Context, q backend.DataQuery, pq *models.ProfileQuery, agg string) ([]*data.Frame, error) {
	pyro, err := d.pyroscopeClient()
	if err != nil {
		return nil, err
	}
	if d.settings.MinStepErr != nil {
		return nil, backend.DownstreamError(fmt.Errorf("invalid data source settings: %w", d.settings.MinStepErr))
	}
	links := d.exemplarLinks(ctx, pq)
	var notices []data.Notice
	if pq.IncludeHeatmap {
		heat, err := d.heatmapFrames(ctx, q, pq, pyro, links)
		if !errors.Is(err, models.ErrUnsupported) {
			return heat, err
		}
		notices = append(notices, frames.Warning(pyroscope.HeatmapFallbackNotice(err)))
	}

	step := d.seriesStep(q)
	sq := pyroscope.SeriesQuery{
		ProfileTypeID:      pq.ProfileTypeID,
		LabelSelector:      pq.LabelSelector,
		Start:              q.TimeRange.From,
		End:                q.TimeRange.To,
		Step:               step,
		GroupBy:            pq.GroupBy,
		Limit:              pq.Limit,
		Aggregation:        agg,
		StackTraceSelector: pq.StackTraceSelector,
		FrameFilter:        pq.FrameFilter,
	}
	if pq.IncludeExemplars {
		// Series exemplars are individual profiles, whatever heatmapType says, as in Grafana.
		sq.Exemplars = pyroscope.ExemplarsIndividual
	}
	series, err := pyro.Series(ctx, sq)
	if err != nil {
		return nil, err
	}
	if len(series) == 0 {
		// Grafana's Pyroscope data source answers no frame at all; a frame with the reason lets
		// the panel say why it is empty.
		empty := data.NewFrame(frames.SeriesFrameName)
		empty.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeGraph}
		empty.AppendNotices(append(notices, frames.Warning(whyEmpty(ctx, pyro, pq, q.TimeRange.From, q.TimeRange.To)))...)
		return []*data.Frame{empty}, nil
	}
	out := frames.ProfileSeriesFrames(series, pq.ProfileTypeID, step, links)
	if pq.IncludeExemplars && !hasExemplars(series) {
		notices = append(notices, frames.Info(fmt.Sprintf("exemplars (includeExemplars) need Pyroscope %s or newer: Pyroscope sent none for this range, which is also how an older server answers, as it ignores the request; the two cannot be told apart", pyroscope.ExemplarsSince)))
	}
	if pq.WantsAnnotations() {
		annotations, skipped := frames.AnnotationsFrame(series, time.Now())
		if annotations != nil {
			out = append(out, annotations)
		}
		if len(skipped) > 0 {
			notices = append(notices, frames.Warning(fmt.Sprintf("%d Pyroscope annotation(s) could not be read and are not shown: %s", len(skipped), listed(skipped, ""))))
		}
	}
	out[0].AppendNotices(append(notices, frameFilterNotices(pyro, pq.FrameFilter, true)...)...)
	return out, nil
}

func hasExemplars(series []models.ProfileSeries) bool {
	for _, s := range series {
		for _, p := range s.Points {
			if len(p.Exemplars) > 0 {
				return true
			}
		}
	}
	return false
}

// heatmapStep is Grafana's rule for heatmaps: the series step, but never so short that the range
// holds more than maxHeatmapSlots slots, which would make cells too thin to read.
func (d *Datasource) heatmapStep(q backend.DataQuery) time.Duration {
	return max(d.seriesStep(q), q.TimeRange.To.Sub(q.TimeRange.From)/maxHeatmapSlots)
}

// maxHeatmapSlots is Grafana's Pyroscope data source's bound on a heatmap's time slots.
const maxHeatmapSlots = 64

// heatmapFrames answers includeHeatmap: SelectHeatmap's counts of individual profiles (or spans,
// heatmapType "span") as heatmap frames, with their exemplars. An error errors.Is
// models.ErrUnsupported where the server has no SelectHeatmap.
func (d *Datasource) heatmapFrames(ctx context.Context, q backend.DataQuery, pq *models.ProfileQuery, pyro *pyroscope.Client, links frames.ExemplarLinks) ([]*data.Frame, error) {
	step := d.heatmapStep(q)
	spans := pq.HeatmapType == models.HeatmapSpan
	series, err := pyro.Heatmap(ctx, pyroscope.HeatmapQuery{
		ProfileTypeID: pq.ProfileTypeID,
		LabelSelector: pq.LabelSelector,
		Start:         q.TimeRange.From,
		End:           q.TimeRange.To,
		Step:          step,
		GroupBy:       pq.GroupBy,
		Limit:         pq.Limit,
		Spans:         spans,
		Exemplars:     pq.IncludeExemplars,
	})
	if err != nil {
		return nil, err
	}
	kind := frames.ProfileExemplars
	if spans {
		kind = frames.SpanExemplars
	}
	var notices []data.Notice
	if len(pq.StackTraceSelector) > 0 {
		notices = append(notices, frames.Warning("the heatmap counts every stack, not only those under the call site (stackTraceSelector): Pyroscope's SelectHeatmap has no such selector"))
	}
	if !pq.FrameFilter.Empty() {
		notices = append(notices, frames.Warning("the heatmap counts every stack, not only those frameFilter keeps: Pyroscope's SelectHeatmap has no stack-trace selector"))
	}
	out := frames.ProfileHeatmapFrames(series, pq.ProfileTypeID, step, kind, links)
	if len(out) == 0 {
		out = []*data.Frame{frames.HeatmapCells(frames.ProfileHeatmapFrameName, nil, nil, frames.ProfileUnit(pq.ProfileTypeID), step)}
		notices = append(notices, frames.Warning(whyEmpty(ctx, pyro, pq, q.TimeRange.From, q.TimeRange.To)))
	}
	out[0].AppendNotices(notices...)
	return out, nil
}

// exemplarLinks are where the exemplars of pq link: this data source, from the request's plugin
// context (Grafana sends it with every query; without it, no link).
func (d *Datasource) exemplarLinks(ctx context.Context, pq *models.ProfileQuery) frames.ExemplarLinks {
	l := frames.ExemplarLinks{LabelSelector: pq.LabelSelector, ProfileTypeID: pq.ProfileTypeID}
	if ds := backend.PluginConfigFromContext(ctx).DataSourceInstanceSettings; ds != nil {
		l.DatasourceUID, l.DatasourceName = ds.UID, ds.Name
	}
	return l
}

// queryBoth answers the flame graph and the series of one query, as Grafana's Pyroscope data
// source does for "both", fetched concurrently. Unlike Grafana, which fails the whole query when
// either half fails, a failing half is reported as a notice on the frames of the other, so a
// dashboard still shows what could be loaded; only when both fail is the query an error.
func (d *Datasource) queryBoth(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	pq, agg, err := parseMetricsQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeBoth, err)
	}

	var (
		profile   backend.DataResponse
		series    []*data.Frame
		seriesErr error
	)
	halves := []func(){
		func() { profile = d.queryProfile(ctx, q) },
		func() { series, seriesErr = d.seriesFrames(ctx, q, pq, agg) },
	}
	// A half that panics fails alone, as one that errs.
	panicked := safe.ForEach("both query", len(halves), 0, func(i int) error { halves[i](); return nil })
	if panicked[0] != nil {
		profile = backend.ErrDataResponseWithSource(backend.StatusInternal, backend.ErrorSourcePlugin, panicked[0].Error())
	}
	if panicked[1] != nil {
		series, seriesErr = nil, panicked[1]
	}

	switch {
	case profile.Error != nil && seriesErr != nil:
		msg := fmt.Sprintf("flame graph failed: %v; series failed: %v", profile.Error, seriesErr)
		if profile.ErrorSource == backend.ErrorSourceDownstream && backend.IsDownstreamError(seriesErr) {
			return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, msg)
		}
		return backend.ErrDataResponseWithSource(backend.StatusInternal, backend.ErrorSourcePlugin, msg)

	case profile.Error != nil:
		// An empty flame graph carries the notice, so the flame graph panel says why it is empty
		// while the time series panel shows the series.
		flame := frames.FlameGraph(nil, pq.ProfileTypeID)
		flame.AppendNotices(frames.Warning(fmt.Sprintf("flame graph unavailable, series shown: %v", profile.Error)))
		return withFrames(append([]*data.Frame{flame}, series...)...)

	case seriesErr != nil:
		out := profile.Frames
		if len(out) == 0 {
			out = []*data.Frame{frames.FlameGraph(nil, pq.ProfileTypeID)}
		}
		out[0].AppendNotices(frames.Warning(fmt.Sprintf("series unavailable, flame graph shown: %v", seriesErr)))
		return withFrames(out...)
	}
	return withFrames(append(profile.Frames, series...)...)
}
