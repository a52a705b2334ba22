package plugin

import (
	"context"
	"encoding/json"
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

func (d *Datasource) seriesFrames(ctx context.Context, q backend.DataQuery, pq *models.ProfileQuery, agg string) ([]*data.Frame, error) {
	pyro, err := d.pyroscopeClient()
	if err != nil {
		return nil, err
	}
	if d.settings.MinStepErr != nil {
		return nil, backend.DownstreamError(fmt.Errorf("invalid data source settings: %w", d.settings.MinStepErr))
	}
	step := d.seriesStep(q)
	series, err := pyro.Series(ctx, pyroscope.SeriesQuery{
		ProfileTypeID: pq.ProfileTypeID,
		LabelSelector: pq.LabelSelector,
		Start:         q.TimeRange.From,
		End:           q.TimeRange.To,
		Step:          step,
		GroupBy:       pq.GroupBy,
		Limit:         pq.Limit,
		Aggregation:   agg,
	})
	if err != nil {
		return nil, err
	}
	if len(series) == 0 {
		// Grafana's Pyroscope data source answers no frame at all; a frame with the reason lets
		// the panel say why it is empty.
		empty := data.NewFrame(frames.SeriesFrameName)
		empty.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeGraph}
		empty.AppendNotices(frames.Warning(whyEmpty(ctx, pyro, pq, q.TimeRange.From, q.TimeRange.To)))
		return []*data.Frame{empty}, nil
	}
	return frames.SeriesFrames(series, pq.ProfileTypeID, step), nil
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
