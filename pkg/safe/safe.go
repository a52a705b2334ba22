// Package safe runs work whose panic must not end the plugin: a query's own recover (see
// plugin.runQuery) cannot reach the goroutines it starts, and a panic there kills the process.
package safe

import (
	"context"
	"errors"
	"runtime/debug"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"golang.org/x/sync/errgroup"
)

// ErrPanicked is what a panicking call returns; the log has the details.
var ErrPanicked = errors.New("internal error; the plugin logged the details")

// Do runs fn and returns its error, or ErrPanicked (logged with the stack) when it panics.
func Do(what string, fn func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			backend.Logger.Error("recovered from a panic", "in", what, "panic", p, "stack", string(debug.Stack()))
			err = ErrPanicked
		}
	}()
	return fn()
}

// ForEach runs fn(0), ..., fn(n-1) in parallel, at most limit at once (0: no bound), each under
// Do, waits for all and returns their errors by index. One call failing or panicking neither
// cancels nor spoils the others: each part of an answer degrades alone. The bound is errgroup's
// SetLimit, so the goroutines are started only as slots free up.
//
// When every call fits in the bound, the last one runs on the caller's goroutine, which would
// only wait: a new goroutine starts with a small stack and grows it by copying its frames, which
// was 7 % of the plugin's CPU under load, and a request of one query then starts none. The
// goroutines it does start grow their stacks once, at their start (GrowStack).
func ForEach(what string, n, limit int, fn func(i int) error) []error {
	errs := make([]error, n)
	run := func(i int) { errs[i] = Do(what, func() error { return fn(i) }) }
	var g errgroup.Group
	inline := callerRunsLast(n, limit)
	if !inline && limit > 0 {
		g.SetLimit(limit)
	}
	for i := range n {
		if inline && i == n-1 {
			run(i)
			break
		}
		g.Go(func() error {
			GrowStack()
			run(i)
			return nil
		})
	}
	_ = g.Wait() // every call's error is in errs
	return errs
}

// callerRunsLast says whether n calls at most limit at once can run the last on the caller's
// goroutine: when all n fit in the bound, so the caller's is never the call that waits for a slot.
func callerRunsLast(n, limit int) bool {
	return n > 0 && (limit <= 0 || n <= limit)
}

// FailFast runs fn(ctx, 0), ..., fn(ctx, n-1) in parallel, at most limit at once (0: no bound),
// each under Do, for parts that are only worth having together: the first failure cancels the
// context the others get, and calls not yet started do not run. It returns that first failure,
// never the cancellations it caused, or nil when every call succeeded.
func FailFast(ctx context.Context, what string, n, limit int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	inline := callerRunsLast(n, limit) // as in ForEach
	if !inline && limit > 0 {
		g.SetLimit(limit)
	}
	call := func(i int) error {
		if err := gctx.Err(); err != nil {
			return err
		}
		return Do(what, func() error { return fn(gctx, i) })
	}
	for i := range n {
		if inline && i == n-1 {
			if err := call(i); err != nil {
				// Through the group, so that it cancels the others and counts if it came first;
				// all n fit in the bound, so this does not wait for a slot.
				g.Go(func() error { return err })
			}
			break
		}
		g.Go(func() error {
			GrowStack()
			return call(i)
		})
	}
	return g.Wait() // errgroup keeps the first error, the one that cancelled the rest
}
