package jaeger

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// errorTags is Jaeger's search for failed spans: Jaeger stores OpenTelemetry's status ERROR as
// the tag error=true, and its v1 search matches tags in any span of a trace.
const errorTags = `{"error":"true"}`

// FailedTraces searches one service's traces that hold a failed span, most recent first as
// Jaeger's search returns them (at most q.Limit), each with every span Jaeger holds of it. Only
// the v1 search filters by tag (the v3 HTTP API ignores attributes), so it is asked even of a v3
// server; a server without it is searched through v3 and its traces are filtered here, which
// reaches only the q.Limit most recent traces of the service.
func (c *Client) FailedTraces(ctx context.Context, q models.TraceSearchQuery) (traces []*models.Trace, err error) {
	if q.Service == "" {
		return nil, errors.New("a trace search needs a service (Jaeger searches one service at a time): set the service")
	}
	ctx, span := upstream.StartSpan(ctx, models.Jaeger, "FailedTraces", attribute.String("hsi.service", q.Service), attribute.Int("hsi.limit", q.Limit))
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Jaeger, c.url, err)) }()
	q = searchDefaults(q, time.Now())
	api, err := c.detectAPI(ctx)
	if err != nil {
		return nil, err
	}
	spans, err := c.findFailedV1(ctx, q)
	if st, ok := errors.AsType[*upstream.HTTPStatusError](err); ok && st.Status == http.StatusNotFound && api == APIv3 {
		spans, err = c.findV3(ctx, q)
	}
	if err != nil {
		return nil, err
	}
	return failedOnly(spans, api), nil
}

func (c *Client) findFailedV1(ctx context.Context, q models.TraceSearchQuery) ([]models.Span, error) {
	const path = "/api/traces"
	params := url.Values{
		"service": {q.Service},
		"start":   {strconv.FormatInt(q.Start.UnixMicro(), 10)},
		"end":     {strconv.FormatInt(q.End.UnixMicro(), 10)},
		"limit":   {strconv.Itoa(q.Limit)},
		"tags":    {errorTags},
	}
	if q.Operation != "" {
		params.Set("operation", q.Operation)
	}
	var reply v1Reply
	if err := c.getJSON(ctx, path, params, &reply); err != nil {
		return nil, err
	}
	return reply.spans(path)
}

// failedOnly groups spans by trace and keeps the traces with a failed span, each sorted.
func failedOnly(spans []models.Span, api string) []*models.Trace {
	byID := map[string]*models.Trace{}
	var order []string
	for _, s := range spans {
		t := byID[s.TraceID]
		if t == nil {
			t = &models.Trace{TraceID: padTraceID(s.TraceID), API: api}
			byID[s.TraceID] = t
			order = append(order, s.TraceID)
		}
		t.Spans = append(t.Spans, s)
	}
	var out []*models.Trace
	for _, id := range order {
		t := byID[id]
		if !slices.ContainsFunc(t.Spans, models.Span.Failed) {
			continue
		}
		sortSpans(t.Spans)
		out = append(out, t)
	}
	return out
}
