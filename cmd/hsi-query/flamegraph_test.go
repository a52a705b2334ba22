package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
)

// chain returns a node of total (no self time) calling through names down to its last one.
func chain(total int64, names ...string) (top, bottom *flamegraph.Node) {
	top = &flamegraph.Node{Name: names[0], Total: total}
	bottom = top
	for _, n := range names[1:] {
		c := &flamegraph.Node{Name: n, Total: total}
		bottom.Children = []*flamegraph.Node{c}
		bottom = c
	}
	return top, bottom
}

// backendCPU is nemotron-backend's CPU in a slow db_query request: the HTTP server's frames,
// then the handler spending most of it in main.dbQuery.
func backendCPU() *flamegraph.Node {
	top, handler := chain(300e6, "net/http.(*conn).serve", "net/http.serverHandler.ServeHTTP", "net/http.(*ServeMux).ServeHTTP",
		"net/http.HandlerFunc.ServeHTTP", "main.(*service).handleDetect")
	handler.Children = []*flamegraph.Node{
		{Name: "main.dbQuery", Total: 290e6, Self: 250e6, Children: []*flamegraph.Node{{Name: "crypto/sha256.Sum256", Total: 40e6, Self: 40e6}}},
		{Name: "main.serializeResponse", Total: 9e6, Self: 9e6},
		{Name: "runtime.tiny", Total: 1e6, Self: 1e6},
	}
	return &flamegraph.Node{Name: flamegraph.RootName, Total: 300e6, Children: []*flamegraph.Node{top}}
}

func TestFlameGraphsPrintTheWideNodesWithChainsFolded(t *testing.T) {
	f := roundTrip(t, frames.FlameGraphTree("nemotron-backend", backendCPU(), "process_cpu:cpu:nanoseconds:cpu:nanoseconds"))[0]
	var b bytes.Buffer
	printFlameGraph(&b, f, 25, 100)
	out := b.String()
	checkWidth(t, out, 100)
	for _, want := range []string{
		`flame graph "nemotron-backend": 300 ms in total`,
		"… 4 frames with the same time …", // total, then the server's frames down to the handler
		"main.(*service).handleDetect",
		"96.7%     290 ms",               // main.dbQuery in the tree
		"83.3%     250 ms  main.dbQuery", // and first by self time
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in\n%s", want, out)
		}
	}
	// Folded: the frames between the root and the handler; left out of the tree: under 2% of
	// the total.
	tree, _, _ := strings.Cut(out, "most self time:")
	for _, unwanted := range []string{"net/http.serverHandler.ServeHTTP", "runtime.tiny", "300000000"} {
		if strings.Contains(tree, unwanted) {
			t.Errorf("%q in\n%s", unwanted, out)
		}
	}
	if strings.Index(out, "main.dbQuery") > strings.Index(out, "main.serializeResponse") {
		t.Errorf("the widest callee comes first:\n%s", out)
	}
}

func TestAnEmptyFlameGraphSaysSo(t *testing.T) {
	f := roundTrip(t, frames.FlameGraph(nil, "process_cpu:cpu:nanoseconds:cpu:nanoseconds"))[0]
	var b bytes.Buffer
	printFlameGraph(&b, f, 25, 100)
	if !strings.Contains(b.String(), "no samples in this range") {
		t.Errorf("got %q", b.String())
	}
}
