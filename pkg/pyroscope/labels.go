package pyroscope

import (
	"context"
	"sort"
	"strings"
	"time"

	"connectrpc.com/connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// ServiceNameLabel is the label Pyroscope's SDKs put the application's name in.
const ServiceNameLabel = "service_name"

// LabelNames lists the label names of the series matching selector between start and end,
// sorted, without Pyroscope's internal labels (__name__, __profile_type__, ...), which the
// user cannot usefully group or filter by; Grafana's Pyroscope data source hides them too.
func (c *Client) LabelNames(ctx context.Context, selector string, start, end time.Time) (names []string, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Pyroscope, "LabelNames", attribute.String("label_selector", selector))
	defer func() { err = upstream.EndSpan(span, c.wrap(err)) }()
	res, err := c.querier.LabelNames(ctx, connect.NewRequest(&typesv1.LabelNamesRequest{
		Matchers: matchers(selector), Start: start.UnixMilli(), End: end.UnixMilli(),
	}))
	if err != nil {
		return nil, err
	}
	names = []string{}
	for _, n := range res.Msg.GetNames() {
		if !IsInternalLabel(n) {
			names = append(names, n)
		}
	}
	return sortedUnique(names), nil
}

// LabelValues lists the values of label among the series matching selector between start and
// end, sorted.
func (c *Client) LabelValues(ctx context.Context, label, selector string, start, end time.Time) (values []string, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Pyroscope, "LabelValues",
		attribute.String("label", label), attribute.String("label_selector", selector))
	defer func() { err = upstream.EndSpan(span, c.wrap(err)) }()
	res, err := c.querier.LabelValues(ctx, connect.NewRequest(&typesv1.LabelValuesRequest{
		Name: label, Matchers: matchers(selector), Start: start.UnixMilli(), End: end.UnixMilli(),
	}))
	if err != nil {
		return nil, err
	}
	return sortedUnique(append([]string{}, res.Msg.GetNames()...)), nil
}

// IsInternalLabel reports whether name is one of Pyroscope's own labels (__name__,
// __profile_type__, __period_type__, ...); Grafana's Pyroscope data source hides every name
// starting with "__", and so does this plugin.
func IsInternalLabel(name string) bool { return strings.HasPrefix(name, "__") }

// matchers sends "every series" as no matcher at all: Pyroscope parses each matcher with the
// PromQL parser, which rejects the empty selector "{}".
func matchers(selector string) []string {
	selector = strings.TrimSpace(selector)
	if selector == "" || selector == "{}" {
		return nil
	}
	return []string{selector}
}

func sortedUnique(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
