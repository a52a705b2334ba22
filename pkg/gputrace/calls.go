package gputrace

import (
	"maps"
	"slices"
	"sort"
)

// callStore holds the host calls kept for the join, by join ID. A trace holds about one call per
// kernel, so this is the largest thing a collector keeps: a Go map of them took about 90 bytes a
// call (BenchmarkChrome200MB: 22 of the 42 MB kept). Here a call takes 32 bytes: a slice sorted
// by ID, since CUDA numbers correlations in launch order and readers mostly meet the calls in
// that order, and a map for the calls met out of order, merged into the slice once it holds a
// quarter as many (each merge grows the slice by a quarter: few merges, however shuffled the
// file).
type callStore struct {
	sorted []callEntry
	late   map[int64]hostCall
}

type callEntry struct {
	id   int64
	call hostCall
}

// minMerge is the fewest late calls worth a merge.
const minMerge = 4096

func (s *callStore) len() int { return len(s.sorted) + len(s.late) }

// find is the index of id in s.sorted, or where it would go.
func (s *callStore) find(id int64) (int, bool) {
	i := sort.Search(len(s.sorted), func(i int) bool { return s.sorted[i].id >= id })
	return i, i < len(s.sorted) && s.sorted[i].id == id
}

// put keeps call under id, replacing a call of the same ID (as a map's assignment).
func (s *callStore) put(id int64, call hostCall) {
	// Every late ID is below the slice's last: a larger one is new.
	if n := len(s.sorted); n == 0 || s.sorted[n-1].id < id {
		s.sorted = append(s.sorted, callEntry{id, call})
		return
	}
	if i, ok := s.find(id); ok {
		s.sorted[i].call = call
		return
	}
	if s.late == nil {
		s.late = map[int64]hostCall{}
	}
	s.late[id] = call
	if len(s.late) >= max(minMerge, len(s.sorted)/4) {
		s.merge()
	}
}

// get is the call kept under id.
func (s *callStore) get(id int64) (hostCall, bool) {
	if i, ok := s.find(id); ok {
		return s.sorted[i].call, true
	}
	c, ok := s.late[id]
	return c, ok
}

// merge moves the late calls into the sorted slice.
func (s *callStore) merge() {
	if len(s.late) == 0 {
		return
	}
	ids := slices.Sorted(maps.Keys(s.late))
	out := make([]callEntry, 0, len(s.sorted)+len(ids))
	i := 0
	for _, id := range ids {
		for ; i < len(s.sorted) && s.sorted[i].id < id; i++ {
			out = append(out, s.sorted[i])
		}
		out = append(out, callEntry{id, s.late[id]})
	}
	s.sorted = append(out, s.sorted[i:]...)
	s.late = nil
}

// index is the position of id's call in s.sorted once merged (merge first), -1 for none.
func (s *callStore) index(id int64) int32 {
	if i, ok := s.find(id); ok {
		return int32(i)
	}
	return -1
}
