package gputrace

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// All durations below are nanoseconds.

// KernelSummary is one row of `nsys stats --report cuda_gpu_kern_sum`.
type KernelSummary struct {
	Name        string
	TimePercent float64 // share of the summed kernel time
	Total       int64
	Instances   int64
	Avg         float64
	Median      float64
	Min, Max    int64
	StdDev      float64 // sample standard deviation (n−1), 0 for one instance, as nsys
	// MedianEstimated is set when more instances ran than Limits.MaxSamplesPerKernel.
	MedianEstimated bool
}

// TemporalBreakdown partitions one GPU's [first activity start, last end] the way HTA does:
// Compute = union of compute kernels; Communication = union of NCCL kernels not overlapping
// compute; Memory = union of memcpys/memsets overlapping neither; Idle = the rest.
//
// For the whole file (Result.Temporal) every figure is the sum over its GPUs, Span included
// (GPU time), and Start/End are the earliest start and latest end: pooling the GPUs' intervals
// instead would count a moment as busy when any one GPU was, and hide each GPU's idle time.
type TemporalBreakdown struct {
	Device                               int32 // the GPU; unused for the file's total
	Start, End                           int64
	Span                                 int64
	Compute, Communication, Memory, Idle int64
}

// Percent returns part as a share of the span, in percent.
func (t TemporalBreakdown) Percent(part int64) float64 {
	if t.Span == 0 {
		return 0
	}
	return 100 * float64(part) / float64(t.Span)
}

// StreamIdle is HTA's idle breakdown for one stream: a gap between consecutive GPU activities
// is host wait when the next activity's launch call started after the previous one ended,
// else kernel wait when shorter than AnalysisOptions.KernelWaitThreshold, else other.
type StreamIdle struct {
	Device, Stream              int32
	Busy, Idle                  int64
	HostWait, KernelWait, Other int64
	Gaps                        int64
	LongestGap                  int64
	Overlaps                    int64 // activities starting before the previous one ended
}

// LaunchStats joins launch calls and kernels on correlation.
type LaunchStats struct {
	Kernels, Joined                 int64
	DelayAvg, DelayMedian, DelayP95 float64 // kernel start − launch call end
	DelayMax                        int64   // the largest delay, negative when every kernel started before its launch call returned
	// ShorterThanLaunch is the share (0..1) of joined kernels that ran for less time than the
	// call that launched them: the launch-overhead pattern.
	ShorterThanLaunch float64
	// CallMedian is the median duration of the joined kernels' launch calls.
	CallMedian float64
}

// MemcpyVolume is copy traffic in one direction (HtoD, DtoH, DtoD, HtoH, PtoP, Memset, other).
type MemcpyVolume struct {
	Direction     string
	Count         int64
	Bytes         int64
	Busy          int64
	BandwidthGBps float64 // bytes / duration of the copies whose size is known
	Pageable      int64
}

// Advice is a matched pattern from the seeds' tables with the figures that triggered it.
type Advice struct {
	Pattern  string
	Remedy   string
	Evidence string
}

// Result is everything the analyses produce for one trace.
type Result struct {
	Kernels []KernelSummary
	// Temporal is the file's total, TemporalByDevice the breakdown of each GPU, by device.
	Temporal         TemporalBreakdown
	TemporalByDevice []TemporalBreakdown
	Idle             []StreamIdle
	Launch           LaunchStats
	Memcpy           []MemcpyVolume
	// Sync counts the host calls that block on the GPU (cudaStreamSynchronize,
	// cudaDeviceSynchronize, cudaEventSynchronize, blocking cudaMemcpy, their driver forms)
	// once each, with their summed duration.
	Sync struct{ Calls, Time int64 }
	// HostWindow is the time from the host's first runtime or driver call to its last: the
	// synchronising calls' share is of this or the GPUs' span, whichever is longer (host calls
	// may outlast a short GPU span).
	HostWindow int64
	Advice     []Advice
	TraceIDs   []activity.TraceID
	// Timeline is the trace's activities themselves, kept when Limits.Timeline is set.
	Timeline *Timeline
	// Annotations and ByTraceID attribute kernels to the host annotations they were
	// launched in, and to the request trace IDs those annotations name.
	Annotations []AnnotationKernels
	ByTraceID   []TraceKernelTime
	// GPUIdle splits the GPUs' idle and copy-only time by what they waited for (the
	// annotations' and requests' shares are on Annotations and ByTraceID).
	GPUIdle IdleMechanisms
	// Launches is Nsight Systems' cuda_kern_exec_sum: API, queue and kernel time per kernel
	// name and launch call; Ranges its nvtx_gpu_proj_sum: the ranges (NVTX, record_function)
	// projected onto the GPU work launched inside them (launches.go).
	Launches []LaunchSummary
	Ranges   []RangeProjection
	// CriticalPath is HTA's lightweight critical path of the trace (nil when the trace has no
	// GPU activity or the path could not be computed: a notice says why).
	CriticalPath *CriticalPath
	Notices      notices.List
}

