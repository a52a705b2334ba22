package pyroscope

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// TraceSelectorSupport is what a server does with trace_id_selector.
type TraceSelectorSupport int

const (
	// TraceSelectorUnknown: no answer has told yet (or the last verdict is older than
	// TraceSelectorVerdictLifetime).
	TraceSelectorUnknown TraceSelectorSupport = iota
	// TraceSelectorHonoured: the server keeps only the trace's samples (Pyroscope 2.x).
	TraceSelectorHonoured
	// TraceSelectorIgnored: the server drops the field and answers the unfiltered profile
	// (Pyroscope 1.x).
	TraceSelectorIgnored
)

func (s TraceSelectorSupport) String() string {
	switch s {
	case TraceSelectorHonoured:
		return "honoured"
	case TraceSelectorIgnored:
		return "ignored"
	}
	return "unknown"
}

// TraceSelectorVerdictLifetime is how long a verdict on trace_id_selector is trusted: long enough
// that the detection costs at most one extra call per data source in that time, short enough
// that a Pyroscope upgraded (or rolled back) behind the same URL is noticed soon.
const TraceSelectorVerdictLifetime = 10 * time.Minute

type traceSelectorState struct {
	now func() time.Time // time.Now; tests move it
	// probing holds a token while a probe runs, so that parallel queries wait for one verdict
	// instead of each sending its own probe.
	probing chan struct{}

	mu      sync.Mutex
	verdict TraceSelectorSupport
	until   time.Time
}

func newTraceSelectorState() traceSelectorState {
	return traceSelectorState{now: time.Now, probing: make(chan struct{}, 1)}
}

// TraceSelectorSupport is the current verdict on trace_id_selector for this server.
func (c *Client) TraceSelectorSupport() TraceSelectorSupport {
	s := &c.traceSelector
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.now().After(s.until) {
		return TraceSelectorUnknown
	}
	return s.verdict
}

func (c *Client) setTraceSelectorSupport(v TraceSelectorSupport) {
	s := &c.traceSelector
	s.mu.Lock()
	defer s.mu.Unlock()
	s.verdict, s.until = v, s.now().Add(TraceSelectorVerdictLifetime)
}

// traceFlameGraph merges the samples of trace q.TraceID matching q, by trace_id_selector.
//
// Pyroscope 1.12 drops the field without a word and answers the unfiltered profile, so an answer
// is not trusted until a probe has shown the server filters: the same query for a random trace
// ID, which no sample carries, must come back empty. The probe is sent after the real answer, and
// only when that answer is non-empty: on a server that drops the field the probe then sees at
// least the same samples (stored samples only grow), so it cannot come back empty by a race with
// an upload; an empty real answer is right whatever the server does, and needs no probe. The
// verdict is kept for TraceSelectorVerdictLifetime; once the server is known to drop the field,
// it is not sent at all.
//
// A server's version cannot stand in for the probe: whether a tenant's queries go to the v2 read
// path is a per-tenant setting of 2.x, and a build's version string need not be a release.
func (c *Client) traceFlameGraph(ctx context.Context, q models.FlameGraphQuery) (*FlameGraph, error) {
	// Pyroscope takes 32 hex digits only; a 64-bit Jaeger ID is stored padded with zeros.
	id, err := models.NormalizeTraceID("traceId", q.TraceID)
	if err != nil {
		return nil, err
	}
	if c.TraceSelectorSupport() == TraceSelectorIgnored {
		return nil, models.ErrTraceSelectorIgnored
	}
	fg, err := c.mergedFlameGraph(ctx, q, id)
	if err != nil {
		return nil, refusedOr(err)
	}
	if fg.Total == 0 {
		return fg, nil
	}
	switch support, err := c.probeTraceSelector(ctx, q); {
	case err != nil:
		return nil, fmt.Errorf("could not tell whether this Pyroscope filters by trace_id_selector: %w", err)
	case support == TraceSelectorIgnored:
		return nil, models.ErrTraceSelectorIgnored
	}
	return fg, nil
}

// refusedOr files an unimplemented answer under models.ErrTraceSelectorRefused, with what Pyroscope said.
func refusedOr(err error) error {
	if ce, ok := errors.AsType[*connect.Error](err); ok && ce.Code() == connect.CodeUnimplemented {
		return fmt.Errorf("%w (Pyroscope answered: %s)", models.ErrTraceSelectorRefused, ce.Message())
	}
	return err
}

// probeTraceSelector returns the verdict, asking q for a random trace ID when there is none.
func (c *Client) probeTraceSelector(ctx context.Context, q models.FlameGraphQuery) (TraceSelectorSupport, error) {
	select {
	case c.traceSelector.probing <- struct{}{}:
	case <-ctx.Done():
		return TraceSelectorUnknown, ctx.Err()
	}
	defer func() { <-c.traceSelector.probing }()
	if v := c.TraceSelectorSupport(); v != TraceSelectorUnknown {
		return v, nil // another query's probe settled it while this one waited
	}
	fg, err := c.mergedFlameGraph(ctx, q, randomTraceID())
	if err != nil {
		return TraceSelectorUnknown, refusedOr(err)
	}
	v := TraceSelectorHonoured
	if fg.Total != 0 {
		v = TraceSelectorIgnored
	}
	c.setTraceSelectorSupport(v)
	return v, nil
}

// randomTraceID is a trace ID no sample carries: 128 random bits.
func randomTraceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
