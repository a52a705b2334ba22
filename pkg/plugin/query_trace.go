package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// queryTrace answers the request-level join for one trace (correlate.JoinRequest): a table with
// one row per span (durations, self time, its own CPU and allocation profile totals, hot
// function, GPU class and figures over its window, kernel time), the latency breakdown, the
// verdict (both empty when the trace cannot be read) and the trace's flame graph.
func (d *Datasource) queryTrace(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	tq, err := models.ParseTraceQuery(q.JSON)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	type joined struct {
		ans *correlate.TraceAnswer
		why diagnose.Diagnosis
	}
	join := func(ctx context.Context) (joined, error) {
		src := d.src.ForTrace(d.settings.Join.LatencyHistograms)
		src.LocalHost, _ = os.Hostname()
		ans, err := correlate.JoinRequest(ctx, src, correlate.TraceQuery{
			TraceID: tq.TraceID, ProfileTypeID: tq.ProfileTypeID, AllocTypeID: tq.AllocTypeID, MaxNodes: tq.MaxNodes,
			From: q.TimeRange.From, To: q.TimeRange.To,
			Join: d.settings.Join.SpanMatch, SLO: d.settings.Join.LatencyYellow, Thresholds: d.settings.Classify.Thresholds, SettingsErr: errors.Join(d.invalid.GPU, d.invalid.Containers),
		})
		if err != nil {
			return joined{}, err
		}
		return joined{ans, diagnose.Request(ans)}, nil
	}
	// The queries asking the same request over the same range at the same time share one join:
	// the answer and its diagnosis are read, never written, by the frames built from them. A
	// query whose shared join was cancelled by another's context (that panel closed) joins alone
	// (safe.Share).
	key := fmt.Sprintf("%s|%s|%s|%d|%d|%d", tq.TraceID, tq.ProfileTypeID, tq.AllocTypeID, tq.MaxNodes, q.TimeRange.From.UnixNano(), q.TimeRange.To.UnixNano())
	j, _, err := safe.Share(&d.traceJoins, ctx, key, join)
	if err != nil {
		return nil, err
	}
	return frames.Request(tq.TraceID, j.ans, j.why, tq.ProfileTypeID, tq.AllocTypeID, d.traceLinks(ctx), tq.Parts)
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
