package frames

import (
	"fmt"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
)

// slowSerialize is the comparison of the diff tests: the same program where serializeResponse
// took most of the time.
var slowSerialize = &encoded{
	Names:  []string{"total", "handle_request", "serializeResponse", "dbQuery"},
	Levels: [][]int64{{0, 200, 0, 0}, {0, 180, 0, 1, 0, 20, 20, 3}, {0, 180, 180, 2}},
}

// TestDiffFlameGraphGivesEachSideItsOwnFields reads the frame as @grafana/flamegraph does: a
// node's width is value + valueRight, the baseline's share value / root value, the comparison's
// valueRight / root valueRight. Those shares must be the diff summary's.
func TestDiffFlameGraphGivesEachSideItsOwnFields(t *testing.T) {
	tree := flamegraph.Diff(sample.tree(), slowSerialize.tree())
	f := DiffFlameGraph(tree, "process_cpu:cpu:nanoseconds:cpu:nanoseconds")
	var names []string
	for _, fld := range f.Fields {
		names = append(names, fld.Name)
	}
	if got := names; len(got) != 6 || got[4] != "valueRight" || got[5] != "selfRight" {
		t.Fatalf("fields = %v", got)
	}
	value := func(field, row int) int64 { return f.Fields[field].At(row).(int64) }
	label := func(row int) string {
		i := f.Fields[3].At(row).(data.EnumItemIndex)
		return f.Fields[3].Config.TypeConfig.Enum.Text[i]
	}
	// Root: the baseline's 100 in value, the comparison's 200 in valueRight; the panel draws 300.
	if value(1, 0) != 100 || value(4, 0) != 200 {
		t.Errorf("root value %d valueRight %d, want the baseline's 100 and the comparison's 200", value(1, 0), value(4, 0))
	}
	summary := DiffSummary(tree, 100)
	want := map[string][2]float64{}
	for i := 0; i < summary.Rows(); i++ {
		want[summary.Fields[0].At(i).(string)] = [2]float64{summary.Fields[1].At(i).(float64), summary.Fields[2].At(i).(float64)}
	}
	// handle_request is 60 of 100 in the baseline and 180 of 200 in the comparison: the panel
	// must read 60% → 90%, as the summary says.
	seen := 0
	for row := 1; row < f.Rows(); row++ {
		if value(0, row) != 1 {
			continue // a name under several parents sums in the summary; compare the top level
		}
		seen++
		got := [2]float64{round2(share(value(1, row), value(1, 0))), round2(share(value(4, row), value(4, 0)))}
		if got != want[label(row)] {
			t.Errorf("%s reads %v%% → %v%% in the panel, the diff summary says %v", label(row), got[0], got[1], want[label(row)])
		}
	}
	if seen != 2 || want["handle_request"] != [2]float64{60, 90} {
		t.Errorf("top-level functions seen %d, handle_request in the summary %v; want 2 and 60%% → 90%%", seen, want["handle_request"])
	}
	for row := 0; row < f.Rows(); row++ {
		if value(2, row) > value(1, row) || value(5, row) > value(4, row) {
			t.Errorf("row %d (%s): self above its total on one side", row, label(row))
		}
	}
	checkGolden(t, "flamegraph_diff", f)
}

func TestDiffSummaryListsTheBiggestMoverFirst(t *testing.T) {
	tree := flamegraph.Diff(sample.tree(), slowSerialize.tree())
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
	root.AddUnder("nemotron-backend", sample.tree())
	root.AddUnder("ai-detector", slowSerialize.tree())
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

func TestNormaliseDiffScalesTheSmallerSideAndSaysSo(t *testing.T) {
	tree := flamegraph.Diff(sample.tree(), slowSerialize.tree())
	left, right := tree.Total, tree.TotalRight()
	text := NormaliseDiff(tree, cpuType, "the service", "trace abc")
	if left == right {
		t.Fatal("the fixture's sides have the same total")
	}
	if tree.Total != tree.TotalRight() {
		t.Errorf("after scaling: baseline %d, comparison %d", tree.Total, tree.TotalRight())
	}
	for _, part := range []string{"Baseline: the service, total ", "Comparison: trace abc, total ", "scaled ×", "to the "} {
		if !strings.Contains(text, part) {
			t.Errorf("lacks %q: %s", part, text)
		}
	}
	empty := flamegraph.Diff(flamegraph.New(), slowSerialize.tree())
	if text := NormaliseDiff(empty, cpuType, "a", "b"); !strings.HasSuffix(text, "The baseline has no samples: everything shows as new.") {
		t.Errorf("empty baseline: %s", text)
	}
}

func TestDiffWarnsWhenASideHasTooFewSamples(t *testing.T) {
	cpu := func(ns int64) *flamegraph.Node {
		return flamegraph.FromLevels([]string{"total", "main.serialize"}, [][]int64{{0, ns, 0, 0}, {0, ns, ns, 1}})
	}
	base := cpu(181_000_000_000) // 181 s of CPU: 18,100 samples
	comp := cpu(30_000_000)      // a 30 ms request: 3 samples
	tree := flamegraph.Diff(base, comp)
	want := "Few samples: the comparison holds about 3 samples (baseline about 18100, comparison about 3, CPU time at 100 Hz)"
	if got := DiffFewSamples(tree, cpuType); !strings.HasPrefix(got, want) {
		t.Errorf("got %q\nwant prefix %q", got, want)
	}
	if got := DiffFewSamples(flamegraph.Diff(base, base), cpuType); got != "" {
		t.Errorf("enough samples on both sides: %q", got)
	}
	if got := DiffFewSamples(tree, "memory:alloc_space:bytes:space:bytes"); got != "" {
		t.Errorf("bytes are not samples: %q", got)
	}
}
