package frames

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/realdata"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/tracestore"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

const timelineTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"

// base is a Kineto CUDA trace's time: epoch ns with all 19 digits in use.
const base = int64(1_763_900_000_001_000_123)

// handTimeline is a request's GPU work, by hand: the request's annotation on the main thread
// holds a launch (and the driver call it makes) and a copy; a second thread launches a kernel;
// on stream 7 the GPU annotation holds both kernels and the copy; a device-wide sync record has
// its call; 3 activities were left out by a cap of 9.
func handTimeline() *gputrace.Result {
	us := func(n int64) int64 { return base + n*1000 }
	acts := []activity.Activity{
		{Kind: activity.KindAnnotation, Name: "request " + timelineTraceID, Start: us(0), End: us(200), Process: 42, Thread: 42, TraceID: timelineTraceID},
		{Kind: activity.KindRuntime, Name: "cudaLaunchKernel", Start: us(10), End: us(15), Correlation: 11, Process: 42, Thread: 42},
		{Kind: activity.KindDriver, Name: "cuLaunchKernel", Start: us(11), End: us(14), Correlation: 12, Process: 42, Thread: 42},
		{Kind: activity.KindGPUAnnotation, Name: "request " + timelineTraceID, Start: us(20), End: us(120), Device: 0, Stream: 7},
		{Kind: activity.KindKernel, Name: "gemm", Start: us(20), End: us(50), Device: 0, Stream: 7, Correlation: 11, Grid: [3]int32{66, 1, 1}, Block: [3]int32{128, 1, 1}},
		{Kind: activity.KindRuntime, Name: "cudaLaunchKernel", Start: us(30), End: us(36), Correlation: 13, Process: 42, Thread: 43},
		{Kind: activity.KindRuntime, Name: "cudaMemcpyAsync", Start: us(52), End: us(60), Correlation: 14, Process: 42, Thread: 42},
		{Kind: activity.KindKernel, Name: "relu", Start: us(55), End: us(60), Device: 0, Stream: 7, Correlation: 13},
		{Kind: activity.KindMemcpy, Name: "Memcpy DtoH (Device -> Pinned)", Start: us(61), End: us(120), Device: 0, Stream: 7, Correlation: 14, Bytes: 1 << 20},
		{Kind: activity.KindRuntime, Name: "cudaDeviceSynchronize", Start: us(150), End: us(190), Correlation: 15, Process: 42, Thread: 42},
		{Kind: activity.KindSync, Name: "Context Sync", Start: us(151), End: us(189), Device: 0, Stream: -1, Correlation: 15},
	}
	return &gputrace.Result{Timeline: &gputrace.Timeline{Activities: acts, Cap: 11, Dropped: 3, Processes: map[int64]string{42: "python3.10"}}}
}

func TestKernelTimelineGolden(t *testing.T) {
	f := TimelineFrame(timelineTraceID, []TimelineFile{{Name: "infer/infer_" + timelineTraceID + ".pt.trace.json", Result: handTimeline()}})
	checkGolden(t, "kernel_timeline", f)
	spans := checkTraceFrame(t, f)
	byOp := map[string]traceSpan{}
	for _, s := range spans {
		byOp[s.Operation+"@"+s.Service] = s
	}
	parentOf := func(key string) string {
		s, ok := byOp[key]
		if !ok {
			t.Fatalf("no span %s among %v", key, spans)
		}
		for _, p := range spans {
			if p.SpanID == s.Parent {
				return p.Operation + "@" + p.Service
			}
		}
		return ""
	}
	main, other, stream, device := "python3.10 thread 42", "python3.10 thread 43", "GPU 0 stream 7", "GPU 0"
	for key, want := range map[string]string{
		"cudaLaunchKernel@" + main:                 "request " + timelineTraceID + "@" + main,
		"cuLaunchKernel@" + main:                   "cudaLaunchKernel@" + main,
		"cudaLaunchKernel@" + other:                other + "@" + other,
		"gemm@" + stream:                           "request " + timelineTraceID + "@" + stream,
		"Memcpy DtoH (Device -> Pinned)@" + stream: "request " + timelineTraceID + "@" + stream,
		"Context Sync@" + device:                   device + "@" + device,
		"cudaDeviceSynchronize@" + main:            "request " + timelineTraceID + "@" + main,
		main + "@" + main:                          "infer/infer_" + timelineTraceID + ".pt.trace.json@" + timelineRootService,
		"infer/infer_" + timelineTraceID + ".pt.trace.json@" + timelineRootService: "",
	} {
		if got := parentOf(key); got != want {
			t.Errorf("parent of %s: %q, want %q", key, got, want)
		}
	}
	for key, want := range map[string]string{"gemm@" + stream: "cudaLaunchKernel@" + main, "relu@" + stream: "cudaLaunchKernel@" + other,
		"Memcpy DtoH (Device -> Pinned)@" + stream: "cudaMemcpyAsync@" + main, "Context Sync@" + device: "cudaDeviceSynchronize@" + main} {
		s := byOp[key]
		if len(s.References) != 1 {
			t.Fatalf("%s references %v", key, s.References)
		}
		for _, l := range spans {
			if l.SpanID == s.References[0].SpanID && l.Operation+"@"+l.Service != want {
				t.Errorf("%s references %s, want %s", key, l.Operation+"@"+l.Service, want)
			}
		}
	}
	root := byOp["infer/infer_"+timelineTraceID+".pt.trace.json@"+timelineRootService]
	if len(root.Warnings) != 1 || !strings.Contains(root.Warnings[0], "3 activities left out") {
		t.Errorf("root warnings %q", root.Warnings)
	}
}

