package gputrace

import (
	"bytes"
	"math"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
)

// FuzzDiff reads two arbitrary traces as the two sides of a kernel diff. Whatever comes in: no
// panic; every kernel of either side is one row; the figures are finite, the change is the target's time per request
// less the baseline's, a kernel is "only in" a side exactly when the other never ran it, rows go
// by the size of their change; the notices stay bounded.
func FuzzDiff(f *testing.F) {
	fixture := writeFixture(f, false)
	small := kernelsTrace(f, baselineRuns...)
	f.Add(fixture, small)
	f.Add(small, kernelsTrace(f, targetRuns...))
	f.Add(fixture[:len(fixture)/3], []byte(`{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1e300}]}`))
	f.Add([]byte(`[`), []byte{})
	f.Add(kernelsTrace(f, kinetogen.KernelRun{Name: "", Count: 3, Dur: 0}), small)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		read := func(data []byte) (*Result, error) {
			c := NewCollector(Limits{MaxIntervals: 1000, MaxLaunches: 1000, MaxSamplesPerKernel: 16, MaxKernelNames: 50})
			err := kineto.Read(bytes.NewReader(data), c)
			return c.Result(AnalysisOptions{}), err
		}
		base, target := NewDiffSide("baseline", "a"), NewDiffSide("target", "b")
		ra, errA := read(a)
		base.Add("r1", "a.json", ra, errA)
		base.Add("r2", "a2.json", ra, errA)
		rb, errB := read(b)
		target.Add("t", "b.json", rb, errB)
		d := Diff(base, target)
		names := map[string]bool{}
		for n := range base.Kernels {
			names[n] = true
		}
		for n := range target.Kernels {
			names[n] = true
		}
		if len(d.Kernels) != len(names) {
			t.Fatalf("%d rows for %d kernel names", len(d.Kernels), len(names))
		}
		for i, c := range d.Kernels {
			for _, v := range []float64{c.Change, c.ChangePercent, c.MeanChange, c.Baseline.Mean, c.Target.Mean, c.Baseline.TotalPerRequest, c.Target.TotalPerRequest} {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					t.Fatalf("row %+v is not finite", c)
				}
			}
			if c.Change != c.Target.TotalPerRequest-c.Baseline.TotalPerRequest {
				t.Fatalf("change of %+v", c)
			}
			if (c.OnlyIn == OnlyInTarget) != (c.Baseline.Count == 0 && c.Target.Count > 0) || (c.OnlyIn == OnlyInBaseline) != (c.Target.Count == 0 && c.Baseline.Count > 0) {
				t.Fatalf("only in of %+v", c)
			}
			if i > 0 && math.Abs(c.Change) > math.Abs(d.Kernels[i-1].Change) {
				t.Fatalf("row %d moved more than the one before it", i)
			}
		}
		if len(d.Notices) > 3*MaxDiffFileNotices+10 {
			t.Fatalf("%d notices", len(d.Notices))
		}
	})
}
