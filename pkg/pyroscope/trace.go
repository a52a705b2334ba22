package pyroscope

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"connectrpc.com/connect"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// TraceSelectorSupport is the current verdict on trace_id_selector for this server.
func (c *Client) TraceSelectorSupport() SelectorSupport { return c.traceSelector.support() }

// traceFlameGraph merges the samples of trace q.TraceID matching q, by trace_id_selector.
// Pyroscope 1.12 drops the field without a word and answers the unfiltered profile, so the answer
// is checked by a probe for a random trace ID (selectorState.filtered).
func (c *Client) traceFlameGraph(ctx context.Context, q models.FlameGraphQuery) (*FlameGraph, error) {
	// Pyroscope takes 32 hex digits only; a 64-bit Jaeger ID is stored padded with zeros.
	id, err := models.NormalizeTraceID("traceId", q.TraceID)
	if err != nil {
		return nil, err
	}
	ask := func(id string) func(context.Context) (*FlameGraph, error) {
		return func(ctx context.Context) (*FlameGraph, error) {
			fg, err := c.mergedFlameGraph(ctx, q, selectors{traceID: id})
			return fg, refusedOr(err)
		}
	}
	fg, err := c.traceSelector.filtered(ctx, models.ErrTraceSelectorIgnored, ask(id), ask(randomTraceID()))
	if errors.Is(err, models.ErrTraceSelectorRefused) {
		// Pyroscope 2.x in dual mode: a later part of the range may be served (split.go).
		return nil, c.splitRefusal(ctx, q, err)
	}
	return fg, err
}

// refusedOr files an unimplemented answer under models.ErrTraceSelectorRefused, with what Pyroscope said.
func refusedOr(err error) error {
	if ce, ok := errors.AsType[*connect.Error](err); ok && ce.Code() == connect.CodeUnimplemented {
		return fmt.Errorf("%w (Pyroscope answered: %s)", models.ErrTraceSelectorRefused, ce.Message())
	}
	return err
}

// randomTraceID is a trace ID no sample carries: 128 random bits.
func randomTraceID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}
