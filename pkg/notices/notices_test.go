package notices

import (
	"slices"
	"testing"
)

func TestAListKeepsEachTextOnceAtItsHighestSeverityInFirstOrder(t *testing.T) {
	var l List
	l.Info("step 30s")
	l.Warn("DCGM_FI_PROF_DRAM_ACTIVE is absent")
	l.Warnf("%d file(s) unreadable", 2)
	l.Warn("step 30s") // the same fact, raised by another part of the answer
	l.Info("DCGM_FI_PROF_DRAM_ACTIVE is absent")
	l.Add(Notice{Severity: Info, Text: ""}) // nothing to say: dropped

	if got, want := l.Texts(), []string{"step 30s", "DCGM_FI_PROF_DRAM_ACTIVE is absent", "2 file(s) unreadable"}; !slices.Equal(got, want) {
		t.Fatalf("texts %q, want %q", got, want)
	}
	for _, n := range l {
		if n.Severity != Warning {
			t.Errorf("%q is %s, want warning (raised once, never lowered)", n.Text, n.Severity)
		}
	}
	var m List
	m.Info("new")
	m.Merge(l)
	if len(m) != 4 || m[0].Text != "new" || !m.Has("step 30s") || m.Has("absent") {
		t.Errorf("merged %v", m)
	}
}
