package gputrace

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

// The critical path of the GPU work follows Holistic Trace Analysis' lightweight critical path
// (facebookresearch/HolisticTraceAnalysis, hta/analyzers/critical_path_analysis.py, class
// CPGraph; docs "Lightweight Critical Path Analysis"): CPU operators, runtime calls, kernels,
// copies and synchronisations as one graph whose nodes are the start and end of each event, and
// the longest path through it. Where this code departs from HTA, the comment says so.

// HTA's edge types (CPEdgeType) and bound_by classes (bound_by()), by their names there.
const (
	EdgeOperator         = "critical_path_operator"
	EdgeDependency       = "critical_path_dependency"
	EdgeLaunchDelay      = "critical_path_kernel_launch_delay"
	EdgeKernelKernel     = "critical_path_kernel_kernel_delay"
	EdgeSyncDependency   = "critical_path_sync_dependency"
	BoundCPU             = "cpu_bound"
	BoundGPUCompute      = "gpu_compute_bound"
	BoundGPUComm         = "gpu_communication_bound"
	BoundKernelKernel    = "gpu_kernel_kernel_overhead"
	BoundLaunch          = "gpu_kernel_launch_overhead"
	BoundNone            = "" // dependency and sync edges: no weight
	defaultMaxPathEvents = 1_000_000
)

// Verdicts, chosen by the largest of CriticalPath's four shares.
const (
	VerdictCPU    = "CPU-bound"
	VerdictGPU    = "GPU-bound"
	VerdictSync   = "waiting on synchronisation"
	VerdictCopies = "waiting on copies"
)

// PathPart is the path's time of one HTA bound_by class.
type PathPart struct {
	BoundBy string
	Time    int64   // ns
	Share   float64 // percent of the path's length
}

// PathSegment is one event's time on the path (the edges HTA attributes to it, summed).
type PathSegment struct {
	What    string // the event's name; "launch delay → <kernel>" for a launch delay
	Where   string // "thread 1234", "GPU 0 stream 7"
	BoundBy string
	Start   int64 // the first of its edges' start, ns
	Time    int64 // ns
}

// CriticalPath is the longest path through the trace's graph and what it is made of.
type CriticalPath struct {
	Length int64 // ns: the path's summed weights
	Nodes  int   // nodes on the path (HTA's len(critical_path_nodes))
	// Composition is the path's time by HTA's bound_by, largest first (zero-weight classes left
	// out); Edges counts the path's edges by HTA's edge type.
	Composition []PathPart
	Edges       map[string]int
	// CPU, GPU, Sync and Copies split Length for the verdict (not HTA's): CPU is cpu_bound and
	// gpu_kernel_launch_overhead, GPU the kernels and the gaps between them, Copies the memcpys
	// and memsets (HTA counts them as gpu_compute_bound), Sync the host time (cpu_bound and
	// launch overhead) from the moment the path came back from the GPU through a
	// synchronisation to the moment it reaches the GPU again: the GPU had nothing queued
	// because the host synchronised.
	CPU, GPU, Sync, Copies int64
	Segments               []PathSegment // the longest, at most 10
	Verdict                string
	VerdictLine            string
	// SyncEdges are the path graph's sync dependency edges (on the path or not), as "source →
	// destination" correlation pairs, for tests and debugging.
	SyncEdges  [][2]int64
	GraphEdges int
}

// Share returns part as a percentage of the path's length.
func (p *CriticalPath) Share(part int64) float64 {
	if p == nil || p.Length == 0 {
		return 0
	}
	return 100 * float64(part) / float64(p.Length)
}

// cpEvent is one host call or GPU activity kept for the graph.
type cpEvent struct {
	start, end, corr int64
	thread           int64 // host only
	device, stream   int32 // GPU only
	name             int32 // index in pathData.names
	kind             activity.Kind
}

func (e *cpEvent) gpu() bool {
	return e.kind == activity.KindKernel || e.kind == activity.KindMemcpy || e.kind == activity.KindMemset
}

// cpSync is a cuda_sync record.
type cpSync struct {
	start, end, corr, waitCorr int64
	device, stream, waitStream int32
	name                       string
}

// pathData is what the Collector keeps for the critical path: every host call (cpu_op,
// runtime, driver), GPU activity and cuda_sync record, up to Limits.MaxPathEvents in all.
type pathData struct {
	events  []cpEvent
	syncs   []cpSync
	names   []string
	nameIdx map[string]int32
	over    bool // more than the cap: no path
}

