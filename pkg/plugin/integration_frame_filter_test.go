//go:build integration

package plugin

import (
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
)

// frameFilter against the bed's real Pyroscope (1.12, which predates frame_filter and drops it
// unread): the request carrying it is accepted, the flame graph lacks the excluded function all
// the same (the plugin applies the filter to the answer), and the notices say the server ignored
// it, the series' as a warning since they count every stack. A bed whose Pyroscope applies it
// gets the same graph and no notice.
func TestRealPyroscopeFrameFilterIsAcceptedAndTheExcludedFunctionIsGone(t *testing.T) {
	ds := bedDatasource(t)
	const selector = `"labelSelector":"{service_name=\"nemotron-backend\"}","profileTypeId":"process_cpu:cpu:nanoseconds:cpu:nanoseconds"`
	res := run(t, ds,
		query("plain", `{"queryType":"profile",`+selector+`}`),
		query("filtered", `{"queryType":"both",`+selector+`,"frameFilter":{"excludeFunctionNames":["main.dbQuery"],"includeFunctionNameRegexes":["^main\\."]}}`),
	)
	plain, filtered := res.Responses["plain"], res.Responses["filtered"]
	if plain.Error != nil || filtered.Error != nil {
		t.Fatalf("errors: %v; %v", plain.Error, filtered.Error)
	}
	if !hasFunction(plain.Frames[0], "main.dbQuery") {
		t.Skip("the demo's backend has no main.dbQuery samples in this range yet")
	}
	var flameTotal int64 = -1
	for _, f := range filtered.Frames {
		if f.Name != "response" {
			continue
		}
		if hasFunction(f, "main.dbQuery") {
			t.Errorf("the filtered flame graph still holds main.dbQuery")
		}
		flameTotal = f.Fields[1].At(0).(int64)
	}
	if total := plain.Frames[0].Fields[1].At(0).(int64); flameTotal <= 0 || flameTotal >= total {
		t.Errorf("filtered total %d, unfiltered %d", flameTotal, total)
	}

	pyro := ds.profileClient(t)
	notices := strings.Join(allNotices(filtered.Frames), "\n")
	switch v := pyro.FrameFilterSupport(); v {
	case pyroscope.SelectorIgnored:
		for _, want := range []string{"[info] this Pyroscope ignores frameFilter (frame_filter", "the plugin applied it to the flame graph itself",
			"[warning] frameFilter was not applied to the series: this Pyroscope ignores frame_filter"} {
			if !strings.Contains(notices, want) {
				t.Errorf("notices lack %q:\n%s", want, notices)
			}
		}
	case pyroscope.SelectorHonoured:
		if strings.Contains(notices, "frameFilter") {
			t.Errorf("a server applying the filter got notices:\n%s", notices)
		}
	default:
		t.Errorf("no verdict on frame_filter after a filtered flame graph and series: %v\n%s", v, notices)
	}
	t.Logf("verdict %v; notices:\n%s", pyro.FrameFilterSupport(), notices)
}
