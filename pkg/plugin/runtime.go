package plugin

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the garbage collector's target the plugin runs with unless GOGC says
// otherwise. A trace query on a request of thousands of spans allocates about 30 MB within about
// 100 ms; at Go's default of 100 the collector runs several times meanwhile, on the cores the
// query needs: BenchmarkTraceQueryLargeRequest measured 1.33× its upstream calls' critical path
// at 100 and 1.22× at 200, its peak heap about the same (the heap between queries is small).
const DefaultGCPercent = 200

// TuneGC applies DefaultGCPercent unless the operator set GOGC. GOMEMLIMIT, when set, still
// bounds the heap.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
