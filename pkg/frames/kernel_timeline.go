package frames

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// KernelTimelineFrameName names the kernels query's timeline: one trace frame.
const KernelTimelineFrameName = "timeline"

// TimelineFile is one trace file's timeline for the frame: its name (the query's file
// reference) and its analysis with Result.Timeline.
type TimelineFile struct {
	Name   string
	Result *gputrace.Result
}

// Span categories of the spans that are not activities.
const (
	categoryFile   = "trace file"
	categoryThread = "host thread"
	categoryStream = "GPU stream"
)

// timelineRootService is the service of a file's root span: Grafana's trace view names the
// trace "<service>: <operation>" after it, "GPU kernel trace: <file>".
const timelineRootService = "GPU kernel trace"

// KernelTimeline is the kernels query's timeline view: the files' activities as one trace frame
// (Explore and the Traces panel show a response's first trace frame only, so the files share
// it, each under a root span of its own), with their notices, or an empty frame that says why.
func KernelTimeline(files []gputrace.Found, missed notices.List, traceID string) data.Frames {
	var tl []TimelineFile
	var l notices.List
	for _, f := range files {
		if f.Result == nil || f.Result.Timeline == nil {
			continue
		}
		tl = append(tl, TimelineFile{Name: f.File.Rel, Result: f.Result})
	}
	for _, f := range tl {
		l.Info("Read from " + f.Name)
		for _, n := range f.Result.Notices {
			if len(tl) > 1 {
				n.Text = f.Name + ": " + n.Text
			}
			l.Add(n)
		}
	}
	l.Merge(missed)
	return withNotices(data.Frames{TimelineFrame(traceID, tl)}, l)
}

// TimelineFrame is the trace frame Grafana's trace view reads (its TraceSpanRow fields; times in
// milliseconds): per file a root span, under it a span per host thread and GPU stream (the
// services), under those the activities, each annotation or host call holding the activities
// within it on its thread or stream. A GPU activity references (Grafana's span links,
// FOLLOWS_FROM) the host call of its correlation: the kernel's launch, the copy's
// cudaMemcpyAsync, the sync record's synchronising call; Grafana shows the call as referenced
// by it. traceID is the request's, else one made from the file names.
func TimelineFrame(traceID string, files []TimelineFile) *data.Frame {
	if traceID == "" {
		traceID = fileTraceID(files)
	}
	b := &timelineBuilder{traceID: traceID}
	for i, f := range files {
		b.file(uint64(i+1), f)
	}
	frame := data.NewFrame(KernelTimelineFrameName,
		data.NewField("traceID", nil, b.traceIDs),
		data.NewField("spanID", nil, b.spanIDs),
		data.NewField("parentSpanID", nil, b.parents),
		data.NewField("operationName", nil, b.operations),
		data.NewField("serviceName", nil, b.services),
		data.NewField("serviceTags", nil, b.serviceTags),
		data.NewField("startTime", nil, b.starts).SetConfig(&data.FieldConfig{Unit: "ms"}),
		data.NewField("duration", nil, b.durations).SetConfig(&data.FieldConfig{Unit: "ms"}),
		data.NewField("tags", nil, b.tags),
		data.NewField("references", nil, b.references),
		data.NewField("warnings", nil, b.warnings),
	)
	frame.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTrace}
	return frame
}

// fileTraceID is a stable trace ID for files no request names: the first 16 bytes of the
// SHA-256 of their names.
func fileTraceID(files []TimelineFile) string {
	h := sha256.New()
	for _, f := range files {
		h.Write([]byte(f.Name))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

type timelineBuilder struct {
	traceID                                 string
	traceIDs, spanIDs, operations, services []string
	parents                                 []*string
	starts, durations                       []float64
	serviceTags, tags                       []json.RawMessage
	references, warnings                    []*json.RawMessage
}

// tag is one of Grafana's TraceKeyValuePair.
type tag struct {
	Key   string `json:"key"`
	Value any    `json:"value"`
}

func rawJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		// Tags hold strings and numbers only: a failure is a bug, shown rather than hidden.
		b, _ = json.Marshal([]tag{{"error", err.Error()}})
	}
	return b
}

