package frames

import (
	"fmt"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
)

// slowSerialize is the comparison of the diff tests: the same program where serializeResponse
// took most of the time.
var slowSerialize = &pyroscope.FlameGraph{
	Names:  []string{"total", "handle_request", "serializeResponse", "dbQuery"},
	Levels: [][]int64{{0, 200, 0, 0}, {0, 180, 0, 1, 0, 20, 20, 3}, {0, 180, 180, 2}},
}

func TestDiffFlameGraphCarriesBothSidesAsThePanelExpects(t *testing.T) {
	tree := flamegraph.Diff(flamegraph.FromPyroscope(sample), flamegraph.FromPyroscope(slowSerialize))
	f := DiffFlameGraph(tree, "process_cpu:cpu:nanoseconds:cpu:nanoseconds")
	var names []string
	for _, fld := range f.Fields {
		names = append(names, fld.Name)
	}
	if got := names; len(got) != 6 || got[4] != "valueRight" || got[5] != "selfRight" {
		t.Fatalf("fields = %v", got)
	}
	// Root: value is both sides together, valueRight the comparison alone.
	if f.Fields[1].At(0).(int64) != 300 || f.Fields[4].At(0).(int64) != 200 {
		t.Errorf("root value %v valueRight %v", f.Fields[1].At(0), f.Fields[4].At(0))
	}
	checkGolden(t, "flamegraph_diff", f)
}

func TestDiffSummaryListsTheBiggestMoverFirst(t *testing.T) {
	tree := flamegraph.Diff(flamegraph.FromPyroscope(sample), flamegraph.FromPyroscope(slowSerialize))
	f := DiffSummary(tree, 3)
	if f.Rows() != 3 {
		t.Fatalf("rows = %d", f.Rows())
	}
	// dbQuery: 40 of 100 in the baseline, 20 of 200 in the comparison (−30 points); equal moves
	// sort by name. handle_request: 60% → 90%, all of it in its callee serializeResponse (self
	// change 0 − 10 = −10 points).
	row := func(i int) []any {
		return []any{f.Fields[0].At(i), f.Fields[1].At(i), f.Fields[2].At(i), f.Fields[3].At(i), f.Fields[4].At(i)}
	}
	if got := fmt.Sprint(row(0), row(1)); got != "[dbQuery 40 10 -30 0] [handle_request 60 90 30 -10]" {
		t.Errorf("rows = %s", got)
	}
	checkGolden(t, "diff_summary", f)
	if empty := DiffSummary(flamegraph.New(), 10); empty.Rows() != 0 {
		t.Errorf("an empty diff lists %d functions", empty.Rows())
	}
}

func TestServiceLevelFlameGraph(t *testing.T) {
	root := flamegraph.New()
	root.AddUnder("nemotron-backend", flamegraph.FromPyroscope(sample))
	root.AddUnder("ai-detector", flamegraph.FromPyroscope(slowSerialize))
	f := FlameGraphTree(FlameGraphFrameName, root, "memory:alloc_space:bytes:space:bytes")
	if f.Fields[1].Config.Unit != "bytes" || f.Rows() != 1+(1+5)+(1+3) { // root, each service and its functions
		t.Errorf("unit %q, rows %d", f.Fields[1].Config.Unit, f.Rows())
	}
	checkGolden(t, "flamegraph_services", f)
}

func TestFormatValue(t *testing.T) {
	cases := map[string]string{
		FormatValue(1_250_000_000, "ns"): "1.25 s",
		FormatValue(3_400_000, "ns"):     "3.4 ms",
		FormatValue(999, "ns"):           "999 ns",
		FormatValue(3<<20, "bytes"):      "3 MiB",
		FormatValue(1200, "short"):       "1200",
	}
	for got, want := range cases {
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}
