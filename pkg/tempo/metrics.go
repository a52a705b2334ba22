package tempo

import (
	"context"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"golang.org/x/sync/errgroup"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// pathMetricsInstant is TraceQL metrics' instant query (Tempo 2.6+): one value per series over
// [start, end].
const pathMetricsInstant = "/api/metrics/query"

// instantResponse is Tempo's QueryInstantResponse in JSON.
type instantResponse struct {
	Series []struct {
		Labels []struct {
			Key   string         `json:"key"`
			Value map[string]any `json:"value"`
		} `json:"labels"`
		Value float64 `json:"value"`
	} `json:"series"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

// latencyFilter is the spanset filter of a latency table: server spans, of the service and
// endpoint when given. Server spans are each service's entry points, as a request-duration
// histogram counts them.
func latencyFilter(q models.TraceLatencyQuery) string {
	conds := []string{"kind = server"}
	if q.Service != "" {
		conds = append(conds, serviceNameTag+" = "+traceQLString(q.Service))
	}
	if q.Endpoint != "" {
		conds = append(conds, "name = "+traceQLString(q.Endpoint))
	}
	return "{ " + strings.Join(conds, " && ") + " }"
}

// EndpointLatencies answers the latency table from TraceQL metrics: quantile_over_time of the
// server spans' duration by service and span name, and count_over_time for the requests, asked
// at once. Tempo computes quantiles from power-of-two buckets, so they are estimates.
func (c *Client) EndpointLatencies(ctx context.Context, q models.TraceLatencyQuery) (res models.TraceLatencyResult, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Tempo, "EndpointLatencies", attribute.String("hsi.service", q.Service))
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Tempo, c.url, err)) }()
	ps := make([]string, len(q.Quantiles))
	for i, p := range q.Quantiles {
		ps[i] = strconv.FormatFloat(p, 'g', -1, 64)
	}
	by := " by (" + serviceNameTag + ", name)"
	filter := latencyFilter(q)
	res.Queries = []string{
		filter + " | quantile_over_time(duration, " + strings.Join(ps, ", ") + ")" + by,
		filter + " | count_over_time()" + by,
	}
	replies := make([]instantResponse, len(res.Queries))
	g, gctx := errgroup.WithContext(ctx)
	for i, query := range res.Queries {
		g.Go(func() error {
			v := url.Values{"q": {query}, "start": {strconv.FormatInt(q.Start.Unix(), 10)}, "end": {strconv.FormatInt(q.End.Add(time.Second-1).Unix(), 10)}}
			return c.getJSON(gctx, pathMetricsInstant, v, &replies[i])
		})
	}
	if err := g.Wait(); err != nil {
		return res, err
	}
	type key struct{ service, endpoint string }
	rows := map[key]*models.TraceLatency{}
	row := func(labels map[string]string) *models.TraceLatency {
		k := key{labels[serviceNameTag], labels["name"]}
		r := rows[k]
		if r == nil {
			r = &models.TraceLatency{Service: k.service, Endpoint: k.endpoint, Requests: math.NaN(), Quantiles: make([]float64, len(q.Quantiles))}
			for i := range r.Quantiles {
				r.Quantiles[i] = math.NaN()
			}
			rows[k] = r
		}
		return r
	}
	for i, reply := range replies {
		if reply.Status == "PARTIAL" && res.Partial == "" {
			res.Partial = reply.Message
		}
		for _, s := range reply.Series {
			labels := map[string]string{}
			var p float64
			for _, l := range s.Labels {
				labels[l.Key] = anyValue(l.Value)
				if l.Key == "p" {
					p, _ = strconv.ParseFloat(labels[l.Key], 64)
				}
			}
			if labels[serviceNameTag] == "" && labels["name"] == "" {
				continue // a series of no span: Tempo's answer for a range without any
			}
			r := row(labels)
			if i == 1 {
				r.Requests = s.Value
				continue
			}
			if at := slices.Index(q.Quantiles, p); at >= 0 {
				r.Quantiles[at] = s.Value
			}
		}
	}
	for _, r := range rows {
		res.Rows = append(res.Rows, *r)
	}
	slices.SortFunc(res.Rows, func(a, b models.TraceLatency) int {
		return strings.Compare(a.Service+"\x00"+a.Endpoint, b.Service+"\x00"+b.Endpoint)
	})
	if len(res.Rows) == 0 && len(replies[0].Series) > 0 {
		return res, fmt.Errorf("reply to %s names no service or span name in its series: is this Tempo 2.6 or newer?", pathMetricsInstant)
	}
	return res, nil
}
