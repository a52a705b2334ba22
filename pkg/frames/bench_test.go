package frames

import (
	"testing"
	"time"

	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"google.golang.org/protobuf/proto"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
)

// bigFlameGraph is a Pyroscope reply of exactly n nodes, as the server sends it with maxNodes n:
// a tree of varying fan-out (1 to 6 children, from a fixed sequence) with a distinct name per
// node, so the enum holds n names as in a real profile of many functions.
func bigFlameGraph(n int) *querierv1.FlameGraph {
	type tnode struct {
		total, self int64
		kids        []*tnode
	}
	root := &tnode{}
	all := []*tnode{root}
	for i := 0; len(all) < n; i++ {
		parent := all[i]
		for k := 0; k < 1+(i*7)%6 && len(all) < n; k++ {
			c := &tnode{}
			parent.kids = append(parent.kids, c)
			all = append(all, c)
		}
	}
	var sum func(t *tnode, i *int64) int64
	sum = func(t *tnode, i *int64) int64 {
		*i++
		t.self = 1000 + (*i*37)%5000
		t.total = t.self
		for _, c := range t.kids {
			t.total += sum(c, i)
		}
		return t.total
	}
	var counter int64
	sum(root, &counter)
	fg := &querierv1.FlameGraph{Total: root.total}
	type placed struct {
		t *tnode
		x int64
	}
	level := []placed{{root, 0}}
	for len(level) > 0 {
		var vals []int64
		var next []placed
		end := int64(0)
		for _, p := range level {
			fg.Names = append(fg.Names, "pkg.function"+string(rune('A'+len(fg.Names)%26))+"_"+itoa(len(fg.Names)))
			vals = append(vals, p.x-end, p.t.total, p.t.self, int64(len(fg.Names)-1))
			end = p.x + p.t.total
			x := p.x
			for _, c := range p.t.kids {
				next = append(next, placed{c, x})
				x += c.total
			}
		}
		fg.Levels = append(fg.Levels, &querierv1.Level{Values: vals})
		level = next
	}
	return fg
}

func itoa(i int) string {
	b := []byte{}
	for {
		b = append([]byte{byte('0' + i%10)}, b...)
		if i /= 10; i == 0 {
			return string(b)
		}
	}
}

func TestBigFlameGraphIsWhatTheBenchmarkSays(t *testing.T) {
	f := FlameGraph(pyroscope.FromProto(bigFlameGraph(16384)).Tree(), "process_cpu:cpu:nanoseconds:cpu:nanoseconds")
	if f.Rows() != 16384 {
		t.Fatalf("rows = %d", f.Rows())
	}
	var selfSum int64
	for i := range f.Rows() {
		selfSum += f.Fields[2].At(i).(int64)
	}
	if selfSum != f.Fields[1].At(0).(int64) {
		t.Errorf("self values sum to %d, root total is %d: the tree was rebuilt wrongly", selfSum, f.Fields[1].At(0))
	}
}

// BenchmarkFlameGraphFrame16k measures, side by side in each iteration, decoding a 16,384-node
// SelectMergeStacktraces reply (protobuf, as the Connect client receives it) and building the
// frame Grafana reads from it. Reported: ns per node of each, their ratio, and the allocations per
// node of each.
func BenchmarkFlameGraphFrame16k(b *testing.B) {
	const nodes = 16384
	wire, err := proto.Marshal(&querierv1.SelectMergeStacktracesResponse{Flamegraph: bigFlameGraph(nodes)})
	if err != nil {
		b.Fatal(err)
	}
	decode := func() *querierv1.SelectMergeStacktracesResponse {
		var res querierv1.SelectMergeStacktracesResponse
		if err := proto.Unmarshal(wire, &res); err != nil {
			b.Fatal(err)
		}
		return &res
	}
	const profileType = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	decoded := decode()
	allocs := testing.AllocsPerRun(5, func() { FlameGraph(pyroscope.FromProto(decoded.Flamegraph).Tree(), profileType) })
	decodeAllocs := testing.AllocsPerRun(5, func() { decode() })

	var decodeTime, frameTime time.Duration
	for b.Loop() {
		t0 := time.Now()
		res := decode()
		t1 := time.Now()
		f := FlameGraph(pyroscope.FromProto(res.Flamegraph).Tree(), profileType)
		frameTime += time.Since(t1)
		decodeTime += t1.Sub(t0)
		if f.Rows() != nodes {
			b.Fatalf("rows = %d", f.Rows())
		}
	}
	per := float64(b.N * nodes)
	b.ReportMetric(float64(frameTime.Nanoseconds())/per, "frame-ns/node")
	b.ReportMetric(float64(decodeTime.Nanoseconds())/per, "decode-ns/node")
	b.ReportMetric(float64(frameTime)/float64(decodeTime), "frame/decode")
	b.ReportMetric(allocs/nodes, "frame-allocs/node")
	b.ReportMetric(decodeAllocs/nodes, "decode-allocs/node")
}