func (b *timelineBuilder) span(id uint64, parent string, operation, service string, serviceTags json.RawMessage, start, end int64, tags []tag) string {
	sid := fmt.Sprintf("%016x", id)
	b.traceIDs = append(b.traceIDs, b.traceID)
	b.spanIDs = append(b.spanIDs, sid)
	if parent == "" {
		b.parents = append(b.parents, nil)
	} else {
		b.parents = append(b.parents, &parent)
	}
	b.operations = append(b.operations, operation)
	b.services = append(b.services, service)
	b.serviceTags = append(b.serviceTags, serviceTags)
	b.starts = append(b.starts, epochMillis(start))
	b.durations = append(b.durations, float64(end-start)/1e6)
	b.tags = append(b.tags, rawJSON(tags))
	b.references = append(b.references, nil)
	b.warnings = append(b.warnings, nil)
	return sid
}

// file adds one file's spans; span IDs are the file's number in the top 24 bits, then the
// span's in the file.
func (b *timelineBuilder) file(n uint64, f TimelineFile) {
	t := f.Result.Timeline
	acts := t.Activities
	tree := t.Tree()
	at := func(ns int64) int64 { return ns + t.Epoch }
	id := func(k int) uint64 { return n<<40 | uint64(k) }

	start, end := int64(0), int64(0)
	for i, a := range acts {
		if i == 0 || a.Start < start {
			start = a.Start
		}
		if i == 0 || a.End > end {
			end = a.End
		}
	}
	rootTags := []tag{{"category", categoryFile}, {"file", f.Name}, {"activities", len(acts)}}
	if t.Dropped > 0 {
		rootTags = append(rootTags, tag{"left out", t.Dropped}, tag{"cap", t.Cap},
			tag{"complete up to (ms after start)", float64(t.Complete()-start) / 1e6})
	}
	root := b.span(id(0), "", f.Name, timelineRootService, rawJSON([]tag{{"file", f.Name}}), at(start), at(end), rootTags)
	if t.Dropped > 0 {
		w := rawJSON([]string{fmt.Sprintf("%d activities left out: the timeline holds the first %d of this file (its cap)", t.Dropped, t.Cap)})
		b.warnings[len(b.warnings)-1] = &w
	}

	// A span per service over its activities, then the activities: spans of a service follow
	// its own, in time order.
	type extent struct{ start, end int64 }
	ext := make([]extent, len(tree.Services))
	seen := make([]bool, len(tree.Services))
	for i, a := range acts {
		s := tree.Service[i]
		if !seen[s] {
			ext[s], seen[s] = extent{a.Start, a.End}, true
		}
		ext[s].end = max(ext[s].end, a.End)
	}
	names := make([]string, len(tree.Services))
	stags := make([]json.RawMessage, len(tree.Services))
	serviceIDs := make([]string, len(tree.Services))
	for s, svc := range tree.Services {
		names[s], stags[s] = serviceName(svc, t.Processes), serviceTagsOf(svc, t.Processes, f.Name)
		category := categoryStream
		if svc.Host {
			category = categoryThread
		}
		serviceIDs[s] = b.span(id(len(acts)+1+s), root, names[s], names[s], stags[s], at(ext[s].start), at(ext[s].end), []tag{{"category", category}})
	}
	ids := make([]string, len(acts))
	for i := range acts {
		ids[i] = fmt.Sprintf("%016x", id(i+1))
	}
	for i, a := range acts {
		s := tree.Service[i]
		parent := serviceIDs[s]
		if p := tree.Parent[i]; p >= 0 {
			parent = ids[p]
		}
		op := a.Name
		if op == "" {
			op = categoryOf(a.Kind)
		}
		b.span(id(i+1), parent, op, names[s], stags[s], at(a.Start), at(a.End), activityTags(a))
		if l := tree.Launch[i]; l >= 0 {
			link := "launch"
			if a.Kind == activity.KindSync {
				link = "synchronising call"
			}
			r := rawJSON([]map[string]any{{"traceID": b.traceID, "spanID": ids[l],
				"tags": []tag{{"link", link}, {"correlation", a.Correlation}}}})
			b.references[len(b.references)-1] = &r
		}
	}
}

