package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
)

// wideNode is the share of the total a node needs to be printed in the tree.
const wideNode = 0.02

// foldChain is the shortest chain of single callees folded into one line.
const foldChain = 3

// flameNode is one row of a flame graph frame (nested set: depth-first, with its level).
type flameNode struct {
	name                  string
	value, self           int64
	valueRight, selfRight int64
	children              []*flameNode
}

// readFlameGraph rebuilds the tree of a flame graph frame; nil when the frame lacks its fields.
func readFlameGraph(f *data.Frame) (root *flameNode, unit string, diff bool) {
	level, _ := f.FieldByName("level")
	value, _ := f.FieldByName("value")
	self, _ := f.FieldByName("self")
	label, _ := f.FieldByName("label")
	if level == nil || value == nil || self == nil || label == nil || f.Rows() == 0 {
		return nil, "", false
	}
	valueRight, _ := f.FieldByName("valueRight")
	selfRight, _ := f.FieldByName("selfRight")
	if value.Config != nil {
		unit = value.Config.Unit
	}
	at := func(field *data.Field, i int) int64 {
		if field == nil {
			return 0
		}
		v, _, _ := number(field.At(i))
		return int64(v)
	}
	var stack []*flameNode
	for i := range f.Rows() {
		n := &flameNode{name: cell(label, i), value: at(value, i), self: at(self, i),
			valueRight: at(valueRight, i), selfRight: at(selfRight, i)}
		depth := int(at(level, i))
		if depth == 0 || depth > len(stack) {
			if root == nil {
				root = n
			}
			stack = append(stack[:0], n)
			continue
		}
		parent := stack[depth-1]
		parent.children = append(parent.children, n)
		stack = append(stack[:depth], n)
	}
	return root, unit, valueRight != nil
}

// printFlameGraph writes a flame graph as text: its total, the call tree's wide nodes (at least
// 2% of the total, widest callee first; a chain of single callees with the same time is folded
// into its first and last function), then the functions with the most self time: what a person
// reads first in the panel.
func printFlameGraph(w io.Writer, f *data.Frame, rows, width int) {
	root, unit, diff := readFlameGraph(f)
	if root == nil {
		fmt.Fprintf(w, "flame graph %q: no level/value/self/label fields\n", f.Name)
		return
	}
	if !frames.FlameGraphHasSamples(f) {
		fmt.Fprintf(w, "flame graph %q: no samples in this range\n", f.Name)
		return
	}
	total, totalRight := max(root.value, 1), max(root.valueRight, 1)
	share := func(n *flameNode) string {
		if diff {
			return fmt.Sprintf("%6.1f%% → %5.1f%%", pct(n.value, total), pct(n.valueRight, totalRight))
		}
		return fmt.Sprintf("%6.1f%%  %9s", pct(n.value, total), formatValue(float64(n.value), unit, nil))
	}
	if diff {
		fmt.Fprintf(w, "diff flame graph %q: baseline %s, comparison %s (each node's share of its side)\n", f.Name,
			formatValue(float64(root.value), unit, nil), formatValue(float64(root.valueRight), unit, nil))
	} else {
		fmt.Fprintf(w, "flame graph %q: %s in total\n", f.Name, formatValue(float64(root.value), unit, nil))
	}
	wide := func(n *flameNode) bool {
		return float64(n.value) >= wideNode*float64(total) || diff && float64(n.valueRight) >= wideNode*float64(totalRight)
	}
	blank := strings.Repeat(" ", len([]rune(share(root))))
	printed := 0
	more := false
	node := func(n *flameNode, depth int) {
		fmt.Fprintln(w, cut(share(n)+"  "+strings.Repeat("  ", depth)+n.name, width))
	}
	var walk func(n *flameNode, depth int)
	walk = func(n *flameNode, depth int) {
		if printed == rows {
			more = true
			return
		}
		printed++
		node(n, depth)
		// A chain of single callees with the same time (the HTTP server's frames above every
		// handler) says nothing: fold it into its first and last function.
		last, folded := n, 0
		for len(last.children) == 1 && last.self == 0 && last.selfRight == 0 &&
			last.children[0].value == last.value && last.children[0].valueRight == last.valueRight {
			last = last.children[0]
			folded++
		}
		if folded < foldChain {
			last = n
		} else {
			fmt.Fprintln(w, cut(blank+"  "+strings.Repeat("  ", depth+1)+fmt.Sprintf("… %d frames with the same time …", folded-1), width))
			node(last, depth+1)
			depth++
		}
		children := append([]*flameNode(nil), last.children...)
		sort.SliceStable(children, func(i, j int) bool {
			return children[i].value+children[i].valueRight > children[j].value+children[j].valueRight
		})
		for _, c := range children {
			if wide(c) {
				walk(c, depth+1)
			}
		}
	}
	walk(root, 0)
	if more {
		fmt.Fprintln(w, "  … (--rows shows more of the tree)")
	}
	printSelf(w, root, unit, diff, total, totalRight, min(rows, 10), width)
}

// printSelf lists the functions with the most self time (summed over their nodes).
func printSelf(w io.Writer, root *flameNode, unit string, diff bool, total, totalRight int64, top, width int) {
	type entry struct {
		name            string
		self, selfRight int64
	}
	byName := map[string]*entry{}
	var order []*entry
	var walk func(n *flameNode)
	walk = func(n *flameNode) {
		if n.self != 0 || n.selfRight != 0 {
			e := byName[n.name]
			if e == nil {
				e = &entry{name: n.name}
				byName[n.name] = e
				order = append(order, e)
			}
			e.self += n.self
			e.selfRight += n.selfRight
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(root)
	sort.SliceStable(order, func(i, j int) bool {
		return order[i].self+order[i].selfRight > order[j].self+order[j].selfRight
	})
	if len(order) == 0 {
		return
	}
	if _, isTime := timeUnits[unit]; isTime {
		fmt.Fprintln(w, "most self time:")
	} else {
		fmt.Fprintln(w, "most self:")
	}
	for i, e := range order {
		if i == top {
			break
		}
		var line string
		if diff {
			line = fmt.Sprintf("  %6.1f%% → %5.1f%%  %s", pct(e.self, total), pct(e.selfRight, totalRight), e.name)
		} else {
			line = fmt.Sprintf("  %6.1f%%  %9s  %s", pct(e.self, total), formatValue(float64(e.self), unit, nil), e.name)
		}
		fmt.Fprintln(w, cut(line, width))
	}
}

func pct(v, total int64) float64 { return 100 * float64(v) / float64(max(total, 1)) }
