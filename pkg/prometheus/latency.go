package prometheus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// MinLatencyRange is the shortest rate window asked for: with fewer than two scrapes in the window
// rate() has nothing to say, and 15–30 s scrape intervals are common.
const MinLatencyRange = time.Minute

// latencyCall is one PromQL instant query of the latency table.
type latencyCall struct {
	hist  models.LatencyHistogram
	parts []latencyPart
	expr  string // the parts' labelled union, checked
}

// latencyPart is one figure of a histogram's query.
type latencyPart struct {
	quantile int // index into models.LatencyQuantiles; callCount or callBuckets
	expr     parser.Expr
}

// The latency calls that are not a quantile.
const (
	callCount   = -1 // the request count
	callBuckets = -2 // the buckets, for goodput
)

// EndpointLatencies asks each histogram's percentiles and request counts (and buckets, with a
// threshold) in one query per histogram (labelledUnion), the histograms in parallel. It fails
// only when every query fails; otherwise failed ones become warnings. Queries lists each
// figure's own query, which answers the same numbers.
func (c *Client) EndpointLatencies(ctx context.Context, q models.LatencyQuery) (res models.LatencyResult, err error) {
	if len(q.Histograms) == 0 {
		return res, errors.New("no request-duration histogram is configured (jsonData.latencyHistograms)")
	}
	rng := max(q.Range.Round(time.Second), MinLatencyRange)
	var calls []latencyCall
	for _, h := range q.Histograms {
		var parts []latencyPart
		for i, quantile := range models.LatencyQuantiles {
			parts = append(parts, latencyPart{quantile: i, expr: quantileExpr(h, quantile, q.Service, q.Endpoint, rng)})
		}
		parts = append(parts, latencyPart{quantile: callCount, expr: requestCountExpr(h, q.Service, q.Endpoint, rng)})
		if q.Threshold > 0 {
			parts = append(parts, latencyPart{quantile: callBuckets, expr: bucketsExpr(h, q.Service, q.Endpoint, rng)})
		}
		exprs := make([]parser.Expr, len(parts))
		for i, p := range parts {
			exprs[i] = p.expr
			res.Queries = append(res.Queries, p.expr.String())
		}
		union, err := checked(labelledUnion(exprs))
		if err != nil {
			return res, err
		}
		calls = append(calls, latencyCall{hist: h, parts: parts, expr: union})
	}
	res.Range = rng
	ctx, span := upstream.StartSpan(ctx, models.Prometheus, "EndpointLatencies", attribute.Int("hsi.queries", len(calls)))
	defer func() { err = upstream.EndSpan(span, err) }()

	type answer struct {
		parts    []model.Vector
		warnings []string
		err      error
	}
	answers := make([]answer, len(calls))
	for i, err := range safe.ForEach("latency query", len(calls), 0, func(i int) error {
		vec, warnings, err := c.instantVector(ctx, calls[i].expr, q.End)
		if err == nil {
			answers[i].parts, err = byPart(vec, len(calls[i].parts), calls[i].expr)
		}
		answers[i].warnings = warnings
		return err
	}) {
		answers[i].err = err
	}

	type key struct{ metric, service, endpoint string }
	rows := map[key]*models.EndpointLatency{}
	// buckets are each row's requests by upper bound (le), cumulative, for Good.
	buckets := map[key]map[float64]float64{}
	var firstErr error
	failed := 0
	for i, a := range answers {
		call := calls[i]
		for _, w := range a.warnings {
			res.Notices.Warn("Prometheus warns: " + w)
		}
		if a.err != nil {
			failed++
			firstErr = cmp.Or(firstErr, a.err)
			continue
		}
		for p, part := range call.parts {
			for _, s := range a.parts[p] {
				k := key{call.hist.Metric, serviceOf(s.Metric, call.hist.ServiceLabels), string(s.Metric[model.LabelName(call.hist.EndpointLabel)])}
				row := rows[k]
				if row == nil {
					row = &models.EndpointLatency{Metric: k.metric, Service: k.service, Endpoint: k.endpoint, Requests: math.NaN(), Good: math.NaN()}
					for range models.LatencyQuantiles {
						row.Quantiles = append(row.Quantiles, math.NaN())
					}
					rows[k] = row
				}
				switch part.quantile {
				case callCount:
					row.Requests = float64(s.Value)
				case callBuckets:
					le, err := strconv.ParseFloat(string(s.Metric["le"]), 64)
					if err != nil {
						continue
					}
					if buckets[k] == nil {
						buckets[k] = map[float64]float64{}
					}
					buckets[k][le] += float64(s.Value)
				default:
					row.Quantiles[part.quantile] = float64(s.Value)
				}
			}
		}
	}
	if failed == len(calls) {
		return res, upstream.Wrap(models.Prometheus, c.url, firstErr)
	}
	if failed > 0 {
		res.Notices.Warnf("%d of %d latency queries failed, so some cells are empty: %v",
			failed, len(calls), upstream.Wrap(models.Prometheus, c.url, firstErr))
	}
	for k, row := range rows {
		if b := buckets[k]; b != nil {
			row.Good, row.GoodExact = requestsWithin(b, q.Threshold.Seconds())
		}
		// An endpoint without requests in the range has only NaN percentiles: it is not slow.
		if row.Requests > 0 || slices.ContainsFunc(row.Quantiles, func(v float64) bool { return !math.IsNaN(v) }) {
			res.Rows = append(res.Rows, *row)
		}
	}
	SortLatencies(res.Rows)
	return res, nil
}