// traceSpan is one row of a trace frame, read the way Grafana's DataFrameView reads a
// TraceSpanRow.
type traceSpan struct {
	TraceID, SpanID, Parent, Operation, Service string
	Start, Duration                             float64
	Tags, ServiceTags                           map[string]any
	References                                  []struct{ TraceID, SpanID string }
	Warnings                                    []string
}

// checkTraceFrame checks what Grafana's trace view needs of a frame and returns its spans: the
// TraceSpanRow fields and the trace meta, unique span IDs, parents and references that exist,
// and a parent on every span that references another (Grafana takes a span's first reference
// for its parent when it has none).
func checkTraceFrame(t *testing.T, f *data.Frame) []traceSpan {
	t.Helper()
	if f.Meta == nil || f.Meta.PreferredVisualization != data.VisTypeTrace || f.Name != KernelTimelineFrameName {
		t.Fatalf("frame %q meta %+v", f.Name, f.Meta)
	}
	field := func(name string) *data.Field {
		fd, _ := f.FieldByName(name)
		if fd == nil {
			t.Fatalf("no field %s", name)
		}
		return fd
	}
	decode := func(fd *data.Field, i int, v any) {
		raw, ok := fd.ConcreteAt(i)
		if !ok {
			return
		}
		if err := json.Unmarshal(raw.(json.RawMessage), v); err != nil {
			t.Fatalf("%s[%d]: %v", fd.Name, i, err)
		}
	}
	n := f.Rows()
	spans := make([]traceSpan, n)
	ids := map[string]bool{}
	for i := range n {
		s := &spans[i]
		s.TraceID, s.SpanID = field("traceID").At(i).(string), field("spanID").At(i).(string)
		if p := field("parentSpanID").At(i).(*string); p != nil {
			s.Parent = *p
		}
		s.Operation, s.Service = field("operationName").At(i).(string), field("serviceName").At(i).(string)
		s.Start, s.Duration = field("startTime").At(i).(float64), field("duration").At(i).(float64)
		var tags, stags []tag
		decode(field("tags"), i, &tags)
		decode(field("serviceTags"), i, &stags)
		s.Tags, s.ServiceTags = map[string]any{}, map[string]any{}
		for _, tg := range tags {
			s.Tags[tg.Key] = tg.Value
		}
		for _, tg := range stags {
			s.ServiceTags[tg.Key] = tg.Value
		}
		decode(field("references"), i, &s.References)
		decode(field("warnings"), i, &s.Warnings)
		if ids[s.SpanID] || len(s.SpanID) != 16 {
			t.Fatalf("span ID %q repeated or not 16 hex digits", s.SpanID)
		}
		ids[s.SpanID] = true
		if s.Duration < 0 || s.Start == 0 || s.TraceID == "" {
			t.Fatalf("span %+v", s)
		}
	}
	for _, s := range spans {
		if s.Parent != "" && !ids[s.Parent] {
			t.Fatalf("span %s's parent %s is not in the frame", s.SpanID, s.Parent)
		}
		for _, r := range s.References {
			if !ids[r.SpanID] || r.TraceID != s.TraceID {
				t.Fatalf("span %s references %+v, not a span of the frame", s.SpanID, r)
			}
		}
		if len(s.References) > 0 && s.Parent == "" {
			t.Fatalf("span %s references another but has no parent: Grafana would nest it under the reference", s.SpanID)
		}
	}
	return spans
}

