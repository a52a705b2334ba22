package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/tail"
)

// queryTail answers why an operation's slow tail is slow (tail.Explain): the answer in words,
// the causes ranked by the time they add to the tail against the median requests, and each
// request diagnosed. Only the trace search failing fails it; a request that cannot be joined,
// or a store that is down, leaves a notice and the rest of the answer; no trace store or no
// endpoint chosen is an empty answer saying what to set.
func (d *Datasource) queryTail(ctx context.Context, q backend.DataQuery) (data.Frames, error) {
	tq, err := models.ParseTailQuery(q.JSON)
	if err != nil {
		return nil, models.InvalidQuery(err)
	}
	j := d.settings.Join
	links := frames.SlowTraceLinks{RequestDashboardUID: j.RequestDashboardUID, TraceDatasourceUID: j.TraceDatasourceUID, TraceDatasourceType: j.TraceDatasourceType}
	// Nothing to ask yet (no trace store set up, no endpoint chosen): the panels say what to set,
	// as empty answers, not red errors; the overview dashboard shows them to every user.
	advice := ""
	if _, err := d.src.Traces.Get(); errors.Is(err, models.ErrNoTraceStore) {
		advice = "The slow tail reads its requests from a trace store: " + models.ErrNoTraceStore.Error() + "."
	} else if tq.NoEndpoint() != "" {
		advice = tq.NoEndpoint() + "."
	}
	if advice != "" {
		return frames.Tail(diagnose.TailDiagnosis{Summary: advice}, frames.TailFigures{}, notices.List{{Severity: notices.Info, Text: advice}}, links, tq.Parts), nil
	}
	search := correlate.TailSearch{Service: tq.Service, Operation: tq.Operation, Percentile: tq.Percentile,
		MinDuration: time.Duration(tq.MinDuration), MaxTraces: int(tq.MaxTraces), Limit: tq.Limit}
	if tq.SLO {
		search.SLO = j.LatencyYellow
	}
	ask := func(ctx context.Context) (*tail.Answer, error) {
		joins := d.src.ForTrace(j.LatencyHistograms)
		joins.LocalHost, _ = os.Hostname()
		return tail.Explain(ctx, tail.Sources{Search: correlate.Narrow[correlate.SpanSearch](d.src.Traces), Joins: joins}, tail.Query{
			TailSearch: search, ProfileTypeID: tq.ProfileTypeID, From: q.TimeRange.From, To: q.TimeRange.To,
			Join: j.SpanMatch, SLO: j.LatencyYellow, Thresholds: d.settings.Classify.Thresholds,
			SettingsErr: errors.Join(d.invalid.GPU, d.invalid.Containers),
		}, &d.tailVerdicts)
	}
	// The panels of one endpoint's tail (summary, causes, requests) ask at once: one answer.
	key := fmt.Sprintf("%s|%s|%g|%d|%t|%d|%d|%s|%d|%d", tq.Service, tq.Operation, tq.Percentile, tq.MinDuration, tq.SLO,
		tq.MaxTraces, tq.Limit, tq.ProfileTypeID, q.TimeRange.From.UnixNano(), q.TimeRange.To.UnixNano())
	ans, _, err := safe.Share(&d.tailJoins, ctx, key, ask)
	if err != nil {
		return nil, err
	}
	return frames.Tail(ans.Diagnosis, frames.TailFigures{Threshold: ans.Sample.Threshold, Over: ans.Sample.Over}, ans.Notices, links, tq.Parts), nil
}