const maxPathNames = 100_000

func (p *pathData) add(c *Collector, a activity.Activity) {
	if p.over {
		return
	}
	switch a.Kind {
	case activity.KindCPUOp, activity.KindRuntime, activity.KindDriver, activity.KindKernel, activity.KindMemcpy, activity.KindMemset, activity.KindSync:
	default:
		return
	}
	if len(p.events)+len(p.syncs) >= c.limits.MaxPathEvents {
		p.over, p.events, p.syncs, p.names, p.nameIdx = true, nil, nil, nil, nil
		return
	}
	if a.Kind == activity.KindSync {
		p.syncs = append(p.syncs, cpSync{a.Start, a.End, a.Correlation, a.WaitCorrelation, a.Device, a.Stream, a.WaitStream, a.Name})
		return
	}
	if p.nameIdx == nil {
		p.nameIdx = map[string]int32{}
	}
	n, ok := p.nameIdx[a.Name]
	if !ok {
		if len(p.names) >= maxPathNames {
			n = -1
		} else {
			n = int32(len(p.names))
			p.names = append(p.names, a.Name)
			p.nameIdx[a.Name] = n
		}
	}
	e := cpEvent{start: a.Start, end: a.End, corr: joinID(a), name: n, kind: a.Kind}
	if e.gpu() {
		e.device, e.stream = a.Device, a.Stream
	} else {
		e.thread = a.Thread
	}
	p.events = append(p.events, e)
}

func (p *pathData) name(i int32) string {
	if i < 0 || int(i) >= len(p.names) {
		return "(other)"
	}
	return p.names[i]
}

// htaBlocking is CPGraph.BLOCKING_SYNC_CALLS: the exit edge of these calls weighs nothing, so
// that the time the host spends in them reaches the path only through the GPU work they wait
// for (the sync edge).
func htaBlocking(name string) bool {
	switch name {
	case "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventQuery", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpyAsync":
		return true
	}
	return isSyncCall(name)
}

type cpEdge struct {
	u, v   int32 // node = 2*event (start) or 2*event+1 (end)
	weight int64
	typ    uint8
	attr   int32 // event the edge is attributed to, -1 none
	sync   bool  // a synchronisation brought the path back to the host (not a copy's return)
}

const (
	eOperator uint8 = iota
	eDependency
	eLaunch
	eKernelKernel
	eSync
)

var edgeNames = [...]string{EdgeOperator, EdgeDependency, EdgeLaunchDelay, EdgeKernelKernel, EdgeSyncDependency}

type cpGraph struct {
	p     *pathData
	ev    []cpEvent
	edges []cpEdge
	neg   int64 // negative weights set to 0, as HTA does
	syncs [][2]int64
}

func node(ev int, end bool) int32 {
	if end {
		return int32(2*ev + 1)
	}
	return int32(2 * ev)
}

func (g *cpGraph) ts(n int32) int64 {
	e := &g.ev[n/2]
	if n%2 == 1 {
		return e.end
	}
	return e.start
}

// add is CPGraph._add_edge_helper: dependency and sync edges and zero_weight ones weigh
// nothing, the others the time between their nodes.
func (g *cpGraph) add(u, v int32, typ uint8, zero bool, attr int32) {
	if u == v {
		return
	}
	var w int64
	if typ != eDependency && typ != eSync && !zero {
		w = g.ts(v) - g.ts(u)
		if w < 0 {
			// CPGraph._validate_graph: a negative weight is logged and set to 0.
			g.neg++
			w = 0
		}
	}
	g.edges = append(g.edges, cpEdge{u: u, v: v, weight: w, typ: typ, attr: attr})
}

// criticalPath builds the graph and finds its longest path; ok is false, with a reason, when
// there is none to give.
func (c *Collector) criticalPath() (*CriticalPath, string) {
	p := &c.path
	if p.over {
		return nil, fmt.Sprintf("more than %d host calls, GPU activities and cuda_sync records (Limits.MaxPathEvents): the critical path was not computed", c.limits.MaxPathEvents)
	}
	g := &cpGraph{p: p, ev: p.events}
	hasGPU := false
	for i := range g.ev {
		hasGPU = hasGPU || g.ev[i].gpu()
	}
	if !hasGPU {
		return nil, ""
	}
	g.hostEdges()
	g.gpuEdges(p.syncs)
	cp, ok := g.longest()
	if !ok {
		return nil, "the critical path graph has a cycle (timestamps out of order): the critical path was not computed"
	}
	cp.SyncEdges = g.syncs
	cp.GraphEdges = len(g.edges)
	if g.neg > 0 {
		c.Notice("critical path: %d edges ran backwards in time and were given no weight, as HTA does", g.neg)
	}
	return cp, ""
}

