package correlate

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/prometheus"
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
}

// SlowRequestsAnswer is both halves, each with what to say about it.
type SlowRequestsAnswer struct {
	Latency        prometheus.LatencyResult
	LatencyNotices notices.List
	Traces         []models.TraceSummary
	TraceNotices   notices.List
}

// SlowRequests asks the latency histograms and the trace search in parallel. Either half failing
// is a warning beside the other half; both failing is the error.
func SlowRequests(ctx context.Context, latencies Source[Latencies], search Source[TraceSearch], q SlowRequestsQuery) (*SlowRequestsAnswer, error) {
	ans := &SlowRequestsAnswer{}
	errs := safe.ForEach("slow requests", 2, 0, func(i int) (err error) {
		if i == 0 {
			ans.Latency, err = get(latencies, func(l Latencies) (prometheus.LatencyResult, error) {
				return l.EndpointLatencies(ctx, prometheus.LatencyQuery{
					Histograms: q.Histograms, Service: q.Service, Endpoint: q.Endpoint,
					End: q.To, Range: q.To.Sub(q.From), Threshold: q.Good,
				})
			})
			return err
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
	if errs[0] != nil && errs[1] != nil {
		return nil, fmt.Errorf("latency table: %w; slow traces: %w", errs[0], errs[1])
	}
	ans.LatencyNotices = latencyNotices(q, ans.Latency, errs[0])
	if errs[1] != nil {
		ans.TraceNotices.Warnf("No slow traces: %v", errs[1])
	}
	if q.SettingsErr != nil {
		ans.LatencyNotices.Warnf("Some join settings are invalid and use their defaults: %v", q.SettingsErr)
	}
	return ans, nil
}

func latencyNotices(q SlowRequestsQuery, lat prometheus.LatencyResult, latErr error) notices.List {
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
