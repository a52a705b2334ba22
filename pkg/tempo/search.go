package tempo

import (
	"context"
	"errors"
	"fmt"
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

// Search bounds.
const (
	pathSearch = "/api/search"
	// spansPerSpanSet is how many matching spans of each trace a span search asks for (spss).
	spansPerSpanSet = 100
	// maxFailedTraces bounds the failed requests read whole, one trace fetch each.
	maxFailedTraces = 200
	// rootNotReceived is the root service name Tempo answers while the root span has not
	// arrived (modules/frontend/combiner).
	rootNotReceived = "<root span not yet received>"
)

// searchResponse is Tempo's SearchResponse (pkg/tempopb/tempo.proto) in JSON: 64-bit numbers as
// strings, IDs as hex.
type searchResponse struct {
	Traces []struct {
		TraceID           string `json:"traceID"`
		RootServiceName   string `json:"rootServiceName"`
		RootTraceName     string `json:"rootTraceName"`
		StartTimeUnixNano string `json:"startTimeUnixNano"`
		DurationMs        uint32 `json:"durationMs"`
		SpanSets          []struct {
			Spans []struct {
				SpanID            string `json:"spanID"`
				Name              string `json:"name"`
				StartTimeUnixNano string `json:"startTimeUnixNano"`
				DurationNanos     string `json:"durationNanos"`
				Attributes        []struct {
					Key   string         `json:"key"`
					Value map[string]any `json:"value"`
				} `json:"attributes"`
			} `json:"spans"`
		} `json:"spanSets"`
		ServiceStats map[string]struct {
			SpanCount  uint32 `json:"spanCount"`
			ErrorCount uint32 `json:"errorCount"`
		} `json:"serviceStats"`
	} `json:"traces"`
}

// traceQL is the TraceQL span filter of a search: the service, the operation (the span's name),
// the least duration, and extra conditions.
func traceQL(q models.TraceSearchQuery, extra ...string) string {
	conds := []string{serviceNameTag + " = " + traceQLString(q.Service)}
	if q.Operation != "" {
		conds = append(conds, "name = "+traceQLString(q.Operation))
	}
	if q.MinDuration > 0 {
		conds = append(conds, "duration >= "+traceQLDuration(q.MinDuration))
	}
	conds = append(conds, extra...)
	return "{ " + strings.Join(conds, " && ") + " }"
}

// traceQLDuration writes d in the units TraceQL reads (ns, us, ms, s, m, h): whole nanoseconds,
// so nothing is rounded.
func traceQLDuration(d time.Duration) string { return strconv.FormatInt(d.Nanoseconds(), 10) + "ns" }

// mostRecent is the TraceQL hint (Tempo 2.8+; older servers ignore hints they do not know) for
// the newest traces first: without it Tempo answers the first traces it finds up to the limit,
// which can leave out the request a user just made.
const mostRecent = " with (most_recent=true)"

// search asks /api/search with the TraceQL query, newest traces first, over the window (whole
// seconds: Tempo reads start and end as Unix seconds, so the end is rounded up).
func (c *Client) search(ctx context.Context, query string, q models.TraceSearchQuery, spss int) (*searchResponse, error) {
	v := url.Values{
		"q":     {query + mostRecent},
		"start": {strconv.FormatInt(q.Start.Unix(), 10)},
		"end":   {strconv.FormatInt(q.End.Add(time.Second-1).Unix(), 10)},
		"limit": {strconv.Itoa(q.Limit)},
	}
	if spss > 0 {
		v.Set("spss", strconv.Itoa(spss))
	}
	var reply searchResponse
	if err := c.getJSON(ctx, pathSearch, v, &reply); err != nil {
		return nil, err
	}
	return &reply, nil
}

var errNoService = errors.New("a trace search needs a service: set the service")

// FindTraces lists the traces with a span of the service (and operation, at least MinDuration
// long) in the window, newest first as Tempo answers, each with its root, duration and services.
func (c *Client) FindTraces(ctx context.Context, q models.TraceSearchQuery) (found []models.TraceSummary, err error) {
	if q.Service == "" {
		return nil, errNoService
	}
	ctx, span := upstream.StartSpan(ctx, models.Tempo, "FindTraces", attribute.String("hsi.service", q.Service))
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Tempo, c.url, err)) }()
	q = q.WithDefaults(time.Now())
	reply, err := c.search(ctx, traceQL(q), q, 0)
	if err != nil {
		return nil, err
	}
	for _, t := range reply.Traces {
		id, err := searchTraceID(t.TraceID)
		if err != nil {
			return nil, err
		}
		start, err := nanos(t.StartTimeUnixNano)
		if err != nil {
			return nil, fmt.Errorf("reply to %s: trace %s: %w", pathSearch, id, err)
		}
		d := time.Duration(t.DurationMs) * time.Millisecond
		s := models.TraceSummary{TraceID: id, RootService: t.RootServiceName, RootOperation: t.RootTraceName,
			Start: start, Duration: d, DurationMs: float64(t.DurationMs), RootMissing: t.RootServiceName == rootNotReceived}
		if s.RootMissing {
			s.RootService, s.RootOperation = "", ""
		}
		for svc, st := range t.ServiceStats {
			s.Spans += int(st.SpanCount)
			s.Services = append(s.Services, svc)
		}
		slices.Sort(s.Services)
		found = append(found, s)
	}
	if len(found) > q.Limit {
		found = found[:q.Limit]
	}
	return found, nil
}

