package jaeger

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// SearchSpans runs a trace search, as FindTraces does, and returns every span of every trace
// found, in the reply's order, for the joins that read spans rather than traces: an operation's
// span durations over time, the span IDs of its slow spans. Jaeger's search answers whole
// traces, so spans of other services and operations come too, without their attributes and
// events over the v3 API (findV3); the caller keeps what it asked for, and orders that. (Sorting
// every span of a search at its limit, tens of thousands, for the few hundred kept was 5% of the
// plugin's CPU in a profile of the load test.)
func (c *Client) SearchSpans(ctx context.Context, q models.TraceSearchQuery) (spans []models.Span, err error) {
	if q.Service == "" {
		return nil, errors.New("a trace search needs a service (Jaeger searches one service at a time): set the service")
	}
	ctx, span := upstream.StartSpan(ctx, models.Jaeger, "SearchSpans",
		attribute.String("hsi.service", q.Service), attribute.String("hsi.operation", q.Operation), attribute.Int("hsi.limit", q.Limit))
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Jaeger, c.url, err)) }()
	return c.search(ctx, q.WithDefaults(time.Now()))
}

// search asks the detected API's search endpoint.
func (c *Client) search(ctx context.Context, q models.TraceSearchQuery) ([]models.Span, error) {
	api, err := c.detectAPI(ctx)
	if err != nil {
		return nil, err
	}
	if api == APIv3 {
		return c.findV3(ctx, q)
	}
	return c.findV1(ctx, q, "")
}

// Operations lists the span names (operations) of a service, sorted, for the editor's picker.
func (c *Client) Operations(ctx context.Context, service string) (ops []string, err error) {
	if service == "" {
		return nil, errors.New("listing operations needs a service: set the service")
	}
	ctx, span := upstream.StartSpan(ctx, models.Jaeger, "Operations", attribute.String("hsi.service", service))
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Jaeger, c.url, err)) }()
	api, err := c.detectAPI(ctx)
	if err != nil {
		return nil, err
	}
	if api == APIv3 {
		var v3 struct {
			Operations []struct {
				Name string `json:"name"`
			} `json:"operations"`
		}
		if err := c.getJSON(ctx, "/api/v3/operations", url.Values{"service": {service}}, &v3); err != nil {
			return nil, err
		}
		for _, o := range v3.Operations {
			ops = append(ops, o.Name)
		}
	} else {
		// The v1 path with the service in it answers plain names on every Jaeger version.
		var v1 struct {
			Data []string `json:"data"`
		}
		err := c.getJSON(ctx, "/api/services/"+url.PathEscape(service)+"/operations", nil, &v1)
		if st, ok := errors.AsType[*upstream.HTTPStatusError](err); ok && st.Status == http.StatusNotFound {
			return []string{}, nil // a service Jaeger does not know has no operations
		}
		if err != nil {
			return nil, err
		}
		ops = v1.Data
	}
	ops = slices.Compact(slices.Sorted(slices.Values(ops)))
	if ops == nil {
		ops = []string{}
	}
	return ops, nil
}
