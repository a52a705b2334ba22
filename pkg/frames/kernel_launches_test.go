package frames

import (
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

func TestKernelLaunchFramesGolden(t *testing.T) {
	r := &gputrace.Result{
		Launches: []gputrace.LaunchSummary{
			{Kernel: "gemm", API: "cudaLaunchKernel", Count: 4, Queued: 3,
				TotalTime:  gputrace.Durations{Total: 96000, Avg: 24000, Median: 21500, Min: 6000, Max: 47000},
				APITime:    gputrace.Durations{Total: 10000, Avg: 2500, Median: 2500, Min: 1000, Max: 4000},
				QueueTime:  gputrace.Durations{Total: 35000, Avg: 11666.666666666666, Median: 5000, Min: 0, Max: 30000},
				KernelTime: gputrace.Durations{Total: 53000, Avg: 13250, Median: 15500, Min: 2000, Max: 20000}},
			// A Triton kernel starts before cuLaunchKernel returns: no queue time.
			{Kernel: "triton_poi_fused_add_cos_sin_0", API: "cuLaunchKernel", Count: 1, Queued: 0,
				TotalTime:  gputrace.Durations{Total: 47768, Avg: 47768, Median: 47768, Min: 47768, Max: 47768},
				APITime:    gputrace.Durations{Total: 47768, Avg: 47768, Median: 47768, Min: 47768, Max: 47768},
				KernelTime: gputrace.Durations{Total: 1760, Avg: 1760, Median: 1760, Min: 1760, Max: 1760}},
		},
		Ranges: []gputrace.RangeProjection{
			{Name: "request 4bf92f3577b34da6a3ce929d0e0e4736", Instances: 2, RangeTime: 100000, GPUOps: 6,
				Projected: gputrace.Durations{Total: 85000, Avg: 42500, Median: 42500, Min: 40000, Max: 45000}},
		},
		Notices: notices.Warnings("more than 1000000 launch calls: 5 left out of the launch statistics and the per-launch figures"),
	}
	f := KernelLaunchFrames("", r)
	if len(f) != 2 || f[0].Name != "kernel launches" || f[1].Name != "ranges on the GPU" {
		t.Fatalf("frames %v", f)
	}
	checkGolden(t, "kernel_launches", f[0])
	checkGolden(t, "kernel_ranges", f[1])
	for _, fr := range f {
		for _, fd := range fr.Fields {
			if fd.Config != nil && fd.Config.Unit != "" && fd.Config.Unit != "ns" {
				t.Errorf("%s: unit %q", fd.Name, fd.Config.Unit)
			}
		}
	}
	if g := KernelLaunchFrames("a.json", r)[1].Name; g != "a.json: ranges on the GPU" {
		t.Errorf("prefixed name %q", g)
	}
}

// Files that matched: two frames each, named by the file; none: the two frames empty, with
// the store's notices.
func TestKernelLaunchTraces(t *testing.T) {
	r := gputrace.NewCollector(gputrace.Limits{}).Result(gputrace.AnalysisOptions{})
	files := []gputrace.Found{{File: gputrace.TraceFile{Rel: "a.json"}, Result: r}, {File: gputrace.TraceFile{Rel: "b.json"}, Result: r}}
	out := KernelLaunchTraces(files, nil)
	var names []string
	for _, f := range out {
		names = append(names, f.Name)
	}
	if want := []string{"a.json: kernel launches", "a.json: ranges on the GPU", "b.json: kernel launches", "b.json: ranges on the GPU"}; !equalStrings(names, want) {
		t.Errorf("frames %v, want %v", names, want)
	}
	out = KernelLaunchTraces(nil, notices.Warnings("no trace file names trace 4bf92f3577b34da6a3ce929d0e0e4736"))
	if len(out) != 2 || out[0].Name != "kernel launches" || len(out[0].Meta.Notices) != 1 || out[0].Meta.Notices[0].Severity != data.NoticeSeverityWarning {
		t.Errorf("empty answer %+v", out)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
