package gputrace

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
)

func scenarioPath(t *testing.T, m kinetogen.Mechanism, seed uint64) *CriticalPath {
	t.Helper()
	var b bytes.Buffer
	if _, err := kinetogen.Write(&b, kinetogen.Scenario{Mechanism: m, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Seed: seed,
		Start: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC), Duration: 15 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	c := NewCollector(Limits{})
	if err := ReadChrome(&b, c); err != nil {
		t.Fatal(err)
	}
	r := c.Result(AnalysisOptions{})
	if r.CriticalPath == nil {
		t.Fatalf("%s: no critical path; notices %q", m, r.Notices)
	}
	return r.CriticalPath
}

// TestCriticalPathScenarios: each kinetogen mechanism comes out with its verdict.
func TestCriticalPathScenarios(t *testing.T) {
	want := map[kinetogen.Mechanism]string{
		kinetogen.MechKernels:  VerdictGPU,
		kinetogen.MechSync:     VerdictSync,
		kinetogen.MechLaunch:   VerdictCPU,
		kinetogen.MechCopies:   VerdictCopies,
		kinetogen.MechHostWork: VerdictCPU,
	}
	for _, m := range kinetogen.Mechanisms {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/%d", m, seed), func(t *testing.T) {
				cp := scenarioPath(t, m, seed)
				t.Logf("%s; %v %v", cp.VerdictLine, cp.Composition, cp.Edges)
				if cp.Verdict != want[m] {
					t.Errorf("verdict %q, want %q", cp.Verdict, want[m])
				}
				if sum := cp.CPU + cp.GPU + cp.Sync + cp.Copies; sum != cp.Length {
					t.Errorf("shares add to %d, path %d", sum, cp.Length)
				}
			})
		}
	}
}

func TestCriticalPathHTATraces(t *testing.T) {
	for _, name := range []string{"alexnet_benchmark.json.gz", "event_sync_multi_stream.json.gz"} {
		r := analyzeReal(t, name)
		cp := r.CriticalPath
		if cp == nil {
			t.Fatalf("%s: no path: %q", name, r.Notices)
		}
		t.Logf("%s: %s nodes=%d edges=%v comp=%v syncs=%v", name, cp.VerdictLine, cp.Nodes, cp.Edges, cp.Composition, cp.SyncEdges)
		for _, s := range cp.Segments {
			t.Logf("  %+v", s)
		}
	}
}
