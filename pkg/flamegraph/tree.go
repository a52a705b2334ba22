// Package flamegraph holds flame graphs as trees, so that several profiles (a trace's services,
// the two sides of a diff) can be merged and compared before they become a frame. Pure, no I/O.
package flamegraph

import "slices"

// RootName is the name of a flame graph's root, as Pyroscope calls it.
const RootName = "total"

// Node is one function in a call stack: Total includes its callees, Self does not. TotalRight
// and SelfRight hold the comparison side of a diff; they stay zero otherwise.
type Node struct {
	Name     string
	Total    int64
	Self     int64
	Children []*Node

	// ext holds what few nodes need: a diff's comparison side, a wide node's index of its
	// children. Apart, it keeps a node at 64 bytes instead of 80, and the nodes of a request's
	// profiles were its largest allocation.
	ext *nodeExt
}

type nodeExt struct {
	totalRight, selfRight int64
	index                 map[string]int // child position by name, built lazily by child()
}

// TotalRight is the comparison side's total in a diff (0 otherwise).
func (n *Node) TotalRight() int64 {
	if n.ext == nil {
		return 0
	}
	return n.ext.totalRight
}

// SelfRight is the comparison side's self value in a diff (0 otherwise).
func (n *Node) SelfRight() int64 {
	if n.ext == nil {
		return 0
	}
	return n.ext.selfRight
}

// SetRight sets the comparison side's values.
func (n *Node) SetRight(total, self int64) {
	if n.ext == nil {
		if total == 0 && self == 0 {
			return
		}
		n.ext = &nodeExt{}
	}
	n.ext.totalRight, n.ext.selfRight = total, self
}

func (n *Node) index() map[string]int {
	if n.ext == nil {
		return nil
	}
	return n.ext.index
}

// New returns an empty root.
func New() *Node { return &Node{Name: RootName} }

// FromLevels rebuilds the tree from Pyroscope's level encoding (the names and levels of its
// FlameGraph message): on each level, 4 numbers per node (x offset from the previous sibling's
// end, total, self, index into names); a node's parent is the node one level up whose x range
// contains it. No levels give an empty root. It takes the numbers rather than the client's type
// so that the trees, and the frames built from them, depend on no client.
func FromLevels(names []string, levels [][]int64) *Node {
	if len(levels) == 0 {
		return New()
	}
	type placed struct {
		n          *Node
		start, end int64
	}
	// All nodes in one allocation: a 16k-node reply would otherwise cost 16k small allocations.
	count, widest := 0, 0
	for _, values := range levels {
		count += len(values) / 4
		widest = max(widest, len(values)/4)
	}
	arena := make([]Node, 0, count)
	// Two levels are placed at a time: the one read and the one above it.
	prev, cur := make([]placed, 0, widest), make([]placed, 0, widest)
	var roots []*Node
	for li, values := range levels {
		cur = cur[:0]
		x := int64(0)
		p := 0
		for i := 0; i+3 < len(values); i += 4 {
			start := x + values[i]
			arena = append(arena, Node{Name: nameAt(names, values[i+3]), Total: values[i+1], Self: values[i+2]})
			n := &arena[len(arena)-1]
			x = start + n.Total
			cur = append(cur, placed{n, start, x})
			if li == 0 {
				roots = append(roots, n)
				continue
			}
			for p < len(prev) && prev[p].end <= start {
				p++
			}
			if p < len(prev) {
				prev[p].n.Children = append(prev[p].n.Children, n)
			}
		}
		prev, cur = cur, prev
	}
	if len(roots) == 1 {
		return roots[0]
	}
	root := New()
	for _, r := range roots {
		root.Total += r.Total
		root.Children = append(root.Children, r)
	}
	return root
}

func nameAt(names []string, i int64) string {
	if i < 0 || int(i) >= len(names) {
		return "<unknown>"
	}
	return names[i]
}

// Empty reports whether the tree holds no samples.
func (n *Node) Empty() bool { return n == nil || n.Total == 0 && n.TotalRight() == 0 }

// child returns the child named name, creating it (last) when absent.
func (n *Node) child(name string) *Node {
	// Most nodes have a handful of children: a scan finds them without a map per node, which was
	// most of what merging a large request's profiles allocated. Past indexFrom children a map
	// keeps a wide node's lookups constant.
	if n.index() == nil && len(n.Children) < indexFrom {
		// From the end: of repeated names (a tree read from levels can hold them) the last one,
		// as the map below keeps it.
		for i := len(n.Children) - 1; i >= 0; i-- {
			if c := n.Children[i]; c.Name == name {
				return c
			}
		}
	} else {
		if n.index() == nil {
			if n.ext == nil {
				n.ext = &nodeExt{}
			}
			n.ext.index = make(map[string]int, len(n.Children))
			for i, c := range n.Children {
				n.ext.index[c.Name] = i
			}
		}
		index := n.ext.index
		if i, ok := index[name]; ok {
			return n.Children[i]
		}
		index[name] = len(n.Children)
	}
	c := &Node{Name: name}
	n.Children = append(n.Children, c)
	return c
}

// indexFrom is how many children a node has before child looks them up in a map.
const indexFrom = 16

