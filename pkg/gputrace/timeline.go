package gputrace

import (
	"container/heap"
	"fmt"
	"sort"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

// DefaultMaxTimelineActivities is the timeline's cap when Limits.MaxTimelineActivities is 0:
// Grafana's trace view stays responsive at ten thousand spans.
const DefaultMaxTimelineActivities = 10_000

// maxTimelineName bounds an activity's name kept for the timeline (templated kernel names run
// to a few hundred bytes), so the timeline's memory is bounded by the cap alone.
const maxTimelineName = 1024

// Timeline is the activities of a trace for the timeline view: kernels, copies, memsets,
// runtime and driver calls, annotations (host and GPU) and cuda_sync records, in time order.
//
// It holds the MaxTimelineActivities earliest activities (by start), not the longest: a prefix
// of the trace is complete, so a gap on a stream is a real gap and a kernel's launch call
// (which starts before the kernel) is there, where the longest activities would leave holes
// that read as idle time and cut launches from their kernels.
type Timeline struct {
	Activities []activity.Activity
	// Cap is the most activities kept; Dropped counts those left out. Every activity starting
	// before Activities' last start is kept.
	Cap     int
	Dropped int64
	// Processes names host processes by pid, where the trace says.
	Processes map[int64]string
	// Epoch is added to the activities' times to make them Unix nanoseconds: an Nsight export's
	// session start (its times count from it); 0 when the times already are (Kineto's CUDA
	// traces) or the trace does not say.
	Epoch int64
}

// Complete is the start up to which the timeline holds every activity: its last activity's
// start (with nothing dropped, the trace's last).
func (t *Timeline) Complete() int64 {
	if len(t.Activities) == 0 {
		return 0
	}
	return t.Activities[len(t.Activities)-1].Start
}

// inTimeline says which kinds the timeline shows: all but cpu_ops (there are tens of thousands
// and the readers do not keep them) and unknown categories.
func inTimeline(k activity.Kind) bool {
	return k != activity.KindOther && k != activity.KindCPUOp
}

// timelineHeap is a max-heap on start: its top is the latest activity kept, the one to give up
// for an earlier one.
type timelineHeap []activity.Activity

func (h timelineHeap) Len() int           { return len(h) }
func (h timelineHeap) Less(i, j int) bool { return h[i].Start > h[j].Start }
func (h timelineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *timelineHeap) Push(x any)        { *h = append(*h, x.(activity.Activity)) }
func (h *timelineHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// timelineState is what a Collector keeps for the timeline when Limits.Timeline is set.
type timelineState struct {
	kept      timelineHeap
	dropped   int64
	processes map[int64]string
	epoch     int64
}

// addTimeline keeps a among the earliest MaxTimelineActivities.
func (c *Collector) addTimeline(a activity.Activity) {
	t := c.timeline
	if t == nil || !inTimeline(a.Kind) {
		return
	}
	if (a.Kind == activity.KindAnnotation || a.Kind == activity.KindGPUAnnotation) && a.TraceID == "" {
		// As attribution reads it: the request an annotation's name names.
		if ids := activity.TraceIDsIn(a.Name); len(ids) > 0 {
			a.TraceID = ids[0]
		}
	}
	if len(a.Name) > maxTimelineName {
		a.Name = truncateUTF8(a.Name, maxTimelineName-len("…")) + "…"
	}
	if len(t.kept) < c.limits.MaxTimelineActivities {
		heap.Push(&t.kept, a)
		return
	}
	t.dropped++
	if a.Start < t.kept[0].Start {
		t.kept[0] = a
		heap.Fix(&t.kept, 0)
	}
}

// nameProcess records a host process's name, for the timeline's thread services.
// KeepsTimeline says whether the activities themselves are kept (Limits.Timeline), so readers
// read process names and the epoch only then (activity.Sink).
func (c *Collector) KeepsTimeline() bool { return c.timeline != nil }

func (c *Collector) NameProcess(pid int64, name string) {
	t := c.timeline
	if t == nil || name == "" {
		return
	}
	if _, ok := t.processes[pid]; !ok && len(t.processes) >= activity.MaxProcessNames {
		return
	}
	t.processes[pid] = truncateUTF8(name, 256)
}

// setEpoch records the Unix time, ns, the trace's times count from.
func (c *Collector) SetEpoch(ns int64) {
	if c.timeline != nil && ns > 0 && ns < activity.MaxTimeNs {
		c.timeline.epoch = ns
	}
}

// timelineResult is the kept activities in time order (a copy: the collector may still add).
func (c *Collector) timelineResult() *Timeline {
	t := c.timeline
	if t == nil {
		return nil
	}
	acts := append([]activity.Activity(nil), t.kept...)
	sort.SliceStable(acts, func(i, j int) bool {
		a, b := acts[i], acts[j]
		if a.Start != b.Start {
			return a.Start < b.Start
		}
		if a.End != b.End {
			return a.End > b.End // the enclosing one first
		}
		return nestRank(a.Kind) < nestRank(b.Kind)
	})
	procs := make(map[int64]string, len(t.processes))
	for k, v := range t.processes {
		procs[k] = v
	}
	return &Timeline{Activities: acts, Cap: c.limits.MaxTimelineActivities, Dropped: t.dropped, Processes: procs, Epoch: t.epoch}
}

// timelineNotice says what the cap left out, naming it.
func (c *Collector) timelineNotice(t *Timeline) string {
	if t == nil || t.Dropped == 0 {
		return ""
	}
	from := ""
	if len(t.Activities) > 0 {
		from = fmt.Sprintf(", complete up to %s after its first activity", fmtDuration(t.Complete()-t.Activities[0].Start))
	}
	return fmt.Sprintf("the timeline holds the first %d activities in time order (its cap of %d activities per file)%s: %d later ones were left out",
		len(t.Activities), t.Cap, from, t.Dropped)
}

// fmtDuration writes ns as ms with µs precision, or µs below a millisecond.
func fmtDuration(ns int64) string {
	if ns < 1_000_000 && ns > -1_000_000 {
		return fmt.Sprintf("%.3f µs", float64(ns)/1e3)
	}
	return fmt.Sprintf("%.3f ms", float64(ns)/1e6)
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// nestRank orders activities of the same interval so that the one that may hold the other
// comes first: annotations, then runtime calls (which hold the driver calls they make).
func nestRank(k activity.Kind) int {
	switch k {
	case activity.KindAnnotation, activity.KindGPUAnnotation:
		return 0
	case activity.KindRuntime:
		return 1
	case activity.KindDriver:
		return 2
	}
	return 3
}

// canHold says which activities are parents of those within them on their thread or stream:
// annotations, and host calls (a runtime call holds the driver calls it makes). Kernels, copies
// and cuda_sync records hold nothing: a sync record spans work it waits for, not work it does.
func canHold(k activity.Kind) bool { return nestRank(k) < 3 }

// Service is where an activity runs: a host thread (Host: Process, Thread) or a GPU stream
// (Device, Stream; Stream -1 for the device's own records, such as a context synchronisation).
type Service struct {
	Host            bool
	Process, Thread int64
	Device, Stream  int32
}

// ServiceOf is the thread or stream an activity runs on.
func ServiceOf(a activity.Activity) Service {
	if activity.OnHost(a.Kind) {
		return Service{Host: true, Process: a.Process, Thread: a.Thread}
	}
	s := Service{Device: a.Device, Stream: a.Stream}
	if s.Stream < 0 {
		s.Stream = -1
	}
	return s
}

// TimelineTree is how the timeline's activities relate: by index into Timeline.Activities.
type TimelineTree struct {
	// Services lists the threads and streams in order of their first activity; Service[i] is
	// activity i's.
	Services []Service
	Service  []int32
	// Parent is the innermost activity on the same service whose interval holds activity i
	// (canHold kinds only: an annotation, a host call), -1 for none.
	Parent []int32
	// Launch is, for a kernel, copy, memset or cuda_sync record, the host call of its
	// correlation (a runtime call, else a driver call), -1 for none or another kind.
	Launch []int32
}

// Tree nests each service's activities by time and joins GPU activities to their launch
// calls on correlation. Activities are in Timeline order (by start, enclosing first).
func (t *Timeline) Tree() TimelineTree {
	n := len(t.Activities)
	tr := TimelineTree{Service: make([]int32, n), Parent: make([]int32, n), Launch: make([]int32, n)}
	index := map[Service]int32{}
	stacks := map[int32][]int32{}
	calls := map[int64]int32{}
	for i, a := range t.Activities {
		s := ServiceOf(a)
		si, ok := index[s]
		if !ok {
			si = int32(len(tr.Services))
			index[s] = si
			tr.Services = append(tr.Services, s)
		}
		tr.Service[i] = si
		// The stack holds the service's open activities, latest start on top: drop those that
		// ended before a began, then the parent is the topmost that holds all of a (one that
		// overlaps a only in part is not, and stays open for the activities after a).
		st := stacks[si]
		for len(st) > 0 && t.Activities[st[len(st)-1]].End < a.Start {
			st = st[:len(st)-1]
		}
		tr.Parent[i] = -1
		for k, steps := len(st)-1, 0; k >= 0 && steps < maxNestingWalk; k, steps = k-1, steps+1 {
			if t.Activities[st[k]].End >= a.End {
				tr.Parent[i] = st[k]
				break
			}
		}
		if canHold(a.Kind) {
			st = append(st, int32(i))
		}
		stacks[si] = st
		if (a.Kind == activity.KindRuntime || a.Kind == activity.KindDriver) && a.Correlation != 0 {
			if j, seen := calls[joinID(a)]; !seen || t.Activities[j].Kind == activity.KindDriver && a.Kind == activity.KindRuntime {
				calls[joinID(a)] = int32(i)
			}
		}
	}
	for i, a := range t.Activities {
		tr.Launch[i] = -1
		if j, ok := calls[joinID(a)]; ok && a.Correlation != 0 && launched(a.Kind) {
			tr.Launch[i] = j
		}
	}
	return tr
}

// launched says which activities a host call starts on the GPU (or, for a cuda_sync record,
// waits in).
func launched(k activity.Kind) bool {
	return k == activity.KindKernel || k == activity.KindMemcpy || k == activity.KindMemset || k == activity.KindSync
}
