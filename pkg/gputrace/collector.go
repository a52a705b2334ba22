package gputrace

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// Limits bound what a Collector keeps, so memory grows with distinct kernel names, not with
// the file size. Zero fields take the defaults.
type Limits struct {
	// MaxIntervals caps the GPU intervals (kernels, memcpys, memsets) kept for the temporal and
	// idle breakdowns; beyond it those breakdowns cover only the first MaxIntervals.
	MaxIntervals int
	// MaxLaunches caps the runtime launch calls kept for joining kernels on correlation, and
	// the synchronising calls and cuda_sync records kept for counting each blocking call once,
	// and the CPU operators kept to tell dispatch from other host work.
	MaxLaunches int
	// MaxSamplesPerKernel caps the durations kept per kernel name for the median; beyond it a
	// uniform reservoir sample is kept and the median is an estimate.
	MaxSamplesPerKernel int
	// MaxKernelNames caps distinct kernel names; later names are folded into "(other kernels)".
	MaxKernelNames int
	// MaxPathEvents caps the host calls, GPU activities and cuda_sync records kept for the
	// critical path; beyond it the critical path is not computed (a notice says so).
	MaxPathEvents int
	// CriticalPath keeps the events the critical path needs and computes it. Off by default:
	// the other views do not pay for its memory (about 350 bytes an event).
	CriticalPath bool
	// Timeline keeps the activities themselves for the timeline view (Result.Timeline), at most
	// MaxTimelineActivities of them (DefaultMaxTimelineActivities when 0), the earliest.
	Timeline              bool
	MaxTimelineActivities int
}

// DefaultLimits keep a 1 GB trace within a few hundred MB.
var DefaultLimits = Limits{MaxIntervals: 1_000_000, MaxLaunches: 1_000_000, MaxSamplesPerKernel: 4096, MaxKernelNames: 50_000, MaxPathEvents: defaultMaxPathEvents}

func (l Limits) withDefaults() Limits {
	if l.MaxIntervals <= 0 {
		l.MaxIntervals = DefaultLimits.MaxIntervals
	}
	if l.MaxLaunches <= 0 {
		l.MaxLaunches = DefaultLimits.MaxLaunches
	}
	if l.MaxSamplesPerKernel <= 0 {
		l.MaxSamplesPerKernel = DefaultLimits.MaxSamplesPerKernel
	}
	if l.MaxPathEvents <= 0 {
		l.MaxPathEvents = defaultMaxPathEvents
	}
	if l.MaxKernelNames <= 0 {
		l.MaxKernelNames = DefaultLimits.MaxKernelNames
	}
	if l.MaxTimelineActivities <= 0 {
		l.MaxTimelineActivities = DefaultMaxTimelineActivities
	}
	return l
}

const otherKernels = "(other kernels)"

// kernelStats aggregates one kernel name.
type kernelStats struct {
	name          string // the map's key, shared by the per-launch figures
	count         int64
	sum, min, max int64
	sumSq         float64
	samples       []int64 // all durations up to the cap, then a reservoir
}

// interval is one GPU activity kept for the breakdowns.
type interval struct {
	start, end  int64
	correlation int64
	device      int32
	stream      int32
	// call is the index of its launch call in Collector.calls.sorted, -1 for none (set by
	// resolveCalls, once the whole trace is read).
	call  int32
	class KernelClass
	short bool // kernel only: shorter than its launch call (set at the join)
}

type launch struct{ start, end int64 }

// hostCall is a runtime or driver call kept for the join on correlation: its interval, its
// thread (an index in Collector.threads: a trace has a few threads and hundreds of thousands of
// calls) and its name (an index in Collector.apiNames).
type hostCall struct {
	start, end  int64
	thread, api int32
}

type syncRecord struct{ correlation, start, end int64 }

// cpuOp is a CPU operator's interval on its host thread (Kineto's cpu_op), kept to tell the GPU
// idle time the host spent dispatching the ops that launch work from other host work.
type cpuOp struct{ start, end, thread int64 }

type memcpyStats struct {
	count     int64
	bytes     int64
	busy      int64 // summed durations
	withBytes int64 // summed durations of the copies whose size is known
	pageable  int64 // copies from or to pageable host memory
}

