package frames

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
)

// kernelDiffFixture: a baseline of two requests (gemm 3 × 100 µs, relu 50 × 5 µs, dropout
// 2 × 20 µs each, and a file that failed) against one request with gemm slowed to 150 µs, relu
// the same, no dropout and a new softmax.
func kernelDiffFixture() *gputrace.KernelDiff {
	result := func(span, idle int64, ks ...gputrace.KernelSummary) *gputrace.Result {
		r := &gputrace.Result{Kernels: ks, Temporal: gputrace.TemporalBreakdown{Span: span, Idle: idle, Memory: 10_000}}
		for _, k := range ks {
			r.Temporal.Compute += k.Total
		}
		return r
	}
	base, target := gputrace.NewDiffSide("baseline", "the 10 most recent requests matching infer/*/infer_*"), gputrace.NewDiffSide("target", "trace 4bf92f3577b34da6a3ce929d0e0e4736")
	for i := range 2 {
		base.Add(fmt.Sprint("r", i), fmt.Sprintf("infer/2026-11-2%d/infer_%d.json", i, i), result(700_000, 100_000,
			gputrace.KernelSummary{Name: "gemm", Instances: 3, Total: 300_000},
			gputrace.KernelSummary{Name: "relu", Instances: 50, Total: 250_000},
			gputrace.KernelSummary{Name: "dropout", Instances: 2, Total: 40_000}), nil)
	}
	base.Add("r9", "infer/2026-11-27/infer_9.json", nil, errors.New("not a readable PyTorch profiler trace"))
	target.Add("t", "infer/2026-11-27/infer_4bf92f3577b34da6a3ce929d0e0e4736.json", result(900_000, 180_000,
		gputrace.KernelSummary{Name: "gemm", Instances: 3, Total: 450_000},
		gputrace.KernelSummary{Name: "relu", Instances: 50, Total: 250_000},
		gputrace.KernelSummary{Name: "softmax", Instances: 1, Total: 10_000}), nil)
	return gputrace.Diff(base, target)
}

func TestKernelDiffFrames(t *testing.T) {
	f := KernelDiff(kernelDiffFixture())
	if len(f) != 2 || f[0].Name != KernelDiffFrameName || f[1].Name != TemporalBreakdownDiffName {
		t.Fatalf("frames %v", f)
	}
	checkGolden(t, "kernel_diff", f[0])
	checkGolden(t, "kernel_temporal_diff", f[1])
	var texts []string
	for _, n := range f[0].Meta.Notices {
		texts = append(texts, n.Text)
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"Baseline: the 10 most recent requests matching infer/*/infer_* (2 requests, 2 files)", "baseline infer/2026-11-27/infer_9.json: not a readable", "Little data"} {
		if !strings.Contains(all, want) {
			t.Errorf("notices lack %q:\n%s", want, all)
		}
	}
	if f[1].Meta.Notices != nil {
		t.Errorf("the notices belong on the first frame only")
	}
}

func TestKernelDiffRowsAreBounded(t *testing.T) {
	base, target := gputrace.NewDiffSide("baseline", "b"), gputrace.NewDiffSide("target", "t")
	var ks []gputrace.KernelSummary
	for i := range MaxKernelDiffRows + 20 {
		ks = append(ks, gputrace.KernelSummary{Name: fmt.Sprint("k", i), Instances: 1, Total: int64(i + 1)})
	}
	base.Add("b", "b.json", &gputrace.Result{}, nil)
	target.Add("t", "t.json", &gputrace.Result{Kernels: ks}, nil)
	f := KernelDiff(gputrace.Diff(base, target))
	if f[0].Rows() != MaxKernelDiffRows || f[0].Fields[0].At(0) != fmt.Sprint("k", MaxKernelDiffRows+19) {
		t.Fatalf("%d rows, first %v", f[0].Rows(), f[0].Fields[0].At(0))
	}
	last := f[0].Meta.Notices[len(f[0].Meta.Notices)-1].Text
	if last != fmt.Sprintf("The %d kernels that changed most of %d are shown.", MaxKernelDiffRows, MaxKernelDiffRows+20) {
		t.Errorf("last notice %q", last)
	}
}
