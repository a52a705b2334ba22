package frames

import (
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
)

func TestCriticalPathFramesGolden(t *testing.T) {
	cp := &gputrace.CriticalPath{Length: 1000, Nodes: 5,
		Composition: []gputrace.PathPart{{BoundBy: gputrace.BoundGPUCompute, Time: 700, Share: 70}, {BoundBy: gputrace.BoundCPU, Time: 300, Share: 30}},
		Segments: []gputrace.PathSegment{{What: "gemm", Where: "GPU 0 stream 7", BoundBy: gputrace.BoundGPUCompute, Start: 10, Time: 700},
			{What: "aten::mm", Where: "thread 1", BoundBy: gputrace.BoundCPU, Start: 0, Time: 300}},
		Verdict: gputrace.VerdictGPU, VerdictLine: "critical path 1 µs: GPU-bound (of the path's time: CPU 30%, GPU 70%, synchronisation 0%, copies 0%)"}
	fs := CriticalPathFrames("", cp)
	checkGolden(t, "kernels_critical_path", fs[0])
	checkGolden(t, "kernels_critical_path_segments", fs[1])
	empty := CriticalPathFrames("f.json", nil)
	if empty[0].Name != "f.json: critical path" || empty[0].Rows() != 0 || empty[1].Rows() != 0 {
		t.Fatalf("empty: %v", empty)
	}
}
