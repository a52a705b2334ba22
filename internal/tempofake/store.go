package tempofake

import (
	"bytes"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// store holds one tenant's traces as they arrived over OTLP, each trace's spans kept with their
// resource and scope, as Tempo's ingest keeps them.
type store struct {
	mu     sync.RWMutex
	traces map[pcommon.TraceID]*trace
}

type trace struct {
	id         pcommon.TraceID
	td         ptrace.Traces
	start, end time.Time
}

func newStore() *store { return &store{traces: map[pcommon.TraceID]*trace{}} }

// add files every span of td under its trace.
func (s *store) add(td ptrace.Traces) {
	s.mu.Lock()
	defer s.mu.Unlock()
	rss := td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			// The spans of one scope, grouped by trace: one (resource, scope) copy per trace.
			into := map[pcommon.TraceID]ptrace.SpanSlice{}
			for k := 0; k < ss.Spans().Len(); k++ {
				sp := ss.Spans().At(k)
				t := s.traces[sp.TraceID()]
				if t == nil {
					t = &trace{id: sp.TraceID(), td: ptrace.NewTraces()}
					s.traces[sp.TraceID()] = t
				}
				spans, ok := into[sp.TraceID()]
				if !ok {
					nrs := t.td.ResourceSpans().AppendEmpty()
					rs.Resource().CopyTo(nrs.Resource())
					nrs.SetSchemaUrl(rs.SchemaUrl())
					nss := nrs.ScopeSpans().AppendEmpty()
					ss.Scope().CopyTo(nss.Scope())
					nss.SetSchemaUrl(ss.SchemaUrl())
					spans = nss.Spans()
					into[sp.TraceID()] = spans
				}
				sp.CopyTo(spans.AppendEmpty())
				st, en := sp.StartTimestamp().AsTime(), sp.EndTimestamp().AsTime()
				if t.start.IsZero() || st.Before(t.start) {
					t.start = st
				}
				if en.After(t.end) {
					t.end = en
				}
			}
		}
	}
}

// get is a copy of the trace's spans, or false when the tenant has none of it.
func (s *store) get(id pcommon.TraceID) (ptrace.Traces, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t := s.traces[id]
	if t == nil {
		return ptrace.Traces{}, false
	}
	out := ptrace.NewTraces()
	t.td.CopyTo(out)
	return out, true
}

// each calls fn with every trace overlapping [start, end] (zero times: no bound), newest start
// first, under the read lock; fn must not keep the trace.
func (s *store) each(start, end time.Time, fn func(t *trace) bool) {
	s.eachOrdered(start, end, true, fn)
}

// eachOrdered is each, newest first when newest is set, else in the order of the trace IDs: a
// Tempo asked without the most_recent hint answers the first traces it finds, not the newest.
func (s *store) eachOrdered(start, end time.Time, newest bool, fn func(t *trace) bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ts := make([]*trace, 0, len(s.traces))
	for _, t := range s.traces {
		if (!end.IsZero() && t.start.After(end)) || (!start.IsZero() && t.end.Before(start)) {
			continue
		}
		ts = append(ts, t)
	}
	if newest {
		sort.Slice(ts, func(i, j int) bool { return ts[i].start.After(ts[j].start) })
	} else {
		sort.Slice(ts, func(i, j int) bool { return bytes.Compare(ts[i].id[:], ts[j].id[:]) < 0 })
	}
	for _, t := range ts {
		if !fn(t) {
			return
		}
	}
}

// spans calls fn with every span of the trace and its resource.
func (t *trace) spans(fn func(res pcommon.Resource, s ptrace.Span)) {
	rss := t.td.ResourceSpans()
	for i := 0; i < rss.Len(); i++ {
		rs := rss.At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				fn(rs.Resource(), ss.At(k))
			}
		}
	}
}
