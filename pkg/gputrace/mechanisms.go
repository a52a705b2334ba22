package gputrace

import (
	"cmp"
	"slices"
	"sort"
)

// IdleMechanisms splits the time a GPU did no kernel work into what it waited for, so that a
// request's GPU idle time comes with one remedy instead of all of them. Every stretch between
// two busy stretches of a device (kernels, copies and memsets on any of its streams) goes to
// exactly one mechanism, tested in this order:
//
//   - Queued (queued behind other work on the GPU): the next activity had already been
//     launched when the gap began and still did not start for more than QueueLatency: the GPU
//     had the request's work and ran something else, work this trace does not hold (another
//     process or container on the same GPU: time-slicing, MPS, or two pods on one device).
//   - Sync (host synchronisation): a blocking call (cudaStreamSynchronize,
//     cudaDeviceSynchronize, cudaEventSynchronize, a blocking cudaMemcpy, their driver forms and
//     CUPTI's blocking cuda_sync records; not cudaEventQuery, not cudaStreamWaitEvent) was in
//     progress when the gap began, or had returned at most SyncSlack before: the host waited for
//     the GPU to drain, so the GPU then waited for the host to launch again.
//   - Launch (launch and dispatch overhead): the next activity had already been launched when
//     the gap began (the GPU's own launch latency between queued work, at most QueueLatency),
//     or the host spent at least half of the gap inside launch calls (launches back to back,
//     the kernels shorter than them), or, on the thread that launched the next activity,
//     inside CPU operators that launch GPU work and their launch calls, for at most
//     MaxDispatchGap: each op's dispatch (argument checks, allocation, the launch) takes longer
//     than its kernel runs, so the GPU waits one op's dispatch per kernel (DispatchGaps counts
//     these gaps).
//   - HostWork: anything else: the host was neither synchronising nor launching nor dispatching
//     ops that launch (its own CPU work in ops that launch nothing, Python, I/O, a lock), or the
//     next activity's launch call is not in the trace.
//
// Copies is the time only copies or memsets ran on the device (no kernel at the same time),
// counted once however many copies overlap: GPU time that is not kernel work.
//
// All figures are nanoseconds; the gaps are counted per mechanism.
type IdleMechanisms struct {
	Sync, Launch, HostWork, Copies, Queued         int64
	SyncGaps, LaunchGaps, HostWorkGaps, QueuedGaps int64
	// DispatchGaps are the launch gaps the host spent dispatching the op that launched the next
	// activity (included in LaunchGaps).
	DispatchGaps int64
}

// QueueLatency is the longest a free GPU takes to start work already queued on it (its own
// launch latency between queued work is 1–5 µs): a longer gap with the request's next work
// queued means the GPU was running other work.
const QueueLatency = 20_000

// MaxDispatchGap is the longest gap one op's dispatch explains: eager frameworks spend tens of
// µs per op (Python, the dispatcher, argument checks, the output's allocation, the launch). An
// op that holds the host longer before it launches does work of its own (cuDNN's autotuning or
// first-call initialisation, a compile, a host-side loop): host work, not launch overhead.
const MaxDispatchGap = 1_000_000

// SyncSlack is how long before a gap's start a blocking call may have returned and still count
// as the gap's cause: the call returns as the GPU finishes, and host and GPU timestamps come from
// different clocks.
const SyncSlack = 5_000

// Total is all the time the mechanisms explain.
func (m IdleMechanisms) Total() int64 { return m.Sync + m.Launch + m.HostWork + m.Copies + m.Queued }

// Add adds o to m.
func (m *IdleMechanisms) Add(o IdleMechanisms) {
	m.Sync += o.Sync
	m.Launch += o.Launch
	m.HostWork += o.HostWork
	m.Copies += o.Copies
	m.Queued += o.Queued
	m.SyncGaps += o.SyncGaps
	m.LaunchGaps += o.LaunchGaps
	m.HostWorkGaps += o.HostWorkGaps
	m.QueuedGaps += o.QueuedGaps
	m.DispatchGaps += o.DispatchGaps
}

