package pyroscope

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// SelectorSupport is what a server does with a selector field older servers predate
// (trace_id_selector, profile_id_selector): older Pyroscope versions drop such a field unread and
// answer the unfiltered profile, so whether a server filters is seen, not assumed.
type SelectorSupport int

const (
	// SelectorUnknown: no answer has told yet (or the last verdict is older than
	// SelectorVerdictLifetime).
	SelectorUnknown SelectorSupport = iota
	// SelectorHonoured: the server keeps only the selected samples.
	SelectorHonoured
	// SelectorIgnored: the server drops the field and answers the unfiltered profile.
	SelectorIgnored
)

func (s SelectorSupport) String() string {
	switch s {
	case SelectorHonoured:
		return "honoured"
	case SelectorIgnored:
		return "ignored"
	}
	return "unknown"
}

// SelectorVerdictLifetime is how long a verdict on a selector is trusted: long enough that the
// detection costs at most one extra call per data source in that time, short enough that a
// Pyroscope upgraded (or rolled back) behind the same URL is noticed soon.
const SelectorVerdictLifetime = 10 * time.Minute

// selectorState is what one server was seen to do with one selector field. One Client per data
// source instance, so per URL and tenant, which is what the answer depends on.
type selectorState struct {
	field string           // trace_id_selector, as the error says it
	now   func() time.Time // time.Now; tests move it
	// probing holds a token while a probe runs, so that parallel queries wait for one verdict
	// instead of each sending its own probe.
	probing chan struct{}

	mu      sync.Mutex
	verdict SelectorSupport
	until   time.Time
}

func newSelectorState(field string) selectorState {
	return selectorState{field: field, now: time.Now, probing: make(chan struct{}, 1)}
}

func (s *selectorState) support() SelectorSupport {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.now().After(s.until) {
		return SelectorUnknown
	}
	return s.verdict
}

func (s *selectorState) set(v SelectorSupport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.verdict, s.until = v, s.now().Add(SelectorVerdictLifetime)
}

// reset forgets the verdict.
func (s *selectorState) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.verdict, s.until = SelectorUnknown, time.Time{}
}

// filtered returns ask's answer only once the server is known to filter by the field, and
// ignored (nothing it answered) where it is known not to.
//
// An answer is not trusted until a probe has shown the server filters: the same query for an ID
// that nothing carries must come back empty. The probe is sent after the real answer, and only
// when that answer is non-empty: on a server that drops the field the probe then sees at least
// the same samples (stored samples only grow), so it cannot come back empty by a race with an
// upload; an empty real answer is right whatever the server does, and needs no probe. The verdict
// is kept for SelectorVerdictLifetime; once the server is known to drop the field, it is not sent
// at all.
//
// A server's version cannot stand in for the probe: whether a tenant's queries go to the v2 read
// path is a per-tenant setting of 2.x, and a build's version string need not be a release.
func (s *selectorState) filtered(ctx context.Context, ignored error, ask, probe func(context.Context) (*FlameGraph, error)) (*FlameGraph, error) {
	if s.support() == SelectorIgnored {
		return nil, ignored
	}
	fg, err := ask(ctx)
	if err != nil {
		return nil, err
	}
	if fg.Total == 0 {
		return fg, nil
	}
	switch support, err := s.probe(ctx, probe); {
	case err != nil:
		return nil, fmt.Errorf("could not tell whether this Pyroscope filters by %s: %w", s.field, err)
	case support == SelectorIgnored:
		return nil, ignored
	}
	return fg, nil
}

// probe returns the verdict, asking probe (the query for an ID nothing carries) when there is
// none.
func (s *selectorState) probe(ctx context.Context, probe func(context.Context) (*FlameGraph, error)) (SelectorSupport, error) {
	select {
	case s.probing <- struct{}{}:
	case <-ctx.Done():
		return SelectorUnknown, ctx.Err()
	}
	defer func() { <-s.probing }()
	if v := s.support(); v != SelectorUnknown {
		return v, nil // another query's probe settled it while this one waited
	}
	fg, err := probe(ctx)
	if err != nil {
		return SelectorUnknown, err
	}
	v := SelectorHonoured
	if fg.Total != 0 {
		v = SelectorIgnored
	}
	s.set(v)
	return v, nil
}
