//go:build linux

package scenario

import "golang.org/x/sys/unix"

// threadCPU is the CPU time the calling OS thread has used (CLOCK_THREAD_CPUTIME_ID): what a
// busy loop must count so that a loaded machine, which makes it wait for a core, does not
// shorten the CPU it spends.
func threadCPU() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}
