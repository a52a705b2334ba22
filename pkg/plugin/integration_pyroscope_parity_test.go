//go:build integration

package plugin

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// Grafana's Pyroscope query fields against the test bed's Pyroscope 1.12, which has no
// SelectHeatmap, sends no exemplars and drops profile_id_selector and stack_trace_selector from
// SelectMergeStacktraces (nodes and cpuType are in integration_profile_test.go).

func TestRealGrafanaExploreQueryOnPyroscope112ShowsSeriesAndSaysWhatIsMissing(t *testing.T) {
	model := strings.Replace(exploreQuery, `{service_name=\"x\"}`, `{service_name=\"nemotron-backend\"}`, 1)
	r := runParity(t, bedDatasource(t), query("A", model))
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if len(r.Frames) < 2 || r.Frames[0].Name != "response" || r.Frames[1].Name != "series" {
		t.Fatalf("frames %s, want the flame graph and the series", parityFrames(r.Frames))
	}
	if total := r.Frames[0].Fields[1].At(0).(int64); total <= 0 {
		t.Errorf("flame graph total %d: the demo pushes profiles", total)
	}
	for _, f := range r.Frames[1:] {
		if f.Name != "series" && f.Name != "annotations" {
			t.Errorf("frame %q: neither series nor annotations", f.Name)
		}
	}
	n := strings.Join(allNotices(r.Frames), "\n")
	for _, want := range []string{
		"[warning] heatmap (includeHeatmap) needs Pyroscope 1.19 or newer (SelectHeatmap); this server does not have it: series shown",
		"[info] exemplars (includeExemplars) need Pyroscope 1.17 or newer",
	} {
		if !strings.Contains(n, want) {
			t.Errorf("notices\n%s\nlack %q", n, want)
		}
	}
	if strings.Contains(n, "Query:") {
		t.Errorf("a field of Grafana's query was reported unknown:\n%s", n)
	}
}

func TestRealProfileIDSelectorOnPyroscope112FailsRatherThanShowEveryProfile(t *testing.T) {
	r := runParity(t, bedDatasource(t), query("A", `{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}","profileTypeId":"`+cpuType+`","profileIdSelector":["7c9e6679-7425-40de-944b-e07fc1f90ae7"]}`))
	wantError(t, r, backend.ErrorSourceDownstream,
		"this Pyroscope ignores profileIdSelector and would answer every profile: individual profiles (from exemplars) need Pyroscope 1.17 or newer")
}

func TestRealStackTraceSelectorCutsTheFlameGraphOnPyroscope112(t *testing.T) {
	ds := bedDatasource(t)
	// A settled window: what Pyroscope holds for it no longer grows between the two queries.
	end := time.Now().Add(-time.Minute)
	ask := func(callSite []string) backend.DataResponse {
		sel, _ := json.Marshal(callSite)
		q := query("A", `{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}","profileTypeId":"`+cpuType+`","stackTraceSelector":`+string(sel)+`}`)
		q.TimeRange = backend.TimeRange{From: end.Add(-10 * time.Minute), To: end}
		return runParity(t, ds, q)
	}
	whole := ask(nil)
	if whole.Error != nil {
		t.Fatal(whole.Error)
	}
	all := nodes(whole.Frames[0])
	// The call site: the demo's HTTP server root frame and its largest callee.
	const root = "net/http.(*conn).serve"
	callSite := []string{root}
	var best int64
	for i, n := range all {
		if n.level == 1 && n.name == root {
			for _, c := range all[i+1:] {
				if c.level <= 1 {
					break
				}
				if c.level == 2 && c.value > best {
					callSite, best = []string{root, c.name}, c.value
				}
			}
		}
	}
	if best == 0 {
		t.Fatalf("the demo's CPU profile has no %s root frame with callees; its root frames are %v", root, levelNames(all, 1))
	}

	cut := ask(callSite)
	if cut.Error != nil {
		t.Fatal(cut.Error)
	}
	rows := nodes(cut.Frames[0])
	if rows[0].value <= 0 || rows[0].value >= all[0].value {
		t.Errorf("cut total %d, unfiltered %d: want a smaller, non-empty graph", rows[0].value, all[0].value)
	}
	// Every stack starts with the call site: one node on each of its levels, named after it.
	for depth, name := range callSite {
		if got := levelNames(rows, int64(depth+1)); len(got) != 1 || got[0] != name {
			t.Errorf("level %d holds %v, want only %s", depth+1, got, name)
		}
	}
	if n := allNotices(cut.Frames); len(n) != 1 || !strings.Contains(n[0], "flame graph cut to the call site "+strings.Join(callSite, " → ")) {
		t.Errorf("notices %q", n)
	}
}

func levelNames(rows []node, level int64) []string {
	var out []string
	for _, n := range rows {
		if n.level == level {
			out = append(out, n.name)
		}
	}
	return out
}
