package flamegraph

// CallSite keeps the stacks of root that start with the call site, root first, as Pyroscope's
// stack_trace_selector does: the answer is root → callSite[0] → … → callSite[n-1] → the call
// site's callees as they were. The functions on the path keep only the path: each holds the call
// site's total (and right total, in a diff) and no self time, since the samples of every other
// stack are gone. An empty call site returns root itself (nil: an empty root); a call site no
// stack starts with gives an empty root. Cutting an already cut tree to the same call site
// changes nothing, so the cut is right whether Pyroscope applied the selector or dropped it.
//
// A cut tree shares no node with root.
func CallSite(root *Node, callSite []string) *Node {
	switch {
	case root == nil:
		return New()
	case len(callSite) == 0:
		return root
	}
	// Every node at the end of the path: siblings of one name are merged where a tree has them
	// (a merged tree never does; one built from levels may).
	matches := []*Node{root}
	for _, name := range callSite {
		var next []*Node
		for _, m := range matches {
			for _, c := range m.Children {
				if c.Name == name {
					next = append(next, c)
				}
			}
		}
		matches = next
	}
	if len(matches) == 0 {
		return &Node{Name: root.Name}
	}
	site := &Node{Name: callSite[len(callSite)-1]}
	for _, m := range matches {
		site.Merge(m)
	}
	if site.Empty() {
		return &Node{Name: root.Name}
	}
	n := site
	for i := len(callSite) - 2; i >= -1; i-- {
		name := root.Name
		if i >= 0 {
			name = callSite[i]
		}
		n = &Node{Name: name, Total: site.Total, Children: []*Node{n}}
		n.SetRight(site.TotalRight(), 0)
	}
	return n
}
