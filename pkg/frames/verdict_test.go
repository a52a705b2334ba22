package frames

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
)

func TestTraceVerdictFrame(t *testing.T) {
	causes := []diagnose.Cause{
		{Kind: diagnose.CauseQueue, Title: "queued in vllm (llm_request)", Service: "vllm", SpanID: "00f067aa0ba902b7", Explains: 600 * time.Millisecond, Share: 0.6,
			Evidence: []string{"vllm waited 600ms in the engine's queue (span attribute gen_ai.latency.time_in_queue)"}, Action: "add replicas"},
		{Kind: diagnose.CauseUnexplained, Title: "unexplained in api (POST /v1/completions)", Service: "api", SpanID: "b7ad6b7169203331", Explains: 150 * time.Millisecond, Share: 0.15,
			Evidence: []string{"150ms of api's time", "on the critical path"}, Caveat: "add span profiles to api"},
	}
	lever := &correlate.Lever{Service: "api", Name: "host-side work", Action: "fix the host side",
		Answers: []string{"GPU idle: compute 12% (DCGM_FI_PROF_SM_ACTIVE)", "p99 1.2s over the 500ms threshold"},
		Unknown: []string{"queue low or high: no engine"}}
	f := TraceVerdict("4bf92f3577b34da6a3ce929d0e0e4736", causes, lever, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", TraceLinks{TraceDatasourceUID: "jaeger-uid"})
	checkGolden(t, "trace_verdict", f)
	if f.Rows() != 3 || f.Fields[0].At(1) != int64(2) || f.Fields[4].At(1) != "150ms of api's time; on the critical path" {
		t.Errorf("rows: %v %v", f.Fields[0].At(1), f.Fields[4].At(1))
	}
	// The lever explains no time of its own: its time and share are null, not 0.
	explains, _ := f.FieldByName("explains")
	if v, ok := explains.ConcreteAt(2); ok || f.Fields[7].At(2) != LeverKind || f.Fields[6].At(2) != "unknown: queue low or high: no engine" {
		t.Errorf("lever row: explains %v, kind %v, caveat %v", v, f.Fields[7].At(2), f.Fields[6].At(2))
	}
	if f := TraceVerdict("4bf92f3577b34da6a3ce929d0e0e4736", causes, nil, "", TraceLinks{}); f.Rows() != 2 {
		t.Errorf("without a lever: %d rows", f.Rows())
	}
	// The answer in one line, on the first cause's row only, hidden in the table.
	answer, _ := f.FieldByName("answer")
	want := "1 s request: queued in vllm (llm_request), 600 ms (60%) — add replicas"
	if v, ok := answer.ConcreteAt(0); !ok || v != want || answer.Config.Custom["hidden"] != true {
		t.Errorf("answer %q, want %q (config %+v)", v, want, answer.Config)
	}
	for i := 1; i < f.Rows(); i++ {
		if v, ok := answer.ConcreteAt(i); ok {
			t.Errorf("row %d has an answer: %q", i, v)
		}
	}
	if f := TraceVerdict("4bf92f3577b34da6a3ce929d0e0e4736", nil, lever, "", TraceLinks{}); f.Rows() != 1 {
		t.Errorf("lever alone: %d rows", f.Rows())
	} else if a, _ := f.FieldByName("answer"); a.At(0).(*string) != nil {
		t.Errorf("lever alone: answer %q", *a.At(0).(*string))
	}
	span, _ := f.FieldByName("spanID")
	raw, _ := json.Marshal(span.Config.Links)
	if !strings.Contains(string(raw), `"datasourceUid":"jaeger-uid"`) || !strings.Contains(string(raw), "${__data.fields.traceID}") {
		t.Errorf("span links %s", raw)
	}
}

// Each cause links to what shows its evidence, as an Explore or dashboard URL Grafana opens.
func TestTraceVerdictLinksEachCauseToItsEvidence(t *testing.T) {
	start := time.UnixMilli(1795476255000)
	end := start.Add(300 * time.Millisecond)
	causes := []diagnose.Cause{
		{Kind: diagnose.CauseCPU, Service: `nemotron-"backend"`, SpanID: "b000000000000002", ProfileID: "b000000000000001", Start: start, End: end},
		{Kind: diagnose.CauseWaiting, Service: "ai-detector", SpanID: "d000000000000001", Host: "gpu-node-1", GPU: "0", Start: start, End: end},
		{Kind: diagnose.CauseQueue, Service: "nemotron-llm", SpanID: "c000000000000001", Start: start, End: end},
		{Kind: diagnose.CauseHostWork, Service: "embedder", SpanID: "e000000000000002", ProfileID: "e000000000000001", Start: start, End: end},
	}
	lever := &correlate.Lever{Service: "nemotron-backend", Name: "headroom", Start: start.Add(-time.Hour), End: start}
	links := TraceLinks{TraceDatasourceUID: "jaeger-uid", DatasourceUID: "hsi-uid", GPUDashboardUID: "hsi-gpu"}
	f := TraceVerdict("4bf92f3577b34da6a3ce929d0e0e4736", causes, lever, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", links)
	link, _ := f.FieldByName("link")
	cause, _ := f.FieldByName("cause")
	if len(cause.Config.Links) != 1 || cause.Config.Links[0].URL != "${__data.fields.link}" || link.Config.Custom["hidden"] != true {
		t.Fatalf("cause links %+v, link field %+v", cause.Config.Links, link.Config)
	}
	pane := func(row int) map[string]any {
		u, err := url.Parse(link.At(row).(string))
		if err != nil || u.Path != "/explore" || u.Query().Get("schemaVersion") != "1" {
			t.Fatalf("row %d: %q (%v)", row, link.At(row), err)
		}
		var panes map[string]map[string]any
		if err := json.Unmarshal([]byte(u.Query().Get("panes")), &panes); err != nil || len(panes) != 1 {
			t.Fatalf("row %d: panes %q: %v", row, u.Query().Get("panes"), err)
		}
		return panes["evidence"]
	}
	// CPU: the span profile of the service's profiled span, in this data source, around the span.
	cpu := pane(0)
	q := cpu["queries"].([]any)[0].(map[string]any)
	if cpu["datasource"] != "hsi-uid" || q["queryType"] != "profile" || q["labelSelector"] != `{service_name="nemotron-\"backend\""}` ||
		q["spanSelector"].([]any)[0] != "b000000000000001" || q["profileTypeId"] != "process_cpu:cpu:nanoseconds:cpu:nanoseconds" ||
		cpu["range"].(map[string]any)["from"] != "1795476254000" || cpu["range"].(map[string]any)["to"] != "1795476256300" {
		t.Errorf("CPU pane %v", cpu)
	}
	// GPU: the GPU dashboard on that GPU, a minute around the span.
	if got := link.At(1); got != "/d/hsi-gpu?from=1795476225150&to=1795476285150&var-gpu=0&var-host=gpu-node-1" {
		t.Errorf("GPU link %q", got)
	}
	// Queue: the engine's span in the trace data source.
	q3 := pane(2)
	if q3["datasource"] != "jaeger-uid" || q3["queries"].([]any)[0].(map[string]any)["query"] != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		q3["panelsState"].(map[string]any)["trace"].(map[string]any)["spanId"] != "c000000000000001" {
		t.Errorf("queue pane %v", q3)
	}
	// Host work between kernels: the span profile showing that host's CPU.
	hw := pane(3)
	if q := hw["queries"].([]any)[0].(map[string]any); q["queryType"] != "profile" || q["spanSelector"].([]any)[0] != "e000000000000001" {
		t.Errorf("host work pane %v", hw)
	}
	// The lever: the GPU dashboard over the panel's range.
	if got := link.At(4); got != "/d/hsi-gpu?from=1795472655000&to=1795476255000" {
		t.Errorf("lever link %q", got)
	}
}

// A cause read from the request's kernel traces links to the kernels diff of the request against
// its service's recent requests when there are some; else to what it linked to before.
func TestTraceVerdictLinksKernelCausesToTheKernelsDiff(t *testing.T) {
	start := time.UnixMilli(1795476255000)
	end := start.Add(300 * time.Millisecond)
	causes := []diagnose.Cause{
		{Kind: diagnose.CauseGPUKernels, Service: "ai-detector", SpanID: "d000000000000001", Start: start, End: end, KernelDiff: true},
		{Kind: diagnose.CauseLaunch, Service: "ai-detector", SpanID: "d000000000000001", Start: start, End: end},
		{Kind: diagnose.CauseHostWork, Service: "embedder", SpanID: "e000000000000002", ProfileID: "e000000000000001", Start: start, End: end, KernelDiff: true},
	}
	links := TraceLinks{TraceDatasourceUID: "jaeger-uid", DatasourceUID: "hsi-uid", GPUDashboardUID: "hsi-gpu"}
	f := TraceVerdict("4bf92f3577b34da6a3ce929d0e0e4736", causes, nil, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", links)
	link, _ := f.FieldByName("link")
	query := func(row int) map[string]any {
		u, err := url.Parse(link.At(row).(string))
		if err != nil {
			t.Fatal(err)
		}
		var panes map[string]map[string]any
		if err := json.Unmarshal([]byte(u.Query().Get("panes")), &panes); err != nil {
			t.Fatalf("row %d: %q: %v", row, link.At(row), err)
		}
		return panes["evidence"]["queries"].([]any)[0].(map[string]any)
	}
	q := query(0)
	if q["queryType"] != "kernels" || q["view"] != "diff" || q["traceId"] != "4bf92f3577b34da6a3ce929d0e0e4736" ||
		q["baseline"].(map[string]any)["recent"] != 10.0 || q["datasource"].(map[string]any)["uid"] != "hsi-uid" {
		t.Errorf("kernels diff query %v", q)
	}
	// Without a baseline: the span in the trace, as before.
	if q := query(1); q["query"] != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("launch cause without a baseline: %v", q)
	}
	// Host work between kernels keeps its span profile: the host's CPU is its evidence.
	if q := query(2); q["queryType"] != "profile" {
		t.Errorf("host work: %v", q)
	}
	// Without this data source's UID there is no query to link to.
	f = TraceVerdict("4bf92f3577b34da6a3ce929d0e0e4736", causes[:1], nil, "", TraceLinks{TraceDatasourceUID: "jaeger-uid"})
	if l, _ := f.FieldByName("link"); !strings.Contains(l.At(0).(string), "jaeger-uid") {
		t.Errorf("no data source UID: %q", l.At(0))
	}
}

// The one-line answer reads as the verdict's headline: duration, cause, time and share, hot
// function, what to do (the caveat when there is no action).
func TestAnswerInOneLine(t *testing.T) {
	cpu := diagnose.Cause{Kind: diagnose.CauseCPU, Title: "CPU in nemotron-backend (db_query)", Explains: 850 * time.Millisecond,
		Share: 850.0 / 1103, HotFunction: "main.query", Action: "CPU work in the service: the hot function is where to start"}
	library := cpu
	library.HotFunction, library.OwnFunction = "crypto/internal/fips140/sha256.blockSHANI", "main.dbQuery"
	unexplained := diagnose.Cause{Kind: diagnose.CauseUnexplained, Title: "unexplained in api (POST /v1/completions)",
		Explains: 1500 * time.Microsecond, Share: 1.5 / 2e5, Caveat: "add span profiles to api"}
	for _, tc := range []struct {
		causes []diagnose.Cause
		want   string
	}{
		{[]diagnose.Cause{cpu, unexplained}, "1.1 s request: CPU in nemotron-backend (db_query), 850 ms (77.1%), hot function main.query — CPU work in the service: the hot function is where to start"},
		{[]diagnose.Cause{library}, "1.1 s request: CPU in nemotron-backend (db_query), 850 ms (77.1%), in main.dbQuery (hot function crypto/internal/fips140/sha256.blockSHANI) — CPU work in the service: the hot function is where to start"},
		{[]diagnose.Cause{unexplained}, "3.33 min request: unexplained in api (POST /v1/completions), 1.5 ms (0.00075%) — add span profiles to api"},
		{[]diagnose.Cause{{Title: "x", Explains: 999600 * time.Microsecond}}, "x, 1 s"},
		{nil, ""},
	} {
		if got := Answer(tc.causes); got != tc.want {
			t.Errorf("Answer:\n got %q\nwant %q", got, tc.want)
		}
	}
}