// Sub takes o from m (an annotation's share from its request's), never below zero.
func (m IdleMechanisms) Sub(o IdleMechanisms) IdleMechanisms {
	sub := func(a, b int64) int64 { return max(a-b, 0) }
	return IdleMechanisms{
		Sync: sub(m.Sync, o.Sync), Launch: sub(m.Launch, o.Launch), HostWork: sub(m.HostWork, o.HostWork), Copies: sub(m.Copies, o.Copies),
		Queued:   sub(m.Queued, o.Queued),
		SyncGaps: sub(m.SyncGaps, o.SyncGaps), LaunchGaps: sub(m.LaunchGaps, o.LaunchGaps), HostWorkGaps: sub(m.HostWorkGaps, o.HostWorkGaps),
		QueuedGaps: sub(m.QueuedGaps, o.QueuedGaps), DispatchGaps: sub(m.DispatchGaps, o.DispatchGaps),
	}
}

// hostIntervals answers "was the host in one of these calls at t" over intervals sorted by
// start, with the running maximum of their ends.
type hostIntervals struct {
	iv     []launch // sorted by start
	maxEnd []int64  // maxEnd[i] = max(iv[0..i].end)
}

// newHostIntervals sorts iv in place.
func newHostIntervals(iv []launch) hostIntervals {
	slices.SortFunc(iv, byStart)
	h := hostIntervals{iv: iv, maxEnd: make([]int64, len(iv))}
	for i, x := range iv {
		h.maxEnd[i] = x.end
		if i > 0 {
			h.maxEnd[i] = max(h.maxEnd[i-1], x.end)
		}
	}
	return h
}

// runningAt says whether a call started at or before t and ended at or after t-slack.
func (h hostIntervals) runningAt(t, slack int64) bool {
	i := sort.Search(len(h.iv), func(i int) bool { return h.iv[i].start > t }) - 1
	return i >= 0 && h.maxEnd[i] >= t-slack
}

func byStart(a, b launch) int { return cmp.Compare(a.start, b.start) }

// union is the time some intervals covered: their merged stretches, sorted.
type union []launch

// newUnion merges iv in place (sorted by start first): the union takes iv's array, so that the
// analyses of a large trace need no second copy of its intervals.
func newUnion(iv []launch) union {
	slices.SortFunc(iv, byStart)
	var u union = iv[:0]
	for _, x := range iv {
		u = u.with(x)
	}
	return u
}

// with adds x, which starts at or after every stretch of u.
func (u union) with(x launch) union {
	if n := len(u); n > 0 && x.start <= u[n-1].end {
		u[n-1].end = max(u[n-1].end, x.end)
		return u
	}
	return append(u, x)
}

// covered is how much of [a, b) the union covers.
func (u union) covered(a, b int64) int64 {
	i := sort.Search(len(u), func(i int) bool { return u[i].end > a })
	var sum int64
	for ; i < len(u) && u[i].start < b; i++ {
		sum += min(u[i].end, b) - max(u[i].start, a)
	}
	return sum
}

