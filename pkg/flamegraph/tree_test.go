package flamegraph

import (
	"fmt"
	"strings"
	"testing"
)

// encoded is a flame graph in Pyroscope's level encoding, as its FlameGraph message holds it.
type encoded struct {
	Names  []string
	Levels [][]int64
}

func fromEncoded(e *encoded) *Node {
	if e == nil {
		return FromLevels(nil, nil)
	}
	return FromLevels(e.Names, e.Levels)
}

// sample in Pyroscope's level encoding:
//
//	total 100
//	├── handle 60 (self 10)
//	│   └── serialize 50
//	└── db 40 (self 10)
//	    ├── sha256 10 (starts 10 into db: a gap of self time before it)
//	    └── serialize 20 (the same name again, under another parent)
var sample = &encoded{
	Names: []string{"total", "handle", "db", "serialize", "sha256"},
	Levels: [][]int64{
		{0, 100, 0, 0},
		{0, 60, 10, 1, 0, 40, 10, 2},
		{0, 50, 50, 3, 10, 10, 10, 4, 0, 20, 20, 3},
	},
}

// dump prints a tree one node per line: depth-indented "name total/self[ right totalRight/selfRight]".
func dump(n *Node) string {
	var b strings.Builder
	n.Walk(func(depth int, c *Node) {
		fmt.Fprintf(&b, "%s%s %d/%d", strings.Repeat("  ", depth), c.Name, c.Total, c.Self)
		if c.TotalRight() != 0 || c.SelfRight() != 0 {
			fmt.Fprintf(&b, " right %d/%d", c.TotalRight(), c.SelfRight())
		}
		b.WriteString("\n")
	})
	return b.String()
}

func TestFromLevelsRebuildsParentsFromXRanges(t *testing.T) {
	want := `total 100/0
  handle 60/10
    serialize 50/50
  db 40/10
    sha256 10/10
    serialize 20/20
`
	if got := dump(fromEncoded(sample)); got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
	if !fromEncoded(nil).Empty() || !fromEncoded(&encoded{}).Empty() {
		t.Error("a nil or empty graph must give an empty root")
	}
}

func TestFromLevelsSurvivesBadNameIndexes(t *testing.T) {
	fg := &encoded{Names: []string{"total"}, Levels: [][]int64{{0, 5, 0, 0}, {0, 5, 5, 9}, {0, 1}}}
	if got := dump(fromEncoded(fg)); got != "total 5/0\n  <unknown> 5/5\n" {
		t.Errorf("tree = %q", got)
	}
}

func TestMergeAddsAlongEqualPaths(t *testing.T) {
	a := fromEncoded(sample)
	a.Merge(fromEncoded(sample))
	want := `total 200/0
  handle 120/20
    serialize 100/100
  db 80/20
    sha256 20/20
    serialize 40/40
`
	if got := dump(a); got != want {
		t.Errorf("merged:\n%s\nwant:\n%s", got, want)
	}
}

func TestAddUnderPutsAServiceLevelBelowTheRoot(t *testing.T) {
	root := New()
	root.AddUnder("ai-detector", fromEncoded(sample))
	root.AddUnder("ai-enrichment", fromEncoded(&encoded{
		Names: []string{"total", "extract"}, Levels: [][]int64{{0, 30, 0, 0}, {0, 30, 30, 1}},
	}))
	root.AddUnder("idle-service", New()) // no samples: no node
	want := `total 130/0
  ai-detector 100/0
    handle 60/10
      serialize 50/50
    db 40/10
      sha256 10/10
      serialize 20/20
  ai-enrichment 30/0
    extract 30/30
`
	if got := dump(root); got != want {
		t.Errorf("tree:\n%s\nwant:\n%s", got, want)
	}
}

