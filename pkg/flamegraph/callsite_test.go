package flamegraph

import "testing"

// The sample tree (tree_test.go):
//
//	total 100
//	├── handle 60 (self 10)
//	│   └── serialize 50
//	└── db 40 (self 10)
//	    ├── sha256 10
//	    └── serialize 20

func TestCallSiteKeepsOnlyTheStacksUnderIt(t *testing.T) {
	cases := []struct {
		name     string
		callSite []string
		want     string
	}{
		{"a root function", []string{"db"}, `total 40/0
  db 40/10
    sha256 10/10
    serialize 20/20
`},
		// The path's functions keep the call site's total and lose their self time: handle's
		// own 10 is not under handle → serialize.
		{"a deeper call site", []string{"handle", "serialize"}, `total 50/0
  handle 50/0
    serialize 50/50
`},
		{"a function under another parent", []string{"db", "serialize"}, `total 20/0
  db 20/0
    serialize 20/20
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := dump(CallSite(fromEncoded(sample), c.callSite)); got != c.want {
				t.Errorf("got\n%swant\n%s", got, c.want)
			}
		})
	}
}

func TestCallSiteNoStackStartsWithGivesAnEmptyRoot(t *testing.T) {
	for _, cs := range [][]string{{"serialize"}, {"handle", "db"}, {"db", "sha256", "deeper"}, {"total"}} {
		got := CallSite(fromEncoded(sample), cs)
		if !got.Empty() || got.Name != RootName || len(got.Children) != 0 {
			t.Errorf("%v: got\n%s", cs, dump(got))
		}
	}
}

func TestCuttingTwiceChangesNothing(t *testing.T) {
	// What a server that honours stack_trace_selector answers is already cut: cutting it again
	// must leave it as it is.
	for _, cs := range [][]string{{"db"}, {"handle", "serialize"}, {"nowhere"}} {
		once := CallSite(fromEncoded(sample), cs)
		if twice := CallSite(once, cs); dump(twice) != dump(once) {
			t.Errorf("%v: once\n%stwice\n%s", cs, dump(once), dump(twice))
		}
	}
}

func TestNoCallSiteKeepsTheTreeAndACutSharesNoNode(t *testing.T) {
	in := fromEncoded(sample)
	before := dump(in)
	if whole := CallSite(in, nil); whole != in {
		t.Errorf("no call site did not answer the tree itself:\n%s", dump(whole))
	}
	cut := CallSite(in, []string{"db"})
	cut.Children[0].Total = 1
	cut.Children[0].Children[0].Total = 1
	if dump(in) != before {
		t.Errorf("changing a cut changed the input:\n%s", dump(in))
	}
	if got := CallSite(nil, []string{"db"}); !got.Empty() {
		t.Errorf("nil tree: %s", dump(got))
	}
}

func TestCallSiteKeepsBothSidesOfADiffAndMergesRepeatedSiblings(t *testing.T) {
	// A tree built from levels may hold two siblings of one name; both are under the call site.
	right := func(n *Node, total, self int64) *Node { n.SetRight(total, self); return n }
	in := right(&Node{Name: RootName, Total: 30, Children: []*Node{
		right(&Node{Name: "work", Total: 10, Self: 10}, 4, 4),
		{Name: "idle", Total: 5, Self: 5},
		right(&Node{Name: "work", Total: 15, Children: []*Node{right(&Node{Name: "io", Total: 15, Self: 15}, 8, 8)}}, 8, 0),
	}}, 12, 0)
	want := `total 25/0 right 12/0
  work 25/10 right 12/4
    io 15/15 right 8/8
`
	if got := dump(CallSite(in, []string{"work"})); got != want {
		t.Errorf("got\n%swant\n%s", got, want)
	}
}
