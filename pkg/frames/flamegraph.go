// Package frames builds the data frames Grafana's panels read. Pure functions, golden-tested.
package frames

import (
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
)

// FlameGraphFrameName is the name Grafana's flame graph panel and the trace view's embedded span
// flame graph look for.
const FlameGraphFrameName = "response"

// FlameGraph turns Pyroscope's level encoding into the nested-set frame Grafana's flame graph
// panel reads: fields level, value, self, label (an enum), one row per node in depth-first order.
// A nil or empty graph gives the same frame with no rows.
func FlameGraph(fg *pyroscope.FlameGraph, profileTypeID string) *data.Frame {
	unit := ProfileUnit(profileTypeID)
	levels := []int64{}
	values := []int64{}
	selfs := []int64{}
	labels := []data.EnumItemIndex{}
	enum := newEnum()

	if fg != nil {
		walkDepthFirst(fg, func(level int, total, self, name int64) {
			levels = append(levels, int64(level))
			values = append(values, total)
			selfs = append(selfs, self)
			labels = append(labels, enum.index(nameAt(fg.Names, name)))
		})
	}

	labelField := data.NewField("label", nil, labels)
	labelField.Config = &data.FieldConfig{TypeConfig: &data.FieldTypeConfig{Enum: &data.EnumFieldConfig{Text: enum.text}}}
	frame := data.NewFrame(FlameGraphFrameName,
		data.NewField("level", nil, levels),
		data.NewField("value", nil, values).SetConfig(&data.FieldConfig{Unit: unit}),
		data.NewField("self", nil, selfs).SetConfig(&data.FieldConfig{Unit: unit}),
		labelField,
	)
	frame.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeFlameGraph}
	return frame
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

type node struct {
	level       int
	start, end  int64 // x range on its level
	total, self int64
	name        int64
	children    []*node
}

// walkDepthFirst rebuilds the tree from the levels (a node's parent is the node one level up
// whose x range contains it) and visits it depth first, children in order.
func walkDepthFirst(fg *pyroscope.FlameGraph, visit func(level int, total, self, name int64)) {
	var prev []*node
	var roots []*node
	for li, values := range fg.Levels {
		var cur []*node
		x := int64(0)
		p := 0
		for i := 0; i+3 < len(values); i += 4 {
			start := x + values[i]
			n := &node{level: li, start: start, end: start + values[i+1], total: values[i+1], self: values[i+2], name: values[i+3]}
			x = n.end
			cur = append(cur, n)
			if li == 0 {
				roots = append(roots, n)
				continue
			}
			for p < len(prev) && prev[p].end <= n.start {
				p++
			}
			if p < len(prev) {
				prev[p].children = append(prev[p].children, n)
			}
		}
		prev = cur
	}
	var walk func(n *node)
	walk = func(n *node) {
		visit(n.level, n.total, n.self, n.name)
		for _, c := range n.children {
			walk(c)
		}
	}
	for _, r := range roots {
		walk(r)
	}
}

func nameAt(names []string, i int64) string {
	if i < 0 || int(i) >= len(names) {
		return "<unknown>"
	}
	return names[i]
}

// enum collects unique labels in first-seen order.
type enum struct {
	text []string
	seen map[string]data.EnumItemIndex
}

func newEnum() *enum { return &enum{text: []string{}, seen: map[string]data.EnumItemIndex{}} }

func (e *enum) index(s string) data.EnumItemIndex {
	if i, ok := e.seen[s]; ok {
		return i
	}
	i := data.EnumItemIndex(len(e.text))
	e.seen[s] = i
	e.text = append(e.text, s)
	return i
}
