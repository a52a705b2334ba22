package frames

import (
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

func TestKernelFramesGolden(t *testing.T) {
	r := &gputrace.Result{
		Kernels: []gputrace.KernelSummary{
			{Name: "gemm", TimePercent: 80, Total: 40000, Instances: 2, Avg: 20000, Median: 20000, Min: 10000, Max: 30000, StdDev: 14142.1356},
			{Name: "relu", TimePercent: 20, Total: 10000, Instances: 1, Avg: 10000, Median: 10000, Min: 10000, Max: 10000},
		},
		// Two GPUs: the file's figures are theirs summed, its shares those of the summed spans.
		Temporal: gputrace.TemporalBreakdown{Start: 0, End: 100000, Span: 150000, Compute: 70000, Communication: 20000, Memory: 10000, Idle: 50000},
		TemporalByDevice: []gputrace.TemporalBreakdown{
			{Device: 0, Start: 0, End: 100000, Span: 100000, Compute: 50000, Memory: 10000, Idle: 40000},
			{Device: 1, Start: 20000, End: 70000, Span: 50000, Compute: 20000, Communication: 20000, Idle: 10000},
		},
		Idle:    []gputrace.StreamIdle{{Device: 0, Stream: 7, Busy: 60000, Idle: 40000, HostWait: 30000, Other: 10000, Gaps: 3, LongestGap: 20000}},
		Launch:  gputrace.LaunchStats{Kernels: 3, Joined: 3, DelayAvg: 5000, DelayMedian: 5000, DelayP95: 5000, DelayMax: 5000, ShorterThanLaunch: 1.0 / 3},
		Memcpy:  []gputrace.MemcpyVolume{{Direction: "HtoD", Count: 1, Bytes: 1 << 20, Busy: 10000, BandwidthGBps: 104.8576, Pageable: 1}},
		Advice:  []gputrace.Advice{{Pattern: "long CUDA kernel gaps", Remedy: "remove CPU-GPU syncs", Evidence: "idle 40% of the span"}},
		Notices: notices.Warnings("2 overlapping kernels on stream 7"),
	}
	f := KernelFrames("", r)
	if len(f) != 6 {
		t.Fatalf("%d frames", len(f))
	}
	checkGolden(t, "kernel_summary", f[0])
	checkGolden(t, "kernel_temporal", f[1])
	checkGolden(t, "kernel_advice", f[5])
	if g := KernelFrames("a.json", r)[3].Name; g != "a.json: launch statistics" {
		t.Errorf("prefixed name %q", g)
	}
}