// Collector gathers activities from any reader. Add is called once per activity in any order;
// Result computes the analyses.
type Collector struct {
	limits  Limits
	kernels map[string]*kernelStats
	ivals   chunked[interval]
	calls   callStore
	memcpy  map[string]*memcpyStats
	rng     *rand.Rand

	syncCount   int64
	syncTime    int64
	runtimeTime int64
	// hostFirst and hostLast bound the host's runtime and driver calls (hostSeen: any); the
	// synchronising calls' share is of this window or the GPUs', whichever is longer.
	hostFirst, hostLast int64
	hostSeen            bool
	// launchCalls counts the kernel launch calls on the host, to tell a trace whose GPU side
	// was not recorded from one without work.
	launchCalls int64
	// syncCalls holds the correlations of the blocking host calls counted, and syncRecords the
	// blocking cuda_sync records: Kineto writes both for one call, so a record counts only when
	// no call of its correlation was seen (known once the whole trace is read).
	syncCalls   map[int64]struct{}
	syncRecords []syncRecord
	// blocking are the intervals the host spent blocked in a synchronising call (syncs adds the
	// cuda_sync records that stand for a call the trace lacks).
	blocking []launch
	// ops are the CPU operators (at most Limits.MaxLaunches): a gap the host spent inside ops
	// that launch GPU work is dispatch overhead, not other host work (idleMechanisms).
	ops []cpuOp

	// threadIDs interns the threads of the host calls kept (threads[i] is thread i).
	threadIDs map[int64]int32
	threads   []int64
	// apis interns the names of the host calls kept in launch (apiNames[i] is name i).
	apis     map[string]int32
	apiNames []string
	// launches aggregates the kernels joined to their launch call, per kernel name and call
	// name (cuda_kern_exec_sum); pending holds the kernels read before their call, pendingN
	// their number; noCall counts the kernels without a correlation.
	launches map[launchKey]*launchGroup
	pending  map[int64][]pendingKernel
	pendingN int
	noCall   int64
	// launchRng draws the per-launch reservoir, apart from rng: the kernel summary's samples
	// stay what they were without it.
	launchRng *rand.Rand

	dropped struct {
		intervals, launches, names, samples, annotations, syncs, ops int64
		// joins: kernels not kept waiting for their call; launchGroups: launches folded into
		// the "(other kernels)" row; apiNames: calls named otherCalls; launchSamples: launches
		// past the per-row sample. openRanges and rangeNames are set by each Result: ranges
		// left out of the GPU projection, instances folded into "(other ranges)".
		joins, launchGroups, apiNames, launchSamples, openRanges, rangeNames int64
	}
	annots           []annotation
	negative, badDur int64
	notices          []string
	ids              idSet
	path             pathData
	timeline         *timelineState // nil unless Limits.Timeline
}

// NewCollector returns an empty collector with the given limits.
func NewCollector(l Limits) *Collector {
	c := &Collector{
		limits:    l.withDefaults(),
		kernels:   map[string]*kernelStats{},
		memcpy:    map[string]*memcpyStats{},
		syncCalls: map[int64]struct{}{},
		apis:      map[string]int32{},
		launches:  map[launchKey]*launchGroup{},
		pending:   map[int64][]pendingKernel{},
		rng:       rand.New(rand.NewPCG(1, 2)), // fixed seed: same file, same answer
		launchRng: rand.New(rand.NewPCG(3, 4)),
	}
	if l.Timeline {
		c.timeline = &timelineState{processes: map[int64]string{}}
	}
	return c
}

// Notice records something worth telling the user that is not an error.
func (c *Collector) Notice(format string, args ...any) {
	if len(c.notices) < 100 {
		c.notices = append(c.notices, fmt.Sprintf(format, args...))
	}
}

