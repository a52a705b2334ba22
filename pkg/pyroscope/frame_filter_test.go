package pyroscope

import (
	"slices"
	"strings"
	"testing"
	"time"

	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope/pyroscopetest"
)

// The bytes Grafana's Pyroscope data source writes for a frame filter (addFrameFilter in its
// frame_filter.go, and the TS encodeFrameFilter of the Pyroscope app): field 3 of the selector,
// holding fields 1 to 4 in the order include names, exclude names, include regexes, exclude
// regexes.
func grafanasFrameFilterBytes(f models.FrameFilter) []byte {
	var inner []byte
	for field, names := range [][]string{f.IncludeFunctionNames, f.ExcludeFunctionNames, f.IncludeFunctionNameRegexes, f.ExcludeFunctionNameRegexes} {
		for _, n := range names {
			inner = protowire.AppendTag(inner, protowire.Number(field+1), protowire.BytesType)
			inner = protowire.AppendString(inner, n)
		}
	}
	out := protowire.AppendTag(nil, 3, protowire.BytesType)
	return protowire.AppendBytes(out, inner)
}

var demoFilter = models.FrameFilter{
	IncludeFunctionNames:       []string{"main.work"},
	ExcludeFunctionNames:       []string{"main.idle"},
	IncludeFunctionNameRegexes: []string{`^main\.`},
	ExcludeFunctionNameRegexes: []string{"sleep$"},
}

func TestFrameFilterIsEncodedAsGrafanaEncodesIt(t *testing.T) {
	sel := stackTraceSelector(nil, demoFilter)
	got, err := proto.Marshal(sel)
	if err != nil {
		t.Fatal(err)
	}
	if want := grafanasFrameFilterBytes(demoFilter); !slices.Equal(got, want) {
		t.Errorf("selector bytes\n got %x\nwant %x", got, want)
	}

	// With a call site: field 1 first, the filter after it, in one request that survives the
	// round trip (what a newer server decodes).
	req := &querierv1.SelectMergeStacktracesRequest{StackTraceSelector: stackTraceSelector([]string{"main", "handle"}, demoFilter)}
	b, err := proto.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	var back querierv1.SelectMergeStacktracesRequest
	if err := proto.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if cs := back.GetStackTraceSelector().GetCallSite(); len(cs) != 2 || cs[1].GetName() != "handle" {
		t.Errorf("call site lost: %v", cs)
	}
	names, ok := pyroscopetest.FrameFilterOf(back.GetStackTraceSelector())
	if !ok || !slices.Equal(names[0], demoFilter.IncludeFunctionNames) || !slices.Equal(names[3], demoFilter.ExcludeFunctionNameRegexes) {
		t.Errorf("decoded %v, %v", names, ok)
	}

	if stackTraceSelector(nil, models.FrameFilter{}) != nil {
		t.Error("an empty filter set the selector")
	}
}

func TestFilterStacksJudgesWholeStacksAsPyroscope(t *testing.T) {
	// Pyroscope's own cases (pkg/phlaredb/symdb/frame_filter_test.go), on the same five stacks.
	tree := pyroscopetest.FlameGraph("root;a 1", "root;a;b 1", "root;b 1", "root;forbidden 1", "root;a;forbidden 1")
	for _, tc := range []struct {
		name string
		f    models.FrameFilter
		want int64
	}{
		{"include", models.FrameFilter{IncludeFunctionNames: []string{"a"}}, 3},
		{"all included", models.FrameFilter{IncludeFunctionNames: []string{"a", "b"}}, 1},
		{"exclude", models.FrameFilter{ExcludeFunctionNames: []string{"forbidden"}}, 3},
		{"include and exclude", models.FrameFilter{IncludeFunctionNames: []string{"a"}, ExcludeFunctionNames: []string{"forbidden"}}, 2},
		{"missing include", models.FrameFilter{IncludeFunctionNames: []string{"missing"}}, 0},
		{"regex include", models.FrameFilter{IncludeFunctionNameRegexes: []string{"^a$"}}, 3},
		{"regex exclude substring", models.FrameFilter{ExcludeFunctionNameRegexes: []string{"forbid"}}, 3},
		{"all regex includes", models.FrameFilter{IncludeFunctionNameRegexes: []string{"^a$", "^b$"}}, 1},
		{"exact and regex include", models.FrameFilter{IncludeFunctionNames: []string{"a"}, IncludeFunctionNameRegexes: []string{"^b$"}}, 1},
		{"same frame satisfies both", models.FrameFilter{IncludeFunctionNames: []string{"a"}, IncludeFunctionNameRegexes: []string{"^a$"}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, removed, _ := filterStacks(FromProto(tree).Tree(), tc.f)
			if kept.Total != tc.want || removed != 5-tc.want {
				t.Errorf("kept %d removed %d, want %d and %d", kept.Total, removed, tc.want, 5-tc.want)
			}
		})
	}
}