// SortLatencies orders rows slowest first: by the highest quantile, then the next lower ones (a
// row without p99 still ranks by its p95); missing values rank last.
func SortLatencies(rows []models.EndpointLatency) {
	at := func(r models.EndpointLatency, i int) float64 {
		if i < len(r.Quantiles) && !math.IsNaN(r.Quantiles[i]) {
			return r.Quantiles[i]
		}
		return math.Inf(-1)
	}
	slices.SortFunc(rows, func(a, b models.EndpointLatency) int {
		for i := len(models.LatencyQuantiles) - 1; i >= 0; i-- {
			if c := cmp.Compare(at(b, i), at(a, i)); c != 0 {
				return c
			}
		}
		return cmp.Or(cmp.Compare(a.Service, b.Service), cmp.Compare(a.Endpoint, b.Endpoint), cmp.Compare(a.Metric, b.Metric))
	})
}

func (c *Client) instantVector(ctx context.Context, expr string, at time.Time) (model.Vector, []string, error) {
	// Infos (such as "metric might not be a counter") are left out: the expressions are ours.
	v, warnings, _, err := c.api.Query(ctx, expr, at)
	if err != nil {
		return nil, warnings, err
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, warnings, fmt.Errorf("query %s answered a %s, not an instant vector", expr, v.Type())
	}
	return vec, warnings, nil
}

// serviceOf is the first of the service labels a series carries.
func serviceOf(m model.Metric, names []string) string {
	for _, n := range names {
		if v := m[model.LabelName(n)]; v != "" {
			return string(v)
		}
	}
	return ""
}

// QuantileExpr is histogram_quantile(q, sum by (le, <service labels>, <endpoint>)
// (rate(<metric>_bucket{<filters>}[rng]))), built as a PromQL AST so that the service and endpoint
// are quoted by the printer, never pasted into the text. With several service labels and a service
// filter, each label gets its own selector, joined with "or".
func QuantileExpr(h models.LatencyHistogram, q float64, service, endpoint string, rng time.Duration) (string, error) {
	return checked(quantileExpr(h, q, service, endpoint, rng))
}

func quantileExpr(h models.LatencyHistogram, q float64, service, endpoint string, rng time.Duration) parser.Expr {
	perSelector := func(vs *parser.VectorSelector) parser.Expr {
		return &parser.AggregateExpr{
			Op:       parser.SUM,
			Grouping: append([]string{"le"}, groupLabels(h)...),
			Expr:     call("rate", &parser.MatrixSelector{VectorSelector: vs, Range: rng}),
		}
	}
	return call("histogram_quantile", &parser.NumberLiteral{Val: q}, orAll(h, "_bucket", service, endpoint, perSelector))
}

// BucketsExpr is sum by (le, <service labels>, <endpoint>) (increase(<metric>_bucket{...}[rng])):
// the range's requests by upper bound, from which goodput is read.
func BucketsExpr(h models.LatencyHistogram, service, endpoint string, rng time.Duration) (string, error) {
	return checked(bucketsExpr(h, service, endpoint, rng))
}

func bucketsExpr(h models.LatencyHistogram, service, endpoint string, rng time.Duration) parser.Expr {
	return orAll(h, "_bucket", service, endpoint, func(vs *parser.VectorSelector) parser.Expr {
		return &parser.AggregateExpr{
			Op:       parser.SUM,
			Grouping: append([]string{"le"}, groupLabels(h)...),
			Expr:     call("increase", &parser.MatrixSelector{VectorSelector: vs, Range: rng}),
		}
	})
}