// epochMillis is ns as milliseconds, the whole milliseconds and the rest converted apart so
// that an epoch time (1.7e18 ns, beyond float64's exact integers) is rounded once: to within
// 0.12 µs today, finer than the microseconds Grafana's trace view works in.
func epochMillis(ns int64) float64 {
	return float64(ns/1_000_000) + float64(ns%1_000_000)/1e6
}

// categoryOf names an activity's kind as Kineto's `cat` does.
func categoryOf(k activity.Kind) string {
	switch k {
	case activity.KindKernel:
		return "kernel"
	case activity.KindMemcpy:
		return "gpu_memcpy"
	case activity.KindMemset:
		return "gpu_memset"
	case activity.KindRuntime:
		return "cuda_runtime"
	case activity.KindDriver:
		return "cuda_driver"
	case activity.KindAnnotation:
		return "user_annotation"
	case activity.KindGPUAnnotation:
		return "gpu_user_annotation"
	case activity.KindSync:
		return "cuda_sync"
	case activity.KindCPUOp:
		return "cpu_op"
	}
	return "other"
}

// activityTags are what the span's details list: its category, where it ran and what joins it.
func activityTags(a activity.Activity) []tag {
	tags := []tag{{"category", categoryOf(a.Kind)}}
	if !gputrace.ServiceOf(a).Host {
		tags = append(tags, tag{"device", a.Device}, tag{"stream", a.Stream})
	}
	if a.Correlation != 0 {
		tags = append(tags, tag{"correlation", a.Correlation})
	}
	if a.Grid != [3]int32{} {
		tags = append(tags, tag{"grid", dim3(a.Grid)})
	}
	if a.Block != [3]int32{} {
		tags = append(tags, tag{"block", dim3(a.Block)})
	}
	if a.Bytes > 0 {
		tags = append(tags, tag{"bytes", a.Bytes})
	}
	if a.TraceID != "" {
		tags = append(tags, tag{"trace ID", a.TraceID})
	}
	return tags
}

func dim3(d [3]int32) string { return fmt.Sprintf("%d×%d×%d", d[0], d[1], d[2]) }

// serviceName is a thread's or stream's name in the trace view: "python thread 2869224" (the
// process's name when the trace gives it), "host thread 25738", "GPU 0 stream 7", "GPU 0" for a
// device's own records.
func serviceName(s gputrace.Service, processes map[int64]string) string {
	switch {
	case s.Host && s.Process == 0 && s.Thread == 0:
		return "host"
	case s.Host && processes[s.Process] != "":
		return fmt.Sprintf("%s thread %d", processes[s.Process], s.Thread)
	case s.Host:
		return fmt.Sprintf("host thread %d", s.Thread)
	case s.Stream < 0:
		return fmt.Sprintf("GPU %d", s.Device)
	}
	return fmt.Sprintf("GPU %d stream %d", s.Device, s.Stream)
}

func serviceTagsOf(s gputrace.Service, processes map[int64]string, file string) json.RawMessage {
	var tags []tag
	if s.Host {
		tags = append(tags, tag{"process.pid", s.Process}, tag{"thread.id", s.Thread})
		if name := processes[s.Process]; name != "" {
			tags = append(tags, tag{"process.name", name})
		}
	} else {
		tags = append(tags, tag{"device", s.Device})
		if s.Stream >= 0 {
			tags = append(tags, tag{"stream", s.Stream})
		}
	}
	return rawJSON(append(tags, tag{"file", file}))
}
