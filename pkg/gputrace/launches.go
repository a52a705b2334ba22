package gputrace

import (
	"sort"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// Per launch: what Nsight Systems' cuda_kern_exec_sum and nvtx_gpu_proj_sum report, from the
// activities of any reader.
//
// cuda_kern_exec_sum, "CUDA Kernel Launch & Exec Time Summary" (the Nsight Systems
// Post-Collection Analysis Guide, docs.nvidia.com/nsight-systems/AnalysisGuide, and the report's
// own query, reports/cuda_kern_exec_sum.py in the nsys package) joins each kernel to the CUDA API
// call that launched it on the correlation ID and splits the launch into phases:
//
//   - API time = call end − call start: the host's time in the launch call;
//   - queue time = kernel start − call end, only where it is ≥ 0. A kernel may start before its
//     call returns (the kernel is queued somewhere inside the call); such a launch has no queue
//     time and is left out of the queue figures, which Queued counts (nsys's QCount). nsys does
//     not clamp it to 0, and neither does this: zeros would pull the queue average and median
//     down for launches that never waited;
//   - kernel time = kernel end − kernel start;
//   - total time = max(call end, kernel end) − call start: the phases overlap, so it is not
//     their sum.
//
// Each is summarised by average, median, minimum and maximum per kernel name and API name, rows
// ordered by the total time's average, largest first, as nsys orders them. nsys also splits rows
// by process, thread and device; a request's trace is summarised across them.
//
// nvtx_gpu_proj_sum, "NVTX GPU Projection Summary" (the same guide, and the query of its trace
// form, reports/nvtx_gpu_proj_trace.py) projects each NVTX range onto the GPU work launched
// inside it. A GPU operation (kernel, memcpy, memset) belongs to a range when the API call that
// launched it lies within the range (range start ≤ call start and call end ≤ range end) on the
// range's thread; every enclosing range counts it, not only the innermost, and a parent keeps
// its children's time. The range's projection runs from the earliest start of its operations to
// the latest end; its GPU ops are the distinct launch calls (correlation IDs) among them. Ranges
// that launched nothing are not listed. Per range name: instances, their summed CPU (range)
// duration, the projected duration's total, average, median, minimum and maximum, and GPU ops.
//
// Where this differs from nsys, for the traces it reads beside nsys's: driver calls
// (cuLaunchKernel, as Triton launches) are launch calls as runtime calls are (nsys joins runtime
// calls only); PyTorch's record_function ranges (Kineto's user_annotation) are ranges as NVTX
// ranges are; a range is named by its text, without nsys's "domain:" prefix; a reader that
// knows no thread (0) matches any thread.
//
// Memory: one aggregate per (kernel name, API name) with at most Limits.MaxSamplesPerKernel
// sampled launches for the medians (a uniform reservoir beyond it), at most
// Limits.MaxKernelNames of them; the join itself uses the launch calls Collector already keeps
// (Limits.MaxLaunches) and holds only kernels read before their call (the Nsight Systems reader
// reads calls first). The projection uses the annotations and intervals already kept, and looks
// at most maxOpenRanges ranges open at once.

// Durations summarise one duration (ns) over launches or range instances.
type Durations struct {
	Total       int64 // the sum
	Avg, Median float64
	Min, Max    int64
}

// LaunchSummary is one row of cuda_kern_exec_sum: the kernels of one name launched by calls of
// one name.
type LaunchSummary struct {
	Kernel, API string
	// Count is the launches (kernels joined to their call); Queued those with a queue time.
	Count, Queued int64
	TotalTime     Durations // max(call end, kernel end) − call start
	APITime       Durations // call end − call start
	QueueTime     Durations // kernel start − call end, over the Queued launches
	KernelTime    Durations // kernel end − kernel start
	// MedianEstimated is set when more launches than Limits.MaxSamplesPerKernel were summarised.
	MedianEstimated bool
}

// RangeProjection is one row of nvtx_gpu_proj_sum: the instances of one range name that
// launched GPU work, projected onto it.
type RangeProjection struct {
	Name      string
	Instances int64
	RangeTime int64     // the instances' own (CPU) durations, summed
	Projected Durations // first GPU operation's start to the last one's end, per instance
	GPUOps    int64     // distinct launch calls of the operations, summed over the instances
}

const (
	// otherCalls names the calls past maxAPINames distinct names, and the call of the launches
	// folded into otherKernels.
	otherCalls = "(other calls)"
	// otherRanges names the ranges past Limits.MaxKernelNames distinct names.
	otherRanges = "(other ranges)"
	// maxAPINames bounds the distinct host call names kept; CUDA has a few hundred.
	maxAPINames = 1024
	// maxOpenRanges bounds the ranges open at once that the projection looks at for each call:
	// a thread's nesting, times the threads, is far below it.
	maxOpenRanges = 256
)

type launchKey struct{ kernel, api string }

// launchSample is one launch's phases, for the medians: the call, from the call's end to the
// kernel's start (negative when the kernel started first: no queueing), the kernel. A large
// trace keeps hundreds of thousands of them: the total is worked out, not kept.
type launchSample struct{ api, queue, kernel int64 }

// total is from the call's start to the later of the call's and the kernel's ends.
func (s launchSample) total() int64 { return max(s.api, s.api+s.queue+s.kernel) }

type launchGroup struct {
	api, queue, kernel, total durAgg
	samples                   []launchSample // all up to the cap, then a reservoir
}

// pendingKernel is a kernel read before its launch call.
type pendingKernel struct {
	name       string
	start, end int64
}

// durAgg is a count, sum, minimum and maximum.
type durAgg struct{ n, sum, min, max int64 }

func (d *durAgg) add(v int64) {
	if d.n == 0 || v < d.min {
		d.min = v
	}
	if d.n == 0 || v > d.max {
		d.max = v
	}
	d.n++
	d.sum += v
}

func (d durAgg) durations(samples []int64) Durations {
	if d.n == 0 {
		return Durations{}
	}
	return Durations{Total: d.sum, Avg: float64(d.sum) / float64(d.n), Median: median(samples), Min: d.min, Max: d.max}
}

// apiIndex interns a host call's name.
func (c *Collector) apiIndex(name string) int32 {
	if i, ok := c.apis[name]; ok {
		return i
	}
	if len(c.apiNames) >= maxAPINames {
		c.dropped.apiNames++
		name = otherCalls
		if i, ok := c.apis[name]; ok {
			return i
		}
	}
	i := int32(len(c.apiNames))
	c.apis[name] = i
	c.apiNames = append(c.apiNames, name)
	return i
}

// joinKernel joins a kernel (counted under name) to its launch call when the call was read,
// else keeps it until the call comes (joinPending) while the calls fit in the map.
func (c *Collector) joinKernel(a activity.Activity, name string) {
	if a.Correlation == 0 {
		c.noCall++
		return
	}
	if ln, ok := c.calls.get(joinID(a)); ok {
		c.addLaunch(name, ln, a.Start, a.End)
		return
	}
	// Once calls are left out (the map is full), a kernel whose call is not in the map most
	// likely had its call left out, before it: it waits for nothing.
	if c.pendingN >= c.limits.MaxLaunches || c.dropped.launches > 0 {
		c.dropped.joins++
		return
	}
	c.pending[joinID(a)] = append(c.pending[joinID(a)], pendingKernel{name, a.Start, a.End})
	c.pendingN++
}

// joinPending joins the kernels waiting for the call of correlation corr (a CUDA graph launch
// runs several), whether or not the call itself was kept.
func (c *Collector) joinPending(corr int64, ln hostCall) {
	ks, ok := c.pending[corr]
	if !ok {
		return
	}
	delete(c.pending, corr)
	c.pendingN -= len(ks)
	for _, k := range ks {
		c.addLaunch(k.name, ln, k.start, k.end)
	}
}

func (c *Collector) addLaunch(kernel string, ln hostCall, start, end int64) {
	key := launchKey{kernel, c.apiNames[ln.api]}
	g := c.launches[key]
	if g == nil {
		if len(c.launches) >= c.limits.MaxKernelNames {
			c.dropped.launchGroups++
			key = launchKey{otherKernels, otherCalls}
			g = c.launches[key]
		}
		if g == nil {
			g = &launchGroup{}
			c.launches[key] = g
		}
	}
	s := launchSample{api: ln.end - ln.start, queue: start - ln.end, kernel: end - start}
	g.api.add(s.api)
	g.kernel.add(s.kernel)
	g.total.add(s.total())
	if s.queue >= 0 {
		g.queue.add(s.queue)
	}
	if len(g.samples) < c.limits.MaxSamplesPerKernel {
		g.samples = append(g.samples, s)
		return
	}
	c.dropped.launchSamples++
	if j := c.launchRng.Int64N(g.total.n); j < int64(len(g.samples)) {
		g.samples[j] = s
	}
}

// launchSummary is cuda_kern_exec_sum's table, ordered by the total time's average.
func (c *Collector) launchSummary() []LaunchSummary {
	out := make([]LaunchSummary, 0, len(c.launches))
	var api, queue, kernel, total []int64
	for key, g := range c.launches {
		api, queue, kernel, total = api[:0], queue[:0], kernel[:0], total[:0]
		for _, s := range g.samples {
			api, kernel, total = append(api, s.api), append(kernel, s.kernel), append(total, s.total())
			if s.queue >= 0 {
				queue = append(queue, s.queue)
			}
		}
		out = append(out, LaunchSummary{Kernel: key.kernel, API: key.api, Count: g.total.n, Queued: g.queue.n,
			TotalTime: g.total.durations(total), APITime: g.api.durations(api),
			QueueTime: g.queue.durations(queue), KernelTime: g.kernel.durations(kernel),
			MedianEstimated: int64(len(g.samples)) < g.total.n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].TotalTime.Avg != out[j].TotalTime.Avg {
			return out[i].TotalTime.Avg > out[j].TotalTime.Avg
		}
		if out[i].Kernel != out[j].Kernel {
			return out[i].Kernel < out[j].Kernel
		}
		return out[i].API < out[j].API
	})
	return out
}

// projOp is a GPU activity joined to its launch call, for the projection.
type projOp struct {
	callStart, callEnd, thread int64
	iv                         int32
}

// rangeProj is one range instance's projection so far.
type rangeProj struct{ start, end, lastCorr, ops int64 }

// rangeProjections is nvtx_gpu_proj_sum's table. It needs c.ivals and sorts c.annots by start;
// it returns the ranges left out (more than maxOpenRanges open at once) and the instances
// folded into otherRanges (past Limits.MaxKernelNames names).
//
// A sweep: the operations by their call's start, the ranges by theirs; a range opens when the
// sweep reaches its start and closes for good once a call starts after its end.
func (c *Collector) rangeProjections() (out []RangeProjection, leftOut, folded int64) {
	if len(c.annots) == 0 {
		return nil, 0, 0
	}
	sort.SliceStable(c.annots, func(i, j int) bool { return c.annots[i].start < c.annots[j].start })
	ops := make([]projOp, 0, c.ivals.len())
	for i, iv := range c.ivals.all() {
		ln, ok := c.callOf(iv)
		if !ok {
			continue
		}
		ops = append(ops, projOp{callStart: ln.start, callEnd: ln.end, thread: c.threadOf(ln), iv: int32(i)})
	}
	// By call, and the operations of one call (a graph launch's kernels) together.
	sort.Slice(ops, func(i, j int) bool {
		if ops[i].callStart != ops[j].callStart {
			return ops[i].callStart < ops[j].callStart
		}
		return c.ivals.at(int(ops[i].iv)).correlation < c.ivals.at(int(ops[j].iv)).correlation
	})
	proj := make([]rangeProj, len(c.annots))
	var open []int32
	next := 0
	for _, op := range ops {
		for ; next < len(c.annots) && c.annots[next].start <= op.callStart; next++ {
			if len(open) >= maxOpenRanges {
				leftOut++
				continue
			}
			open = append(open, int32(next))
		}
		iv := *c.ivals.at(int(op.iv))
		kept := open[:0]
		for _, ai := range open {
			a := &c.annots[ai]
			if a.end < op.callStart {
				continue // no later call starts inside it
			}
			kept = append(kept, ai)
			if a.end < op.callEnd || a.thread != 0 && op.thread != 0 && a.thread != op.thread {
				continue
			}
			p := &proj[ai]
			switch {
			case p.ops == 0:
				*p = rangeProj{start: iv.start, end: iv.end, lastCorr: iv.correlation, ops: 1}
			default:
				p.start, p.end = min(p.start, iv.start), max(p.end, iv.end)
				if iv.correlation != p.lastCorr {
					p.ops++
					p.lastCorr = iv.correlation
				}
			}
		}
		open = kept
	}

	type rangeAgg struct {
		instances, rangeTime, ops int64
		proj                      durAgg
		durs                      []int64
	}
	byName := map[string]*rangeAgg{}
	for i, a := range c.annots {
		p := proj[i]
		if p.ops == 0 {
			continue
		}
		name := a.name
		g := byName[name]
		if g == nil {
			if len(byName) >= c.limits.MaxKernelNames {
				folded++
				name = otherRanges
				g = byName[name]
			}
			if g == nil {
				g = &rangeAgg{}
				byName[name] = g
			}
		}
		g.instances++
		g.rangeTime += a.end - a.start
		g.ops += p.ops
		g.proj.add(p.end - p.start)
		g.durs = append(g.durs, p.end-p.start)
	}
	out = make([]RangeProjection, 0, len(byName))
	for name, g := range byName {
		out = append(out, RangeProjection{Name: name, Instances: g.instances, RangeTime: g.rangeTime,
			Projected: g.proj.durations(g.durs), GPUOps: g.ops})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Projected.Total != out[j].Projected.Total {
			return out[i].Projected.Total > out[j].Projected.Total
		}
		return out[i].Name < out[j].Name
	})
	return out, leftOut, folded
}

