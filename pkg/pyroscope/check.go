package pyroscope

import (
	"fmt"
	"math"
)

// Check says whether the flame graph is one Pyroscope's level encoding can mean: 4 numbers per
// node, no negative offset, total or self, self within total, names that exist, and every node
// below the first level inside one node of the level above. A reply failing it (a proxy's
// damage, an incompatible server) would otherwise become a flame graph with orphaned or
// overlapping stacks; the error says what is wrong and where.
func (fg *FlameGraph) Check() error {
	if fg == nil {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("the flame graph in Pyroscope's reply is inconsistent: "+format, args...)
	}
	type span struct{ start, end int64 }
	// Two levels are held at a time, in two buffers of the widest level's size.
	widest := 0
	for _, values := range fg.Levels {
		widest = max(widest, len(values)/4)
	}
	prev, cur := make([]span, 0, widest), make([]span, 0, widest)
	for li, values := range fg.Levels {
		if len(values)%4 != 0 {
			return bad("level %d has %d numbers, not 4 per node", li, len(values))
		}
		cur = cur[:0]
		x, p := int64(0), 0
		for i := 0; i < len(values); i += 4 {
			offset, total, self, name := values[i], values[i+1], values[i+2], values[i+3]
			node := i/4 + 1
			switch {
			case offset < 0 || total < 0 || self < 0:
				return bad("level %d node %d has a negative offset, total or self (%d, %d, %d)", li, node, offset, total, self)
			case self > total:
				return bad("level %d node %d has self %d above its total %d", li, node, self, total)
			case name < 0 || name >= int64(len(fg.Names)):
				return bad("level %d node %d names function %d of %d", li, node, name, len(fg.Names))
			case offset > math.MaxInt64-x || total > math.MaxInt64-x-offset:
				return bad("level %d node %d ends beyond the largest value", li, node)
			}
			start := x + offset
			x = start + total
			cur = append(cur, span{start, x})
			if li == 0 {
				continue
			}
			// The parent is the first node above that ends after this one starts, as the tree
			// is rebuilt (flamegraph.FromLevels).
			for p < len(prev) && prev[p].end <= start {
				p++
			}
			if p == len(prev) || start < prev[p].start || x > prev[p].end {
				return bad("level %d node %d (%d to %d) lies in no node of level %d", li, node, start, x, li-1)
			}
		}
		prev, cur = cur, prev
	}
	return nil
}
