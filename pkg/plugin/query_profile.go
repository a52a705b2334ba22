package plugin

import (
	"context"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
)

func (d *Datasource) queryHandlers() map[string]queryHandler {
	return map[string]queryHandler{
		models.QueryTypeProfile: d.queryProfile,
	}
}

// SpanWindowPadding widens the range asked of Pyroscope for span profiles. A profiler uploads its
// samples in periods (10–60 s), so a 30 ms span's samples sit in a profile stamped up to a period
// away from the span; the span filter keeps the answer exact, the padding only finds the profile.
const SpanWindowPadding = 60 * time.Second

// queryProfile answers the flame graph of a label selector and profile type over the panel's
// range, optionally restricted to some spans.
func (d *Datasource) queryProfile(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	pq, err := models.ParseProfileQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeProfile, err)
	}
	if err := d.unavailable(&d.settings.Pyroscope); err != nil {
		return errorResponse(err)
	}
	start, end := q.TimeRange.From, q.TimeRange.To
	if len(pq.SpanSelector) > 0 {
		start, end = start.Add(-SpanWindowPadding), end.Add(SpanWindowPadding)
	}
	fg, err := d.pyroscope.MergedFlameGraph(ctx, pyroscope.FlameGraphQuery{
		ProfileTypeID: pq.ProfileTypeID,
		LabelSelector: pq.LabelSelector,
		SpanSelector:  pq.SpanSelector,
		Start:         start,
		End:           end,
		MaxNodes:      pq.MaxNodes,
	})
	if err != nil {
		return errorResponse(err)
	}
	return withFrames(frames.FlameGraph(fg, pq.ProfileTypeID))
}