// requestsWithin counts the requests at or under threshold seconds from cumulative buckets (upper
// bound → count). At a bucket boundary it is exact; inside a bucket it is interpolated linearly,
// as histogram_quantile does; in the +Inf bucket it is the last finite bound's count (a lower
// bound). Counts are made monotonic first, as histogram_quantile does with increase()'s
// extrapolation. NaN without buckets.
func requestsWithin(buckets map[float64]float64, threshold float64) (float64, bool) {
	les := slices.Sorted(maps.Keys(buckets))
	if len(les) == 0 {
		return math.NaN(), false
	}
	counts := make([]float64, len(les))
	for i, le := range les {
		counts[i] = buckets[le]
		if i > 0 && counts[i] < counts[i-1] {
			counts[i] = counts[i-1]
		}
	}
	lowLe, lowCount := 0.0, 0.0
	for i, le := range les {
		switch {
		case le == threshold:
			return counts[i], true
		case le > threshold && math.IsInf(le, 1):
			return lowCount, false
		case le > threshold:
			return lowCount + (counts[i]-lowCount)*(threshold-lowLe)/(le-lowLe), false
		}
		lowLe, lowCount = le, counts[i]
	}
	return counts[len(counts)-1], false
}

// RequestCountExpr is sum by (<service labels>, <endpoint>) (increase(<metric>_count{...}[rng])):
// the requests of the range.
func RequestCountExpr(h models.LatencyHistogram, service, endpoint string, rng time.Duration) (string, error) {
	return checked(requestCountExpr(h, service, endpoint, rng))
}

func requestCountExpr(h models.LatencyHistogram, service, endpoint string, rng time.Duration) parser.Expr {
	return orAll(h, "_count", service, endpoint, func(vs *parser.VectorSelector) parser.Expr {
		return &parser.AggregateExpr{
			Op:       parser.SUM,
			Grouping: groupLabels(h),
			Expr:     call("increase", &parser.MatrixSelector{VectorSelector: vs, Range: rng}),
		}
	})
}

func groupLabels(h models.LatencyHistogram) []string {
	out := slices.Clone(h.ServiceLabels)
	if !slices.Contains(out, h.EndpointLabel) {
		out = append(out, h.EndpointLabel)
	}
	return out
}

// orAll builds one selector per service label when a service is asked (a series names its
// service in one of them), wraps each with wrap and joins them with "or"; without a service filter
// one selector suffices.
func orAll(h models.LatencyHistogram, suffix, service, endpoint string, wrap func(*parser.VectorSelector) parser.Expr) parser.Expr {
	serviceLabels := []string{""}
	if service != "" {
		serviceLabels = h.ServiceLabels
	}
	var out parser.Expr
	for _, sl := range serviceLabels {
		name := h.Metric + suffix
		vs := &parser.VectorSelector{Name: name, LabelMatchers: []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, labels.MetricName, name)}}
		if sl != "" {
			vs.LabelMatchers = append(vs.LabelMatchers, labels.MustNewMatcher(labels.MatchEqual, sl, service))
		}
		if endpoint != "" {
			vs.LabelMatchers = append(vs.LabelMatchers, labels.MustNewMatcher(labels.MatchEqual, h.EndpointLabel, endpoint))
		}
		e := wrap(vs)
		if out == nil {
			out = e
			continue
		}
		out = &parser.BinaryExpr{Op: parser.LOR, LHS: out, RHS: e, VectorMatching: &parser.VectorMatching{Card: parser.CardManyToMany}}
	}
	return out
}

func call(name string, args ...parser.Expr) *parser.Call {
	return &parser.Call{Func: parser.Functions[name], Args: args}
}

// promqlParser is Prometheus' own parser, with its default options (as the server's).
var promqlParser = parser.NewParser(parser.Options{})

// checked prints e and parses the text back: an expression the parser would not read never
// reaches Prometheus (it would be the plugin's bug, said as such). A text that parsed once is
// not parsed again (parsedQueries): the joins of a tail or a dashboard's panels build the same
// queries over and over, with only their time differing, and parsing them was most of what
// building them allocated.
func checked(e parser.Expr) (string, error) {
	s := e.String()
	if _, ok := parsedQueries.get(s); ok {
		return s, nil
	}
	if _, err := promqlParser.ParseExpr(s); err != nil {
		return "", fmt.Errorf("internal error: the plugin built the PromQL %s, which does not parse: %v", s, err)
	}
	parsedQueries.put(s, "")
	return s, nil
}

// parsedQueries are the query texts that parsed (checked), about 2 KB each at most.
var parsedQueries = newTextMemo(1024)