// SearchSpans lists the service's spans of the operation, at least MinDuration long, in the
// window: Tempo's matching spans of each trace (at most spansPerSpanSet a trace), with the
// span-profile ID each carries (selected by TraceQL), so the span heatmap and the span profile
// read them as they read Jaeger's.
func (c *Client) SearchSpans(ctx context.Context, q models.TraceSearchQuery) (spans []models.Span, err error) {
	if q.Service == "" {
		return nil, errNoService
	}
	ctx, span := upstream.StartSpan(ctx, models.Tempo, "SearchSpans",
		attribute.String("hsi.service", q.Service), attribute.String("hsi.operation", q.Operation), attribute.Int("hsi.limit", q.Limit))
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Tempo, c.url, err)) }()
	q = q.WithDefaults(time.Now())
	reply, err := c.search(ctx, traceQL(q)+" | select(span."+models.ProfileIDAttribute+")", q, spansPerSpanSet)
	if err != nil {
		return nil, err
	}
	for _, t := range reply.Traces {
		id, err := searchTraceID(t.TraceID)
		if err != nil {
			return nil, err
		}
		for _, set := range t.SpanSets {
			for _, s := range set.Spans {
				start, err := nanos(s.StartTimeUnixNano)
				if err != nil {
					return nil, fmt.Errorf("reply to %s: span %s: %w", pathSearch, s.SpanID, err)
				}
				d, err := strconv.ParseInt(s.DurationNanos, 10, 64)
				if err != nil || d < 0 {
					return nil, fmt.Errorf("reply to %s: span %s: %q is not a duration in nanoseconds", pathSearch, s.SpanID, s.DurationNanos)
				}
				sp := models.Span{TraceID: id, SpanID: strings.ToLower(s.SpanID), Service: q.Service, Operation: s.Name,
					Start: start, Duration: time.Duration(d), Attributes: map[string]string{}}
				for _, a := range s.Attributes {
					sp.Attributes[a.Key] = anyValue(a.Value)
				}
				spans = append(spans, sp)
			}
		}
	}
	models.SortSpans(spans)
	return spans, nil
}

// FailedTraces reads whole the traces of the window with a failed span (TraceQL's status =
// error) of the service, at most maxFailedTraces, newest first.
func (c *Client) FailedTraces(ctx context.Context, q models.TraceSearchQuery) (traces []*models.Trace, err error) {
	if q.Service == "" {
		return nil, errNoService
	}
	ctx, span := upstream.StartSpan(ctx, models.Tempo, "FailedTraces", attribute.String("hsi.service", q.Service))
	defer func() { err = upstream.EndSpan(span, upstream.Wrap(models.Tempo, c.url, err)) }()
	q = q.WithDefaults(time.Now())
	q.Limit = min(q.Limit, maxFailedTraces)
	q.MinDuration, q.Operation = 0, ""
	reply, err := c.search(ctx, traceQL(q, "status = error"), q, 0)
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(reply.Traces))
	for _, t := range reply.Traces {
		id, err := searchTraceID(t.TraceID)
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	read := make([]*models.Trace, len(ids))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(parallelTraceReads)
	for i, id := range ids {
		g.Go(func() error {
			tr, err := c.Trace(gctx, id)
			if errors.Is(err, models.ErrTraceNotFound) {
				return nil // searched, then gone: retention
			}
			read[i] = tr
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, tr := range read {
		if tr != nil {
			traces = append(traces, tr)
		}
	}
	return traces, nil
}

// parallelTraceReads bounds the failed traces read at once.
const parallelTraceReads = 8

// searchTraceID is a search hit's trace ID in its 32-digit form: Tempo drops its leading zeros.
func searchTraceID(id string) (string, error) {
	padded := models.PadTraceID(id)
	if len(id) == 0 || len(id) > 32 || !models.IsHexTraceID(padded) {
		return "", fmt.Errorf("reply to %s has a trace ID %q that is not hex", pathSearch, id)
	}
	return padded, nil
}

// nanos reads a Unix-nanosecond string (jsonpb writes 64-bit integers as strings).
func nanos(s string) (time.Time, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a time in nanoseconds", s)
	}
	return time.Unix(0, n), nil
}

// anyValue is an OTLP AnyValue in JSON as a string, as the spans' attributes are kept.
func anyValue(v map[string]any) string {
	for _, k := range []string{"stringValue", "intValue", "doubleValue", "boolValue"} {
		if x, ok := v[k]; ok {
			return fmt.Sprint(x)
		}
	}
	return ""
}
