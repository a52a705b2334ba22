package flamegraph_test

import (
	"encoding/binary"
	"strings"
	"testing"

	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"google.golang.org/protobuf/proto"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
)

const cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

// fuzzSample is the tree of tree_test.go's sample (handle, db, serialize twice, sha256 after a
// gap of self time) in Pyroscope's level encoding.
var fuzzSample = &querierv1.FlameGraph{
	Names: []string{"total", "handle", "db", "serialize", "sha256"},
	Levels: []*querierv1.Level{
		{Values: []int64{0, 100, 0, 0}},
		{Values: []int64{0, 60, 10, 1, 0, 40, 10, 2}},
		{Values: []int64{0, 50, 50, 3, 10, 10, 10, 4, 0, 20, 20, 3}},
	},
	Total: 100, MaxSelf: 50,
}

// checkConversion is what holds for any flame graph in a Pyroscope reply: either Check names
// Pyroscope's reply, or the tree rebuilt from it keeps every node, no node holds less than its
// children, and the frames (plain, diff against itself, diff summary) have one row per node.
func checkConversion(t *testing.T, fg *pyroscope.FlameGraph) {
	t.Helper()
	if err := fg.Check(); err != nil {
		if !strings.Contains(err.Error(), "Pyroscope's reply") {
			t.Fatalf("error %q does not name Pyroscope's reply", err)
		}
		return
	}
	nodes, roots := 0, 0
	for i, l := range fg.Levels {
		nodes += len(l) / 4
		if i == 0 {
			roots = len(l) / 4
		}
	}
	tree := fg.Tree() // as the client returns it
	want := nodes
	if roots != 1 {
		want++ // a root above several (or no) first-level nodes
	}
	if got := tree.Count(); got != want {
		t.Fatalf("tree has %d nodes, the reply %d: stacks were lost or invented", got, want)
	}
	tree.Walk(func(_ int, n *flamegraph.Node) {
		var sum int64
		for _, c := range n.Children {
			sum += c.Total
		}
		if n.Total < 0 || n.Self < 0 || sum > n.Total {
			t.Fatalf("node %s: total %d, self %d, children %d", n.Name, n.Total, n.Self, sum)
		}
	})
	f := frames.FlameGraph(fg.Tree(), cpu)
	if !tree.Empty() && f.Rows() != want {
		t.Fatalf("frame has %d rows for %d nodes", f.Rows(), want)
	}
	diff := flamegraph.Diff(tree, fg.Tree())
	diff.ScaleLeft(0.5)
	if df := frames.DiffFlameGraph(diff, cpu); !diff.Empty() && df.Rows() != diff.Count() {
		t.Fatalf("diff frame has %d rows for %d nodes", df.Rows(), diff.Count())
	}
	frames.DiffSummary(diff, 20)
}

// FuzzFlameGraphProto unmarshals arbitrary bytes as the FlameGraph message of a
// SelectMergeStacktraces / SelectMergeSpanProfile reply and converts it as the client does.
func FuzzFlameGraphProto(f *testing.F) {
	for _, m := range []*querierv1.FlameGraph{
		fuzzSample,
		{},
		{Names: []string{"total"}, Levels: []*querierv1.Level{{Values: []int64{0, 5, 5, 0}}}},
		{Names: []string{"a"}, Levels: []*querierv1.Level{{Values: []int64{0, 5, 5, 3}}}},
		{Names: []string{"a", "b"}, Levels: []*querierv1.Level{{Values: []int64{0, 5, 0, 0}}, {Values: []int64{3, 5, 5, 1}}}},
		{Names: []string{"a"}, Levels: []*querierv1.Level{{Values: []int64{-1, -5, 7, 0, 1}}}},
	} {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m querierv1.FlameGraph
		if proto.Unmarshal(data, &m) != nil {
			return // not a message the client could decode: the garbage faults cover those replies
		}
		checkConversion(t, pyroscope.FromProto(&m))
	})
}

// FuzzFlameGraphLevels builds level encodings directly: names, and small signed numbers (offsets,
// totals, selves and name indexes out of range or negative), cut into levels.
func FuzzFlameGraphLevels(f *testing.F) {
	enc := func(levels ...[]int64) []byte {
		var b []byte
		for i, l := range levels {
			if i > 0 {
				b = append(b, 0x7f) // level break
			}
			for _, v := range l {
				b = append(b, byte(int8(v)))
			}
		}
		return b
	}
	f.Add("total,handle,db,serialize,sha256", enc([]int64{0, 100, 0, 0}, []int64{0, 60, 10, 1, 0, 40, 10, 2}, []int64{0, 50, 50, 3, 10, 10, 10, 4, 0, 20, 20, 3}))
	f.Add("a,b", enc([]int64{0, 10, 0, 0}, []int64{5, 10, 0, 1}))
	f.Add("a", enc([]int64{0, 10, 20, 0}))
	f.Add("", enc([]int64{0, 1, 1, 0}))
	f.Add("a,b,c", enc([]int64{0, 10, 0, 0, 0, 10, 0, 0}, []int64{9, 2, 2, 1}))
	f.Add("a,b", enc([]int64{0, -3, 0, 0}, []int64{0, 1, 0, 9}))
	f.Fuzz(func(t *testing.T, names string, raw []byte) {
		fg := &pyroscope.FlameGraph{Names: strings.Split(names, ",")}
		level := []int64{}
		for i := 0; i < len(raw); i++ {
			if raw[i] == 0x7f {
				fg.Levels = append(fg.Levels, level)
				level = []int64{}
				continue
			}
			v := int64(int8(raw[i]))
			if raw[i] == 0x80 && i+8 < len(raw) {
				// An escape for large values: the next 8 bytes, so overflow is reachable.
				v = int64(binary.LittleEndian.Uint64(raw[i+1 : i+9]))
				i += 8
			}
			level = append(level, v)
		}
		fg.Levels = append(fg.Levels, level)
		checkConversion(t, fg)
	})
}
