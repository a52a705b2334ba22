package jaeger

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// ErrTraceNotFound is what Trace returns (wrapped, with the upstream's name and URL) when Jaeger
// has no span of the trace; check it with errors.Is.
var ErrTraceNotFound = models.ErrTraceNotFound

// traceNotFoundError says which trace and the usual reasons; it is ErrTraceNotFound for
// errors.Is. It deliberately does not wrap the HTTP 404, so upstream.Describe says this, not
// "HTTP 404".
type traceNotFoundError struct{ traceID string }

func (e *traceNotFoundError) Error() string {
	return fmt.Sprintf("trace %s not found (older than Jaeger's retention, not yet flushed, or a different Jaeger)", e.traceID)
}

func (e *traceNotFoundError) Is(target error) bool { return target == ErrTraceNotFound }

// Trace fetches all spans of one trace. traceID is 32 lower-case hex digits (16 are accepted, as
// Jaeger accepts 64-bit IDs).
func (c *Client) Trace(ctx context.Context, traceID string) (tr *models.Trace, err error) {
	// The ID goes into the URL path: only hex may pass. A bad ID is the caller's error, not
	// Jaeger's, so it is not wrapped as an upstream failure.
	if !models.IsHexTraceID(traceID) {
		return nil, fmt.Errorf("trace ID %q is not 16 or 32 hex digits", traceID)
	}
	ctx, span := upstream.StartSpan(ctx, models.Jaeger, "Trace", attribute.String("hsi.trace_id", traceID))
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Jaeger, c.url, err)) }()

	api, err := c.detectAPI(ctx)
	if err != nil {
		return nil, err
	}
	spans, err := c.shared(ctx, "trace "+api+" "+strings.ToLower(traceID), func(ctx context.Context) ([]models.Span, error) {
		if api == APIv3 {
			return c.traceV3(ctx, traceID)
		}
		return c.traceV1(ctx, traceID)
	})
	if st, ok := errors.AsType[*upstream.HTTPStatusError](err); ok && st.Status == http.StatusNotFound {
		// The API is known to exist (detectAPI), so a 404 here is about the trace, not the route.
		err = &traceNotFoundError{traceID: traceID}
	}
	if err != nil {
		return nil, err
	}
	if len(spans) == 0 {
		return nil, &traceNotFoundError{traceID: traceID}
	}
	models.SortSpans(spans)
	return &models.Trace{TraceID: models.PadTraceID(traceID), Spans: spans, API: api}, nil
}

func (c *Client) traceV3(ctx context.Context, traceID string) ([]models.Span, error) {
	return c.getV3Spans(ctx, "/api/v3/traces/"+traceID, nil)
}

func (c *Client) traceV1(ctx context.Context, traceID string) ([]models.Span, error) {
	path := "/api/traces/" + traceID
	var reply v1Reply
	if err := c.getJSON(ctx, path, nil, &reply); err != nil {
		return nil, err
	}
	return reply.spans(path)
}

// FindTraces searches one service's traces, as Jaeger's search page does, and summarises each:
// slowest first, at most q.Limit. Zero Start/End mean the last hour.
func (c *Client) FindTraces(ctx context.Context, q models.TraceSearchQuery) (found []models.TraceSummary, err error) {
	if q.Service == "" {
		// Not Jaeger's fault: no span, no upstream in the message.
		return nil, errors.New("a trace search needs a service (Jaeger searches one service at a time): set the service")
	}
	ctx, span := upstream.StartSpan(ctx, models.Jaeger, "FindTraces", attribute.String("hsi.service", q.Service))
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Jaeger, c.url, err)) }()

	q = q.WithDefaults(time.Now())
	spans, err := c.search(ctx, q)
	if err != nil {
		return nil, err
	}
	found = summarise(spans)
	if len(found) > q.Limit {
		found = found[:q.Limit]
	}
	return found, nil
}

// findV3 is a v3 search: the spans of every trace found, those of q.Service whole, the other
// services' without attributes and events (decodeV3Read). Its callers need no more: the
// summaries read the services, names and times of all spans; SearchSpans' callers read the
// asked service's spans, and of the others their traces.
func (c *Client) findV3(ctx context.Context, q models.TraceSearchQuery) ([]models.Span, error) {
	const path = "/api/v3/traces"
	params := v3SearchParams(q)
	return c.shared(ctx, path+"?"+params.Encode(), func(ctx context.Context) ([]models.Span, error) {
		spans, err := c.getV3SpansSkimming(ctx, path, params, q.Service)
		if st, ok := errors.AsType[*upstream.HTTPStatusError](err); ok && st.Status == http.StatusNotFound {
			// Jaeger's v3 search answers "No traces found" with a 404.
			return nil, nil
		}
		return spans, err
	})
}

