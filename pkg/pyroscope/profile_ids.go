package pyroscope

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// ProfileIDSelectorSupport is the current verdict on profile_id_selector for this server.
func (c *Client) ProfileIDSelectorSupport() SelectorSupport { return c.profileIDSelector.support() }

// profilesFlameGraph merges the individual profiles q.ProfileIDSelector (from exemplars), by
// profile_id_selector. Pyroscope 1.12 drops the field without a word and answers every profile of
// the range, which must never be shown as the profiles asked: the answer is checked by a probe
// for a random profile ID (selectorState.filtered).
func (c *Client) profilesFlameGraph(ctx context.Context, q models.FlameGraphQuery) (*FlameGraph, error) {
	ask := func(ids []string) func(context.Context) (*FlameGraph, error) {
		return func(ctx context.Context) (*FlameGraph, error) {
			return c.mergedFlameGraph(ctx, q, selectors{profileIDs: ids})
		}
	}
	// The server is too old for the query: the user's to act on, not the plugin's.
	ignored := backend.DownstreamError(models.ErrProfileIDSelectorIgnored)
	return c.profileIDSelector.filtered(ctx, ignored, ask(q.ProfileIDSelector), ask([]string{randomProfileID()}))
}

// randomProfileID is a profile ID no profile carries: a random (version 4) UUID.
func randomProfileID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
