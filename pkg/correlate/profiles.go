// Package correlate joins what the upstreams return: a trace's spans to the profile queries that
// find their samples, and to the GPU state of their hosts. The planning and joining are pure; the
// whole request's profile (ProfileOfRequest) asks its upstreams through the small interfaces it
// declares (Traces, Profiles), never through a client's own type, so it is tested with fakes in
// memory.
package correlate

import (
	"slices"
	"sort"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// MaxSpanQueries bounds the per-span profile queries of one trace. Beyond it, each service's spans
// are asked for in one query: the graph is the same, only the count of spans with samples is
// then known per service rather than per span.
const MaxSpanQueries = 64

// SpanProfileQuery is one span-profile query of a trace's plan: the spans of one service (one span
// when the plan asks per span).
type SpanProfileQuery struct {
	Service string
	SpanIDs []string
	// Start and End cover the spans asked for.
	Start, End time.Time
}

// TraceProfilePlan says how to find the profile of a whole request.
type TraceProfilePlan struct {
	Queries []SpanProfileQuery
	// Services of the trace whose spans the plan asks for, sorted.
	Services []string
	// PerSpan is true when each query holds one span, so spans with samples can be counted.
	PerSpan bool
	// ProfiledSpans counts the spans carrying pyroscope.profile.id; when none do, every span of
	// the trace is asked for (some SDKs label samples without setting the attribute).
	ProfiledSpans int
	// AskedSpans counts the span IDs in all queries.
	AskedSpans int
	// Malformed are the pyroscope.profile.id values that are not span IDs (left out).
	Malformed []string
	// Start and End cover every span of the trace.
	Start, End time.Time
}

// PlanTraceProfile lists the span-profile queries that find the samples of trace t. Spans whose
// service does not match the user's matchers on service_name are left out.
func PlanTraceProfile(t *models.Trace, matchers []*labels.Matcher) TraceProfilePlan {
	var plan TraceProfilePlan
	profiled := map[string][]askedSpan{}
	for _, s := range t.Spans {
		if plan.Start.IsZero() || s.Start.Before(plan.Start) {
			plan.Start = s.Start
		}
		if end := s.Start.Add(s.Duration); end.After(plan.End) {
			plan.End = end
		}
		if !serviceMatches(s.Service, matchers) {
			continue
		}
		// otel-profiling-go sets the attribute to the span ID; Grafana's link sends the attribute's
		// value, so we do too.
		id, bad := s.ProfileID()
		if bad {
			plan.Malformed = append(plan.Malformed, s.Attributes[models.ProfileIDAttribute])
		}
		if id != "" {
			profiled[s.Service] = append(profiled[s.Service], askedSpan{id, s.Start, s.Duration})
			plan.ProfiledSpans++
		}
	}
	bySpan := profiled
	if plan.ProfiledSpans == 0 {
		// No span says it is profiled: every span of the matching services (gathered only now: a
		// large trace usually has profiled spans, and copying all its spans costs).
		bySpan = map[string][]askedSpan{}
		for _, s := range t.Spans {
			if serviceMatches(s.Service, matchers) {
				bySpan[s.Service] = append(bySpan[s.Service], askedSpan{s.SpanID, s.Start, s.Duration})
			}
		}
	}
	for svc := range bySpan {
		plan.Services = append(plan.Services, svc)
	}
	sort.Strings(plan.Services)
	plan.PerSpan = plan.ProfiledSpans > 0 && plan.ProfiledSpans <= MaxSpanQueries
	for _, svc := range plan.Services {
		spans := dedupe(bySpan[svc])
		plan.AskedSpans += len(spans)
		if plan.PerSpan {
			for _, s := range spans {
				plan.Queries = append(plan.Queries, spanQuery(svc, []askedSpan{s}))
			}
			continue
		}
		plan.Queries = append(plan.Queries, spanQuery(svc, spans))
	}
	return plan
}

// askedSpan is a span as a span-profile query asks for it: the ID its samples carry (its
// pyroscope.profile.id) and its time, not a copy of the whole span.
type askedSpan struct {
	id       string
	start    time.Time
	duration time.Duration
}

func spanQuery(service string, spans []askedSpan) SpanProfileQuery {
	q := SpanProfileQuery{Service: service, SpanIDs: make([]string, 0, len(spans))}
	for _, s := range spans {
		q.SpanIDs = append(q.SpanIDs, s.id)
		if q.Start.IsZero() || s.start.Before(q.Start) {
			q.Start = s.start
		}
		if end := s.start.Add(s.duration); end.After(q.End) {
			q.End = end
		}
	}
	return q
}

// TraceServices lists the services of t that match the user's matchers, sorted.
func TraceServices(t *models.Trace, matchers []*labels.Matcher) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range t.Spans {
		if !seen[s.Service] && serviceMatches(s.Service, matchers) {
			seen[s.Service] = true
			out = append(out, s.Service)
		}
	}
	sort.Strings(out)
	return out
}

