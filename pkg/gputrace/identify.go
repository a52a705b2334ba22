package gputrace

import (
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

const maxTraceIDs = 64

// idSet keeps the first sighting of each ID, bounded.
type idSet struct {
	seen map[string]bool
	ids  []activity.TraceID
}

func (s *idSet) add(id string, src activity.Source) {
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if s.seen[id] || len(s.ids) >= maxTraceIDs {
		return
	}
	s.seen[id] = true
	s.ids = append(s.ids, activity.TraceID{ID: id, Source: src})
}

func (s *idSet) scan(text string, src activity.Source) {
	for _, id := range activity.TraceIDsIn(text) {
		s.add(id, src)
	}
}

func (s *idSet) list() []activity.TraceID { return append([]activity.TraceID(nil), s.ids...) }

// Matches reports whether the result names the trace ID (any case, 16-digit IDs matching the
// low half of a 32-digit one as Jaeger shortens them).
func (r *Result) Matches(traceID string) bool {
	for _, t := range r.TraceIDs {
		if sameTraceID(t.ID, traceID) {
			return true
		}
	}
	return false
}

func sameTraceID(have, traceID string) bool {
	want := strings.ToLower(strings.TrimSpace(traceID))
	return have == want || len(want) == 32 && len(have) == 16 && want[16:] == have ||
		len(want) == 16 && len(have) == 32 && have[16:] == want
}

// ScanTraceIDs records the trace IDs text names, found where src says (activity.Sink).
func (c *Collector) ScanTraceIDs(text string, src activity.Source) { c.ids.scan(text, src) }

// AddFileName records the IDs in a file name; readers of a path call it themselves.
func (c *Collector) AddFileName(path string) {
	for _, id := range activity.TraceIDsInFileName(path) {
		c.ids.add(id, activity.SourceFileName)
	}
}
