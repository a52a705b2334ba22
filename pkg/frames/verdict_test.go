package frames

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
)

func TestTraceVerdictFrame(t *testing.T) {
	causes := []correlate.Cause{
		{Kind: correlate.CauseQueue, Title: "queued in vllm (llm_request)", Service: "vllm", SpanID: "00f067aa0ba902b7", Explains: 600 * time.Millisecond, Share: 0.6,
			Evidence: []string{"vllm waited 600ms in the engine's queue (span attribute gen_ai.latency.time_in_queue)"}, Action: "add replicas"},
		{Kind: correlate.CauseUnexplained, Title: "unexplained in api (POST /v1/completions)", Service: "api", SpanID: "b7ad6b7169203331", Explains: 150 * time.Millisecond, Share: 0.15,
			Evidence: []string{"150ms of api's time", "on the critical path"}, Caveat: "add span profiles to api"},
	}
	lever := &correlate.Lever{Service: "api", Name: "host-side work", Action: "fix the host side",
		Answers: []string{"GPU idle: compute 12% (DCGM_FI_PROF_SM_ACTIVE)", "p99 1.2s over the 500ms threshold"},
		Unknown: []string{"queue low or high: no engine"}}
	f := TraceVerdict("4bf92f3577b34da6a3ce929d0e0e4736", causes, lever, TraceLinks{TraceDatasourceUID: "jaeger-uid"})
	checkGolden(t, "trace_verdict", f)
	if f.Rows() != 3 || f.Fields[0].At(1) != int64(2) || f.Fields[4].At(1) != "150ms of api's time; on the critical path" {
		t.Errorf("rows: %v %v", f.Fields[0].At(1), f.Fields[4].At(1))
	}
	// The lever explains no time of its own: its time and share are null, not 0.
	explains, _ := f.FieldByName("explains")
	if v, ok := explains.ConcreteAt(2); ok || f.Fields[7].At(2) != LeverKind || f.Fields[6].At(2) != "unknown: queue low or high: no engine" {
		t.Errorf("lever row: explains %v, kind %v, caveat %v", v, f.Fields[7].At(2), f.Fields[6].At(2))
	}
	if f := TraceVerdict("4bf92f3577b34da6a3ce929d0e0e4736", causes, nil, TraceLinks{}); f.Rows() != 2 {
		t.Errorf("without a lever: %d rows", f.Rows())
	}
	span, _ := f.FieldByName("spanID")
	raw, _ := json.Marshal(span.Config.Links)
	if !strings.Contains(string(raw), `"datasourceUid":"jaeger-uid"`) || !strings.Contains(string(raw), "${__data.fields.traceID}") {
		t.Errorf("span links %s", raw)
	}
}
