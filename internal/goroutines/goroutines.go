// Package goroutines lets a test wait for goroutines to reach a function (the callers of a
// shared call, the first in the request and the others waiting for its reply) by reading every
// goroutine's stack: the condition itself, not a sleep that a loaded machine outlasts.
package goroutines

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// In counts the frames of fn (a function name as stacks print it, such as
// "safe.Share[" or "jaeger.(*Client).shared") in every goroutine's stack.
func In(fn string) int {
	buf := make([]byte, 1<<20)
	return strings.Count(string(buf[:runtime.Stack(buf, true)]), fn)
}

// WaitIn waits until n goroutines are in fn, and fails the test after a minute.
func WaitIn(t testing.TB, fn string, n int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		got := In(fn)
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after a minute %d of %d goroutines are in %s", got, n, fn)
		}
	}
}