// launchNotices say what the per-launch figures and the projection leave out.
func (c *Collector) launchNotices(n *notices.List) {
	switch unjoined := int64(c.pendingN) + c.noCall + c.dropped.joins; {
	case unjoined > 0 && c.dropped.launches > 0:
		n.Warnf("%d kernels found no launch call to join (more than %d launch calls: %d were not kept): the per-launch figures leave them out", unjoined, c.limits.MaxLaunches, c.dropped.launches)
	case c.dropped.joins > 0:
		n.Warnf("%d kernels found no launch call to join (%d of them past the %d kept waiting for their call): the per-launch figures leave them out", unjoined, c.dropped.joins, c.limits.MaxLaunches)
	case unjoined > 0:
		n.Infof("%d kernels have no launch call in the trace (joined on correlation): the per-launch figures leave them out, as cuda_kern_exec_sum does", unjoined)
	}
	if c.dropped.launchGroups > 0 {
		n.Warnf("more than %d kernel and launch call names: %d launches folded into %q", c.limits.MaxKernelNames, c.dropped.launchGroups, otherKernels)
	}
	if c.dropped.apiNames > 0 {
		n.Warnf("more than %d distinct host call names: %d calls named %q", maxAPINames, c.dropped.apiNames, otherCalls)
	}
	if c.dropped.launchSamples > 0 {
		n.Warnf("kernels launched more than %d times by one call name: their per-launch medians are estimated from a sample of %d", c.limits.MaxSamplesPerKernel, c.limits.MaxSamplesPerKernel)
	}
	if c.dropped.openRanges > 0 {
		n.Warnf("more than %d ranges open at once: %d ranges left out of the GPU projection", maxOpenRanges, c.dropped.openRanges)
	}
	if c.dropped.rangeNames > 0 {
		n.Warnf("more than %d distinct range names: %d range instances folded into %q", c.limits.MaxKernelNames, c.dropped.rangeNames, otherRanges)
	}
}
