package frames

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
)

// DiffSummaryFrameName names the table of functions whose share changed most in a diff.
const DiffSummaryFrameName = "diff summary"

// DiffSummary lists the functions whose share moved most between the baseline and the
// comparison, biggest move first, at most rows of them: the table a user reads next to the diff
// flame graph ("main.dbQuery: 12% → 85%"). Shares are inclusive (a function with its callees,
// as wide as it is drawn); the self change says whether the function itself or its callees moved.
func DiffSummary(tree *flamegraph.Node, rows int) *data.Frame {
	type move struct {
		name                  string
		left, right, selfMove float64 // percent of each side's total; self: percentage points
	}
	var moves []move
	if tree != nil && tree.Total+tree.TotalRight() > 0 {
		for name, v := range tree.ByFunction() {
			m := move{name: name, left: share(v.Total, tree.Total), right: share(v.TotalRight, tree.TotalRight()),
				selfMove: share(v.SelfRight, tree.TotalRight()) - share(v.Self, tree.Total)}
			if m.left != 0 || m.right != 0 {
				moves = append(moves, m)
			}
		}
	}
	sort.Slice(moves, func(i, j int) bool {
		di, dj := math.Abs(moves[i].right-moves[i].left), math.Abs(moves[j].right-moves[j].left)
		if di != dj {
			return di > dj
		}
		return moves[i].name < moves[j].name
	})
	if len(moves) > rows {
		moves = moves[:rows]
	}
	names := make([]string, len(moves))
	left := make([]float64, len(moves))
	right := make([]float64, len(moves))
	change := make([]float64, len(moves))
	selfChange := make([]float64, len(moves))
	for i, m := range moves {
		names[i], left[i], right[i] = m.name, round2(m.left), round2(m.right)
		change[i], selfChange[i] = round2(m.right-m.left), round2(m.selfMove)
	}
	pct := func(description string) *data.FieldConfig {
		return &data.FieldConfig{Unit: "percent", Decimals: ptr(uint16(2)), Description: description}
	}
	frame := data.NewFrame(DiffSummaryFrameName,
		data.NewField("function", nil, names),
		data.NewField("baseline share", nil, left).SetConfig(pct("the function with its callees, in percent of the baseline's total")),
		data.NewField("comparison share", nil, right).SetConfig(pct("the function with its callees, in percent of the comparison's total")),
		data.NewField("change", nil, change).SetConfig(pct("comparison share minus baseline share, in percentage points")),
		data.NewField("self change", nil, selfChange).SetConfig(pct("the same for the function's own (self) time, without its callees")),
	)
	frame.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return frame
}

func share(v, total int64) float64 {
	if total == 0 {
		return 0
	}
	return 100 * float64(v) / float64(total)
}

func round2(f float64) float64 { return math.Round(f*100) / 100 }

func ptr[T any](v T) *T { return &v }

// FormatValue prints a profile value in its Grafana unit for notices: "1.25 s", "3.4 MiB", "1200".
func FormatValue(v int64, unit string) string {
	f := float64(v)
	switch unit {
	case "ns":
		switch {
		case f >= 1e9:
			return fmt.Sprintf("%.3g s", f/1e9)
		case f >= 1e6:
			return fmt.Sprintf("%.3g ms", f/1e6)
		case f >= 1e3:
			return fmt.Sprintf("%.3g µs", f/1e3)
		}
		return fmt.Sprintf("%d ns", v)
	case "bytes":
		for i, u := range []string{"GiB", "MiB", "KiB"} {
			if d := math.Pow(1024, float64(3-i)); f >= d {
				return fmt.Sprintf("%.3g %s", f/d, u)
			}
		}
		return fmt.Sprintf("%d B", v)
	}
	return fmt.Sprint(v)
}

// MinDiffSamples is the fewest CPU samples a diff side needs before its shares mean much: a
// function with a 10 % share of 100 samples moves by about 3 points from one sample set to the
// next (binomial error), more on fewer.
const MinDiffSamples = 100

// cpuSampleInterval is the CPU profilers' period (100 Hz: pyroscope-go, pyroscope-java, py-spy).
const cpuSampleInterval = 10 * time.Millisecond

// DiffFewSamples warns when a side of a CPU diff holds too few samples for its shares to mean
// anything, with both sides' sample counts (CPU time at 100 Hz); "" otherwise, and for profile
// types whose values are not CPU time (their sample counts are unknown).
func DiffFewSamples(tree *flamegraph.Node, profileTypeID string) string {
	if !KindOf(profileTypeID).CPU {
		return ""
	}
	samples := func(ns int64) int64 { return ns / int64(cpuSampleInterval) }
	left, right := samples(tree.Total), samples(tree.TotalRight())
	var few []string
	for _, side := range []struct {
		name string
		n    int64
	}{{"baseline", left}, {"comparison", right}} {
		if side.n > 0 && side.n < MinDiffSamples {
			few = append(few, fmt.Sprintf("the %s holds about %d samples", side.name, side.n))
		}
	}
	if len(few) == 0 {
		return ""
	}
	return fmt.Sprintf("Few samples: %s (baseline about %d, comparison about %d, CPU time at 100 Hz); under %d a function's share moves by several points from one run to the next, so read the colours as a hint, not a measurement: widen that side (a longer range, more requests).",
		strings.Join(few, " and "), left, right, MinDiffSamples)
}

// NormaliseDiff scales the side with the smaller total up to the other's, so widths and colours
// compare each function's share of its side, and says so (the sides described in words).
func NormaliseDiff(tree *flamegraph.Node, profileTypeID, baseline, comparison string) string {
	unit := ProfileUnit(profileTypeID)
	left, right := tree.Total, tree.TotalRight()
	text := fmt.Sprintf("Baseline: %s, total %s. Comparison: %s, total %s.",
		baseline, FormatValue(left, unit), comparison, FormatValue(right, unit))
	switch {
	case left == 0 && right == 0:
		return text + " Neither side has samples."
	case left == 0:
		return text + " The baseline has no samples: everything shows as new."
	case right == 0:
		return text + " The comparison has no samples: everything shows as removed."
	case left < right:
		f := float64(right) / float64(left)
		tree.ScaleLeft(f)
		return text + fmt.Sprintf(" The baseline is scaled ×%.3g to the comparison's total, so widths and colours compare each function's share of its side.", f)
	case right < left:
		f := float64(left) / float64(right)
		tree.ScaleRight(f)
		return text + fmt.Sprintf(" The comparison is scaled ×%.3g to the baseline's total, so widths and colours compare each function's share of its side.", f)
	}
	return text
}