// Add records one activity.
func (c *Collector) Add(a activity.Activity) {
	if a.Start < 0 {
		c.negative++
	}
	if a.End < a.Start {
		c.badDur++
		return
	}
	if c.limits.CriticalPath {
		c.path.add(c, a)
	}
	c.addTimeline(a)
	switch a.Kind {
	case activity.KindKernel:
		c.joinKernel(a, c.addKernel(a))
		c.addInterval(a)
	case activity.KindMemcpy, activity.KindMemset:
		c.addMemcpy(a)
		c.addInterval(a)
	case activity.KindRuntime, activity.KindDriver:
		c.runtimeTime += a.End - a.Start
		if !c.hostSeen || a.Start < c.hostFirst {
			c.hostFirst = a.Start
		}
		if !c.hostSeen || a.End > c.hostLast {
			c.hostLast = a.End
		}
		c.hostSeen = true
		if isLaunchCall(a.Name) {
			c.launchCalls++
		}
		if isSyncCall(a.Name) {
			c.syncCount++
			c.syncTime += a.End - a.Start
			c.addBlocking(a)
			switch {
			case a.Correlation == 0:
			case len(c.syncCalls) < c.limits.MaxLaunches:
				c.syncCalls[joinID(a)] = struct{}{}
			default:
				c.dropped.syncs++
			}
		}
		if a.Correlation != 0 {
			ln := hostCall{start: a.Start, end: a.End, thread: c.threadIndex(a.Thread), api: c.apiIndex(a.Name)}
			if c.calls.len() < c.limits.MaxLaunches {
				c.calls.put(joinID(a), ln)
			} else {
				c.dropped.launches++
			}
			c.joinPending(joinID(a), ln)
		}
	case activity.KindSync:
		if !blocksHost(a.Name) {
			return
		}
		if len(c.syncRecords) < c.limits.MaxLaunches {
			c.syncRecords = append(c.syncRecords, syncRecord{joinID(a), a.Start, a.End})
		} else {
			c.dropped.syncs++
		}
	case activity.KindCPUOp:
		if len(c.ops) < c.limits.MaxLaunches {
			c.ops = append(c.ops, cpuOp{a.Start, a.End, a.Thread})
		} else {
			c.dropped.ops++
		}
	case activity.KindAnnotation, activity.KindGPUAnnotation:
		c.addAnnotation(a)
	}
}

func (c *Collector) addBlocking(a activity.Activity) {
	if len(c.blocking) < c.limits.MaxLaunches {
		c.blocking = append(c.blocking, launch{a.Start, a.End})
	} else {
		c.dropped.syncs++
	}
}

// addKernel returns the name the kernel is counted under (the map's own string).
func (c *Collector) addKernel(a activity.Activity) string {
	name := a.Name
	k := c.kernels[name]
	if k == nil {
		if len(c.kernels) >= c.limits.MaxKernelNames {
			c.dropped.names++
			name = otherKernels
			k = c.kernels[name]
		}
		if k == nil {
			k = &kernelStats{name: name, min: a.End - a.Start}
			c.kernels[name] = k
		}
	}
	d := a.End - a.Start
	k.count++
	k.sum += d
	k.sumSq += float64(d) * float64(d)
	k.min = min(k.min, d)
	k.max = max(k.max, d)
	if len(k.samples) < c.limits.MaxSamplesPerKernel {
		k.samples = append(k.samples, d)
		return k.name
	}
	c.dropped.samples++
	if j := c.rng.Int64N(k.count); j < int64(len(k.samples)) {
		k.samples[j] = d
	}
	return k.name
}

func (c *Collector) addInterval(a activity.Activity) {
	if c.ivals.len() >= c.limits.MaxIntervals {
		c.dropped.intervals++
		return
	}
	c.ivals.push(interval{
		start: a.Start, end: a.End, correlation: joinID(a),
		device: a.Device, stream: a.Stream, class: classOf(a.Kind, a.Name), call: -1,
	})
}

// resolveCalls points each interval at its launch call, once the whole trace is read: the
// analyses then follow the index instead of looking the call up.
func (c *Collector) resolveCalls() {
	c.calls.merge()
	for i := range c.ivals.len() {
		if iv := c.ivals.at(i); iv.correlation != 0 {
			iv.call = c.calls.index(iv.correlation)
		}
	}
}

