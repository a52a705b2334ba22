package pyroscope

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Pyroscope 2.x in its default v1-v2-dual mode routes each query by time
// (grafana/pyroscope pkg/frontend/readpath/router.go, Router/Query): a range wholly after the
// split goes to the v2 query frontend, one wholly before it to the legacy v1 frontend, and one
// crossing it is cut at the split, [start, split-1] to v1 and [split, end] to v2, both asked,
// any error failing the whole call. The legacy frontend refuses trace_id_selector with
// unimplemented "trace_id_selector is only supported with the v2 query backend"
// (pkg/frontend/frontend_select_merge_stacktraces.go), which names no split: it is found by
// narrowing the range (v2From).

// splitState remembers where a dual-mode server's v2 storage begins: after lo and at or before
// hi (hi zero: no later bound known). One search at a time (search), so that the queries of one
// request's services wait for one answer instead of each narrowing the range.
type splitState struct {
	search sync.Mutex

	mu     sync.Mutex
	lo, hi time.Time
	until  time.Time
}

// splitLifetime is how long a found split is trusted; it moves only when the server's
// settings (or, in its "auto" mode, its oldest v2 profile) do.
const splitLifetime = SelectorVerdictLifetime

// splitProbes bounds the narrowing: the split is found to within the range / 2^splitProbes (and
// at least a second), in as many cheap queries.
const splitProbes = 12

func (s *splitState) known(now time.Time) (lo, hi time.Time, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lo, s.hi, !s.lo.IsZero() && now.Before(s.until)
}

func (s *splitState) set(lo, hi, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lo, s.hi, s.until = lo, hi, now.Add(splitLifetime)
}

// splitRefusal turns a refusal of trace_id_selector over q's range into a
// *models.TraceSelectorSplitError where a later part of the range is served; else (the whole
// range lies before the split, or the narrowing failed) it returns the refusal as it was.
func (c *Client) splitRefusal(ctx context.Context, q models.FlameGraphQuery, refusal error) error {
	from, ok, err := c.v2From(ctx, q)
	switch {
	case err != nil:
		slog.Warn("could not find where Pyroscope serves trace_id_selector", "err", err)
		return refusal
	case !ok:
		return refusal
	}
	return &models.TraceSelectorSplitError{From: from, Err: refusal}
}

// v2From finds the earliest start from which trace_id_selector over [start, q.End] is served,
// for a range q refused: ok false where none in the range is. Each probe asks for a random trace
// ID, which no sample carries, so it reads little.
func (c *Client) v2From(ctx context.Context, q models.FlameGraphQuery) (time.Time, bool, error) {
	c.v1Split.search.Lock()
	defer c.v1Split.search.Unlock()
	start, end := q.Start, q.End
	if lo, hi, ok := c.v1Split.known(time.Now()); ok {
		switch {
		case !lo.Before(end):
			return time.Time{}, false, nil // the whole range lies before the split
		case !hi.IsZero() && start.Before(lo) && !hi.After(end):
			return hi, true, nil
		}
	}
	served := func(from time.Time) (bool, error) {
		p := q
		p.Start, p.MaxNodes, p.FrameFilter = from, 1, models.FrameFilter{}
		_, err := c.mergedFlameGraph(ctx, p, selectors{traceID: randomTraceID()})
		if ce, ok := errors.AsType[*connect.Error](err); ok && ce.Code() == connect.CodeUnimplemented {
			return false, nil
		}
		return err == nil, err
	}
	precision := max(time.Second, end.Sub(start)>>splitProbes)
	lo, hi := start, end.Add(-precision)
	if !hi.After(lo) {
		return time.Time{}, false, nil
	}
	switch ok, err := served(hi); {
	case err != nil:
		return time.Time{}, false, err
	case !ok:
		c.v1Split.set(hi, time.Time{}, time.Now())
		return time.Time{}, false, nil
	}
	for hi.Sub(lo) > precision {
		mid := lo.Add(hi.Sub(lo) / 2)
		ok, err := served(mid)
		if err != nil {
			return time.Time{}, false, err
		}
		if ok {
			hi = mid
		} else {
			lo = mid
		}
	}
	c.v1Split.set(lo, hi, time.Now())
	return hi, true, nil
}