// MoveUnder gives the same graph as AddUnder, a service's second tree merged into its first; the
// first tree's nodes are taken, not copied, and a view of the service (AsRoot) sees the merge.
func TestMoveUnderTakesTheFirstTreeAndMergesTheNext(t *testing.T) {
	enrichment := func() *Node {
		return fromEncoded(&encoded{Names: []string{"total", "extract"}, Levels: [][]int64{{0, 30, 0, 0}, {0, 30, 30, 1}}})
	}
	added, moved := New(), New()
	for _, r := range []*Node{added, moved} {
		add := r.AddUnder
		if r == moved {
			add = r.MoveUnder
		}
		add("ai-detector", fromEncoded(sample))
		add("ai-enrichment", enrichment())
		add("ai-detector", enrichment())
		if add("idle-service", New()) != nil {
			t.Error("a node for a tree without samples")
		}
	}
	if got, want := dump(moved), dump(added); got != want {
		t.Errorf("moved:\n%s\nadded:\n%s", got, want)
	}
	first := fromEncoded(sample)
	handle := first.Children[0]
	root := New()
	detector := root.MoveUnder("ai-detector", first)
	if detector.Children[0] != handle {
		t.Error("the first tree's nodes were copied")
	}
	root.MoveUnder("ai-detector", enrichment())
	if view := detector.AsRoot(); view.Total != 130 || view.Name != RootName || len(view.Children) != 3 {
		t.Errorf("the service's view after a second tree: %s", dump(view))
	}
}

func TestDiffKeepsBothSidesAndScaling(t *testing.T) {
	right := &encoded{
		Names:  []string{"total", "handle", "serialize", "new"},
		Levels: [][]int64{{0, 10, 0, 0}, {0, 8, 0, 1, 0, 2, 2, 3}, {0, 8, 8, 2}},
	}
	d := Diff(fromEncoded(sample), fromEncoded(right))
	want := `total 100/0 right 10/0
  handle 60/10 right 8/0
    serialize 50/50 right 8/8
  db 40/10
    sha256 10/10
    serialize 20/20
  new 0/0 right 2/2
`
	if got := dump(d); got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	d.ScaleRight(10)
	if d.TotalRight() != 100 || d.Children[0].TotalRight() != 80 || d.Children[2].SelfRight() != 20 {
		t.Errorf("scaled right:\n%s", dump(d))
	}
	d.ScaleLeft(0.5)
	if d.Total != 50 || d.Children[1].Total != 20 {
		t.Errorf("scaled left:\n%s", dump(d))
	}
	// A parent never ends below the sum of its children, whatever the rounding.
	d.Walk(func(_ int, n *Node) {
		var sum, sumR int64
		for _, c := range n.Children {
			sum, sumR = sum+c.Total, sumR+c.TotalRight()
		}
		if n.Total < sum+n.Self || n.TotalRight() < sumR+n.SelfRight() {
			t.Errorf("node %s: total %d/%d below children %d/%d", n.Name, n.Total, n.TotalRight(), sum, sumR)
		}
	})
}

func TestByFunctionSumsEveryPathAndCountsRecursionOnce(t *testing.T) {
	got := fromEncoded(sample).ByFunction()
	if got["serialize"] != (FunctionTotals{Self: 70, Total: 70}) || got["db"] != (FunctionTotals{Self: 10, Total: 40}) {
		t.Errorf("by function = %+v", got)
	}
	if _, ok := got["total"]; ok {
		t.Error("the root is not a function")
	}
	// walk → walk → leaf: walk holds 10 inclusive, not 10 + 8.
	rec := fromEncoded(&encoded{
		Names:  []string{"total", "walk", "leaf"},
		Levels: [][]int64{{0, 10, 0, 0}, {0, 10, 2, 1}, {0, 8, 0, 1}, {0, 8, 8, 2}},
	}).ByFunction()
	if rec["walk"] != (FunctionTotals{Self: 2, Total: 10}) {
		t.Errorf("recursive walk = %+v", rec["walk"])
	}
}

// Children are found by a scan while few and by a map once many; merging the same names keeps
// one child each way, and of repeated names (a tree read from levels can hold them) the last one.
func TestChildLookupSmallAndWide(t *testing.T) {
	n := New()
	for i := range 40 {
		n.child(fmt.Sprintf("f%d", i)).Total += 1
		n.child(fmt.Sprintf("f%d", i)).Total += 1 // found again, whether scanned or indexed
	}
	if len(n.Children) != 40 {
		t.Fatalf("%d children, want 40", len(n.Children))
	}
	for _, c := range n.Children {
		if c.Total != 2 {
			t.Errorf("%s total %d, want 2", c.Name, c.Total)
		}
	}
	dup := &Node{Children: []*Node{{Name: "a", Total: 1}, {Name: "a", Total: 2}}}
	if got := dup.child("a"); got.Total != 2 {
		t.Errorf("repeated name: got the child of total %d, want the last", got.Total)
	}
}