// Merge adds src's samples into n, node by node along equal call paths. The roots are merged
// whatever their names.
func (n *Node) Merge(src *Node) {
	if src == nil {
		return
	}
	n.Total += src.Total
	n.Self += src.Self
	if src.ext != nil {
		n.SetRight(n.TotalRight()+src.ext.totalRight, n.SelfRight()+src.ext.selfRight)
	}
	for _, c := range src.Children {
		n.child(c.Name).Merge(c)
	}
}

// AddUnder puts the children of sub under a new (or existing) child of n named name, so that a
// service's stacks appear below a node carrying the service's name. It returns that child (nil
// when sub holds no samples).
func (n *Node) AddUnder(name string, sub *Node) *Node {
	if sub.Empty() {
		return nil
	}
	c := n.child(name)
	c.Total += sub.Total
	c.Self += sub.Self
	for _, sc := range sub.Children {
		c.child(sc.Name).Merge(sc)
	}
	n.Total += sub.Total
	return c
}

// MoveUnder is AddUnder for a sub the caller gives up: where n has no child named name yet, the
// new child takes sub's children as they are instead of copying them. sub must not be used
// after (its nodes now belong to n and change with it).
func (n *Node) MoveUnder(name string, sub *Node) *Node {
	if sub.Empty() {
		return nil
	}
	if n.has(name) {
		return n.AddUnder(name, sub)
	}
	c := n.child(name)
	c.Total, c.Self, c.Children = sub.Total, sub.Self, sub.Children
	n.Total += sub.Total
	return c
}

// has reports whether n has a child named name.
func (n *Node) has(name string) bool {
	if index := n.index(); index != nil {
		_, ok := index[name]
		return ok
	}
	return slices.ContainsFunc(n.Children, func(c *Node) bool { return c.Name == name })
}

// AsRoot is a root holding n's samples and children, sharing them with n: a view of a subtree as
// a graph of its own, no copy. It is current until n changes; a change to either changes both.
func (n *Node) AsRoot() *Node {
	root := &Node{Name: RootName, Total: n.Total, Self: n.Self, Children: n.Children}
	root.SetRight(n.TotalRight(), n.SelfRight())
	return root
}

// Diff returns one tree holding baseline as the left values and comparison as the right ones.
func Diff(baseline, comparison *Node) *Node {
	out := New()
	out.Merge(baseline)
	out.mergeRight(comparison)
	return out
}

func (n *Node) mergeRight(src *Node) {
	if src == nil {
		return
	}
	n.SetRight(n.TotalRight()+src.Total, n.SelfRight()+src.Self)
	for _, c := range src.Children {
		n.child(c.Name).mergeRight(c)
	}
}

// ScaleLeft multiplies the left values by f (rounded), keeping a parent's total at least the sum
// of its children's so the frame stays a valid flame graph.
func (n *Node) ScaleLeft(f float64) {
	var sum int64
	for _, c := range n.Children {
		c.ScaleLeft(f)
		sum += c.Total
	}
	n.Self = int64(float64(n.Self)*f + 0.5)
	n.Total = max(int64(float64(n.Total)*f+0.5), sum+n.Self)
}

// ScaleRight is ScaleLeft for the comparison side.
func (n *Node) ScaleRight(f float64) {
	var sum int64
	for _, c := range n.Children {
		c.ScaleRight(f)
		sum += c.TotalRight()
	}
	self := int64(float64(n.SelfRight())*f + 0.5)
	n.SetRight(max(int64(float64(n.TotalRight())*f+0.5), sum+self), self)
}

// Count is the number of nodes, root included.
func (n *Node) Count() int {
	c := 1
	for _, k := range n.Children {
		c += k.Count()
	}
	return c
}

// Walk visits the tree depth first, children in order, with each node's depth (root: 0).
func (n *Node) Walk(visit func(depth int, n *Node)) {
	var walk func(depth int, n *Node)
	walk = func(depth int, n *Node) {
		visit(depth, n)
		for _, c := range n.Children {
			walk(depth+1, c)
		}
	}
	walk(0, n)
}

// FunctionTotals is what one function holds over the whole tree, on each side of a diff: Self
// sums its self values on every path; Total sums its inclusive values, counting a recursive call
// once (only the outermost occurrence on a path), so it never exceeds the root.
type FunctionTotals struct {
	Self, SelfRight, Total, TotalRight int64
}

// ByFunction sums each function's values over the whole tree (a function appears on many paths).
func (n *Node) ByFunction() map[string]FunctionTotals {
	out := map[string]FunctionTotals{}
	onPath := map[string]int{}
	var walk func(c *Node)
	walk = func(c *Node) {
		v := out[c.Name]
		v.Self += c.Self
		v.SelfRight += c.SelfRight()
		if onPath[c.Name] == 0 {
			v.Total += c.Total
			v.TotalRight += c.TotalRight()
		}
		out[c.Name] = v
		onPath[c.Name]++
		for _, k := range c.Children {
			walk(k)
		}
		onPath[c.Name]--
	}
	for _, c := range n.Children {
		walk(c)
	}
	return out
}
