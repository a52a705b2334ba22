package correlate

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// SlowRequestsQuery asks for the latency table and the slowest traces of a service (any when
// empty) and endpoint over [From, To].
type SlowRequestsQuery struct {
	Service, Endpoint string
	MinDuration       time.Duration
	Limit             int
	From, To          time.Time
	// Histograms are the request-duration histograms read; Good is the latency that counts as
	// good (latencyYellowMs) for the goodput column.
	Histograms []models.LatencyHistogram
	Good       time.Duration
	// SettingsErr says which join settings are invalid and use their defaults.
	SettingsErr error
	// SkipLatency and SkipTraces leave a half unasked: a panel that shows the other alone.
	SkipLatency, SkipTraces bool
}

// SlowRequestsAnswer is both halves, each with what to say about it.
type SlowRequestsAnswer struct {
	Latency        models.LatencyResult
	LatencyNotices notices.List
	Traces         []models.TraceSummary
	TraceNotices   notices.List
}

// SlowRequests asks the latency histograms and the trace search in parallel. Either half failing
// is a warning beside the other half; every half asked failing is the error.
func SlowRequests(ctx context.Context, latencies Source[Latencies], search Source[TraceSearch], q SlowRequestsQuery) (*SlowRequestsAnswer, error) {
	ans := &SlowRequestsAnswer{}
	traceMetrics := Narrow[TraceLatencies](search)
	var fromTraces string // why the latency table comes from the trace store's metrics
	var histErr error     // the histograms' failure it stands in for, a warning of its own
	errs := safe.ForEach("slow requests", 2, 0, func(i int) (err error) {
		if i == 0 && q.SkipLatency || i == 1 && q.SkipTraces {
			return nil
		}
		if i == 0 {
			ans.Latency, err = get(latencies, func(l Latencies) (models.LatencyResult, error) {
				return l.EndpointLatencies(ctx, models.LatencyQuery{
					Histograms: q.Histograms, Service: q.Service, Endpoint: q.Endpoint,
					End: q.To, Range: q.To.Sub(q.From), Threshold: q.Good,
				})
			})
			if (err == nil && len(ans.Latency.Rows) > 0) || !traceMetrics.Ready() {
				return err
			}
			// No histogram has these requests: the trace store's metrics (Tempo) may.
			why := "no latency histogram has these requests"
			if err != nil {
				why = fmt.Sprintf("the latency histograms could not be read (%v)", err)
			}
			res, terr := latencyFromTraces(ctx, traceMetrics, q.Service, q.Endpoint, q.From, q.To)
			if terr != nil || len(res.Rows) == 0 {
				if terr != nil {
					ans.LatencyNotices.Warnf("No latency from the trace store's metrics either: %v", terr)
				}
				return err
			}
			ans.Latency, fromTraces, histErr = res, why, err
			return nil
		}
		s, err := search.Get()
		if err != nil {
			return err
		}
		ans.Traces, ans.TraceNotices, err = SlowestTraces(ctx, s, SlowTracesQuery{
			Service: q.Service, Endpoint: q.Endpoint, MinDuration: q.MinDuration, Start: q.From, End: q.To, Limit: q.Limit,
		})
		return err
	})
	switch {
	case errs[0] != nil && errs[1] != nil:
		return nil, fmt.Errorf("latency table: %w; slow traces: %w", errs[0], errs[1])
	case errs[0] != nil && q.SkipTraces:
		return nil, fmt.Errorf("latency table: %w", errs[0])
	case errs[1] != nil && q.SkipLatency:
		return nil, fmt.Errorf("slow traces: %w", errs[1])
	}
	if fromTraces != "" {
		note := ans.LatencyNotices.Infof
		if histErr != nil {
			note = ans.LatencyNotices.Warnf // an upstream failed: the user should see it
		}
		note("p50, p95 and p99 are the server spans' durations from %s, as %s: estimates, from power-of-two buckets (queries: %s). No goodput without a histogram.",
			TraceMetricsSource, fromTraces, strings.Join(ans.Latency.Queries, "; "))
		ans.LatencyNotices.Merge(ans.Latency.Notices)
	} else if !q.SkipLatency {
		ans.LatencyNotices = append(latencyNotices(q, ans.Latency, errs[0]), ans.LatencyNotices...)
	}
	if errs[1] != nil {
		ans.TraceNotices.Warnf("No slow traces: %v", errs[1])
	}
	if q.SettingsErr != nil {
		n := &ans.LatencyNotices
		if q.SkipLatency {
			n = &ans.TraceNotices
		}
		n.Warnf("Some join settings are invalid and use their defaults: %v", q.SettingsErr)
	}
	return ans, nil
}

