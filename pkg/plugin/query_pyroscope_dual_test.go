package plugin

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope/pyroscopetest"
)

// Pyroscope 2.x in its default v1-v2-dual mode, with no Jaeger: the fake answers as 2.x's source
// does (pyroscopetest: the router's split, the legacy frontend's refusal of trace_id_selector
// and of SelectHeatmap).

const dualTrace = "4bf92f3577b34da6a3ce929d0e0e4736"

// dualBed holds one request's samples on both sides of the split, 5 minutes before at: written
// by otel-profiling-go after it (the trace ID a per-sample column, no label, as 2.x keeps it), and
// by an older SDK before it (trace_id a series label), plus another request's after it.
func dualBed(t *testing.T) (*Datasource, time.Time) {
	t.Helper()
	at := time.Now().Add(-10 * time.Minute)
	srv := &pyroscopetest.Server{Version: pyroscopetest.V2, V1Until: at.Add(-5 * time.Minute)}
	srv.Add(
		pyroscopetest.Sample{Series: map[string]string{"service_name": "api"}, TraceID: dualTrace, Time: at, Stack: "main.handle;main.dbQuery", Value: 300},
		pyroscopetest.Sample{Series: map[string]string{"service_name": "api"}, TraceID: "0af7651916cd43dd8448eb211c80319c", Time: at, Stack: "main.handle;main.serialize", Value: 20},
		pyroscopetest.Sample{Series: map[string]string{"service_name": "legacy", "trace_id": dualTrace}, Time: at.Add(-8 * time.Minute), Stack: "legacy.work", Value: 7},
	)
	return newTestDatasource(t, map[string]any{"pyroscopeUrl": pyroscopetest.Serve(t, srv)}, nil), at
}

func TestDualModeWithoutJaegerMatchesTheRequestBySelectorAfterTheSplitAndByLabelBefore(t *testing.T) {
	ds, at := dualBed(t)
	res := runParity(t, ds, backend.DataQuery{RefID: "A", QueryType: "profile",
		TimeRange: backend.TimeRange{From: at.Add(-15 * time.Minute), To: at.Add(time.Minute)},
		JSON:      []byte(fmt.Sprintf(`{"labelSelector":"{}","traceId":%q,"perService":true}`, dualTrace))})
	if res.Error != nil {
		t.Fatalf("error: %v", res.Error)
	}
	if got := selfByName(res.Frames[0]); got["main.dbQuery"] != 300 || got["legacy.work"] != 7 || got["main.serialize"] != 0 {
		t.Errorf("self by function %v", got)
	}
	notices := strings.Join(allNotices(res.Frames), "\n")
	for _, want := range []string{
		"by trace_id_selector over ", " UTC (this Pyroscope, 2.x in v1-v2 dual mode, serves it only over its v2 storage) and by the trace_id label before that, over ",
		"perService: no per-service flame graphs, because without the trace's spans the services are not known",
	} {
		if !strings.Contains(notices, want) {
			t.Errorf("notices lack %q:\n%s", want, notices)
		}
	}
	if len(res.Frames) != 1 {
		t.Errorf("%d frames", len(res.Frames))
	}
	t.Log(notices)
}

func TestDualModeHeatmapOverV1DataSaysSoAndShowsSeries(t *testing.T) {
	ds, at := dualBed(t)
	res := runParity(t, ds, backend.DataQuery{RefID: "A", QueryType: "metrics", Interval: time.Minute,
		TimeRange: backend.TimeRange{From: at.Add(-15 * time.Minute), To: at.Add(time.Minute)},
		JSON:      []byte(`{"labelSelector":"{}","includeHeatmap":true}`)})
	if res.Error != nil {
		t.Fatalf("error: %v", res.Error)
	}
	notices := strings.Join(allNotices(res.Frames), "\n")
	if !strings.Contains(notices, "serves SelectHeatmap only over its v2 storage, and this time range reaches back into its v1 storage: series shown") || strings.Contains(notices, "needs Pyroscope") {
		t.Errorf("notices:\n%s", notices)
	}
}

func TestFrameFilterOnPyroscope112FlameGraphIsFilteredSeriesAreNotAndNoticesSaySo(t *testing.T) {
	_, ds, at := parityBed(t, pyroscopetest.V112)
	res := runParity(t, ds, backend.DataQuery{RefID: "A", QueryType: "both", Interval: time.Minute,
		TimeRange: backend.TimeRange{From: at.Add(-5 * time.Minute), To: at.Add(5 * time.Minute)},
		JSON:      []byte(`{"labelSelector":"{service_name=\"x\"}","frameFilter":{"excludeFunctionNames":["main.serialize"],"includeFunctionNameRegexes":["^main\\."]}}`)})
	if res.Error != nil {
		t.Fatalf("error: %v", res.Error)
	}
	var flame = res.Frames[len(res.Frames)-1]
	for _, f := range res.Frames {
		if f.Name == "response" {
			flame = f
		}
	}
	if got := selfByName(flame); got["main.dbQuery"] != 2e9 || got["main.serialize"] != 0 || got["runtime.gcBgMarkWorker"] != 0 {
		t.Errorf("self by function %v", got)
	}
	notices := strings.Join(allNotices(res.Frames), "\n")
	for _, want := range []string{"[info] this Pyroscope ignores frameFilter", "[warning] frameFilter was not applied to the series"} {
		if !strings.Contains(notices, want) {
			t.Errorf("notices lack %q:\n%s", want, notices)
		}
	}

	bad := runParity(t, ds, backend.DataQuery{RefID: "B", QueryType: "profile", TimeRange: backend.TimeRange{From: at.Add(-time.Minute), To: at},
		JSON: []byte(`{"frameFilter":{"excludeFunctionNameRegexes":["("]}}`)})
	if bad.Error == nil || !strings.Contains(bad.Error.Error(), `field "frameFilter.excludeFunctionNameRegexes" item 1 is not a regular expression`) {
		t.Errorf("bad regex: %v", bad.Error)
	}
}

// selfByName sums each function's self value in a flame graph frame (level, value, self, label).
func selfByName(f *data.Frame) map[string]int64 {
	out := map[string]int64{}
	names := f.Fields[3].Config.TypeConfig.Enum.Text
	for i := range f.Rows() {
		out[names[f.Fields[3].At(i).(data.EnumItemIndex)]] += f.Fields[2].At(i).(int64)
	}
	return out
}
