package plugin

import (
	"context"
	"errors"
	"fmt"

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
func (d *Datasource) queryTrace(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	tq, err := models.ParseTraceQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeTrace, err)
	}
	ans, err := correlate.JoinRequest(ctx, d.traceSources(), correlate.TraceQuery{
		TraceID: tq.TraceID, ProfileTypeID: tq.ProfileTypeID, AllocTypeID: tq.AllocTypeID, MaxNodes: tq.MaxNodes,
		From: q.TimeRange.From, To: q.TimeRange.To,
		Join: d.settings.Join, Thresholds: d.settings.Classify.Thresholds,
	})
	if err != nil {
		return errorResponse(requestProfileError(err))
	}
	traceID := tq.TraceID
	if ans.Trace != nil {
		traceID = ans.Trace.TraceID
	}
	links := d.traceLinks(ctx)
	// The span table, the diagnosis with its two frames, and the flame graph read the answer and
	// write nothing to it: built side by side, a request of thousands of spans answers sooner.
	var spans, breakdown, verdict, flame *data.Frame
	errs := safe.ForEach("trace frames", 3, 0, func(i int) error {
		switch i {
		case 0:
			spans = frames.TraceSpans(traceID, ans.Rows, tq.ProfileTypeID, tq.AllocTypeID, links)
		case 1:
			why := diagnose.Request(ans)
			breakdown, verdict = frames.TraceBreakdown(why.Breakdown, why.Request), frames.TraceVerdict(traceID, why.Verdict, ans.Lever, tq.ProfileTypeID, links)
		case 2:
			if ans.Profile != nil {
				flame = flameGraphFrame(ans.Profile, tq.ProfileTypeID)
			}
		}
		return nil
	})
	if err := errors.Join(errs...); err != nil {
		return errorResponse(err)
	}
	spans.Meta.Notices = frames.Notices(ans.Notices)
	if err := d.settings.GPUSettingsErr; err != nil && ans.Trace != nil {
		spans.AppendNotices(frames.Warning(fmt.Sprintf("Some GPU or join settings are invalid and use their defaults: %v", err)))
	}
	// The flame graph comes last: it is the frame that may be missing, so the others keep their
	// places (panels pick a table's frame by index).
	out := []*data.Frame{spans, breakdown, verdict}
	if flame != nil {
		out = append(out, flame)
	}
	return withFrames(out...)
}

// traceSources are the stores the trace join reads, each with the reason it cannot be asked.
func (d *Datasource) traceSources() correlate.TraceSources {
	src := correlate.TraceSources{Traces: correlate.TracesFunc(d.traceFromJaeger)}
	if pyro, err := d.pyroscopeClient(); err != nil {
		src.ProfilesErr = err
	} else {
		src.Profiles = pyro
	}
	// Prometheus configured, GPU settings valid, DCGM names applied.
	if prom, err := d.gpuPrometheus(); err != nil {
		src.GPUsErr = err
	} else {
		src.GPUs = prom
	}
	if d.kernels != nil {
		src.Kernels = d.kernels
	}
	// Serving engines' metrics live with the application's (the latency histograms').
	if prom, err := d.prometheusClient(); err != nil {
		src.EnginesErr = err
	} else {
		src.Engines = prom
	}
	src.Lever = d.leverSources()
	return src
}

func flameGraphFrame(rp *correlate.RequestProfile, profileTypeID string) *data.Frame {
	f := frames.FlameGraphTree(frames.FlameGraphFrameName, rp.Tree, profileTypeID)
	f.Meta.Notices = frames.Notices(rp.Notices)
	return f
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
