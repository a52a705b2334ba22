package gputrace

import (
	"path/filepath"
	"strings"
)

// Source says where a trace ID was found.
type Source string

const (
	SourceFileName   Source = "file name"
	SourceTraceName  Source = "traceName"
	SourceMetadata   Source = "metadata"
	SourceAnnotation Source = "annotation"
)

// TraceID is a request trace ID a GPU trace was captured for.
type TraceID struct {
	ID     string // lower-case hex, 16 or 32 digits (Jaeger / W3C)
	Source Source
}

const maxTraceIDs = 64

// idSet keeps the first sighting of each ID, bounded.
type idSet struct {
	seen map[string]bool
	ids  []TraceID
}

func (s *idSet) add(id string, src Source) {
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	if s.seen[id] || len(s.ids) >= maxTraceIDs {
		return
	}
	s.seen[id] = true
	s.ids = append(s.ids, TraceID{id, src})
}

func (s *idSet) scan(text string, src Source) {
	for _, id := range TraceIDsIn(text) {
		s.add(id, src)
	}
}

func (s *idSet) list() []TraceID { return append([]TraceID(nil), s.ids...) }

// TraceIDsIn returns the runs of exactly 16 or 32 hex digits in text, lower-cased, that are
// not part of a longer word. A run must hold a letter a–f, so that long decimal numbers
// (timestamps, byte counts) are not taken for IDs.
func TraceIDsIn(text string) []string {
	var out []string
	i := 0
	for i < len(text) {
		if !isHex(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isHex(text[j]) {
			j++
		}
		run := text[i:j]
		bounded := (i == 0 || !isWord(text[i-1])) && (j == len(text) || !isWord(text[j]))
		if bounded && (len(run) == 16 || len(run) == 32) && hasLetter(run) {
			out = append(out, strings.ToLower(run))
		}
		i = j
	}
	return out
}

// TraceIDsInFileName reads IDs from a trace file's base name.
func TraceIDsInFileName(path string) []string { return TraceIDsIn(filepath.Base(path)) }

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

// AddFileName records the IDs in a file name; readers of a path call it themselves.
func (c *Collector) AddFileName(path string) {
	for _, id := range TraceIDsInFileName(path) {
		c.ids.add(id, SourceFileName)
	}
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

func isWord(b byte) bool {
	return isHex(b) || b >= 'g' && b <= 'z' || b >= 'G' && b <= 'Z'
}

func hasLetter(s string) bool {
	return strings.ContainsAny(s, "abcdefABCDEF")
}
