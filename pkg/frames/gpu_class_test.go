package frames

import (
	"math"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
)

// Two GPUs over four 30 s steps; the second lacks the first step (it appeared later).
func gpuClassResults() []classify.GPUResult {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 30 * time.Second) }
	a := classify.GPU{Host: "fixture-node-a", Index: "0", UUID: "GPU-aaaa", Model: "NVIDIA A100-SXM4-80GB"}
	b := classify.GPU{Host: "fixture-node-b", Index: "2", Model: "Tesla T4"}
	ca := []classify.Class{classify.ComputeBound, classify.ComputeBound, classify.NoData, classify.MemoryBound}
	cb := []classify.Class{classify.Balanced, classify.ThermalThrottled, classify.ThermalThrottled}
	ta := []time.Time{at(0), at(1), at(2), at(3)}
	tb := []time.Time{at(1), at(2), at(3)}
	return []classify.GPUResult{
		{GPU: a, Times: ta, Classes: ca, Shares: classify.TrailingShares(ta, ca, time.Minute),
			Evidence: []string{"memory bandwidth 93.8% > memoryBoundPct 70", "compute 35.0% < memoryBoundMaxComputePct 70"}, EvidenceTime: at(3),
			Pods: []classify.Pod{{Namespace: "batch", Name: "trainer-0"}, {Namespace: "inference", Name: "llm-decode-0"}}},
		{GPU: b, Times: tb, Classes: cb, Shares: classify.TrailingShares(tb, cb, time.Minute),
			Evidence: []string{"no clock-event bitmask: temperature 88 °C > thermalTempC 83"}, EvidenceTime: at(3)},
	}
}

func TestGPUClassTimelineGolden(t *testing.T) {
	f := GPUClassTimeline(gpuClassResults())
	checkGolden(t, "gpu_class_timeline", f)
	if f.Rows() != 4 || len(f.Fields) != 3 {
		t.Fatalf("%d rows, %d fields", f.Rows(), len(f.Fields))
	}
	if got := f.Fields[2].At(0).(string); got != string(classify.NoData) {
		t.Errorf("a GPU's missing step reads %q, want no data", got)
	}
	if f.Fields[1].Config.DisplayNameFromDS != "fixture-node-a/0" || f.Fields[2].Config.DisplayNameFromDS != "fixture-node-b/2" {
		t.Errorf("display names %q, %q", f.Fields[1].Config.DisplayNameFromDS, f.Fields[2].Config.DisplayNameFromDS)
	}
	m := f.Fields[1].Config.Mappings[0].(data.ValueMapper)
	if m["thermal-throttled"].Color != "red" || m["compute-bound"].Color != "green" || len(m) != len(classify.Classes) {
		t.Errorf("mappings %v", m)
	}
}

func TestGPUClassSummaryGolden(t *testing.T) {
	f := GPUClassSummary(gpuClassResults())
	checkGolden(t, "gpu_class_summary", f)
	field := func(name string) *data.Field {
		fl, i := f.FieldByName(name)
		if i < 0 {
			t.Fatalf("no field %q", name)
		}
		return fl
	}
	// GPU a serves two pods: a shared GPU; GPU b's exporter maps none.
	if field("pods").At(0) != "batch/trainer-0, inference/llm-decode-0" || field("pod count").At(0) != int64(2) || field("pod count").At(1) != int64(0) {
		t.Errorf("pods %v / %v", field("pods").At(0), field("pod count").At(0))
	}
	// GPU a: compute-bound 2 of 4 steps (one gap), memory-bound 1.
	if field("dominant class").At(0) != "compute-bound" || field("dominant share").At(0) != 0.5 ||
		field("no data").At(0) != 0.25 || field("steps").At(0) != int64(4) {
		t.Errorf("row a: %v %v %v %v", field("dominant class").At(0), field("dominant share").At(0), field("no data").At(0), field("steps").At(0))
	}
	if field("dominant class").At(1) != "thermal-throttled" || field("action").At(1) != classify.Action(classify.ThermalThrottled) {
		t.Errorf("row b: %v %v", field("dominant class").At(1), field("action").At(1))
	}
	for row := range f.Rows() {
		sum := 0.0
		for _, c := range classify.Classes {
			sum += field(string(c)).At(row).(float64)
		}
		if math.Abs(sum-1) > 1e-12 {
			t.Errorf("row %d shares sum to %v", row, sum)
		}
	}
}

func TestGPUClassShareFramesGolden(t *testing.T) {
	fs := GPUClassShareFrames(gpuClassResults(), time.Minute, nil)
	if len(fs) != 2*7 {
		t.Fatalf("%d frames, want one per GPU and class (7 classes, no data excluded)", len(fs))
	}
	checkGolden(t, "gpu_class_share_compute_bound", fs[0])
	checkGolden(t, "gpu_class_share_thermal", fs[7+3])
	for _, f := range fs {
		if f.Meta.Type != data.FrameTypeTimeSeriesMulti || len(f.Fields) != 2 || f.Fields[1].Labels["class"] == "" || f.Fields[1].Labels["host"] == "" {
			t.Errorf("frame %s: type %s, fields %d, labels %v", f.Name, f.Meta.Type, len(f.Fields), f.Fields[1].Labels)
		}
	}
	// GPU a at its third step: window [t-60s, t] holds compute, compute, no data: share 1.
	if v := fs[0].Fields[1].At(2).(*float64); v == nil || *v != 1 {
		t.Errorf("compute-bound share at step 3 = %v, want 1", v)
	}
}

func TestGPUClassFramesWithoutGPUs(t *testing.T) {
	if f := GPUClassTimeline(nil); f.Rows() != 0 || len(f.Fields) != 1 {
		t.Errorf("empty timeline: %d rows, %d fields", f.Rows(), len(f.Fields))
	}
	if f := GPUClassSummary(nil); f.Rows() != 0 {
		t.Errorf("empty summary: %d rows", f.Rows())
	}
	if fs := GPUClassShareFrames(nil, time.Hour, nil); len(fs) != 0 {
		t.Errorf("%d share frames", len(fs))
	}
}

// An alert rule asks for the classes that matter: only their share frames come back, one per
// GPU and class.
func TestGPUClassShareFramesOfTheAskedClassesOnly(t *testing.T) {
	fs := GPUClassShareFrames(gpuClassResults(), time.Minute, []classify.Class{classify.ThermalThrottled, classify.PowerThrottled})
	if len(fs) != 2*2 {
		t.Fatalf("%d frames, want one per GPU and asked class (2 × 2)", len(fs))
	}
	for _, f := range fs {
		if c := f.Fields[1].Labels["class"]; c != string(classify.ThermalThrottled) && c != string(classify.PowerThrottled) {
			t.Errorf("frame of class %q, which was not asked", c)
		}
	}
}