func latencyNotices(q SlowRequestsQuery, lat models.LatencyResult, latErr error) notices.List {
	var out notices.List
	if latErr != nil {
		out.Warnf("No latency table: %v", latErr)
		return out
	}
	if len(lat.Rows) == 0 {
		var names []string
		for _, h := range q.Histograms {
			names = append(names, h.Metric+"_bucket")
		}
		what := "any request"
		if q.Service != "" || q.Endpoint != "" {
			what = fmt.Sprintf("requests of service %q, endpoint %q", q.Service, q.Endpoint)
		}
		out.Warnf("No latency histogram has %s in the panel's time range (read: %s). Set jsonData.latencyHistograms to your request-duration histogram, its service and endpoint labels.",
			what, strings.Join(names, ", "))
	}
	out.Merge(lat.Notices)
	var interpolated []string
	for _, r := range lat.Rows {
		if !math.IsNaN(r.Good) && !r.GoodExact && !slices.Contains(interpolated, r.Metric) {
			interpolated = append(interpolated, r.Metric)
		}
	}
	if len(interpolated) > 0 {
		out.Infof("Goodput counts requests within %s (latencyYellowMs), which is not a bucket bound of %s: it is interpolated inside its bucket, as histogram_quantile does.",
			q.Good, strings.Join(interpolated, ", "))
	}
	return out
}

// TraceMetricsSource names the latency rows a trace store's metrics answered, in the table's
// metric column and the notices.
const TraceMetricsSource = "Tempo's TraceQL metrics"

// latencyFromTraces is the latency table from the trace store's metrics, in the histograms'
// shape: the quantiles of LatencyQuantiles, requests counted, no goodput.
func latencyFromTraces(ctx context.Context, src Source[TraceLatencies], service, endpoint string, from, to time.Time) (models.LatencyResult, error) {
	tl, err := src.Get()
	if err != nil {
		return models.LatencyResult{}, err
	}
	res, err := tl.EndpointLatencies(ctx, models.TraceLatencyQuery{Service: service, Endpoint: endpoint, Start: from, End: to, Quantiles: models.LatencyQuantiles})
	if err != nil {
		return models.LatencyResult{}, err
	}
	out := models.LatencyResult{Queries: res.Queries, Range: to.Sub(from)}
	if res.Partial != "" {
		out.Notices.Warnf("%s answered part of the range: %s", TraceMetricsSource, res.Partial)
	}
	for _, r := range res.Rows {
		out.Rows = append(out.Rows, models.EndpointLatency{Metric: TraceMetricsSource, Service: r.Service, Endpoint: r.Endpoint,
			Quantiles: r.Quantiles, Requests: r.Requests, Good: math.NaN()})
	}
	// Slowest p99 first, as the histograms' table.
	p99 := slices.Index(models.LatencyQuantiles, 0.99)
	slices.SortStableFunc(out.Rows, func(a, b models.EndpointLatency) int {
		return cmpNaNLast(b.Quantiles[p99], a.Quantiles[p99])
	})
	return out, nil
}

// cmpNaNLast compares a and b with NaN smaller than any number.
func cmpNaNLast(a, b float64) int {
	switch {
	case math.IsNaN(a) && math.IsNaN(b):
		return 0
	case math.IsNaN(a):
		return -1
	case math.IsNaN(b):
		return 1
	}
	return cmp.Compare(a, b)
}
