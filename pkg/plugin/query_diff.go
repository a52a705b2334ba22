package plugin

import (
	"context"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// queryDiff answers a diff flame graph: a baseline against a comparison, each a time range, a
// label selector, a span selector or a whole request (frames.Diff scales the sides).
func (d *Datasource) queryDiff(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	pq, err := models.ParseProfileQuery(q.JSON)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	dq, err := correlate.DiffQueryOf(pq, q.TimeRange.From, q.TimeRange.To, time.Now())
	if err != nil {
		return nil, err
	}
	pyro, err := d.src.Profiles.Get()
	if err != nil {
		return nil, err
	}
	base, comp, err := correlate.DiffSides(ctx, correlate.TracesOf(d.src.Traces), pyro, dq)
	if err != nil {
		return nil, err
	}
	comp.Notices.Merge(pyro.FrameFilterNotices(pq.FrameFilter, false))
	return frames.Diff(base, comp, pq.ProfileTypeID), nil
}
