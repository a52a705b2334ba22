package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
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
		return nil, "", models.InvalidQuery(err)
	}
	var opts seriesOptions
	if err := models.Decode(raw, &opts); err != nil {
		return nil, "", models.InvalidQuery(err)
	}
	switch opts.Aggregation {
	case "", models.AggregationSum, models.AggregationAverage:
	default:
		return nil, "", models.InvalidQueryf("field \"aggregation\" must be %q (the default) or %q, got %q",
			models.AggregationSum, models.AggregationAverage, opts.Aggregation)
	}
	return pq, opts.Aggregation, nil
}

// queryMetrics answers the profile type's values over time: one "series" frame per series, as
// Grafana's Pyroscope data source (see frames.ProfileSeries for the shape and the rates).
func (d *Datasource) queryMetrics(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	pq, agg, err := parseMetricsQuery(q.JSON)
	if err != nil {
		return nil, err
	}
	return d.seriesFrames(ctx, q, pq, agg)
}

// seriesFrames is the metrics half of the metrics and both query types.
func (d *Datasource) seriesFrames(ctx context.Context, q backend.DataQuery, pq *models.ProfileQuery, agg string) (data.Frames, error) {
	pyro, err := d.src.Profiles.Get()
	if err != nil {
		return nil, err
	}
	if d.invalid.MinStep != nil {
		return nil, backend.DownstreamError(fmt.Errorf("invalid data source settings: %w", d.invalid.MinStep))
	}
	ans, err := correlate.ProfileSeries(ctx, pyro, correlate.ProfileSeriesQuery{
		Profile: pq, Aggregation: agg, From: q.TimeRange.From, To: q.TimeRange.To,
		Step: max(q.Interval, d.settings.MinStep), // Grafana's rule: the panel's interval, never below minStep
	})
	if err != nil {
		return nil, err
	}
	return frames.ProfileSeries(ans, pq, exemplarLinks(ctx, pq), time.Now()), nil
}

// exemplarLinks are where the exemplars of pq link: this data source, from the request's plugin
// context (Grafana sends it with every query; without it, no link).
func exemplarLinks(ctx context.Context, pq *models.ProfileQuery) frames.ExemplarLinks {
	l := frames.ExemplarLinks{LabelSelector: pq.LabelSelector, ProfileTypeID: pq.ProfileTypeID}
	if ds := backend.PluginConfigFromContext(ctx).DataSourceInstanceSettings; ds != nil {
		l.DatasourceUID, l.DatasourceName = ds.UID, ds.Name
	}
	return l
}

// queryBoth answers the flame graph and the series of one query, fetched concurrently; a half
// that fails (or panics) is a warning on the other's frames (frames.Both).
func (d *Datasource) queryBoth(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	pq, agg, err := parseMetricsQuery(q.JSON)
	if err != nil {
		return nil, err
	}
	halves := make([]data.Frames, 2)
	errs := safe.ForEach("both query", 2, 0, func(i int) (err error) {
		if i == 0 {
			halves[0], err = d.profileFrames(ctx, q, pq)
		} else {
			halves[1], err = d.seriesFrames(ctx, q, pq, agg)
		}
		return err
	})
	return frames.Both(halves[0], errs[0], halves[1], errs[1], pq.ProfileTypeID)
}
