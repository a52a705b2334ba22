// Package frames builds the data frames Grafana's panels read. Pure functions, golden-tested.
package frames

import (
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
)

// FlameGraphFrameName is the name Grafana's flame graph panel and the trace view's embedded span
// flame graph look for.
const FlameGraphFrameName = "response"

// FlameGraph turns a flame graph tree into the nested-set frame Grafana's flame graph panel
// reads: fields level, value, self, label (an enum), one row per node in depth-first order. A nil
// or empty tree gives the empty answer (see emptyRootName).
func FlameGraph(root *flamegraph.Node, profileTypeID string) *data.Frame {
	return FlameGraphTree(FlameGraphFrameName, root, profileTypeID)
}

// FlameGraphTree is FlameGraph under another frame name (a request's per-service graphs).
func FlameGraphTree(name string, root *flamegraph.Node, profileTypeID string) *data.Frame {
	return nestedSet(name, root, profileTypeID, false)
}

// DiffFlameGraph is the diff frame: Grafana's panel switches to diff colouring when it finds
// valueRight and selfRight. value and self hold the baseline alone, valueRight and selfRight the
// comparison alone: @grafana/flamegraph adds value + valueRight itself for a node's width and takes
// the baseline's share from value (its nestedSetToLevels, CallTree utils and TopTable), so a value
// holding both sides renders every node double-counted.
func DiffFlameGraph(root *flamegraph.Node, profileTypeID string) *data.Frame {
	return nestedSet(FlameGraphFrameName, root, profileTypeID, true)
}

// emptyRootName labels the one row of an empty answer, as Pyroscope names its root.
const emptyRootName = "total"

func nestedSet(name string, root *flamegraph.Node, profileTypeID string, diff bool) *data.Frame {
	unit := ProfileUnit(profileTypeID)
	// The empty answer is one root row of 0 samples, as Pyroscope answers an empty range and
	// Grafana's Pyroscope data source passes it on. @grafana/flamegraph cannot read a frame
	// without rows (building its levels throws, the panel shows "An unexpected error
	// happened"), and without the frame the panel says "Data is missing fields" and the
	// notices saying why are lost. This way it draws an empty graph, "0 samples", with them.
	empty := root == nil || root.Empty()
	n := 1
	if !empty {
		n = root.Count()
	}
	// A function is on several paths: a flame graph has about a fifth as many names as nodes.
	enum := newEnum(n/4 + 1)
	levels, values, selfs := newColumn[int64]("level", n), newColumn[int64]("value", n), newColumn[int64]("self", n)
	labels := newColumn[data.EnumItemIndex]("label", n)
	var valuesRight, selfsRight column[int64]
	if diff {
		valuesRight, selfsRight = newColumn[int64]("valueRight", n), newColumn[int64]("selfRight", n)
	}
	if empty {
		labels.set(0, enum.index(emptyRootName))
	} else {
		i := 0
		root.Walk(func(depth int, n *flamegraph.Node) {
			levels.set(i, int64(depth))
			values.set(i, n.Total)
			selfs.set(i, n.Self)
			labels.set(i, enum.index(n.Name))
			if diff {
				valuesRight.set(i, n.TotalRight())
				selfsRight.set(i, n.SelfRight())
			}
			i++
		})
	}
	labels.Config = &data.FieldConfig{TypeConfig: &data.FieldTypeConfig{Enum: &data.EnumFieldConfig{Text: enum.text}}}
	frame := data.NewFrame(name,
		levels.Field,
		values.SetConfig(&data.FieldConfig{Unit: unit}),
		selfs.SetConfig(&data.FieldConfig{Unit: unit}),
		labels.Field,
	)
	if diff {
		frame.Fields = append(frame.Fields,
			valuesRight.SetConfig(&data.FieldConfig{Unit: unit}),
			selfsRight.SetConfig(&data.FieldConfig{Unit: unit}),
		)
	}
	frame.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeFlameGraph}
	return frame
}

// FlameGraphHasSamples says whether a flame graph frame holds samples: the empty answer is
// one root row whose value (and, in a diff, valueRight) is 0.
func FlameGraphHasSamples(f *data.Frame) bool {
	if f == nil || f.Rows() == 0 {
		return false
	}
	for _, name := range []string{"value", "valueRight"} {
		if field, _ := f.FieldByName(name); field != nil && field.Len() > 0 {
			if v, ok := field.At(0).(int64); ok && v != 0 {
				return true
			}
		}
	}
	return false
}

// nonNil keeps empty fields typed and serialised as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// ProfileUnit maps the sample unit (third part of a profile type ID) to a Grafana unit.
func ProfileUnit(profileTypeID string) string {
	parts := strings.Split(profileTypeID, ":")
	if len(parts) < 3 {
		return "short"
	}
	switch parts[2] {
	case "nanoseconds":
		return "ns"
	case "count":
		return "short"
	default:
		return parts[2]
	}
}

// enum collects unique labels in first-seen order.
type enum struct {
	text []string
	seen map[string]data.EnumItemIndex
}

// newEnum is an enum for about n names: sized up front, as a map grown name by name allocates
// about twice its final size.
func newEnum(n int) *enum {
	return &enum{text: make([]string, 0, n), seen: make(map[string]data.EnumItemIndex, n)}
}

func (e *enum) index(s string) data.EnumItemIndex {
	if i, ok := e.seen[s]; ok {
		return i
	}
	i := data.EnumItemIndex(len(e.text))
	e.seen[s] = i
	e.text = append(e.text, s)
	return i
}