// DefaultKernelWaitThreshold is the kernel-wait threshold HTA applies in effect: its
// get_idle_time_breakdown documents consecutive_kernel_delay=30 as nanoseconds, but
// _analyze_idle_time_for_stream (hta/analyzers/breakdown_analysis.py) compares it with gaps
// taken from the trace's ts, which HTA keeps in microseconds (hta/common/trace.py converts µs
// to ns only for unix time), so the gaps it calls kernel wait are those under 30 µs.
const DefaultKernelWaitThreshold = 30_000

// AnalysisOptions tune the analyses; zero fields take HTA's defaults.
type AnalysisOptions struct {
	// KernelWaitThreshold, ns: a gap on a stream that is not host wait is kernel wait when
	// shorter than this (DefaultKernelWaitThreshold when 0).
	KernelWaitThreshold int64
}

// Result computes the analyses over what was collected. It may be called more than once.
func (c *Collector) Result(o AnalysisOptions) *Result {
	if o.KernelWaitThreshold <= 0 {
		o.KernelWaitThreshold = DefaultKernelWaitThreshold
	}
	r := &Result{}
	c.resolveCalls()
	r.Kernels = c.kernelSummary()
	sort.Sort(chunkedLess[interval]{&c.ivals, func(a, b *interval) bool { return a.start < b.start }})
	r.Temporal, r.TemporalByDevice = temporalByDevice(&c.ivals)
	r.Launch = c.launchStats()
	r.Idle = c.idle(o.KernelWaitThreshold)
	r.Sync.Calls, r.Sync.Time = c.syncs()
	if c.hostSeen {
		r.HostWindow = c.hostLast - c.hostFirst
	}
	var inner, traced []int32
	r.Annotations, r.ByTraceID, inner, traced = c.attribute()
	r.GPUIdle = c.idleMechanisms(inner, traced, r.Annotations, r.ByTraceID)
	r.Launches = c.launchSummary()
	r.Ranges, c.dropped.openRanges, c.dropped.rangeNames = c.rangeProjections()
	r.Memcpy = c.memcpyVolumes()
	r.TraceIDs = c.ids.list()
	var why string
	if c.limits.CriticalPath {
		r.CriticalPath, why = c.criticalPath()
	}
	r.Notices = c.finishNotices()
	if why != "" {
		r.Notices.Warn(why)
	}
	r.Timeline = c.timelineResult()
	if n := c.timelineNotice(r.Timeline); n != "" {
		r.Notices.Warn(n)
	}
	var overlaps int64
	for _, s := range r.Idle {
		overlaps += s.Overlaps
	}
	if overlaps > 0 {
		r.Notices.Warnf("%d GPU activities overlap the previous one on their stream", overlaps)
	}
	r.Advice = advise(r)
	return r
}

