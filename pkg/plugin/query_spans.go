package plugin

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// querySpanHeatmap answers an operation's span durations over the panel's range as a heatmap,
// from Jaeger's own search (no Tempo, any Pyroscope), with the slowest span of each time bucket as
// an exemplar linking to its trace and its flame graph.
func (d *Datasource) querySpanHeatmap(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	sq, err := models.ParseSpanQuery(models.QueryTypeSpanHeatmap, q.JSON)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	jae, err := d.src.Traces.Get()
	if err != nil {
		return nil, err
	}
	ans, err := correlate.SpanHeatmapOf(ctx, jae, sq, q.TimeRange.From, q.TimeRange.To, q.Interval)
	if err != nil {
		return nil, err
	}
	return frames.SpanHeatmapAnswer(ans, sq.ProfileTypeID, d.traceLinks(ctx)), nil
}

// querySpanProfile answers the merged profile of an operation's spans slower than a duration or
// a percentile (correlate.SpanProfileOf).
func (d *Datasource) querySpanProfile(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	sq, err := models.ParseSpanQuery(models.QueryTypeSpanProfile, q.JSON)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	jae, err := d.src.Traces.Get()
	if err != nil {
		return nil, err
	}
	pyro, err := d.src.Profiles.Get()
	if err != nil {
		return nil, err
	}
	sp, err := correlate.SpanProfileOf(ctx, jae, pyro, sq, q.TimeRange.From, q.TimeRange.To)
	if err != nil {
		return nil, err
	}
	return frames.SpanProfile(sp, sq.ProfileTypeID), nil
}
