package correlate

import (
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

func TestAttributeKernels(t *testing.T) {
	const trace = "4bf92f3577b34da6a3ce929d0e0e4736"
	rows := func() []SpanRow {
		return []SpanRow{
			{Span: &models.Span{SpanID: "00f067aa0ba902b7"}, Depth: 0},
			{Span: &models.Span{SpanID: "b7ad6b7169203331"}, Depth: 1},
			{Span: &models.Span{SpanID: "c7ad6b7169203332"}, Depth: 1},
		}
	}
	res := &gputrace.Result{
		Annotations: []gputrace.AnnotationKernels{
			{Name: "forward span=b7ad6b7169203331 trace=" + trace, TraceID: trace, Kernels: 2, KernelTime: 4000},
			{Name: "request " + trace, TraceID: trace, Kernels: 1, KernelTime: 1000},
			{Name: "other", TraceID: strings.Repeat("a", 32), Kernels: 1, KernelTime: 9},
		},
		ByTraceID: []gputrace.TraceKernelTime{{TraceID: trace, Kernels: 3, KernelTime: 5000}, {TraceID: strings.Repeat("a", 32), Kernels: 1, KernelTime: 9}},
	}
	r := rows()
	n := AttributeKernels(r, trace, []*gputrace.Result{res})
	if r[1].GPUKernelTime == nil || *r[1].GPUKernelTime != 4000 || r[0].GPUKernelTime == nil || *r[0].GPUKernelTime != 1000 || r[2].GPUKernelTime != nil {
		t.Fatalf("rows %+v %+v %+v", r[0].GPUKernelTime, r[1].GPUKernelTime, r[2].GPUKernelTime)
	}
	if !strings.Contains(n, "root span 00f067aa0ba902b7") {
		t.Errorf("notice %q", n)
	}
	// The 16-digit form of the trace ID matches too.
	r = rows()
	if AttributeKernels(r, trace[16:], []*gputrace.Result{res}); r[1].GPUKernelTime == nil {
		t.Error("16-digit trace ID not matched")
	}
	// A file named for the request holds only its kernels: all of them count, the unannotated
	// ones on the root span.
	named := &gputrace.Result{
		TraceIDs:  []activity.TraceID{{ID: trace, Source: activity.SourceFileName}},
		Kernels:   []gputrace.KernelSummary{{Name: "gemm", Total: 20000}, {Name: "softmax", Total: 500}},
		ByTraceID: []gputrace.TraceKernelTime{{TraceID: trace, Kernels: 1, KernelTime: 500}},
		Annotations: []gputrace.AnnotationKernels{
			{Name: "softmax span=c7ad6b7169203332", TraceID: trace, Kernels: 1, KernelTime: 500},
		},
	}
	r = rows()
	AttributeKernels(r, trace, []*gputrace.Result{named})
	if r[0].GPUKernelTime == nil || *r[0].GPUKernelTime != 20000 || r[2].GPUKernelTime == nil || *r[2].GPUKernelTime != 500 {
		t.Errorf("file named for the request: root %v, span %v", r[0].GPUKernelTime, r[2].GPUKernelTime)
	}
	// No trace of this request: nothing is set, no notice.
	r = rows()
	if n := AttributeKernels(r, strings.Repeat("b", 32), []*gputrace.Result{res, nil}); n != "" || r[0].GPUKernelTime != nil {
		t.Errorf("unrelated trace: %q %v", n, r[0].GPUKernelTime)
	}
}