// hostEdges is CPGraph._construct_graph_from_call_stack on each host thread: a depth-first walk
// of the nested calls links each node to the next, consecutive top-level calls by a dependency
// edge (the time between them is not on the path), and a blocking call's exit edge weighs
// nothing. Calls that overlap without nesting close the open one first.
func (g *cpGraph) hostEdges() {
	var host []int
	for i := range g.ev {
		if !g.ev[i].gpu() {
			host = append(host, i)
		}
	}
	sort.SliceStable(host, func(a, b int) bool {
		x, y := &g.ev[host[a]], &g.ev[host[b]]
		if x.thread != y.thread {
			return x.thread < y.thread
		}
		if x.start != y.start {
			return x.start < y.start
		}
		return x.end > y.end
	})
	var stack []int
	var last int32 = -1
	var lastTop int32 = -1
	var lastParent int32 = -1
	thread := int64(0)
	exit := func() {
		ev := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		end := node(ev, true)
		if last >= 0 {
			g.add(last, end, eOperator, htaBlocking(g.p.name(g.ev[ev].name)), g.attribute(last, end, lastParent))
		}
		if len(stack) == 0 {
			last, lastTop = -1, end
		} else {
			last, lastParent = end, int32(stack[len(stack)-1])
		}
	}
	for k, ev := range host {
		e := &g.ev[ev]
		if k == 0 || e.thread != thread {
			for len(stack) > 0 {
				exit()
			}
			thread, last, lastTop, lastParent = e.thread, -1, -1, -1
		}
		for len(stack) > 0 && !(e.start >= g.ev[stack[len(stack)-1]].start && e.end <= g.ev[stack[len(stack)-1]].end) {
			exit()
		}
		start := node(ev, false)
		if len(stack) == 0 && lastTop >= 0 {
			g.add(lastTop, start, eDependency, false, -1)
		}
		if last >= 0 {
			g.add(last, start, eOperator, false, g.attribute(last, start, lastParent))
		}
		last = start
		lastParent = -1
		if len(stack) > 0 {
			lastParent = int32(stack[len(stack)-1])
		}
		stack = append(stack, ev)
	}
	for len(stack) > 0 {
		exit()
	}
}

// attribute is CPGraph._attribute_edge for operator edges: from a start node to the source's
// event, to an end node the destination's, from an end to a start the enclosing call's.
func (g *cpGraph) attribute(u, v int32, parent int32) int32 {
	switch {
	case u%2 == 0:
		return u / 2
	case v%2 == 1:
		return v / 2
	default:
		return parent
	}
}

type streamKey struct{ device, stream int32 }

