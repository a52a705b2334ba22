package recent

import (
	"fmt"
	"testing"
	"time"
)

// What is kept is answered for ttl and no longer, the timer drops it and stops when nothing is
// left (the heap comes back after a load), and both bounds hold, the newest value kept.
func TestStoreExpiresAndStaysBounded(t *testing.T) {
	const ttl = 10 * time.Second
	now := time.Now()
	s := New[string, int](ttl, 3, 10, func() time.Time { return now })

	s.Put("a", 1, 2)
	s.Put("a", 9, 2) // put twice at once: kept once, the first value
	if v, ok := s.Get("a"); !ok || v != 1 || s.Len() != 1 || s.Weight() != 2 {
		t.Fatalf("the same key put twice: got %d %v, %d kept (weight %d); want 1, kept once (weight 2)", v, ok, s.Len(), s.Weight())
	}
	now = now.Add(ttl / 2)
	s.Put("b", 2, 3)
	if _, ok := s.Get("a"); !ok {
		t.Fatalf("a value put %s ago not answered", ttl/2)
	}
	now = now.Add(ttl/2 + time.Millisecond)
	if _, ok := s.Get("a"); ok || s.Len() != 1 || s.Weight() != 3 {
		t.Errorf("a value put over %s ago answered, or still kept (%d kept, weight %d)", ttl, s.Len(), s.Weight())
	}
	if v, ok := s.Get("b"); !ok || v != 2 {
		t.Errorf("a value put %s ago: got %d %v, want 2", ttl/2, v, ok)
	}

	now = now.Add(ttl)
	s.expire() // the timer's call
	s.mu.Lock()
	left, timer := len(s.entries), s.prune
	s.mu.Unlock()
	if left != 0 || s.Weight() != 0 || timer != nil {
		t.Errorf("after every entry expired: %d kept (weight %d), timer %v; want none, and no timer", left, s.Weight(), timer)
	}

	for i := range 4 {
		s.Put(fmt.Sprint(i), i, 1)
	}
	if s.Len() != 3 {
		t.Errorf("%d values kept, want at most 3", s.Len())
	}
	if _, ok := s.Get("0"); ok {
		t.Error("the oldest value is still kept past the bound")
	}
	s.Put("heavy", 5, 9)
	if v, ok := s.Get("heavy"); !ok || v != 5 || s.Weight() > 10 {
		t.Errorf("weight %d kept, want at most 10 with the newest value (got %d %v)", s.Weight(), v, ok)
	}
	s.Put("too heavy", 6, 11)
	if _, ok := s.Get("too heavy"); ok {
		t.Error("a value heavier than the bound was kept")
	}
	if _, ok := s.Get("heavy"); !ok {
		t.Error("a value too heavy to keep dropped the others")
	}
}

// The timer really runs: with no call after the load, what was kept is dropped once expired.
func TestStoreDropsExpiredValuesWithoutCalls(t *testing.T) {
	s := New[string, []byte](20*time.Millisecond, 10, 1<<20, nil)
	s.Put("a", make([]byte, 1000), 1000)
	deadline := time.Now().Add(time.Minute)
	for s.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d values still kept a minute after they expired", s.Len())
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prune != nil {
		t.Error("the timer is still set with nothing kept")
	}
}
