package plugin

import (
	"context"

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

// queryProfile answers the flame graph of a label selector and profile type over the panel's range.
func (d *Datasource) queryProfile(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	pq, err := models.ParseProfileQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeProfile, err)
	}
	if err := d.unavailable(&d.settings.Pyroscope); err != nil {
		return errorResponse(err)
	}
	fg, err := d.pyroscope.MergedFlameGraph(ctx, pyroscope.FlameGraphQuery{
		ProfileTypeID: pq.ProfileTypeID,
		LabelSelector: pq.LabelSelector,
		Start:         q.TimeRange.From,
		End:           q.TimeRange.To,
		MaxNodes:      pq.MaxNodes,
	})
	if err != nil {
		return errorResponse(err)
	}
	return withFrames(frames.FlameGraph(fg, pq.ProfileTypeID))
}