// gpuEdges is CPGraph._construct_graph_from_kernels: GPU activities by start and cuda_sync
// records by end, in one walk; each activity gets its own edge, then a launch delay edge from
// its launch call when its stream was idle when the call began, else a kernel-kernel edge from
// the stream's previous activity; a Stream Wait Event adds a GPU→GPU sync edge to the next
// activity launched on its stream; Context Sync, Stream Sync and Event Sync add an edge from the
// GPU activity they waited for to their call's end.
//
// Departures from HTA: the launch rule tests the stream's previous activity's end against the
// call's start instead of HTA's queue-length series (the same condition for one host thread);
// and a blocking copy call (cudaMemcpy, or a cudaMemcpyAsync that returned only after its copy
// ended, as pageable copies do) gets an edge from its copy's end to its own end, which HTA lacks
// (it zeroes the call's weight, so the copy's time would leave the path).
func (g *cpGraph) gpuEdges(syncs []cpSync) {
	hostByCorr := map[int64]int{}
	gpuByCorr := map[int64]int{}
	var gpus []int
	for i := range g.ev {
		e := &g.ev[i]
		if e.corr == 0 {
			if e.gpu() {
				gpus = append(gpus, i)
			}
			continue
		}
		if e.gpu() {
			gpus = append(gpus, i)
			gpuByCorr[e.corr] = i
		} else {
			hostByCorr[e.corr] = i
		}
	}
	// Launch calls per stream and per (thread, stream), by start: _get_cuda_runtime_calls_df.
	type threadStream struct {
		thread int64
		s      streamKey
	}
	byStream := map[streamKey][]int{}
	byThread := map[threadStream][]int{}
	for corr, k := range gpuByCorr {
		h, ok := hostByCorr[corr]
		if !ok {
			continue
		}
		s := streamKey{g.ev[k].device, g.ev[k].stream}
		byStream[s] = append(byStream[s], h)
		byThread[threadStream{g.ev[h].thread, s}] = append(byThread[threadStream{g.ev[h].thread, s}], h)
	}
	byStart := func(xs []int) {
		sort.Slice(xs, func(a, b int) bool {
			if g.ev[xs[a]].start != g.ev[xs[b]].start {
				return g.ev[xs[a]].start < g.ev[xs[b]].start
			}
			return xs[a] < xs[b]
		})
	}
	for _, xs := range byStream {
		byStart(xs)
	}
	for _, xs := range byThread {
		byStart(xs)
	}
	// _get_cuda_event_record_df: the GPU activity an event recorded on (device, stream) waits
	// for is that of the last launch on that stream before the cudaEventRecord call.
	recorded := func(recordCorr int64, device, stream int32) (int, bool) {
		rec, ok := hostByCorr[recordCorr]
		if !ok || recordCorr <= 0 {
			return 0, false
		}
		xs := byStream[streamKey{device, stream}]
		i := sort.Search(len(xs), func(i int) bool { return g.ev[xs[i]].start > g.ev[rec].start }) - 1
		if i < 0 {
			return 0, false
		}
		k, ok := gpuByCorr[g.ev[xs[i]].corr]
		return k, ok
	}
	kernelSync := map[int]int{} // destination activity → source activity
	type item struct {
		at   int64
		gpu  int // index in g.ev, or -1
		sync int // index in syncs
	}
	items := make([]item, 0, len(gpus)+len(syncs))
	for _, k := range gpus {
		items = append(items, item{g.ev[k].start, k, -1})
	}
	for i := range syncs {
		items = append(items, item{syncs[i].end, -1, i})
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].at < items[b].at })
	last := map[streamKey]int32{}
	var lastOrder []streamKey
	syncEdge := func(from int32, call int) {
		g.add(from, node(call, true), eSync, false, -1)
		g.edges[len(g.edges)-1].sync = true
		g.syncs = append(g.syncs, [2]int64{g.ev[from/2].corr, g.ev[call].corr})
	}
	for _, it := range items {
		if it.gpu < 0 {
			r := &syncs[it.sync]
			call, ok := hostByCorr[r.corr]
			switch r.name {
			case "Stream Wait Event":
				// The next launch on the waiting stream from the cudaStreamWaitEvent's thread.
				if !ok {
					continue
				}
				src, found := recorded(r.waitCorr, r.device, r.waitStream)
				if !found {
					continue
				}
				xs := byThread[threadStream{g.ev[call].thread, streamKey{r.device, r.stream}}]
				i := sort.Search(len(xs), func(i int) bool { return g.ev[xs[i]].start >= g.ev[call].start })
				if i < len(xs) {
					if dst, ok := gpuByCorr[g.ev[xs[i]].corr]; ok {
						kernelSync[dst] = src
					}
				}
			case "Event Sync":
				if !ok {
					continue
				}
				if src, found := recorded(r.waitCorr, r.device, r.waitStream); found && g.ev[src].start <= g.ev[call].end {
					syncEdge(node(src, true), call)
				}
			case "Context Sync":
				if !ok {
					continue
				}
				for _, s := range lastOrder {
					if s.device == r.device || r.device < 0 {
						syncEdge(last[s], call)
					}
				}
			case "Stream Sync":
				if n, has := last[streamKey{r.device, r.stream}]; ok && has {
					syncEdge(n, call)
				}
			}
			continue
		}
		k := it.gpu
		e := &g.ev[k]
		s := streamKey{e.device, e.stream}
		start, end := node(k, false), node(k, true)
		g.add(start, end, eOperator, false, int32(k))
		var syncEnd int32 = -1
		if src, ok := kernelSync[k]; ok && src != k {
			syncEnd = node(src, true)
			g.add(syncEnd, start, eSync, false, -1)
			g.syncs = append(g.syncs, [2]int64{g.ev[src].corr, e.corr})
			delete(kernelSync, k)
		}
		prev, hasPrev := last[s]
		call, launched := hostByCorr[e.corr]
		launched = launched && e.corr != 0
		switch {
		case launched && (!hasPrev || g.ts(prev) < g.ev[call].start) && (syncEnd < 0 || g.ts(syncEnd) < g.ev[call].start):
			g.add(node(call, false), start, eLaunch, false, int32(k))
		case hasPrev && (syncEnd < 0 || g.ts(syncEnd) < g.ts(prev)):
			g.add(prev, start, eKernelKernel, false, prev/2)
		}
		if launched && e.kind == activity.KindMemcpy && htaBlocking(g.p.name(g.ev[call].name)) && g.ev[call].end >= e.end {
			g.add(end, node(call, true), eSync, false, -1)
		}
		if !hasPrev {
			lastOrder = append(lastOrder, s)
		}
		last[s] = end
	}
	if len(syncs) == 0 {
		g.blockingSyncEdges(gpus, syncEdge)
	}
}

