//go:build !linux

package scenario

import "time"

// threadCPU falls back to wall time where the thread's CPU clock is not read: the scenarios are
// run on Linux (the test bed's platform); elsewhere a loaded machine shortens the CPU burnt.
func threadCPU() int64 { return time.Now().UnixNano() }
