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
	sorted chunked[callEntry]
	late   map[int64]hostCall
}

type callEntry struct {
	id   int64
	call hostCall
}

// minMerge is the fewest late calls worth a merge.
const minMerge = 4096

func (s *callStore) len() int { return s.sorted.len() + len(s.late) }

// find is the index of id in s.sorted, or where it would go.
func (s *callStore) find(id int64) (int, bool) {
	n := s.sorted.len()
	i := sort.Search(n, func(i int) bool { return s.sorted.at(i).id >= id })
	return i, i < n && s.sorted.at(i).id == id
}

// put keeps call under id, replacing a call of the same ID (as a map's assignment).
func (s *callStore) put(id int64, call hostCall) {
	// Every late ID is below the slice's last: a larger one is new.
	if n := s.sorted.len(); n == 0 || s.sorted.at(n-1).id < id {
		s.sorted.push(callEntry{id, call})
		return
	}
	if i, ok := s.find(id); ok {
		s.sorted.at(i).call = call
		return
	}
	if s.late == nil {
		s.late = map[int64]hostCall{}
	}
	s.late[id] = call
	if len(s.late) >= max(minMerge, s.sorted.len()/4) {
		s.merge()
	}
}

// get is the call kept under id.
func (s *callStore) get(id int64) (hostCall, bool) {
	if i, ok := s.find(id); ok {
		return s.sorted.at(i).call, true
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
	var out chunked[callEntry]
	i, n := 0, s.sorted.len()
	for _, id := range ids {
		for ; i < n && s.sorted.at(i).id < id; i++ {
			out.push(*s.sorted.at(i))
		}
		out.push(callEntry{id, s.late[id]})
	}
	for ; i < n; i++ {
		out.push(*s.sorted.at(i))
	}
	s.sorted = out
	s.late = nil
}

// index is the position of id's call in s.sorted once merged (merge first), -1 for none.
func (s *callStore) index(id int64) int32 {
	if i, ok := s.find(id); ok {
		return int32(i)
	}
	return -1
}
