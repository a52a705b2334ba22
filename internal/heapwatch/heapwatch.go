// Package heapwatch measures the heap a piece of work needs at once, for the benchmarks.
package heapwatch

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Peak samples the heap (MemStats.HeapAlloc, every 20 ms, after a GC) while f runs and returns
// its peak above what it was before f: what f needed at once.
func Peak(f func()) uint64 {
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > peak.Load() {
				peak.Store(m.HeapAlloc)
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	return max(peak.Load(), base.HeapAlloc) - base.HeapAlloc
}
