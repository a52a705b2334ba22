package gputrace

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
)

// kernelsTrace is kinetogen.WriteKernels' trace of the runs.
func kernelsTrace(t testing.TB, runs ...kinetogen.KernelRun) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := kinetogen.WriteKernels(&buf, "diff", runs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// diffTraceID is the i-th request's trace ID of the diff fixtures (a letter a–f in it).
func diffTraceID(i int) string { return fmt.Sprintf("%028x%04x", 0xabc, i) }

// The baseline's requests: gemm 3 × 100 µs, relu 50 × 5 µs, dropout 2 × 20 µs. The target:
// gemm slowed to 150 µs (+150 µs per request), relu the same, no dropout, a new softmax.
var (
	baselineRuns = []kinetogen.KernelRun{{Name: "gemm", Count: 3, Dur: 100_000}, {Name: "relu", Count: 50, Dur: 5_000}, {Name: "dropout", Count: 2, Dur: 20_000}}
	targetRuns   = []kinetogen.KernelRun{{Name: "gemm", Count: 3, Dur: 150_000}, {Name: "relu", Count: 50, Dur: 5_000}, {Name: "softmax", Count: 1, Dur: 10_000}}
)

func changeOf(t *testing.T, d *KernelDiff, name string) KernelChange {
	t.Helper()
	for _, c := range d.Kernels {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no kernel %s in the diff", name)
	return KernelChange{}
}

// The sides' figures are per request: three baseline requests of the same work compare with
// one target request as one with one.
func TestDiffNormalisesPerRequestAndOrdersByChange(t *testing.T) {
	analyse := func(runs []kinetogen.KernelRun) *Result {
		c := NewCollector(Limits{})
		if err := kineto.Read(bytes.NewReader(kernelsTrace(t, runs...)), c); err != nil {
			t.Fatal(err)
		}
		return c.Result(AnalysisOptions{})
	}
	base, target := NewDiffSide("baseline", "three requests"), NewDiffSide("target", "one request")
	for i := range 3 {
		base.Add(fmt.Sprint("req", i), fmt.Sprintf("b%d.json", i), analyse(baselineRuns), nil)
	}
	target.Add("t", "t.json", analyse(targetRuns), nil)
	d := Diff(base, target)

	var names []string
	for _, c := range d.Kernels {
		names = append(names, c.Name)
	}
	if want := []string{"gemm", "dropout", "softmax", "relu"}; !slices.Equal(names, want) {
		t.Fatalf("order %v, want %v (by the change in time per request)", names, want)
	}
	gemm := changeOf(t, d, "gemm")
	if gemm.Baseline.Count != 9 || gemm.Baseline.CountPerRequest != 3 || gemm.Baseline.TotalPerRequest != 300_000 || gemm.Baseline.Mean != 100_000 ||
		gemm.Target.TotalPerRequest != 450_000 || gemm.Change != 150_000 || !gemm.HasPercent || gemm.ChangePercent != 50 ||
		!gemm.HasMeanChange || gemm.MeanChange != 50_000 || gemm.OnlyIn != "" {
		t.Errorf("gemm %+v", gemm)
	}
	if c := changeOf(t, d, "dropout"); c.OnlyIn != OnlyInBaseline || c.Change != -40_000 || c.ChangePercent != -100 || c.HasMeanChange || c.Target.Mean != 0 {
		t.Errorf("dropout %+v", c)
	}
	if c := changeOf(t, d, "softmax"); c.OnlyIn != OnlyInTarget || c.Change != 10_000 || c.HasPercent || c.HasMeanChange {
		t.Errorf("softmax %+v", c)
	}
	if c := changeOf(t, d, "relu"); c.Change != 0 || c.ChangePercent != 0 || c.MeanChange != 0 || c.Baseline.CountPerRequest != 50 {
		t.Errorf("relu %+v", c)
	}
	// Temporal breakdown per request: kernels back to back with KernelGap between them.
	span, compute, _, _, idle := base.TemporalPerRequest()
	if compute != 3*100_000+50*5_000+2*20_000 || idle != 54*kinetogen.KernelGap || span != compute+idle {
		t.Errorf("baseline per request: span %v compute %v idle %v", span, compute, idle)
	}
	if base.Requests != 3 || target.Requests != 1 || base.Launches != 3*55 {
		t.Errorf("requests %d/%d, launches %d", base.Requests, target.Requests, base.Launches)
	}
	texts := strings.Join(d.Notices.Texts(), "\n")
	for _, want := range []string{
		"Baseline: three requests (3 requests, 3 files), 165 kernel launches, kernel time 1.77 ms. Target: one request (1 request, 1 file), 54 kernel launches, kernel time 710 µs.",
		"Figures are per request",
		"Little data: the target holds 54 kernel launches (baseline 3 requests, 165 launches; target 1 request, 54 launches)",
	} {
		if !strings.Contains(texts, want) {
			t.Errorf("notices lack %q:\n%s", want, texts)
		}
	}
}

// A baseline of one request says its figures come from little data; a file that failed names
// itself and the side, and the side's other files stand.
func TestDiffWarnings(t *testing.T) {
	r := &Result{Kernels: []KernelSummary{{Name: "gemm", Instances: 200, Total: 200_000}}}
	base, target := NewDiffSide("baseline", "trace b"), NewDiffSide("target", "trace t")
	base.Add("b", "b.json", r, nil)
	base.Add("c", "c.json", nil, errors.New("not a readable PyTorch profiler trace"))
	target.Add("t", "t1.json", r, nil)
	target.Add("t", "t2.json", r, errors.New("unexpected EOF"))
	d := Diff(base, target)
	if base.Requests != 1 || target.Requests != 1 || target.Launches != 400 {
		t.Fatalf("requests %d/%d, target launches %d", base.Requests, target.Requests, target.Launches)
	}
	texts := strings.Join(d.Notices.Texts(), "\n")
	for _, want := range []string{
		"baseline c.json: not a readable PyTorch profiler trace (nothing of it was read; the side's other files stand)",
		"target t2.json: unexpected EOF (figures cover what was read before it)",
		"Little data: the baseline is 1 request (baseline 1 request, 200 launches; target 1 request, 400 launches)",
		"widen the baseline (more recent requests: baseline.recent)",
	} {
		if !strings.Contains(texts, want) {
			t.Errorf("notices lack %q:\n%s", want, texts)
		}
	}
	if strings.Contains(texts, "Figures are per request") {
		t.Errorf("one request a side needs no word on normalisation:\n%s", texts)
	}
	// A side none of whose files could be read.
	empty := NewDiffSide("baseline", "trace e")
	empty.Add("e", "e.json", nil, errors.New("gone"))
	if d := Diff(empty, target); !d.Notices.Has("None of the baseline's 1 file could be read (trace e): its figures are empty.") || changeOf(t, d, "gemm").OnlyIn != OnlyInTarget {
		t.Errorf("empty baseline: %q", d.Notices.Texts())
	}
}
