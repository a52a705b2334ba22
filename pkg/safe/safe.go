// Package safe runs work whose panic must not end the plugin: a query's own recover (see
// plugin.runQuery) cannot reach the goroutines it starts, and a panic there kills the process.
package safe

import (
	"errors"
	"runtime/debug"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
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
