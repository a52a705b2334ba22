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
func ForEach(what string, n, limit int, fn func(i int) error) []error {
	errs := make([]error, n)
	var g errgroup.Group
	if limit > 0 {
		g.SetLimit(limit)
	}
	for i := range n {
		g.Go(func() error {
			errs[i] = Do(what, func() error { return fn(i) })
			return nil
		})
	}
	_ = g.Wait() // every call's error is in errs
	return errs
}

// FailFast runs fn(ctx, 0), ..., fn(ctx, n-1) in parallel, at most limit at once (0: no bound),
// each under Do, for parts that are only worth having together: the first failure cancels the
// context the others get, and calls not yet started do not run. It returns that first failure,
// never the cancellations it caused, or nil when every call succeeded.
func FailFast(ctx context.Context, what string, n, limit int, fn func(ctx context.Context, i int) error) error {
	g, gctx := errgroup.WithContext(ctx)
	if limit > 0 {
		g.SetLimit(limit)
	}
	for i := range n {
		g.Go(func() error {
			if err := gctx.Err(); err != nil {
				return err
			}
			return Do(what, func() error { return fn(gctx, i) })
		})
	}
	return g.Wait() // errgroup keeps the first error, the one that cancelled the rest
}