func serviceMatches(service string, matchers []*labels.Matcher) bool {
	for _, m := range matchers {
		if m.Name == ServiceLabel && !m.Matches(service) {
			return false
		}
	}
	return true
}

// dedupe drops repeated span IDs (a span reported twice, or two spans naming one profile ID),
// in place. A service's spans are usually few: they are compared with those kept so far, and a
// set is made only for many.
func dedupe(spans []askedSpan) []askedSpan {
	const scanUpTo = 64
	var seen map[string]bool
	if len(spans) > scanUpTo {
		seen = make(map[string]bool, len(spans))
	}
	out := spans[:0]
	for _, s := range spans {
		switch {
		case seen != nil:
			if seen[s.id] {
				continue
			}
			seen[s.id] = true
		case slices.ContainsFunc(out, func(k askedSpan) bool { return k.id == s.id }):
			continue
		}
		out = append(out, s)
	}
	return out
}

// ServiceLabel is the Pyroscope label that names a service (OpenTelemetry's service.name).
const ServiceLabel = "service_name"

// TraceIDLabel is the label older profiling SDKs (the seeds' Python tag_wrapper) put on samples'
// series. otel-profiling-go's trace_id is no series label on Pyroscope 2.x, which keeps it per
// sample and filters by it with trace_id_selector instead (models.FlameGraphQuery.TraceID).
const TraceIDLabel = "trace_id"

// ServiceSelector is the user's matchers with service_name set to service (replacing any
// service_name matcher), printed as a label selector. Values are quoted by the matchers
// themselves, never concatenated.
func ServiceSelector(matchers []*labels.Matcher, service string, extra ...*labels.Matcher) string {
	out := make([]*labels.Matcher, 0, len(matchers)+1+len(extra))
	out = append(out, labels.MustNewMatcher(labels.MatchEqual, ServiceLabel, service))
	for _, m := range matchers {
		if m.Name != ServiceLabel {
			out = append(out, m)
		}
	}
	out = append(out, extra...)
	return Selector(out)
}

// Selector prints matchers as a label selector: {a="b",c=~"d"}.
func Selector(matchers []*labels.Matcher) string {
	s := "{"
	for i, m := range matchers {
		if i > 0 {
			s += ","
		}
		s += m.String()
	}
	return s + "}"
}

// TraceIDMatcher matches the trace_id label of older SDKs. A 64-bit Jaeger ID is stored padded to
// 32 digits; SDKs may have written it without the padding, so both forms match.
func TraceIDMatcher(traceID string) *labels.Matcher {
	if short, ok := cutZeros(traceID); ok {
		return labels.MustNewMatcher(labels.MatchRegexp, TraceIDLabel, "(0{16})?"+short)
	}
	return labels.MustNewMatcher(labels.MatchEqual, TraceIDLabel, traceID)
}

func cutZeros(id string) (string, bool) {
	if len(id) == 32 && id[:16] == "0000000000000000" {
		return id[16:], true
	}
	return "", false
}
