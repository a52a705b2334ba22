package plugin

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/prometheus"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// maxSearchedServices bounds the Jaeger searches of a slowRequests query without a service:
// Jaeger searches one service at a time.
const maxSearchedServices = 20

// minSearchDepth is the fewest traces each Jaeger search asks for (see slowestTraces).
const minSearchDepth = 50

// querySlowRequests answers two tables in parallel: p50/p95/p99 latency by endpoint from the
// request-duration histograms in Prometheus, and the slowest recent traces from Jaeger, each
// linking to the Request-Level Profiling dashboard. Either half failing leaves a notice and the
// other half; both failing is the query's error.
func (d *Datasource) querySlowRequests(ctx context.Context, q backend.DataQuery) backend.DataResponse {
	sq, err := models.ParseSlowRequestsQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeSlowRequests, err)
	}
	var (
		lat        prometheus.LatencyResult
		latErr     = safe.ErrPanicked
		traces     []jaeger.TraceSummary
		traceNotes []string
		traceErr   = safe.ErrPanicked
	)
	fanOut(2, func(i int) {
		switch i {
		case 0:
			lat, latErr = d.endpointLatencies(ctx, sq, q.TimeRange)
		case 1:
			traces, traceNotes, traceErr = d.slowestTraces(ctx, sq, q.TimeRange)
		}
	})
	if latErr != nil && traceErr != nil {
		return errorResponse(fmt.Errorf("latency table: %w; slow traces: %w", latErr, traceErr))
	}
	j := d.settings.Join
	th := frames.LatencyThresholds{Yellow: j.LatencyYellow, Red: j.LatencyRed}

	latency := frames.LatencyTable(latencyRows(lat.Rows), th)
	latency.Meta.Notices = latencyNotices(sq, lat, latErr, j)
	slow := frames.SlowTraces(slowTraceRows(traces), th, frames.SlowTraceLinks{
		RequestDashboardUID: j.RequestDashboardUID, TraceDatasourceUID: j.TraceDatasourceUID, TraceDatasourceType: j.TraceDatasourceType,
	})
	if traceErr != nil {
		slow.Meta.Notices = append(slow.Meta.Notices, frames.Warning(fmt.Sprintf("No slow traces: %v", traceErr)))
	}
	for _, n := range traceNotes {
		slow.Meta.Notices = append(slow.Meta.Notices, frames.Info(n))
	}
	if j.Err != nil {
		latency.Meta.Notices = append(latency.Meta.Notices, frames.Warning(fmt.Sprintf("Some join settings are invalid and use their defaults: %v", j.Err)))
	}
	return withFrames(latency, slow)
}

func (d *Datasource) endpointLatencies(ctx context.Context, sq *models.SlowRequestsQuery, tr backend.TimeRange) (prometheus.LatencyResult, error) {
	prom, err := d.prometheusClient()
	if err != nil {
		return prometheus.LatencyResult{}, err
	}
	return prom.EndpointLatencies(ctx, prometheus.LatencyQuery{
		Histograms: d.settings.Join.LatencyHistograms, Service: sq.Service, Endpoint: sq.Endpoint,
		End: tr.To, Range: tr.To.Sub(tr.From),
	})
}

func latencyNotices(sq *models.SlowRequestsQuery, lat prometheus.LatencyResult, latErr error, j models.JoinSettings) []data.Notice {
	if latErr != nil {
		return []data.Notice{frames.Warning(fmt.Sprintf("No latency table: %v", latErr))}
	}
	var out []data.Notice
	if len(lat.Rows) == 0 {
		var names []string
		for _, h := range j.LatencyHistograms {
			names = append(names, h.Metric+"_bucket")
		}
		what := "any request"
		if sq.Service != "" || sq.Endpoint != "" {
			what = fmt.Sprintf("requests of service %q, endpoint %q", sq.Service, sq.Endpoint)
		}
		out = append(out, frames.Warning(fmt.Sprintf("No latency histogram has %s in the panel's time range (read: %s). Set jsonData.latencyHistograms to your request-duration histogram, its service and endpoint labels.",
			what, strings.Join(names, ", "))))
	}
	for _, w := range lat.Warnings {
		out = append(out, frames.Warning("Prometheus: "+w))
	}
	return out
}