// threadIndex is thread's index in c.threads, added when new.
func (c *Collector) threadIndex(thread int64) int32 {
	if i, ok := c.threadIDs[thread]; ok {
		return i
	}
	if c.threadIDs == nil {
		c.threadIDs = map[int64]int32{}
	}
	i := int32(len(c.threads))
	c.threadIDs[thread] = i
	c.threads = append(c.threads, thread)
	return i
}

// threadOf is the thread (its ID in the trace) of a host call.
func (c *Collector) threadOf(ln hostCall) int64 { return c.threads[ln.thread] }

// callOf is the launch call of iv (resolveCalls first).
func (c *Collector) callOf(iv interval) (hostCall, bool) {
	if iv.call < 0 {
		return hostCall{}, false
	}
	return c.calls.sorted.at(int(iv.call)).call, true
}

func (c *Collector) addMemcpy(a activity.Activity) {
	dir := "Memset"
	if a.Kind == activity.KindMemcpy {
		dir = memcpyDirection(a.Name)
	}
	m := c.memcpy[dir]
	if m == nil {
		m = &memcpyStats{}
		c.memcpy[dir] = m
	}
	d := a.End - a.Start
	m.count++
	m.busy += d
	if a.Bytes > 0 {
		m.bytes += a.Bytes
		m.withBytes += d
	}
	if a.Kind == activity.KindMemcpy && containsFold(a.Name, "pageable") {
		m.pageable++
	}
}

// finishNotices turns the counters into notices, once: each says what the figures may miss.
func (c *Collector) finishNotices() notices.List {
	n := notices.Warnings(c.notices...)
	if c.negative > 0 {
		n.Warnf("%d events have negative timestamps", c.negative)
	}
	if c.badDur > 0 {
		n.Warnf("%d events with negative durations were skipped", c.badDur)
	}
	if c.dropped.intervals > 0 {
		n.Warnf("more than %d GPU intervals: temporal and idle breakdowns and the ranges' GPU projection cover the first %d only (%d left out)", c.limits.MaxIntervals, c.limits.MaxIntervals, c.dropped.intervals)
	}
	if c.dropped.launches > 0 {
		n.Warnf("more than %d launch calls: %d left out of the launch statistics and the per-launch figures", c.limits.MaxLaunches, c.dropped.launches)
	}
	if c.dropped.ops > 0 {
		n.Warnf("more than %d CPU operators: %d left out, so GPU idle gaps among them may count as host work rather than the ops' dispatch", c.limits.MaxLaunches, c.dropped.ops)
	}
	if c.dropped.syncs > 0 {
		n.Warnf("more than %d synchronising calls or cuda_sync records: the sync figures may be off for %d of them", c.limits.MaxLaunches, c.dropped.syncs)
	}
	if c.dropped.names > 0 {
		n.Warnf("more than %d distinct kernel names: %d kernels folded into %q", c.limits.MaxKernelNames, c.dropped.names, otherKernels)
	}
	if c.dropped.annotations > 0 {
		n.Warn(annotationNotice(c.dropped.annotations))
	}
	if len(c.kernels) == 0 && c.launchCalls > 0 {
		n.Warnf("%d kernel launches on the host but no kernel records on the GPU: the profiler did not record GPU activity (CUPTI's activity tracing was off, as in a CUPTI-profiler or range-profiling run, or the GPU events were dropped), so there is no kernel summary, breakdown or idle time; record with CUDA activities on (torch.profiler's ProfilerActivity.CUDA, nsys --trace=cuda)", c.launchCalls)
	}
	c.launchNotices(&n)
	if c.dropped.samples > 0 {
		n.Warnf("kernel names with more than %d instances: their medians are estimated from a sample of %d", c.limits.MaxSamplesPerKernel, c.limits.MaxSamplesPerKernel)
	}
	return n
}

// median leaves xs as it is.
func median(xs []int64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return medianSorted(s)
}

func medianSorted(s []int64) float64 {
	if len(s) == 0 {
		return 0
	}
	m := len(s) / 2
	if len(s)%2 == 1 {
		return float64(s[m])
	}
	return (float64(s[m-1]) + float64(s[m])) / 2
}
