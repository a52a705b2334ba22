package frames

import (
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
)

func TestTraceBreakdownFrame(t *testing.T) {
	parts := []diagnose.BreakdownPart{
		{Kind: diagnose.PartQueue, Service: "vllm", Duration: 600 * time.Millisecond, Source: "span attribute gen_ai.latency.time_in_queue"},
		{Kind: diagnose.PartCPU, Service: "nemotron-backend", Duration: 250 * time.Millisecond, Source: "span profiles (CPU)"},
		{Kind: diagnose.PartUnexplained, Service: "api", Duration: 150 * time.Millisecond, Source: "critical path"},
	}
	f := TraceBreakdown(parts, time.Second)
	checkGolden(t, "trace_breakdown", f)
	if f.Rows() != 3 || f.Fields[0].At(0) != "queued in vllm" || f.Fields[2].At(0) != 0.6 || f.Fields[1].At(2) != 150.0 {
		t.Errorf("rows: %v %v %v", f.Fields[0].At(0), f.Fields[2].At(0), f.Fields[1].At(2))
	}
	if empty := TraceBreakdown(nil, 0); empty.Rows() != 0 || len(empty.Fields) != 6 {
		t.Errorf("empty: %d rows, %d fields", empty.Rows(), len(empty.Fields))
	}
}