// activitySpans counts the spans of each category, and checks each GPU activity that has a
// launch call references a host call of its correlation.
func activitySpans(t *testing.T, spans []traceSpan, tl *gputrace.Timeline) map[string]int64 {
	t.Helper()
	byID := map[string]traceSpan{}
	for _, s := range spans {
		byID[s.SpanID] = s
	}
	n := map[string]int64{}
	tree := tl.Tree()
	i := 0
	for _, s := range spans {
		cat := s.Tags["category"].(string)
		n[cat]++
		switch cat {
		case categoryFile, categoryThread, categoryStream:
			continue
		}
		// Activities come in the timeline's order, after the file's and the services' spans.
		a := tl.Activities[i]
		if cat != categoryOf(a.Kind) || s.Operation != a.Name && a.Name != "" {
			t.Fatalf("span %d %+v is not activity %+v", i, s, a)
		}
		if math.Abs(s.Start*1e6-float64(a.Start+tl.Epoch)) > 256 || math.Abs(s.Duration*1e6-float64(a.End-a.Start)) > 1e-3 {
			t.Fatalf("span %+v times: activity %d..%d ns", s, a.Start, a.End)
		}
		if l := tree.Launch[i]; l >= 0 {
			if len(s.References) != 1 {
				t.Fatalf("%s %s has a launch call but references %v", cat, s.Operation, s.References)
			}
			call := byID[s.References[0].SpanID]
			if c := call.Tags["category"]; (c != "cuda_runtime" && c != "cuda_driver") || call.Tags["correlation"] != float64(a.Correlation) {
				t.Fatalf("%s %s references %+v", cat, s.Operation, call)
			}
		} else if len(s.References) != 0 {
			t.Fatalf("%s %s references %v without a launch call", cat, s.Operation, s.References)
		}
		i++
	}
	if i != len(tl.Activities) {
		t.Fatalf("%d activity spans for %d activities", i, len(tl.Activities))
	}
	return n
}

