package frames

import (
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
)

// encoded is a flame graph in Pyroscope's level encoding, as its FlameGraph message holds it.
type encoded struct {
	Names  []string
	Levels [][]int64
}

// tree rebuilds it as the Pyroscope client does before a frame is built.
func (e *encoded) tree() *flamegraph.Node { return flamegraph.FromLevels(e.Names, e.Levels) }

// A small tree in Pyroscope's level encoding:
//
//	total 100
//	├── handle_request 60 (self 10)
//	│   └── serializeResponse 50 (self 50)
//	└── dbQuery 40
//	    ├── sha256 10 (starts 10 into dbQuery: a gap of self time before it)
//	    └── serializeResponse 20 (the same name again, under another parent)
var sample = &encoded{
	Names: []string{"total", "handle_request", "dbQuery", "serializeResponse", "sha256"},
	Levels: [][]int64{
		{0, 100, 0, 0},
		{0, 60, 10, 1, 0, 40, 10, 2},
		{0, 50, 50, 3, 10, 10, 10, 4, 0, 20, 20, 3},
	},
}

func TestFlameGraphIsTheNestedSetGrafanaReads(t *testing.T) {
	f := FlameGraph(sample.tree(), "process_cpu:cpu:nanoseconds:cpu:nanoseconds")

	type row struct {
		level       int64
		value, self int64
		label       string
	}
	want := []row{
		{0, 100, 0, "total"},
		{1, 60, 10, "handle_request"},
		{2, 50, 50, "serializeResponse"},
		{1, 40, 10, "dbQuery"},
		{2, 10, 10, "sha256"},
		{2, 20, 20, "serializeResponse"},
	}
	if f.Rows() != len(want) {
		t.Fatalf("rows = %d, want %d", f.Rows(), len(want))
	}
	names := f.Fields[3].Config.TypeConfig.Enum.Text
	for i, w := range want {
		got := row{f.Fields[0].At(i).(int64), f.Fields[1].At(i).(int64), f.Fields[2].At(i).(int64), names[f.Fields[3].At(i).(data.EnumItemIndex)]}
		if got != w {
			t.Errorf("row %d = %+v, want %+v", i, got, w)
		}
	}
	if len(names) != 5 {
		t.Errorf("enum text %v should hold each name once, in first-seen order", names)
	}
	checkGolden(t, "flamegraph_cpu", f)
}

func TestFlameGraphFrameMetaAndUnits(t *testing.T) {
	cases := map[string]string{
		"process_cpu:cpu:nanoseconds:cpu:nanoseconds": "ns",
		"memory:alloc_objects:count:space:bytes":      "short",
		"memory:alloc_space:bytes:space:bytes":        "bytes",
		"memory:inuse_space:bytes:space:bytes":        "bytes",
		"goroutines:goroutine:count:goroutine:count":  "short",
		"block:delay:nanoseconds:contentions:count":   "ns",
		"wall:wall:microseconds:wall:microseconds":    "microseconds",
		"broken": "short",
	}
	for typeID, unit := range cases {
		f := FlameGraph(sample.tree(), typeID)
		if f.Name != "response" || f.Meta == nil || f.Meta.PreferredVisualization != data.VisTypeFlameGraph {
			t.Fatalf("%s: frame name %q meta %+v", typeID, f.Name, f.Meta)
		}
		if got := f.Fields[1].Config.Unit; got != unit {
			t.Errorf("%s: value unit = %q, want %q", typeID, got, unit)
		}
		if got := f.Fields[2].Config.Unit; got != unit {
			t.Errorf("%s: self unit = %q, want %q", typeID, got, unit)
		}
	}
}

// An empty answer is one root row of 0 samples: @grafana/flamegraph throws on a frame without
// rows (src/__grafana__ shows it), and draws this one as an empty graph with "0 samples".
func TestEmptyFlameGraphIsOneRootOfNoSamples(t *testing.T) {
	for _, root := range []*flamegraph.Node{nil, flamegraph.New(), (&encoded{}).tree()} {
		f := FlameGraph(root, "memory:alloc_space:bytes:space:bytes")
		if f.Rows() != 1 || f.Name != "response" || f.Meta.PreferredVisualization != data.VisTypeFlameGraph || len(f.Fields) != 4 ||
			f.Fields[0].At(0) != int64(0) || f.Fields[1].At(0) != int64(0) || f.Fields[2].At(0) != int64(0) {
			t.Errorf("empty frame = %+v", f)
		}
		if FlameGraphHasSamples(f) {
			t.Errorf("the empty answer counts as having samples")
		}
	}
	diff := DiffFlameGraph(nil, "process_cpu:cpu:nanoseconds:cpu:nanoseconds")
	if diff.Rows() != 1 || len(diff.Fields) != 6 || diff.Fields[4].At(0) != int64(0) || FlameGraphHasSamples(diff) {
		t.Errorf("empty diff frame = %+v", diff)
	}
	if !FlameGraphHasSamples(FlameGraph(sample.tree(), "process_cpu:cpu:nanoseconds:cpu:nanoseconds")) {
		t.Errorf("a graph of 100 samples counts as empty")
	}
	checkGolden(t, "flamegraph_empty", FlameGraph(nil, "memory:alloc_space:bytes:space:bytes"))
}

func TestFlameGraphSurvivesMalformedLevels(t *testing.T) {
	// Truncated tuples and name indexes out of range come from broken upstream replies; they must
	// not panic and must not invent rows.
	fg := &encoded{Names: []string{"total"}, Levels: [][]int64{{0, 10, 0, 0}, {0, 5, 5, 7, 1, 2}}}
	f := FlameGraph(fg.tree(), "process_cpu:cpu:nanoseconds:cpu:nanoseconds")
	if f.Rows() != 2 {
		t.Fatalf("rows = %d, want 2", f.Rows())
	}
	if got := f.Fields[3].Config.TypeConfig.Enum.Text[1]; got != "<unknown>" {
		t.Errorf("label for a bad name index = %q", got)
	}
}