func TestFilterStacksKeepsWhatPyroscopeMergedIntoOtherUnlessAFrameExcludesIt(t *testing.T) {
	tree := FromProto(pyroscopetest.FlameGraph("main;other 5", "main;work 3", "idle;other 2")).Tree()
	kept, removed, unsure := filterStacks(tree, models.FrameFilter{IncludeFunctionNames: []string{"work"}, ExcludeFunctionNames: []string{"idle"}})
	if kept.Total != 8 || removed != 2 || unsure != 5 {
		t.Errorf("kept %d removed %d unsure %d", kept.Total, removed, unsure)
	}
}

func frameFilterSamples(srv *pyroscopetest.Server, at time.Time) {
	svc := map[string]string{"service_name": "api"}
	srv.Add(
		pyroscopetest.Sample{Series: svc, Time: at, Stack: "main.handle;main.work", Value: 30},
		pyroscopetest.Sample{Series: svc, Time: at, Stack: "main.handle;time.sleep", Value: 50},
		pyroscopetest.Sample{Series: svc, Time: at, Stack: "runtime.gcBgMarkWorker", Value: 20},
	)
}

func frameFilterQuery(at time.Time, f models.FrameFilter) models.FlameGraphQuery {
	return models.FlameGraphQuery{ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="api"}`,
		Start: at.Add(-time.Minute), End: at.Add(time.Minute), MaxNodes: 100, FrameFilter: f}
}

var dropSleep = models.FrameFilter{ExcludeFunctionNameRegexes: []string{"sleep$"}, IncludeFunctionNameRegexes: []string{`^main\.`}}

func TestFrameFilterOnPyroscope112IsAppliedToTheFlameGraphAndTheNoticeSaysTheServerIgnoredIt(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V112}
	at := time.Now().Add(-5 * time.Minute)
	frameFilterSamples(srv, at)
	c := newTraceClient(t, srv)
	tree, err := c.MergedFlameGraph(t.Context(), frameFilterQuery(at, dropSleep))
	if err != nil {
		t.Fatal(err)
	}
	if tree.Total != 30 || hasName(tree, "time.sleep") || hasName(tree, "runtime.gcBgMarkWorker") {
		t.Errorf("tree total %d, sleep %v", tree.Total, hasName(tree, "time.sleep"))
	}
	if _, ok := pyroscopetest.FrameFilterOf(srv.Calls()[0].StackTraceSelector); !ok {
		t.Error("the filter was not sent")
	}
	if c.FrameFilterSupport() != SelectorIgnored {
		t.Errorf("verdict %v", c.FrameFilterSupport())
	}
	text, warn := c.FrameFilterNotice(dropSleep, false)
	if warn || !strings.Contains(text, "this Pyroscope ignores frameFilter") || !strings.Contains(text, "the plugin applied it to the flame graph itself") {
		t.Errorf("notice %q (warning %v)", text, warn)
	}

	// Series cannot be filtered here: the probe (an exclude-everything flame graph) comes back
	// full, and the notice warns.
	c2 := newTraceClient(t, srv)
	series, err := c2.Series(t.Context(), models.SeriesQuery{ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="api"}`,
		Start: at.Add(-time.Minute), End: at.Add(time.Minute), Step: time.Minute, FrameFilter: dropSleep})
	if err != nil || len(series) != 1 {
		t.Fatalf("%v, %v", series, err)
	}
	text, warn = c2.FrameFilterNotice(dropSleep, true)
	if !warn || !strings.Contains(text, "frameFilter was not applied to the series") {
		t.Errorf("series notice %q (warning %v)", text, warn)
	}
}

func TestFrameFilterOnAServerThatAppliesItNeedsNoNotice(t *testing.T) {
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2, FrameFilter: true}
	at := time.Now().Add(-5 * time.Minute)
	frameFilterSamples(srv, at)
	c := newTraceClient(t, srv)
	tree, err := c.MergedFlameGraph(t.Context(), frameFilterQuery(at, dropSleep))
	if err != nil || tree.Total != 30 {
		t.Fatalf("%v, %v", tree, err)
	}
	series, err := c.Series(t.Context(), models.SeriesQuery{ProfileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", LabelSelector: `{service_name="api"}`,
		Start: at.Add(-time.Minute), End: at.Add(time.Minute), Step: time.Minute, FrameFilter: dropSleep})
	if err != nil || len(series) != 1 || series[0].Points[0].Value != 30 {
		t.Fatalf("%v, %v", series, err)
	}
	if c.FrameFilterSupport() != SelectorHonoured {
		t.Errorf("verdict %v", c.FrameFilterSupport())
	}
	for _, series := range []bool{false, true} {
		if text, _ := c.FrameFilterNotice(dropSleep, series); text != "" {
			t.Errorf("notice %q", text)
		}
	}
}

func hasName(n *flamegraph.Node, name string) bool {
	found := false
	n.Walk(func(_ int, c *flamegraph.Node) { found = found || c.Name == name })
	return found
}
