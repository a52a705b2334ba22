package diagnose

import (
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/tracetest"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Hand-built answers: the diagnosis is pure, so its tests build what the join would have found.

// The hand-made request and its profiles and GPU series, shared with pkg/correlate's tests.
var (
	t0            = tracetest.T0
	jspan         = tracetest.Span
	tree          = tracetest.Tree
	demoJoinTrace = tracetest.DemoTrace
	gpuSeries     = tracetest.GPUSeries
	tritonTrace   = tracetest.TritonTrace
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// answerOf joins tr with the CPU profiles and GPU series given, as correlate.JoinRequest does.
func answerOf(tr *models.Trace, cpu correlate.SpanProfiles, gpus []classify.GPUSeries) *correlate.TraceAnswer {
	rows := correlate.JoinTrace(correlate.TraceJoin{Trace: tr, CPU: cpu, GPUSeries: gpus, GPUStep: time.Second, GPUsKnown: gpus != nil,
		Classify: classify.NewWindows(gpus, classify.DefaultThresholds()).Dominant, Join: models.DefaultJoinSettings().SpanMatch})
	return &correlate.TraceAnswer{Trace: tr, Rows: rows}
}

// verdictOf diagnoses ans and returns its verdict.
func verdictOf(ans *correlate.TraceAnswer) []Cause { return Request(ans).Verdict }

func causeKinds(cs []Cause) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Kind+" "+c.Service)
	}
	return strings.Join(out, ", ")
}