func latencyRows(rows []prometheus.EndpointLatency) []frames.EndpointLatency {
	out := make([]frames.EndpointLatency, 0, len(rows))
	for _, r := range rows {
		// LatencyQuantiles is 0.5, 0.95, 0.99 in that order.
		out = append(out, frames.EndpointLatency{
			Service: r.Service, Endpoint: r.Endpoint, Histogram: r.Metric,
			P50: r.Quantiles[0], P95: r.Quantiles[1], P99: r.Quantiles[2], Requests: r.Requests,
		})
	}
	return out
}

// slowestTraces searches Jaeger for the query's service (or every service, one search each, in
// parallel), keeps each trace once and returns the slowest first.
func (d *Datasource) slowestTraces(ctx context.Context, sq *models.SlowRequestsQuery, tr backend.TimeRange) ([]jaeger.TraceSummary, []string, error) {
	jae, err := d.jaegerClient()
	if err != nil {
		return nil, nil, err
	}
	var notes []string
	services := []string{sq.Service}
	if sq.Service == "" {
		all, _, err := jae.Services(ctx)
		if err != nil {
			return nil, nil, err
		}
		services = searchableServices(all)
		if len(services) > maxSearchedServices {
			notes = append(notes, fmt.Sprintf("Searched the first %d of %d services (alphabetically); set the query's service to search another.", maxSearchedServices, len(services)))
			services = services[:maxSearchedServices]
		}
		if len(services) == 0 {
			return nil, []string{"Jaeger knows no service yet."}, nil
		}
	}
	type search struct{ service, operation string }
	var searches []search
	for _, svc := range services {
		for _, op := range endpointOperations(sq.Endpoint) {
			searches = append(searches, search{svc, op})
		}
	}
	found := make([][]jaeger.TraceSummary, len(searches))
	errs := make([]error, len(searches))
	for i := range errs {
		errs[i] = safe.ErrPanicked
	}
	// Jaeger's limit is a search depth: the most recent traces that match, not the slowest. Asking
	// deeper than the list is long finds the slow ones among more requests.
	depth := max(2*int(sq.Limit), minSearchDepth)
	fanOut(len(searches), func(i int) {
		found[i], errs[i] = jae.FindTraces(ctx, jaeger.TraceQuery{
			Service: searches[i].service, Operation: searches[i].operation, MinDuration: time.Duration(sq.MinDuration),
			Start: tr.From, End: tr.To, Limit: depth,
		})
	})
	byID := map[string]jaeger.TraceSummary{}
	var firstErr error
	failed := 0
	for i, f := range found {
		if errs[i] != nil {
			failed++
			firstErr = cmp.Or(firstErr, errs[i])
			continue
		}
		for _, t := range f {
			byID[t.TraceID] = t
		}
	}
	if failed == len(searches) {
		return nil, notes, firstErr
	}
	if failed > 0 {
		notes = append(notes, fmt.Sprintf("%d of %d trace searches failed, so the list may miss traces: %v", failed, len(searches), firstErr))
	}
	out := make([]jaeger.TraceSummary, 0, len(byID))
	for _, t := range byID {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b jaeger.TraceSummary) int {
		return cmp.Or(cmp.Compare(b.Duration, a.Duration), a.Start.Compare(b.Start), cmp.Compare(a.TraceID, b.TraceID))
	})
	if len(out) > int(sq.Limit) {
		out = out[:sq.Limit]
	}
	return out, notes, nil
}

// searchableServices drops Jaeger's own services (it traces its own queries), which would
// otherwise list the plugin's searches among the slow requests.
func searchableServices(all []string) []string {
	var out []string
	for _, s := range all {
		if !strings.HasPrefix(s, "jaeger") {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// endpointOperations are the span names an endpoint's server spans carry: the endpoint itself (a
// span name given as is, "GET /api/detect"), or OpenTelemetry's HTTP convention "METHOD route"
// for the usual methods. Jaeger matches operations exactly, so each is one search.
func endpointOperations(endpoint string) []string {
	switch {
	case endpoint == "":
		return []string{""}
	case strings.Contains(endpoint, " "):
		return []string{endpoint}
	}
	return []string{endpoint, "GET " + endpoint, "POST " + endpoint}
}

func slowTraceRows(ts []jaeger.TraceSummary) []frames.SlowTrace {
	out := make([]frames.SlowTrace, 0, len(ts))
	for _, t := range ts {
		out = append(out, frames.SlowTrace{
			TraceID: t.TraceID, RootService: t.RootService, RootOperation: t.RootOperation,
			Start: t.Start, Duration: t.Duration, Spans: t.Spans, Services: t.Services,
		})
	}
	return out
}
