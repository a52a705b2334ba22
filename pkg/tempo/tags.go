package tempo

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// tagValuesV2 is Tempo's SearchTagValuesV2Response (pkg/tempopb/tempo.proto) in JSON.
type tagValuesV2 struct {
	TagValues []struct {
		Type  string `json:"type"`
		Value string `json:"value"`
	} `json:"tagValues"`
}

// Services lists the services Tempo holds spans of (the values of resource.service.name), and
// says which API answered.
func (c *Client) Services(ctx context.Context) (services []string, api string, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Tempo, "Services")
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Tempo, c.url, err)) }()
	services, err = c.tagValues(ctx, serviceNameTag, "")
	return services, APIv2, err
}

// Operations lists the span names of a service: the values of TraceQL's intrinsic name among
// the service's spans.
func (c *Client) Operations(ctx context.Context, service string) (ops []string, err error) {
	ctx, span := upstream.StartSpan(ctx, models.Tempo, "Operations", attribute.String("hsi.service", service))
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Tempo, c.url, err)) }()
	return c.tagValues(ctx, spanNameTag, "{ "+serviceNameTag+" = "+traceQLString(service)+" }")
}

// traceQLString is s as a TraceQL string literal: double-quoted, its backslashes and quotes
// escaped (a service name never reaches the query as TraceQL syntax).
func traceQLString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// tagValues asks for a tag's values, scoped by a TraceQL query when q is set, sorted.
func (c *Client) tagValues(ctx context.Context, tag, q string) ([]string, error) {
	query := url.Values{"limit": {strconv.Itoa(defaultTagValueLimit)}}
	if q != "" {
		query.Set("q", q)
	}
	var reply tagValuesV2
	if err := c.getJSON(ctx, fmt.Sprintf(pathTagValuesV2, url.PathEscape(tag)), query, &reply); err != nil {
		return nil, err
	}
	var out []string
	for _, v := range reply.TagValues {
		if v.Value != "" && !slices.Contains(out, v.Value) {
			out = append(out, v.Value)
		}
	}
	slices.Sort(out)
	return out, nil
}
