// Package recent keeps what was read before for a while (seconds to minutes, the caller says), so
// that the panels of one dashboard refresh, which ask the same things one after another, or the
// refreshes after it, read each once. It bounds what it keeps (entries and their weight in all)
// and gives it back to the heap once expired, by a timer that runs only while something is kept.
package recent

import (
	"slices"
	"sync"
	"time"
)

// Store keeps values by key for ttl after they were put, at most maxEntries of them and
// maxWeight in all (the weight is the caller's measure: spans, bytes). The oldest go first.
// The zero Store is not usable: make one with New.
type Store[K comparable, V any] struct {
	ttl                   time.Duration
	maxEntries, maxWeight int

	mu      sync.Mutex
	entries []entry[K, V]    // oldest first
	weight  int              // the entries' weight, in all
	prune   *time.Timer      // set while entries are kept: drops them once expired
	now     func() time.Time // nil: time.Now
}

type entry[K comparable, V any] struct {
	key    K
	value  V
	weight int
	at     time.Time
}

// New keeps each value for ttl, at most maxEntries values and maxWeight in all. clock tells the
// time (nil: time.Now); a caller with a clock of its own passes it, so that its tests move one.
func New[K comparable, V any](ttl time.Duration, maxEntries, maxWeight int, clock func() time.Time) *Store[K, V] {
	return &Store[K, V]{ttl: ttl, maxEntries: maxEntries, maxWeight: maxWeight, now: clock}
}

func (s *Store[K, V]) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// Get answers the value put under k within the last ttl.
func (s *Store[K, V]) Get(k K) (v V, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropExpired(s.clock())
	for _, e := range s.entries {
		if e.key == k {
			return e.value, true
		}
	}
	return v, false
}

// Put keeps v under k. A value heavier than maxWeight is not kept; a key already kept keeps its
// first value (two callers that read the same thing at once keep it once).
func (s *Store[K, V]) Put(k K, v V, weight int) {
	if weight > s.maxWeight {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	s.dropExpired(now)
	if slices.ContainsFunc(s.entries, func(e entry[K, V]) bool { return e.key == k }) {
		return
	}
	for len(s.entries) > 0 && (len(s.entries) >= s.maxEntries || s.weight+weight > s.maxWeight) {
		s.drop(1)
	}
	s.entries = append(s.entries, entry[K, V]{key: k, value: v, weight: weight, at: now})
	s.weight += weight
	if s.prune == nil {
		s.prune = time.AfterFunc(s.ttl, s.expire)
	}
}

// Len and Weight are what is kept now, expired entries not yet dropped included.
func (s *Store[K, V]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

func (s *Store[K, V]) Weight() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.weight
}

// expire drops the expired entries when the timer fires, and waits for the next to expire.
func (s *Store[K, V]) expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	s.dropExpired(now)
	if len(s.entries) == 0 {
		s.prune = nil
		return
	}
	s.prune.Reset(s.entries[0].at.Add(s.ttl).Sub(now))
}

func (s *Store[K, V]) dropExpired(now time.Time) {
	n := 0
	for n < len(s.entries) && now.Sub(s.entries[n].at) > s.ttl {
		n++
	}
	s.drop(n)
}

// drop forgets the n oldest entries.
func (s *Store[K, V]) drop(n int) {
	for _, e := range s.entries[:n] {
		s.weight -= e.weight
	}
	s.entries = slices.Delete(s.entries, 0, n)
}