// blockingSyncEdges stands in for cuda_sync records where a trace has none (Nsight Systems
// exports have none): a blocking synchronisation call (cudaStreamSynchronize,
// cudaDeviceSynchronize, cudaEventSynchronize, their driver forms) returned when the GPU work it
// waited for finished, so the last GPU activity to end while the call waited gets a sync edge
// to the call's end.
func (g *cpGraph) blockingSyncEdges(gpus []int, syncEdge func(from int32, call int)) {
	byEnd := append([]int(nil), gpus...)
	sort.Slice(byEnd, func(a, b int) bool { return g.ev[byEnd[a]].end < g.ev[byEnd[b]].end })
	for i := range g.ev {
		e := &g.ev[i]
		if e.gpu() || (e.kind != activity.KindRuntime && e.kind != activity.KindDriver) || !strings.Contains(g.p.name(e.name), "Synchronize") {
			continue
		}
		// The last activity ending at or before the call's end, if it ended after the call began.
		j := sort.Search(len(byEnd), func(j int) bool { return g.ev[byEnd[j]].end > e.end }) - 1
		if j < 0 || g.ev[byEnd[j]].end < e.start {
			continue
		}
		syncEdge(node(byEnd[j], true), i)
	}
}

// longest is nx.dag_longest_path over the graph (CPGraph.critical_path), by Kahn's topological
// order; false when the graph has a cycle.
func (g *cpGraph) longest() (*CriticalPath, bool) {
	n := 2 * len(g.ev)
	indeg := make([]int32, n)
	first := make([]int32, n+1) // CSR of outgoing edges
	for _, e := range g.edges {
		first[e.u+1]++
		indeg[e.v]++
	}
	for i := 1; i <= n; i++ {
		first[i] += first[i-1]
	}
	out := make([]int32, len(g.edges))
	fill := append([]int32(nil), first[:n]...)
	for i, e := range g.edges {
		out[fill[e.u]] = int32(i)
		fill[e.u]++
	}
	dist := make([]int64, n)
	pred := make([]int32, n) // edge index into the node, -1 none
	for i := range pred {
		pred[i] = -1
	}
	queue := make([]int32, 0, n)
	for v := 0; v < n; v++ {
		if indeg[v] == 0 {
			queue = append(queue, int32(v))
		}
	}
	for h := 0; h < len(queue); h++ {
		u := queue[h]
		for _, ei := range out[first[u]:first[u+1]] {
			e := &g.edges[ei]
			if d := dist[u] + e.weight; d > dist[e.v] || pred[e.v] < 0 && d == dist[e.v] {
				dist[e.v], pred[e.v] = d, ei
			}
			if indeg[e.v]--; indeg[e.v] == 0 {
				queue = append(queue, e.v)
			}
		}
	}
	if len(queue) != n {
		return nil, false
	}
	best := int32(0)
	for v := 1; v < n; v++ {
		if dist[v] > dist[best] {
			best = int32(v)
		}
	}
	var path []int32 // edge indices, last first
	for v := best; pred[v] >= 0; v = g.edges[pred[v]].u {
		path = append(path, pred[v])
	}
	cp := &CriticalPath{Length: dist[best], Nodes: len(path) + 1, Edges: map[string]int{}}
	parts := map[string]int64{}
	type segKey struct {
		attr int32
		typ  uint8
	}
	segs := map[segKey]*PathSegment{}
	afterSync := false
	for i := len(path) - 1; i >= 0; i-- {
		e := &g.edges[path[i]]
		cp.Edges[edgeNames[e.typ]]++
		bound := g.boundBy(e)
		parts[bound] += e.weight
		dstGPU := g.ev[e.v/2].gpu()
		switch {
		case e.typ == eSync && e.sync && !dstGPU:
			afterSync = true
		case bound == BoundCPU || bound == BoundLaunch:
			if afterSync {
				cp.Sync += e.weight
			} else {
				cp.CPU += e.weight
			}
		case bound == BoundGPUCompute && g.ev[e.attr].kind != activity.KindKernel:
			cp.Copies += e.weight
		case bound != BoundNone:
			cp.GPU += e.weight
		}
		if dstGPU {
			afterSync = false
		}
		if e.weight == 0 || e.attr < 0 {
			continue
		}
		key := segKey{e.attr, e.typ}
		s := segs[key]
		if s == nil {
			ev := &g.ev[e.attr]
			s = &PathSegment{What: g.p.name(ev.name), BoundBy: bound, Start: g.ts(e.u)}
			switch e.typ {
			case eLaunch:
				s.What = "launch delay → " + s.What
			case eKernelKernel:
				s.What = "gap after " + s.What
			}
			if ev.gpu() {
				s.Where = fmt.Sprintf("GPU %d stream %d", ev.device, ev.stream)
			} else {
				s.Where = fmt.Sprintf("thread %d", ev.thread)
			}
			segs[key] = s
		}
		s.Time += e.weight
	}
	for b, t := range parts {
		if t > 0 {
			cp.Composition = append(cp.Composition, PathPart{BoundBy: b, Time: t, Share: cp.Share(t)})
		}
	}
	sort.Slice(cp.Composition, func(i, j int) bool {
		if cp.Composition[i].Time != cp.Composition[j].Time {
			return cp.Composition[i].Time > cp.Composition[j].Time
		}
		return cp.Composition[i].BoundBy < cp.Composition[j].BoundBy
	})
	for _, s := range segs {
		cp.Segments = append(cp.Segments, *s)
	}
	sort.Slice(cp.Segments, func(i, j int) bool {
		a, b := cp.Segments[i], cp.Segments[j]
		if a.Time != b.Time {
			return a.Time > b.Time
		}
		return a.Start < b.Start
	})
	if len(cp.Segments) > 10 {
		cp.Segments = cp.Segments[:10]
	}
	cp.verdict()
	return cp, true
}

