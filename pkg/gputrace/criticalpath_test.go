package gputrace

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
)

func scenarioPath(t *testing.T, m kinetogen.Mechanism, seed uint64) *CriticalPath {
	t.Helper()
	var b bytes.Buffer
	if _, err := kinetogen.Write(&b, kinetogen.Scenario{Mechanism: m, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Seed: seed,
		Start: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC), Duration: 15 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	c := NewCollector(Limits{CriticalPath: true})
	if err := kineto.Read(&b, c); err != nil {
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
		kinetogen.MechDispatch: VerdictCPU,
		kinetogen.MechShared:   VerdictGPU, // HTA: kernel-kernel overhead on the GPU
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

func hasSyncEdge(cp *CriticalPath, from, to int64) bool {
	for _, e := range cp.SyncEdges {
		if e == [2]int64{from, to} {
			return true
		}
	}
	return false
}

// TestCriticalPathHTATraces checks the sync edges HTA's tests/test_critical_path_analysis.py
// asserts on its own traces. HTA's path lengths (149 nodes for alexnet) are for one instance of
// an annotation (it clips the trace first); this path is the whole trace's, so they are not
// compared.
func TestCriticalPathHTATraces(t *testing.T) {
	// test_critical_path_analysis: "GPU->GPU sync edge between kernel on stream 20 -> stream 7",
	// correlation IDs 5606 (fft2d_c2r) and 5629 (elementwise).
	r := analyzeRealPath(t, "alexnet_benchmark.json.gz")
	cp := r.CriticalPath
	if cp == nil {
		t.Fatalf("alexnet: no path: %q", r.Notices)
	}
	if !hasSyncEdge(cp, 5606, 5629) {
		t.Errorf("alexnet: no sync edge 5606 → 5629 among %v", cp.SyncEdges)
	}
	if sum := cp.CPU + cp.GPU + cp.Sync + cp.Copies; sum != cp.Length || cp.Nodes != 1+sumEdges(cp) {
		t.Errorf("alexnet: shares %d, length %d, nodes %d, edges %v", sum, cp.Length, cp.Nodes, cp.Edges)
	}
	// test_critical_path_analysis_event_sync_multistream: the third event record (correlation
	// 1385) waits for kernel 1 (correlation 27, stream 20), not kernel 2 (57, stream 28), and
	// the Stream Wait Event makes the Memset (Device) on stream 24 (1411) wait for kernel 1.
	r = analyzeRealPath(t, "event_sync_multi_stream.json.gz")
	cp = r.CriticalPath
	if cp == nil {
		t.Fatalf("event sync: no path: %q", r.Notices)
	}
	if !hasSyncEdge(cp, 27, 1411) || hasSyncEdge(cp, 57, 1411) {
		t.Errorf("event sync: want the sync edge 27 → 1411 only, got %v", cp.SyncEdges)
	}
	// The first cudaEventQuery's Event Sync (correlation 54) waits on the event recorded by
	// 32 after kernel 27: HTA's GPU→CPU sync edge.
	if !hasSyncEdge(cp, 27, 54) {
		t.Errorf("event sync: no sync edge 27 → 54 in %v", cp.SyncEdges)
	}
	if len(cp.Segments) == 0 || len(cp.Segments) > 10 {
		t.Errorf("segments %v", cp.Segments)
	}
}

func sumEdges(cp *CriticalPath) int {
	n := 0
	for _, k := range cp.Edges {
		n += k
	}
	return n
}

// TestCriticalPathCap: beyond Limits.MaxPathEvents there is no path, and a notice names the cap.
func TestCriticalPathCap(t *testing.T) {
	var b bytes.Buffer
	if _, err := kinetogen.Write(&b, kinetogen.Scenario{Mechanism: kinetogen.MechSync, TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", Seed: 1}); err != nil {
		t.Fatal(err)
	}
	c := NewCollector(Limits{MaxPathEvents: 50, CriticalPath: true})
	if err := kineto.Read(&b, c); err != nil {
		t.Fatal(err)
	}
	r := c.Result(AnalysisOptions{})
	if r.CriticalPath != nil {
		t.Fatalf("a path over the cap: %+v", r.CriticalPath)
	}
	found := false
	for _, n := range r.Notices {
		found = found || strings.Contains(n.Text, "MaxPathEvents") && strings.Contains(n.Text, "50")
	}
	if !found {
		t.Errorf("no notice naming the cap: %q", r.Notices)
	}
}

// analyzeRealPath analyses a real trace with the critical path.
func analyzeRealPath(t *testing.T, name string) *Result {
	t.Helper()
	r, err := analyzeFileWith(realdata(t, name), Limits{CriticalPath: true})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}

// The other views do not pay for the path: without Limits.CriticalPath none is kept or made.
func TestCriticalPathOnlyWhenAsked(t *testing.T) {
	if r := analyzeReal(t, "alexnet_benchmark.json.gz"); r.CriticalPath != nil {
		t.Errorf("a critical path of %d nodes without Limits.CriticalPath", r.CriticalPath.Nodes)
	}
}