// A scenario's timeline as the trace frame: a span per kernel, copy and call kinetogen wrote,
// each kernel linked to its launch, times kept to a quarter microsecond at epoch scale.
func TestKernelTimelineOfScenarios(t *testing.T) {
	for _, m := range kinetogen.Mechanisms {
		t.Run(string(m), func(t *testing.T) {
			var buf bytes.Buffer
			truth, err := kinetogen.Write(&buf, kinetogen.Scenario{Mechanism: m, TraceID: timelineTraceID, Seed: 3, Duration: 4 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			c := gputrace.NewCollector(gputrace.Limits{Timeline: true})
			if err := kineto.Read(&buf, c); err != nil {
				t.Fatal(err)
			}
			r := c.Result(gputrace.AnalysisOptions{})
			f := TimelineFrame(timelineTraceID, []TimelineFile{{Name: string(m) + ".pt.trace.json", Result: r}})
			spans := checkTraceFrame(t, f)
			n := activitySpans(t, spans, r.Timeline)
			if n["kernel"] != truth.Kernels || n["gpu_memcpy"]+n["gpu_memset"] != truth.Transfers || n[categoryFile] != 1 ||
				n["user_annotation"] != 1 || n["gpu_user_annotation"] != 1 {
				t.Errorf("spans by category %v; truth %d kernels, %d transfers", n, truth.Kernels, truth.Transfers)
			}
			for _, s := range spans {
				if s.TraceID != timelineTraceID {
					t.Fatalf("trace ID %s", s.TraceID)
				}
			}
		})
	}
}

func realTimeline(t *testing.T, name string, l gputrace.Limits) *gputrace.Result {
	t.Helper()
	path := realdata.Path(t, name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l.Timeline = true
	r, err := tracestore.AnalyzeOpened(context.Background(), f, path, l, gputrace.AnalysisOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// ResNet-50 (Kineto, 2021): with a cap above its 21,019 activities, a span for each of its
// 8,772 kernels, 12 copies, 312 memsets and 11,923 runtime calls, every kernel linked to its
// launch; at the default cap, the first 10,000 and a warning on the root span and the frame.
func TestKernelTimelineOfResNet50(t *testing.T) {
	r := realTimeline(t, "resnet50_worker0.pt.trace.json.gz", gputrace.Limits{MaxTimelineActivities: 100_000})
	f := TimelineFrame("", []TimelineFile{{Name: "resnet50_worker0.pt.trace.json.gz", Result: r}})
	spans := checkTraceFrame(t, f)
	n := activitySpans(t, spans, r.Timeline)
	want := map[string]int64{"kernel": 8772, "gpu_memcpy": 12, "gpu_memset": 312, "cuda_runtime": 11_923, categoryFile: 1, categoryThread: 2, categoryStream: 1}
	for cat, w := range want {
		if n[cat] != w {
			t.Errorf("%d %s spans, want %d (all: %v)", n[cat], cat, w, n)
		}
	}
	var kernels, linked int64
	for _, s := range spans {
		if s.Tags["category"] == "kernel" {
			kernels++
			if len(s.References) == 1 {
				linked++
			}
		}
	}
	if linked != kernels || linked != r.Launch.Joined {
		t.Errorf("%d of %d kernels link to their launch; launch statistics join %d", linked, kernels, r.Launch.Joined)
	}
	if id := spans[0].TraceID; id != fileTraceID([]TimelineFile{{Name: "resnet50_worker0.pt.trace.json.gz"}}) || len(id) != 32 {
		t.Errorf("trace ID %s: want the file name's", id)
	}

	capped := realTimeline(t, "resnet50_worker0.pt.trace.json.gz", gputrace.Limits{})
	out := KernelTimeline([]gputrace.Found{{File: gputrace.TraceFile{Rel: "resnet50_worker0.pt.trace.json.gz"}, Result: capped}}, nil, "")
	spans = checkTraceFrame(t, out[0])
	if len(spans) != 1+len(capped.Timeline.Tree().Services)+gputrace.DefaultMaxTimelineActivities {
		t.Errorf("%d spans at the default cap", len(spans))
	}
	if len(spans[0].Warnings) != 1 || !strings.Contains(spans[0].Warnings[0], "11019 activities left out") {
		t.Errorf("root warnings %q", spans[0].Warnings)
	}
	if !strings.Contains(noticeText(out[0]), "its cap of 10000 activities per file") {
		t.Errorf("notices %q", noticeText(out[0]))
	}
}

// CloverLeaf (Nsight Systems): every kernel, copy and runtime call of the export's tables, on
// cuda-cloverleaf's thread and the streams, at the session's wall-clock time (2023-10-04).
func TestKernelTimelineOfCloverLeaf(t *testing.T) {
	r := realTimeline(t, "cloverleaf-nsys.sqlite", gputrace.Limits{})
	f := TimelineFrame(timelineTraceID, []TimelineFile{{Name: "cloverleaf-nsys.sqlite", Result: r}})
	spans := checkTraceFrame(t, f)
	n := activitySpans(t, spans, r.Timeline)
	if n["kernel"] != 1312 || n["gpu_memcpy"] != 279 || n["cuda_runtime"] != 3048 || n[categoryThread] != 1 {
		t.Errorf("spans by category %v", n)
	}
	services := map[string]bool{}
	for _, s := range spans {
		services[s.Service] = true
	}
	if !services["cuda-cloverleaf thread 1701896"] || !services["GPU 0 stream 7"] {
		t.Errorf("services %v", services)
	}
	start := time.UnixMilli(int64(spans[0].Start)).UTC()
	if start.Format(time.DateOnly) != "2023-10-04" {
		t.Errorf("the trace starts %s", start)
	}
}

// Several files share the frame, a root each; their notices name them; no file, no rows.
func TestKernelTimelineFilesAndNoFile(t *testing.T) {
	a, b := handTimeline(), handTimeline()
	a.Notices, b.Notices = notices.Warnings("odd"), notices.Warnings("odd")
	out := KernelTimeline([]gputrace.Found{
		{File: gputrace.TraceFile{Rel: "a.json"}, Result: a},
		{File: gputrace.TraceFile{Rel: "b.json"}, Result: b},
		{File: gputrace.TraceFile{Rel: "broken.json"}},
	}, notices.Warnings("broken.json: unexpected EOF"), timelineTraceID)
	if len(out) != 1 {
		t.Fatalf("%d frames", len(out))
	}
	spans := checkTraceFrame(t, out[0])
	var roots []string
	for _, s := range spans {
		if s.Parent == "" {
			roots = append(roots, s.Operation)
		}
	}
	if strings.Join(roots, ",") != "a.json,b.json" {
		t.Errorf("roots %v", roots)
	}
	text := noticeText(out[0])
	for _, want := range []string{"Read from a.json", "a.json: odd", "b.json: odd", "broken.json: unexpected EOF"} {
		if !strings.Contains(text, want) {
			t.Errorf("notices %q lack %q", text, want)
		}
	}

	empty := KernelTimeline(nil, notices.Warnings("no GPU kernel trace found"), timelineTraceID)
	if len(empty) != 1 || empty[0].Rows() != 0 || empty[0].Meta.PreferredVisualization != data.VisTypeTrace || noticeText(empty[0]) != "no GPU kernel trace found" {
		t.Errorf("no file: %v", empty)
	}
}

func noticeText(f *data.Frame) string {
	var out []string
	for _, n := range f.Meta.Notices {
		out = append(out, n.Text)
	}
	return strings.Join(out, "\n")
}
