//go:build integration

package protocol

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
)

// A panel of Grafana's Pyroscope data source, as its query editor saves it with every field of
// its query model (testdata/grafana-pyroscope-panel.json; the third query is what an exemplar's
// "View profile" link opens), pointed at this plugin and sent unchanged through the binary.
// Against the bed's Pyroscope 1.12 each query answers what the server can, and says what it
// cannot with the version that can; none warns about a field.
func TestBinaryAnswersAGrafanaPyroscopePanelUnchanged(t *testing.T) {
	raw, err := os.ReadFile("testdata/grafana-pyroscope-panel.json")
	if err != nil {
		t.Fatal(err)
	}
	var panel struct {
		Targets []map[string]any `json:"targets"`
	}
	if err := json.Unmarshal(raw, &panel); err != nil {
		t.Fatal(err)
	}
	h, _ := start(t, allUpstreams())
	now := time.Now()
	var queries []pluginhost.Query
	for _, target := range panel.Targets {
		queries = append(queries, pluginhost.Query{RefID: target["refId"].(string), JSON: target, From: now.Add(-15 * time.Minute), To: now, Interval: 15 * time.Second})
	}
	res, err := h.QueryData(ctx(t), queries...)
	if err != nil {
		t.Fatal(err)
	}
	answer := func(ref string) ([]*data.Frame, string) {
		t.Helper()
		r := res.Responses[ref]
		frames, err := data.UnmarshalArrowFrames(r.Frames)
		if err != nil {
			t.Fatal(err)
		}
		var said []string
		for _, f := range frames {
			if f.Meta != nil {
				for _, n := range f.Meta.Notices {
					said = append(said, n.Text)
				}
			}
		}
		return frames, strings.Join(append(said, r.Error), "\n")
	}

	// both, heatmap of spans with exemplars and annotations: Pyroscope 1.12 has no SelectHeatmap,
	// so the flame graph and the series stand with the notice naming the version that has it.
	frames, said := answer("A")
	kinds := map[string]int{}
	for _, f := range frames {
		kinds[f.Name]++
	}
	if res.Responses["A"].Error != "" || kinds["response"] != 1 || kinds["series"] == 0 {
		t.Errorf("A: frames %v, said %q: want the flame graph and the series", kinds, said)
	}
	for _, want := range []string{"needs Pyroscope 1.19 or newer (SelectHeatmap)", "exemplars (includeExemplars) need Pyroscope 1.17 or newer"} {
		if !strings.Contains(said, want) {
			t.Errorf("A: notices lack %q:\n%s", want, said)
		}
	}
	// metrics with exemplars: the series, and the same honest notice.
	frames, said = answer("B")
	if len(frames) == 0 || frames[0].Name != "series" || !strings.Contains(said, "need Pyroscope 1.17 or newer") {
		t.Errorf("B: %d frames, said %q", len(frames), said)
	}
	// profile of one individual profile: 1.12 would answer every profile, so it is refused.
	if _, said = answer("C"); !strings.Contains(said, "ignores profileIdSelector and would answer every profile") {
		t.Errorf("C: %q", said)
	}
	for _, ref := range []string{"A", "B", "C"} {
		if _, said := answer(ref); strings.Contains(said, "field") && strings.Contains(said, "ignored") {
			t.Errorf("%s warns about a field of Grafana's Pyroscope query model: %s", ref, said)
		}
	}
}