// boundBy is HTA's bound_by() for one edge.
func (g *cpGraph) boundBy(e *cpEdge) string {
	switch e.typ {
	case eKernelKernel:
		return BoundKernelKernel
	case eLaunch:
		return BoundLaunch
	case eDependency, eSync:
		return BoundNone
	}
	if e.attr < 0 {
		return BoundNone
	}
	ev := &g.ev[e.attr]
	switch {
	case !ev.gpu():
		return BoundCPU
	case isCommunication(g.p.name(ev.name)):
		return BoundGPUComm
	}
	return BoundGPUCompute
}

func (p *CriticalPath) verdict() {
	type share struct {
		name string
		t    int64
	}
	shares := []share{{VerdictCPU, p.CPU}, {VerdictGPU, p.GPU}, {VerdictSync, p.Sync}, {VerdictCopies, p.Copies}}
	best := shares[0]
	for _, s := range shares[1:] {
		if s.t > best.t {
			best = s
		}
	}
	if p.Length == 0 {
		p.Verdict = ""
		p.VerdictLine = "critical path: no time on the path"
		return
	}
	p.Verdict = best.name
	labels := []string{"CPU", "GPU", "synchronisation", "copies"}
	parts := make([]string, len(shares))
	for i, s := range shares {
		parts[i] = fmt.Sprintf("%s %.0f%%", labels[i], p.Share(s.t))
	}
	p.VerdictLine = fmt.Sprintf("critical path %s: %s (of the path's time: %s)", fmtNs(p.Length), best.name, strings.Join(parts, ", "))
}

func fmtNs(ns int64) string {
	switch {
	case ns >= 1_000_000_000:
		return fmt.Sprintf("%.3g s", float64(ns)/1e9)
	case ns >= 1_000_000:
		return fmt.Sprintf("%.3g ms", float64(ns)/1e6)
	case ns >= 1_000:
		return fmt.Sprintf("%.3g µs", float64(ns)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}
