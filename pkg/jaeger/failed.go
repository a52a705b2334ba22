package jaeger

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// errorTags is Jaeger's search for failed spans: Jaeger stores OpenTelemetry's status ERROR as
// the tag error=true, and its v1 search matches tags in any span of a trace.
const errorTags = `{"error":"true"}`

// FailedTraces searches one service's traces that hold a failed span, each with every span
// Jaeger holds of it, in two searches: Jaeger's tag search error=true (how Jaeger stores
// OpenTelemetry's status ERROR; only its v1 API filters by tag, so it is asked even of a v3
// server), and the service's q.Limit most recent traces, whose failed ones are kept here (on
// the v3 API only their spans are read: findV3Failed). The second is needed because Jaeger's
// in-memory storage reads the tag's "true" as false (it converts v1 tags to string attributes,
// then takes the error attribute's boolean), so there the tag search answers traces with an OK
// span instead (jaegertracing/jaeger#8553); with it the triage still sees the most recent
// failures.
func (c *Client) FailedTraces(ctx context.Context, q models.TraceSearchQuery) (traces []*models.Trace, err error) {
	if q.Service == "" {
		return nil, errors.New("a trace search needs a service (Jaeger searches one service at a time): set the service")
	}
	ctx, span := upstream.StartSpan(ctx, models.Jaeger, "FailedTraces", attribute.String("hsi.service", q.Service), attribute.Int("hsi.limit", q.Limit))
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Jaeger, c.url, err)) }()
	q = q.WithDefaults(time.Now())
	api, err := c.detectAPI(ctx)
	if err != nil {
		return nil, err
	}
	tagged, err := c.findV1(ctx, q, errorTags)
	if st, ok := errors.AsType[*upstream.HTTPStatusError](err); ok && st.Status == http.StatusNotFound && api == APIv3 {
		tagged, err = nil, nil // no v1 search: the recent traces only
	}
	if err != nil {
		return nil, err
	}
	var recent []models.Span
	if api == APIv3 {
		recent, err = c.findV3Failed(ctx, q) // the failed traces' spans only
	} else {
		recent, err = c.search(ctx, q)
	}
	if err != nil {
		return nil, err
	}
	return failedOnly(append(tagged, recent...), api), nil
}

// failedOnly groups spans by trace (each span once: both searches may answer a trace) and keeps
// the traces with a failed span, each sorted.
func failedOnly(spans []models.Span, api string) []*models.Trace {
	byID := map[string]*models.Trace{}
	var order []string
	seen := map[[2]string]bool{}
	for _, s := range spans {
		id := models.PadTraceID(s.TraceID)
		k := [2]string{id, s.SpanID}
		if seen[k] {
			continue
		}
		seen[k] = true
		t := byID[id]
		if t == nil {
			t = &models.Trace{TraceID: id, API: api}
			byID[id] = t
			order = append(order, id)
		}
		t.Spans = append(t.Spans, s)
	}
	var out []*models.Trace
	for _, id := range order {
		t := byID[id]
		if !slices.ContainsFunc(t.Spans, models.Span.Failed) {
			continue
		}
		models.SortSpans(t.Spans)
		out = append(out, t)
	}
	return out
}