// idleMechanisms walks each device's timeline (c.ivals sorted by start) and splits its gaps and
// copy-only time by mechanism: for the file, and for the annotation (inner) and request (traced)
// whose work a gap lies between (a copy's time goes to its own).
func (c *Collector) idleMechanisms(inner, traced []int32, annots []AnnotationKernels, traces []TraceKernelTime) IdleMechanisms {
	calls := append([]launch(nil), c.blocking...)
	for _, r := range c.syncRecords {
		if c.standsForACall(r) {
			calls = append(calls, launch{r.start, r.end})
		}
	}
	blocking := newHostIntervals(calls)
	launched := make([]launch, 0, c.ivals.len())
	for _, iv := range c.ivals.all() {
		if ln, ok := c.callOf(iv); ok {
			launched = append(launched, launch{ln.start, ln.end})
		}
	}
	launches := newUnion(launched)
	dispatch := c.dispatchIntervals()
	traceIndex := map[string]int{}
	for i, t := range traces {
		traceIndex[t.TraceID] = i
	}
	var file IdleMechanisms
	// add puts m on the file, and on the annotation and request of activity k when activity
	// next belongs to them too (a gap between a request's work and other work is not the
	// request's).
	add := func(k, next int, m IdleMechanisms) {
		file.Add(m)
		if i := inner[k]; i >= 0 && int(i) < len(annots) && inner[next] == i {
			annots[i].Idle.Add(m)
		}
		if i := traced[k]; i >= 0 && int(i) < len(annots) && traced[next] >= 0 && annots[traced[next]].TraceID == annots[i].TraceID {
			if t, ok := traceIndex[annots[i].TraceID]; ok {
				traces[t].Idle.Add(m)
			}
		}
	}
	type device struct {
		last      int   // the activity ending last so far
		end       int64 // the busy stretch's end
		copyUntil int64 // copy-only time is counted up to here
	}
	devices := map[int32]*device{}
	kernels := kernelUnions(&c.ivals)
	for k, iv := range c.ivals.all() {
		d := devices[iv.device]
		if d == nil {
			d = &device{last: k, end: iv.end}
			devices[iv.device] = d
		} else if iv.start > d.end {
			a, b := d.end, iv.start
			var m IdleMechanisms
			ln, launchedAt := c.callOf(iv)
			switch {
			case launchedAt && ln.end <= a && b-a > QueueLatency:
				m.Queued, m.QueuedGaps = b-a, 1
			case blocking.runningAt(a, SyncSlack):
				m.Sync, m.SyncGaps = b-a, 1
			case launchedAt && ln.end <= a, launchedAt && 2*launches.covered(a, b) >= b-a:
				m.Launch, m.LaunchGaps = b-a, 1
			case launchedAt && b-a <= MaxDispatchGap && 2*dispatch[c.threadOf(ln)].covered(a, b) >= b-a:
				m.Launch, m.LaunchGaps, m.DispatchGaps = b-a, 1, 1
			default:
				m.HostWork, m.HostWorkGaps = b-a, 1
			}
			add(d.last, k, m)
		}
		if iv.end > d.end {
			d.end, d.last = iv.end, k
		}
		if iv.class == ClassMemory {
			from := max(iv.start, d.copyUntil)
			if only := iv.end - from - kernels[iv.device].covered(from, iv.end); iv.end > from && only > 0 {
				add(k, k, IdleMechanisms{Copies: only})
			}
			d.copyUntil = max(d.copyUntil, iv.end)
		}
	}
	return file
}

// dispatchIntervals are, per host thread, the time spent dispatching GPU work: the CPU
// operators that launched a GPU activity (any launch call of one starts inside them, at any
// depth: aten::linear as well as the aten::addmm inside it) and the launch calls themselves.
func (c *Collector) dispatchIntervals() map[int64]union {
	// Each thread's slice is sized at once (its calls, and at most all its ops), so that no
	// append copies it.
	room := map[int64]int{}
	for _, iv := range c.ivals.all() {
		if ln, ok := c.callOf(iv); ok {
			room[c.threadOf(ln)]++
		}
	}
	if len(room) == 0 {
		return nil
	}
	for _, op := range c.ops {
		if _, ok := room[op.thread]; ok {
			room[op.thread]++
		}
	}
	by := make(map[int64][]launch, len(room))
	for th, n := range room {
		by[th] = make([]launch, 0, n)
	}
	for _, iv := range c.ivals.all() {
		if ln, ok := c.callOf(iv); ok {
			th := c.threadOf(ln)
			by[th] = append(by[th], launch{ln.start, ln.end})
		}
	}
	calls := make(map[int64]int, len(by)) // how many of a thread's intervals are calls
	for th, cs := range by {
		slices.SortFunc(cs, byStart)
		calls[th] = len(cs)
	}
	for _, op := range c.ops {
		cs, ok := by[op.thread]
		if !ok {
			continue
		}
		cs = cs[:calls[op.thread]]
		if i, _ := slices.BinarySearchFunc(cs, op.start, func(x launch, t int64) int { return cmp.Compare(x.start, t) }); i < len(cs) && cs[i].start <= op.end {
			by[op.thread] = append(by[op.thread], launch{op.start, op.end})
		}
	}
	out := make(map[int64]union, len(by))
	for th, iv := range by {
		out[th] = newUnion(iv)
	}
	return out
}

// kernelUnions are, per device, the time compute and communication kernels ran; ivals sorted
// by start.
func kernelUnions(ivals *chunked[interval]) map[int32]union {
	out := map[int32]union{}
	for _, iv := range ivals.all() {
		if iv.class != ClassMemory {
			out[iv.device] = out[iv.device].with(launch{iv.start, iv.end})
		}
	}
	return out
}