// findV3Failed is findV3 answering the spans of the failed traces only (decodeV3Failed).
func (c *Client) findV3Failed(ctx context.Context, q models.TraceSearchQuery) ([]models.Span, error) {
	const path = "/api/v3/traces"
	params := v3SearchParams(q)
	return c.shared(ctx, "failed "+path+"?"+params.Encode(), func(ctx context.Context) (spans []models.Span, err error) {
		err = c.get(ctx, path, params, func(body io.Reader) error {
			// A pooled buffer: a triage's searches read a few hundred kilobytes per service, and
			// the reading copies what it keeps (a new buffer each time was the most the plugin
			// allocated under load).
			b, err := upstream.ReadPooled(body)
			defer b.Release()
			if err != nil {
				if errors.Is(err, io.ErrUnexpectedEOF) {
					return truncatedError(path, err)
				}
				return fmt.Errorf("reading the reply to %s: %w", path, err)
			}
			key := keyOf(b.Bytes(), readFailed)
			if seen, ok := c.scans.get(key); ok {
				spans = seen
				return nil
			}
			if spans, err = decodeV3Failed(b.Bytes(), path); err == nil {
				c.scans.put(key, spans)
			}
			return err
		})
		if st, ok := errors.AsType[*upstream.HTTPStatusError](err); ok && st.Status == http.StatusNotFound {
			return nil, nil // "No traces found"
		}
		return spans, err
	})
}

// v3SearchParams are a search's parameters in Jaeger's v3 API.
func v3SearchParams(q models.TraceSearchQuery) url.Values {
	params := url.Values{
		"query.service_name":   {q.Service},
		"query.start_time_min": {q.Start.UTC().Format(time.RFC3339Nano)},
		"query.start_time_max": {q.End.UTC().Format(time.RFC3339Nano)},
		// search_depth is the current name; servers before it read num_traces, and each
		// ignores the other's.
		"query.search_depth": {strconv.Itoa(q.Limit)},
		"query.num_traces":   {strconv.Itoa(q.Limit)},
	}
	if q.Operation != "" {
		params.Set("query.operation_name", q.Operation)
	}
	if q.MinDuration > 0 {
		params.Set("query.duration_min", q.MinDuration.String())
	}
	return params
}

func (c *Client) findV1(ctx context.Context, q models.TraceSearchQuery, tags string) ([]models.Span, error) {
	const path = "/api/traces"
	params := url.Values{
		"service": {q.Service},
		"start":   {strconv.FormatInt(q.Start.UnixMicro(), 10)},
		"end":     {strconv.FormatInt(q.End.UnixMicro(), 10)},
		"limit":   {strconv.Itoa(q.Limit)},
	}
	if q.Operation != "" {
		params.Set("operation", q.Operation)
	}
	if q.MinDuration > 0 {
		params.Set("minDuration", q.MinDuration.String())
	}
	if tags != "" {
		params.Set("tags", tags)
	}
	return c.shared(ctx, path+"?"+params.Encode(), func(ctx context.Context) ([]models.Span, error) {
		var reply v1Reply
		if err := c.getJSON(ctx, path, params, &reply); err != nil {
			return nil, err
		}
		return reply.spans(path)
	})
}

// summarise groups spans by trace. The root is the span without a parent (the earliest if
// several, or the earliest span at all when the root is missing, as in a trace still arriving).
// One pass, keeping each trace's figures rather than its spans: a search's reply holds
// thousands of spans, and grouping copies of them was most of what summarising allocated.
func summarise(spans []models.Span) []models.TraceSummary {
	type trace struct {
		first, root int // indexes into spans; root -1 until a span without a parent is seen
		start, end  time.Time
		spans       int
		services    map[string]bool
	}
	// earlier orders spans as models.SortSpans does: by start, then span ID.
	earlier := func(a, b int) bool {
		return cmp.Or(spans[a].Start.Compare(spans[b].Start), cmp.Compare(spans[a].SpanID, spans[b].SpanID)) < 0
	}
	index := map[string]int{}
	var traces []*trace
	for i := range spans {
		s := &spans[i]
		k, ok := index[s.TraceID]
		if !ok {
			k = len(traces)
			index[s.TraceID] = k
			traces = append(traces, &trace{first: i, root: -1, start: s.Start, end: s.Start, services: map[string]bool{}})
		}
		t := traces[k]
		t.spans++
		t.services[s.Service] = true
		if earlier(i, t.first) {
			t.first = i
		}
		if s.ParentSpanID == "" && (t.root < 0 || earlier(i, t.root)) {
			t.root = i
		}
		if s.Start.Before(t.start) {
			t.start = s.Start
		}
		if e := s.Start.Add(s.Duration); e.After(t.end) {
			t.end = e
		}
	}
	out := make([]models.TraceSummary, 0, len(traces))
	for _, t := range traces {
		root, rootMissing := spans[t.first], true
		if t.root >= 0 {
			root, rootMissing = spans[t.root], false
		}
		sum := models.TraceSummary{
			TraceID: root.TraceID, RootService: root.Service, RootOperation: root.Operation,
			Start: t.start, Duration: t.end.Sub(t.start), Spans: t.spans, RootMissing: rootMissing,
		}
		sum.DurationMs = float64(sum.Duration) / float64(time.Millisecond)
		sum.Services = slices.Sorted(maps.Keys(t.services))
		out = append(out, sum)
	}
	slices.SortFunc(out, func(a, b models.TraceSummary) int {
		return cmp.Or(cmp.Compare(b.Duration, a.Duration), a.Start.Compare(b.Start), cmp.Compare(a.TraceID, b.TraceID))
	})
	return out
}

// rawString turns a v1 tag value (a JSON string, number or boolean) into the string form the
// rest of the plugin compares: strings unquoted, anything else as Jaeger printed it.
func rawString(v json.RawMessage) string {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s
	}
	return string(v)
}
