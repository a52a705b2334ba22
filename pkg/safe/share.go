package safe

import (
	"context"

	"golang.org/x/sync/singleflight"
)

// Share runs do once for the callers that ask the same key at the same time (panels reading the
// same trace, asking the same join) and gives each its answer; shared says whether other callers
// got the same value (then a caller that changes it must copy it first). A caller whose shared
// call was ended by its first caller's context (that panel closed) while its own context is
// live runs do again alone: the call's answer is not its answer. One ended by the upstream (a
// timeout of its own) is every caller's.
//
// Whether the first caller's context had ended is judged when the call returned, not when
// another caller looks: by then the first caller may have answered its own request with the
// upstream's error (a timeout), and Grafana ended that request's context, which is not a reason
// to ask the upstream again.
func Share[T any](g *singleflight.Group, ctx context.Context, key string, do func(context.Context) (T, error)) (v T, shared bool, err error) {
	type flight struct {
		v   T
		ctx context.Context // the context the call ran under: its first caller's
		// ended: that context had ended when the call returned.
		ended bool
	}
	res, err, shared := g.Do(key, func() (any, error) {
		v, err := do(ctx)
		return flight{v, ctx, ctx.Err() != nil}, err
	})
	f := res.(flight)
	if err != nil && f.ctx != ctx && f.ended && ctx.Err() == nil {
		v, err = do(ctx)
		return v, false, err
	}
	return f.v, shared, err
}