func (c *Collector) kernelSummary() []KernelSummary {
	var total int64
	for _, k := range c.kernels {
		total += k.sum
	}
	out := make([]KernelSummary, 0, len(c.kernels))
	for name, k := range c.kernels {
		s := KernelSummary{Name: name, Total: k.sum, Instances: k.count, Min: k.min, Max: k.max,
			Avg: float64(k.sum) / float64(k.count), Median: median(k.samples),
			MedianEstimated: int64(len(k.samples)) < k.count}
		if total > 0 {
			s.TimePercent = 100 * float64(k.sum) / float64(total)
		}
		if k.count > 1 {
			n := float64(k.count)
			v := (k.sumSq - float64(k.sum)*float64(k.sum)/n) / (n - 1)
			s.StdDev = math.Sqrt(math.Max(v, 0))
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Total != out[j].Total {
			return out[i].Total > out[j].Total
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// temporalByDevice returns the file's total and each device's breakdown; ivals sorted by start.
// It walks the shared slice rather than copying it per device: the intervals are most of what
// the collector holds.
func temporalByDevice(ivals *chunked[interval]) (TemporalBreakdown, []TemporalBreakdown) {
	spans := map[int32]*TemporalBreakdown{}
	for _, iv := range ivals.all() {
		t := spans[iv.device]
		if t == nil {
			spans[iv.device] = &TemporalBreakdown{Device: iv.device, Start: iv.start, End: iv.end}
			continue
		}
		t.End = max(t.End, iv.end)
	}
	compute := unionsByDevice(ivals, func(c KernelClass) bool { return c == ClassCompute })
	compComm := unionsByDevice(ivals, func(c KernelClass) bool { return c != ClassMemory })
	busy := unionsByDevice(ivals, func(KernelClass) bool { return true })
	devices := make([]TemporalBreakdown, 0, len(spans))
	var all TemporalBreakdown
	for dev, t := range spans {
		t.Span = t.End - t.Start
		t.Compute = compute[dev]
		t.Communication = compComm[dev] - compute[dev]
		t.Memory = busy[dev] - compComm[dev]
		t.Idle = t.Span - busy[dev]
		devices = append(devices, *t)
	}
	sort.Slice(devices, func(i, j int) bool { return devices[i].Device < devices[j].Device })
	for i, t := range devices {
		if i == 0 {
			all.Start, all.End = t.Start, t.End
		}
		all.Start, all.End = min(all.Start, t.Start), max(all.End, t.End)
		all.Span += t.Span
		all.Compute += t.Compute
		all.Communication += t.Communication
		all.Memory += t.Memory
		all.Idle += t.Idle
	}
	return all, devices
}

// unionsByDevice is, per device, the length of the union of the selected intervals; ivals
// sorted by start.
func unionsByDevice(ivals *chunked[interval], keep func(KernelClass) bool) map[int32]int64 {
	type run struct{ total, start, end int64 }
	runs := map[int32]*run{}
	for _, iv := range ivals.all() {
		if !keep(iv.class) {
			continue
		}
		r := runs[iv.device]
		switch {
		case r == nil:
			runs[iv.device] = &run{start: iv.start, end: iv.end}
		case iv.start > r.end:
			r.total += r.end - r.start
			r.start, r.end = iv.start, iv.end
		default:
			r.end = max(r.end, iv.end)
		}
	}
	out := make(map[int32]int64, len(runs))
	for dev, r := range runs {
		out[dev] = r.total + r.end - r.start
	}
	return out
}

func (c *Collector) launchStats() LaunchStats {
	var l LaunchStats
	// One buffer, for the delays and then the calls' durations: a large trace has hundreds of
	// thousands of launches.
	delays := make([]int64, 0, c.ivals.len())
	var sum float64
	var short int64
	for i := range c.ivals.len() {
		iv := c.ivals.at(i)
		if iv.class == ClassMemory {
			continue
		}
		l.Kernels++
		ln, ok := c.callOf(*iv)
		if !ok {
			continue
		}
		l.Joined++
		d := iv.start - ln.end
		delays = append(delays, d)
		sum += float64(d)
		if l.Joined == 1 || d > l.DelayMax {
			l.DelayMax = d
		}
		if iv.end-iv.start < ln.end-ln.start {
			short++
			iv.short = true
		}
	}
	if l.Joined > 0 {
		l.DelayAvg = sum / float64(l.Joined)
		slices.Sort(delays)
		l.DelayMedian = medianSorted(delays)
		l.DelayP95 = float64(delays[int(math.Ceil(0.95*float64(len(delays))))-1])
		l.ShorterThanLaunch = float64(short) / float64(l.Joined)
		calls := delays[:0]
		for _, iv := range c.ivals.all() {
			if ln, ok := c.callOf(iv); ok && iv.class != ClassMemory {
				calls = append(calls, ln.end-ln.start)
			}
		}
		slices.Sort(calls)
		l.CallMedian = medianSorted(calls)
	}
	return l
}

// idle needs ivals sorted by start.
func (c *Collector) idle(threshold int64) []StreamIdle {
	type key struct{ dev, stream int32 }
	streams := map[key]*StreamIdle{}
	last := map[key]int64{}
	var order []key
	for _, iv := range c.ivals.all() {
		k := key{iv.device, iv.stream}
		s := streams[k]
		if s == nil {
			s = &StreamIdle{Device: iv.device, Stream: iv.stream}
			streams[k] = s
			order = append(order, k)
			s.Busy += iv.end - iv.start
			last[k] = iv.end
			continue
		}
		prevEnd := last[k]
		if iv.start < prevEnd {
			s.Overlaps++
			s.Busy += max(iv.end-prevEnd, 0)
			last[k] = max(prevEnd, iv.end)
			continue
		}
		s.Busy += iv.end - iv.start
		last[k] = iv.end
		gap := iv.start - prevEnd
		if gap == 0 {
			continue
		}
		s.Gaps++
		s.Idle += gap
		s.LongestGap = max(s.LongestGap, gap)
		// HTA's order and tests (_analyze_idle_time_for_stream): host wait when the launch call
		// started after the previous activity ended, strictly; only then the threshold. An
		// activity without a launch call (none recorded, or capped) is never host wait.
		ln, ok := c.callOf(iv)
		switch {
		case ok && ln.start > prevEnd:
			s.HostWait += gap
		case gap < threshold:
			s.KernelWait += gap
		default:
			s.Other += gap
		}
	}
	out := make([]StreamIdle, 0, len(order))
	for _, k := range order {
		out = append(out, *streams[k])
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Device != out[j].Device {
			return out[i].Device < out[j].Device
		}
		return out[i].Stream < out[j].Stream
	})
	return out
}

// syncs counts each blocking host call once: the calls, then the cuda_sync records whose call
// is not in the trace. A record beside a call that does
// not block (Kineto writes an "Event Sync" record beside each cudaEventQuery, which only polls)
// is not counted: the call is in the trace (c.calls holds every runtime call with a
// correlation) and is not a synchronising one.
func (c *Collector) syncs() (calls, time int64) {
	calls, time = c.syncCount, c.syncTime
	for _, r := range c.syncRecords {
		if c.standsForACall(r) {
			calls++
			time += r.end - r.start
		}
	}
	return calls, time
}

// standsForACall says whether a blocking cuda_sync record is the only trace of its call.
func (c *Collector) standsForACall(r syncRecord) bool {
	if _, seen := c.syncCalls[r.correlation]; seen {
		return false
	}
	_, polls := c.calls.get(r.correlation)
	return !polls || r.correlation == 0
}

func (c *Collector) memcpyVolumes() []MemcpyVolume {
	out := make([]MemcpyVolume, 0, len(c.memcpy))
	for dir, m := range c.memcpy {
		v := MemcpyVolume{Direction: dir, Count: m.count, Bytes: m.bytes, Busy: m.busy, Pageable: m.pageable}
		if m.withBytes > 0 {
			v.BandwidthGBps = float64(m.bytes) / float64(m.withBytes) // bytes/ns = GB/s
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Direction < out[j].Direction })
	return out
}

// memcpyDirection reads the direction from Kineto names ("Memcpy HtoD (Pageable -> Device)").
func memcpyDirection(name string) string {
	for _, d := range []string{"HtoD", "DtoH", "DtoD", "HtoH", "PtoP"} {
		if strings.Contains(name, d) {
			return d
		}
	}
	return "other"
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
