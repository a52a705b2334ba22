package models

import (
	"context"
	"time"
)

// Refresh is the time range Grafana sent with a query. Grafana resolves a dashboard's range once
// per refresh and sends that same range, to the millisecond, with every panel of the refresh (and
// each refresh, or a relative range's next evaluation, has a range of its own), so the range
// tells the reads of one refresh from the next one's.
type Refresh struct{ From, To time.Time }

type refreshKey struct{}

// WithRefresh is ctx carrying the range of the query it serves.
func WithRefresh(ctx context.Context, r Refresh) context.Context {
	return context.WithValue(ctx, refreshKey{}, r)
}

// RefreshOf is the range of the query ctx serves; false when it serves none (a resource call).
func RefreshOf(ctx context.Context) (Refresh, bool) {
	r, ok := ctx.Value(refreshKey{}).(Refresh)
	return r, ok && !r.From.IsZero() && !r.To.IsZero()
}
