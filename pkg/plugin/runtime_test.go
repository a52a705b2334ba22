package plugin

import (
	"runtime/debug"
	"testing"
)

func TestTuneGCLeavesAnOperatorsGOGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	t.Setenv("GOGC", "")
	TuneGC()
	if got := debug.SetGCPercent(100); got != DefaultGCPercent {
		t.Errorf("GC percent %d without GOGC, want %d", got, DefaultGCPercent)
	}
	t.Setenv("GOGC", "50")
	debug.SetGCPercent(50) // what the runtime read from GOGC at start
	TuneGC()
	if got := debug.SetGCPercent(100); got != 50 {
		t.Errorf("GC percent %d with GOGC=50, want it left alone", got)
	}
}
