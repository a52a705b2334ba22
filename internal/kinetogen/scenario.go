package kinetogen

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Mechanism names the GPU-idle pattern a scenario shows.
type Mechanism string

const (
	MechKernels  Mechanism = "kernels"  // GPU-bound: long kernels back to back
	MechSync     Mechanism = "sync"     // the host blocks on the GPU, then works, then launches
	MechLaunch   Mechanism = "launch"   // kernels shorter than their launch calls
	MechDispatch Mechanism = "dispatch" // eager ops whose dispatch outlasts their one tiny kernel
	MechShared   Mechanism = "shared"   // kernels launched ahead, each started late behind another workload's
	MechCopies   Mechanism = "copies"   // large pageable host-to-device copies
	MechHostWork Mechanism = "hostwork" // host CPU work between asynchronous launches
)

// Mechanisms lists every mechanism Write knows, in a fixed order.
var Mechanisms = []Mechanism{MechKernels, MechSync, MechLaunch, MechCopies, MechHostWork, MechDispatch, MechShared}

// DefaultDuration is the window a Scenario with no Duration gets.
const DefaultDuration = 20 * time.Millisecond

// MaxDuration bounds a scenario: the events are built in memory before they are written, and
// the launch scenario holds some 100,000 kernels a second.
const MaxDuration = 10 * time.Second

// QueueLatency is the longest a free GPU takes to start work queued on it: a longer gap with
// the next work already launched is time the GPU spent on work this trace does not hold.
const QueueLatency = 20_000

// MaxDispatchGap is the longest gap one op's dispatch explains (1 ms): an op holding the host
// longer does work of its own.
const MaxDispatchGap = 1_000_000

// SyncSlack is how long after a blocking call returned a gap may begin and still be the call's:
// the call returns as the GPU finishes, on another clock than the GPU's.
const SyncSlack = 5_000

// Scenario is one request's GPU work to write.
type Scenario struct {
	Mechanism Mechanism
	// TraceID is the request's trace ID (32 hex digits, or Jaeger's 16), with at least one
	// letter a–f; SpanID (16 hex digits, optional) the span the work belongs to.
	TraceID, SpanID string
	// Start is the wall-clock start of the request's annotation (the GPU work begins a few
	// µs later), from 2001-09-09 (ts has Kineto's 16 integer digits from then) to 2096-10-02
	// (readers bound times to half of int64's nanoseconds, 2116). Zero means EpochBase.
	Start time.Time
	// Duration is the annotation's length, at most MaxDuration; the GPU work fills it. Zero
	// means DefaultDuration.
	Duration time.Duration
	// Seed drives math/rand/v2's PCG: which ops and kernel names the request uses, how many
	// of each, every duration, gap and size. The same Scenario writes the same bytes.
	Seed uint64
	// Device is the GPU (pid and "device" of the GPU events).
	Device int
}

// Truth is what a scenario's trace holds, in ns (see the package comment for the rules).
type Truth struct {
	// WindowStart and WindowEnd are the first GPU activity's start and the last one's end,
	// epoch ns; Window = WindowEnd − WindowStart.
	WindowStart, WindowEnd int64
	Window                 int64
	KernelTime             int64 // union of the kernel intervals
	Copies                 int64 // copies or memsets running, no kernel
	// Queued, Sync, Launch and HostWork split the GPU's idle gaps; QueuedGaps, SyncGaps,
	// LaunchGaps and HostWorkGaps count them, DispatchGaps the launch gaps the host spent
	// dispatching the ops that launch (see the package comment).
	Queued, Sync, Launch, HostWork                 int64
	QueuedGaps, SyncGaps, LaunchGaps, HostWorkGaps int64
	DispatchGaps                                   int64
	Kernels                                        int64 // kernel activities
	Transfers                                      int64 // copy and memset activities
	Launches                                       int64 // runtime calls that launched a GPU activity
	SyncCalls                                      int64 // blocking host calls
	// KernelLaunches are Nsight Systems' cuda_kern_exec_sum rows for the trace, by kernel name
	// and launch call, sorted by both (see LaunchTruth).
	KernelLaunches []LaunchTruth
}

// LaunchTruth is what the kernels of one name launched by calls of one name took, phase by
// phase, as cuda_kern_exec_sum splits a launch: API = call end − call start; Queue = kernel
// start − call end, only for the Queued launches where it is ≥ 0 (a kernel on an idle stream
// may start before its call returns: it has none); Exec = kernel end − kernel start; Total =
// max(call end, kernel end) − call start.
type LaunchTruth struct {
	Kernel, Call            string
	Count, Queued           int64
	API, Queue, Exec, Total Spread
}

// Spread is a duration's sum, minimum, maximum and median (the middle value, or the mean of the
// two middle values), ns.
type Spread struct {
	Sum, Min, Max int64
	Median        float64
}

func spread(xs []int64) Spread {
	if len(xs) == 0 {
		return Spread{}
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	out := Spread{Min: s[0], Max: s[len(s)-1]}
	for _, x := range s {
		out.Sum += x
	}
	if m := len(s) / 2; len(s)%2 == 1 {
		out.Median = float64(s[m])
	} else {
		out.Median = float64(s[m-1]+s[m]) / 2
	}
	return out
}

// Idle is the time the GPU ran nothing: Queued + Sync + Launch + HostWork.
func (t Truth) Idle() int64 { return t.Queued + t.Sync + t.Launch + t.HostWork }

// NoKernel is the time the GPU ran no kernel: Copies + Idle.
func (t Truth) NoKernel() int64 { return t.Copies + t.Idle() }

// Of returns the time of the part a mechanism names (KernelTime for MechKernels).
func (t Truth) Of(m Mechanism) int64 {
	switch m {
	case MechKernels:
		return t.KernelTime
	case MechSync:
		return t.Sync
	case MechLaunch, MechDispatch:
		return t.Launch
	case MechCopies:
		return t.Copies
	case MechShared:
		return t.Queued
	case MechHostWork:
		return t.HostWork
	}
	return 0
}

// Write writes the scenario's trace to w and returns its ground truth.
func Write(w io.Writer, s Scenario) (Truth, error) {
	p, t, err := Generate(s)
	if err != nil {
		return Truth{}, err
	}
	return t, p.g.write(w)
}

// Generated is a scenario's events, built in memory: their truth is known before they are
// written, as a profiler's events are recorded before its trace is saved.
type Generated struct{ g *gen }

// Generate builds the scenario's events and returns their ground truth (its window relative to
// s.Start as given); Generated.Write writes them later.
func Generate(s Scenario) (*Generated, Truth, error) {
	if err := s.normalise(); err != nil {
		return nil, Truth{}, err
	}
	g := &gen{s: s, rng: rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15)), end: s.Duration.Nanoseconds()}
	if err := g.generate(); err != nil {
		return nil, Truth{}, err
	}
	return &Generated{g}, g.truth(), nil
}

// Write writes the events as the trace of the request traceID (and span spanID, "" for none)
// starting at start: what PyTorch's profiler saves once the profiled step is over.
func (p *Generated) Write(w io.Writer, start time.Time, traceID, spanID string) error {
	s := p.g.s
	s.Start, s.TraceID, s.SpanID = start, traceID, spanID
	if err := s.normalise(); err != nil {
		return err
	}
	p.g.s = s
	return p.g.write(w)
}

func (s *Scenario) normalise() error {
	known := false
	for _, m := range Mechanisms {
		known = known || s.Mechanism == m
	}
	if !known {
		return fmt.Errorf("kinetogen: unknown mechanism %q (want one of %v)", s.Mechanism, Mechanisms)
	}
	s.TraceID, s.SpanID = strings.ToLower(s.TraceID), strings.ToLower(s.SpanID)
	if !allHex(s.TraceID) || len(s.TraceID) != 32 && len(s.TraceID) != 16 {
		return fmt.Errorf("kinetogen: trace ID %q is not 32 (or 16) hex digits", s.TraceID)
	}
	if !strings.ContainsAny(s.TraceID, "abcdef") {
		// Readers take only hex runs with a letter for IDs (long decimal numbers are not), so
		// this one would not be found and the span ID would be taken for the request.
		return fmt.Errorf("kinetogen: trace ID %q has no letter a-f: readers would not recognise it", s.TraceID)
	}
	if s.SpanID != "" && (len(s.SpanID) != 16 || !allHex(s.SpanID)) {
		return fmt.Errorf("kinetogen: span ID %q is not 16 hex digits", s.SpanID)
	}
	if s.Start.IsZero() {
		s.Start = time.Unix(0, EpochBase)
	}
	if us := s.Start.UnixMicro(); us < 1e15 || us >= 4e15 {
		return fmt.Errorf("kinetogen: start %v is outside 2001-09-09 (16 integer digits of epoch µs) to 2096-10-02", s.Start)
	}
	if s.Duration == 0 {
		s.Duration = DefaultDuration
	}
	if s.Duration < 0 || s.Duration > MaxDuration {
		return fmt.Errorf("kinetogen: duration %v is not in (0, %v]", s.Duration, MaxDuration)
	}
	if s.Device < 0 || s.Device > 63 {
		return fmt.Errorf("kinetogen: device %d is not in [0, 63]", s.Device)
	}
	return nil
}

func allHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return s != ""
}

const (
	µs     = int64(1000)
	stream = 7 // PyTorch's default stream as CUPTI numbers it
)

// CUPTI's runtime callback IDs (cupti_runtime_cbid.h) for the calls written.
var cbids = map[string]int{
	"cudaMemcpyAsync": 41, "cudaStreamSynchronize": 131, "cudaDeviceSynchronize": 165, "cudaLaunchKernel": 211,
}

type hostOp struct {
	cat, name  string
	start, end int64
	ext        int
}

type call struct {
	name       string
	start, end int64
	corr, ext  int
	act        int    // index in gen.acts of the work it launched, -1 when none
	blocking   bool   // the host waits for the GPU in it
	syncKind   string // its cuda_sync record, "" when none
}

type actKind uint8

const (
	actKernel actKind = iota
	actMemcpy
)

type act struct {
	kind       actKind
	name       string
	start, end int64
	corr, ext  int
	bytes      int64
}

// gen builds the scenario's events in memory, in ns after Start, then writes them.
type gen struct {
	s     Scenario
	rng   *rand.Rand
	end   int64 // Duration in ns
	ops   []hostOp
	calls []call
	acts  []act
	stack []int // open ops
	h     int64 // the host's clock
	gpu   int64 // when the stream's last activity ends
	corr  int
	ext   int
}

// between draws uniformly from [lo, hi] ns.
func (g *gen) between(lo, hi int64) int64 { return lo + g.rng.Int64N(hi-lo+1) }

// capped draws from [lo, hi] with hi held to Duration/div (and lo to half of it): a short
// request still holds several iterations, each showing its mechanism (the default Duration
// changes nothing).
func (g *gen) capped(lo, hi, div int64) int64 {
	hi = min(hi, g.end/div)
	return g.between(min(lo, hi/2), hi)
}

func (g *gen) pick(xs []op) op { return xs[g.rng.IntN(len(xs))] }

// open starts an op at the host's clock; close ends the innermost one there.
func (g *gen) open(cat, name string) {
	g.ext++
	g.ops = append(g.ops, hostOp{cat: cat, name: name, start: g.h, end: -1, ext: g.ext})
	g.stack = append(g.stack, len(g.ops)-1)
}

func (g *gen) close() {
	i := g.stack[len(g.stack)-1]
	g.stack = g.stack[:len(g.stack)-1]
	g.ops[i].end = g.h
}

// curExt is the External id of the innermost open op, 0 outside any.
func (g *gen) curExt() int {
	if len(g.stack) == 0 {
		return 0
	}
	return g.ops[g.stack[len(g.stack)-1]].ext
}

// queued is when work can start on the stream at the earliest: just after the last activity.
func (g *gen) queued() int64 { return g.gpu + g.between(300, 1500) }

// launchKernel writes a cudaLaunchKernel of callDur at the host's clock for a kernel of dur, and
// moves the clock to the call's end.
func (g *gen) launchKernel(name string, callDur, dur int64) {
	start, end := g.h, g.h+callDur
	// On an idle stream the kernel starts around the call's return; behind running work, as
	// soon as the stream frees.
	ready := max(end+g.between(-min(2*µs, callDur/2), 1*µs), start+1*µs)
	at := max(ready, g.queued())
	g.corr++
	g.acts = append(g.acts, act{kind: actKernel, name: name, start: at, end: at + dur, corr: g.corr, ext: g.curExt()})
	g.calls = append(g.calls, call{name: "cudaLaunchKernel", start: start, end: end, corr: g.corr, ext: g.curExt(), act: len(g.acts) - 1})
	g.gpu = at + dur
	g.h = end
}

// kernelOp is one op launching one kernel: op overhead pre, the call, then post.
func (g *gen) kernelOp(o op, pre, callDur, post, dur int64) {
	g.open("cpu_op", o.name)
	g.h += pre
	g.launchKernel(o.kernel, callDur, dur)
	g.h += post
	g.close()
}

// hostWork is CPU work with no CUDA call: total ns of cpu_ops on CPU tensors, with Python
// between them.
func (g *gen) hostWork(total int64) {
	// 1-5 ops sharing total unevenly.
	weights := make([]int64, 1+g.rng.IntN(5))
	var sum int64
	for i := range weights {
		weights[i] = g.between(1, 8)
		sum += weights[i]
	}
	for _, w := range weights {
		g.h += g.between(2*µs, 20*µs)
		g.open("cpu_op", cpuOps[g.rng.IntN(len(cpuOps))])
		g.h += total * w / sum
		g.close()
	}
}

// sync writes a blocking call from the host's clock until done (at least 1 µs), with its
// cuda_sync record.
func (g *gen) sync(name, kind string, done int64) {
	g.corr++
	start := g.h
	end := max(done, start+1*µs)
	g.calls = append(g.calls, call{name: name, start: start, end: end, corr: g.corr, ext: g.curExt(), act: -1, blocking: true, syncKind: kind})
	g.h = end
}

type snapshot struct {
	ops, calls, acts int
	h, gpu           int64
	corr, ext        int
}

func (g *gen) save() snapshot {
	return snapshot{len(g.ops), len(g.calls), len(g.acts), g.h, g.gpu, g.corr, g.ext}
}

func (g *gen) restore(s snapshot) {
	g.ops, g.calls, g.acts = g.ops[:s.ops], g.calls[:s.calls], g.acts[:s.acts]
	g.h, g.gpu, g.corr, g.ext = s.h, s.gpu, s.corr, s.ext
}

// generate adds iterations of the mechanism while they end (host and GPU) by the annotation's
// end less room for the final synchronisation.
func (g *gen) generate() error {
	// The request's model: a random subset of the op pools, so that seeds differ in names.
	big := subset(g.rng, bigOps)
	small := subset(g.rng, smallOps)
	medium := subset(g.rng, mediumOps)
	mixed := append(append([]op(nil), big...), medium...)
	iteration := map[Mechanism]func(){
		MechKernels: func() {
			g.h += g.between(2*µs, 15*µs)
			g.kernelOp(g.pick(big), g.between(8*µs, 25*µs), g.between(5*µs, 12*µs), g.between(3*µs, 10*µs), g.capped(200*µs, 2500*µs, 8))
		},
		MechSync: func() {
			for n := 1 + g.rng.IntN(4); n > 0; n-- {
				g.h += g.between(5*µs, 20*µs)
				g.kernelOp(g.pick(mixed), g.between(5*µs, 15*µs), g.between(5*µs, 12*µs), g.between(2*µs, 6*µs), g.capped(30*µs, 400*µs, 32))
			}
			g.h += g.between(5*µs, 15*µs)
			g.open("cpu_op", "aten::item")
			g.h += g.between(2*µs, 5*µs)
			g.open("cpu_op", "aten::_local_scalar_dense")
			g.h += g.between(2*µs, 6*µs)
			// The copy to pageable memory is tiny; it runs once the stream is free and the
			// DMA engine set up, after the host has entered cudaStreamSynchronize.
			g.corr++
			call0, callEnd := g.h, g.h+g.between(4*µs, 9*µs)
			syncStart := callEnd + g.between(300, 1500)
			at := max(syncStart+g.between(500, 2*µs), g.queued())
			bytes := []int64{4, 8, 16, 64, 256, 1024}[g.rng.IntN(6)]
			dur := g.between(1*µs, 3*µs)
			g.acts = append(g.acts, act{kind: actMemcpy, name: "Memcpy DtoH (Device -> Pageable)", start: at, end: at + dur, corr: g.corr, ext: g.curExt(), bytes: bytes})
			g.calls = append(g.calls, call{name: "cudaMemcpyAsync", start: call0, end: callEnd, corr: g.corr, ext: g.curExt(), act: len(g.acts) - 1})
			g.gpu = at + dur
			g.h = syncStart
			g.sync("cudaStreamSynchronize", "Stream Sync", g.gpu+g.between(2*µs, 6*µs))
			g.h += g.between(1*µs, 4*µs)
			g.close()
			g.h += g.between(1*µs, 3*µs)
			g.close()
			g.hostWork(g.capped(300*µs, 2000*µs, 10))
		},
		MechLaunch: func() {
			// The 0-2 µs between two launch calls: the end of one op, the start of the next.
			g.kernelOp(g.pick(small), g.between(0, 1*µs), g.between(5*µs, 12*µs), g.between(0, 1*µs), g.between(1*µs, 4*µs))
		},
		MechCopies: func() {
			g.h += g.between(5*µs, 20*µs)
			g.open("cpu_op", "aten::to")
			g.h += g.between(2*µs, 5*µs)
			g.open("cpu_op", "aten::_to_copy")
			g.h += g.between(3*µs, 8*µs)
			g.open("cpu_op", "aten::copy_")
			g.h += g.between(2*µs, 6*µs)
			// From pageable memory the driver stages the data through a pinned buffer: the call
			// returns only once the copy is done.
			mbps := g.between(5000, 12000) // 5-12 GB/s, pageable copies' usual rate
			// 1-32 MiB, but no copy longer than a quarter of the request, so that short
			// requests still hold several.
			most := max(min(32<<20, mbps*g.end/4/1000), 1<<18)
			bytes := g.between(min(1<<20, most/2), most) &^ 3
			dur := bytes * 1000 / mbps
			g.corr++
			call0 := g.h
			at := max(call0+g.between(5*µs, 15*µs), g.queued())
			g.acts = append(g.acts, act{kind: actMemcpy, name: "Memcpy HtoD (Pageable -> Device)", start: at, end: at + dur, corr: g.corr, ext: g.curExt(), bytes: bytes})
			g.gpu = at + dur
			g.h = g.gpu + g.between(3*µs, 10*µs)
			g.calls = append(g.calls, call{name: "cudaMemcpyAsync", start: call0, end: g.h, corr: g.corr, ext: g.curExt(), act: len(g.acts) - 1})
			for range 3 {
				g.h += g.between(1*µs, 3*µs)
				g.close()
			}
			for n := 1 + g.rng.IntN(3); n > 0; n-- {
				g.h += g.between(3*µs, 10*µs)
				g.kernelOp(g.pick(medium), g.between(4*µs, 10*µs), g.between(5*µs, 10*µs), g.between(2*µs, 5*µs), g.between(10*µs, 60*µs))
			}
		},
		MechDispatch: func() {
			// Eager PyTorch: Python between ops, then an op whose dispatch (argument parsing,
			// dtype and device checks, the output's allocation) takes tens of µs before and
			// after its one launch; some ops sit in an outer op beside a metadata op that
			// launches nothing (aten::linear -> aten::t, aten::addmm).
			g.h += g.between(1*µs, 4*µs)
			if g.rng.IntN(3) == 0 {
				g.open("cpu_op", "aten::linear")
				g.h += g.between(2*µs, 6*µs)
				g.open("cpu_op", metaOps[g.rng.IntN(len(metaOps))])
				g.h += g.between(2*µs, 6*µs)
				g.close()
				g.h += g.between(1*µs, 3*µs)
				g.kernelOp(tinyGemm, g.between(10*µs, 30*µs), g.between(4*µs, 9*µs), g.between(3*µs, 10*µs), g.between(1*µs, 3*µs))
				g.h += g.between(1*µs, 3*µs)
				g.close()
				return
			}
			g.kernelOp(g.pick(small), g.between(12*µs, 40*µs), g.between(4*µs, 9*µs), g.between(3*µs, 12*µs), g.between(1*µs, 3*µs))
		},
		MechShared: func() {
			// The host launches asynchronously and runs ahead; another process's kernels hold
			// the GPU between the request's, so each starts late, well after its launch.
			g.h += g.between(3*µs, 10*µs)
			g.gpu += g.capped(100*µs, 800*µs, 16) // the other workload's kernels
			g.kernelOp(g.pick(mixed), g.between(5*µs, 15*µs), g.between(5*µs, 12*µs), g.between(2*µs, 6*µs), g.capped(30*µs, 300*µs, 32))
		},
		MechHostWork: func() {
			for n := 1 + g.rng.IntN(3); n > 0; n-- {
				g.h += g.between(5*µs, 15*µs)
				g.kernelOp(g.pick(mixed), g.between(5*µs, 15*µs), g.between(5*µs, 12*µs), g.between(2*µs, 6*µs), g.capped(20*µs, 150*µs, 32))
			}
			g.hostWork(g.capped(300*µs, 2000*µs, 10))
		},
	}[g.s.Mechanism]
	// Room left at the end: the final cudaDeviceSynchronize returns a few µs after the GPU.
	const margin = 30 * µs
	g.ext++ // the request's annotation is the first op
	g.h = g.between(10*µs, 40*µs)
	for n := 0; ; n++ {
		snap := g.save()
		iteration()
		if max(g.h, g.gpu)+margin > g.end {
			g.restore(snap)
			// A mechanism's gap lies between two iterations (the last one's host work ends
			// after the GPU's).
			if n < 2 {
				return fmt.Errorf("kinetogen: %v is too short for two iterations of %q", g.s.Duration, g.s.Mechanism)
			}
			break
		}
	}
	if g.s.Mechanism != MechSync { // the sync scenario's last iteration ends synchronised
		g.h += g.between(2*µs, 10*µs)
		g.sync("cudaDeviceSynchronize", "Context Sync", max(g.gpu, g.h)+g.between(3*µs, 8*µs))
	}
	return nil
}

// subset picks at least half of the pool (at least two), in the pool's order.
func subset(rng *rand.Rand, pool []op) []op {
	for {
		var out []op
		for _, o := range pool {
			if rng.IntN(2) == 0 {
				out = append(out, o)
			}
		}
		if len(out) >= max(2, len(pool)/2) {
			return out
		}
	}
}

// truth applies the package comment's rules to the events generated.
func (g *gen) truth() Truth {
	var t Truth
	acts := append([]act(nil), g.acts...)
	sort.SliceStable(acts, func(i, j int) bool { return acts[i].start < acts[j].start })
	var kernels, all [][2]int64
	for _, a := range acts {
		all = append(all, [2]int64{a.start, a.end})
		if a.kind == actKernel {
			kernels = append(kernels, [2]int64{a.start, a.end})
			t.Kernels++
		} else {
			t.Transfers++
		}
	}
	launchOf := map[int]call{}
	var launchCalls, blocking [][2]int64
	type phases struct{ api, queue, exec, total []int64 }
	perLaunch := map[[2]string]*phases{}
	for _, c := range g.calls {
		if c.act >= 0 {
			launchOf[c.corr] = c
			launchCalls = append(launchCalls, [2]int64{c.start, c.end})
			t.Launches++
		}
		if c.act >= 0 && g.acts[c.act].kind == actKernel {
			k := g.acts[c.act]
			key := [2]string{k.name, c.name}
			p := perLaunch[key]
			if p == nil {
				p = &phases{}
				perLaunch[key] = p
			}
			p.api = append(p.api, c.end-c.start)
			if k.start >= c.end {
				p.queue = append(p.queue, k.start-c.end)
			}
			p.exec = append(p.exec, k.end-k.start)
			p.total = append(p.total, max(c.end, k.end)-c.start)
		}
		if c.blocking {
			blocking = append(blocking, [2]int64{c.start, c.end})
			t.SyncCalls++
		}
	}
	for key, p := range perLaunch {
		t.KernelLaunches = append(t.KernelLaunches, LaunchTruth{Kernel: key[0], Call: key[1],
			Count: int64(len(p.api)), Queued: int64(len(p.queue)),
			API: spread(p.api), Queue: spread(p.queue), Exec: spread(p.exec), Total: spread(p.total)})
	}
	sort.Slice(t.KernelLaunches, func(i, j int) bool {
		a, b := t.KernelLaunches[i], t.KernelLaunches[j]
		if a.Kernel != b.Kernel {
			return a.Kernel < b.Kernel
		}
		return a.Call < b.Call
	})
	if len(acts) == 0 {
		return t
	}
	base := g.s.Start.UnixNano()
	t.KernelTime = measure(union(kernels))
	busy := union(all)
	t.Copies = measure(busy) - t.KernelTime
	t.WindowStart, t.WindowEnd = base+busy[0][0], base+busy[len(busy)-1][1]
	t.Window = t.WindowEnd - t.WindowStart
	launched := union(launchCalls)
	// The ops that launched GPU work (a launch call starts inside them) and the launch calls:
	// the host's dispatch (one thread here).
	dispatch := append([][2]int64(nil), launchCalls...)
	for _, o := range g.ops {
		for _, c := range launchCalls {
			if o.start <= c[0] && c[0] <= o.end {
				dispatch = append(dispatch, [2]int64{o.start, o.end})
				break
			}
		}
	}
	dispatch = union(dispatch)
	for i := 1; i < len(busy); i++ {
		a, b := busy[i-1][1], busy[i][0]
		// The activity starting the next stretch: the first to start at b.
		k := sort.Search(len(acts), func(k int) bool { return acts[k].start >= b })
		ln, ok := launchOf[acts[k].corr]
		switch {
		case ok && ln.end <= a && b-a > QueueLatency:
			t.Queued += b - a
			t.QueuedGaps++
		case inProgress(blocking, a):
			t.Sync += b - a
			t.SyncGaps++
		case ok && ln.end <= a, 2*covered(launched, a, b) >= b-a:
			t.Launch += b - a
			t.LaunchGaps++
		case ok && b-a <= MaxDispatchGap && 2*covered(dispatch, a, b) >= b-a:
			t.Launch += b - a
			t.LaunchGaps++
			t.DispatchGaps++
		default:
			t.HostWork += b - a
			t.HostWorkGaps++
		}
	}
	return t
}

// union merges intervals sorted or not into disjoint ones sorted by start; touching intervals
// merge (no gap between them).
func union(iv [][2]int64) [][2]int64 {
	s := append([][2]int64(nil), iv...)
	sort.Slice(s, func(i, j int) bool { return s[i][0] < s[j][0] })
	var out [][2]int64
	for _, x := range s {
		if n := len(out); n > 0 && x[0] <= out[n-1][1] {
			out[n-1][1] = max(out[n-1][1], x[1])
		} else {
			out = append(out, x)
		}
	}
	return out
}

func measure(u [][2]int64) int64 {
	var sum int64
	for _, x := range u {
		sum += x[1] - x[0]
	}
	return sum
}

// covered is how much of [a, b) the disjoint sorted intervals u cover.
func covered(u [][2]int64, a, b int64) int64 {
	var sum int64
	for i := sort.Search(len(u), func(i int) bool { return u[i][1] > a }); i < len(u) && u[i][0] < b; i++ {
		sum += min(u[i][1], b) - max(u[i][0], a)
	}
	return sum
}

// inProgress: a call with start <= t <= end + SyncSlack.
func inProgress(calls [][2]int64, t int64) bool {
	for _, c := range calls {
		if c[0] <= t && t <= c[1]+SyncSlack {
			return true
		}
	}
	return false
}

// write writes the events in Kineto's layout: the host's ops by start (outer first), then
// CUPTI's records by correlation (each runtime call, its flow, its work or its cuda_sync
// record), the GPU annotation, then the metadata, the Trace span and the instants.
func (g *gen) write(w io.Writer) error {
	k := newWriter(w, g.s.Start.UnixNano())
	k.Device = g.s.Device
	dev := g.s.Device
	var props []string
	for id := 0; id <= dev; id++ {
		props = append(props, deviceProperties(id))
	}
	k.w.WriteString("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    " + strings.Join(props, ",\n    ") + "\n  ],\n  \"traceEvents\": [\n")

	name := "request " + g.s.TraceID
	if g.s.SpanID != "" {
		name += " span " + g.s.SpanID
	}
	ops := append([]hostOp{{cat: "user_annotation", name: name, start: 0, end: g.end, ext: 1}}, g.ops...)
	sort.SliceStable(ops, func(i, j int) bool {
		if ops[i].start != ops[j].start {
			return ops[i].start < ops[j].start
		}
		return ops[i].end > ops[j].end
	})
	for _, o := range ops {
		k.span(o.cat, o.name, o.start, o.end, o.ext)
	}
	calls := append([]call(nil), g.calls...)
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].corr < calls[j].corr })
	for _, c := range calls {
		k.runtimeCall(c.name, cbids[c.name], c.start, c.end, c.corr, c.ext, c.act >= 0)
		switch {
		case c.syncKind == "Stream Sync":
			k.syncRecord(c.syncKind, stream, stream, c.start+min(2*µs, (c.end-c.start)/4), c.end, c.corr, c.ext)
		case c.syncKind != "":
			k.syncRecord(c.syncKind, -1, 4294967295, c.start+min(2*µs, (c.end-c.start)/4), c.end, c.corr, c.ext)
		}
		if c.act < 0 {
			continue
		}
		switch a := g.acts[c.act]; a.kind {
		case actKernel:
			k.kernel(a.name, stream, a.start, a.end, a.corr, a.ext)
		case actMemcpy:
			k.memcpy(a.name, stream, a.start, a.end, a.corr, a.bytes, a.ext)
		}
	}
	if len(g.acts) > 0 {
		first, last := g.acts[0].start, g.acts[0].end
		for _, a := range g.acts {
			first, last = min(first, a.start), max(last, a.end)
		}
		k.raw(fmt.Sprintf(`{"ph": "X", "cat": "gpu_user_annotation", "name": %q, "pid": %d, "tid": %d, "ts": %s, "dur": %s, "args": {"External id": 1}}`,
			name, dev, stream, Micros(k.base+first), Micros(last-first)))
	}

	// The profiler started a little before the request and stopped a little after it.
	profStart, profEnd := -g.between(200*µs, 2000*µs), g.end+g.between(50*µs, 500*µs)
	ts := Micros(k.base + profStart)
	meta := func(name string, pid, tid any, key string, v any) {
		val := fmt.Sprint(v)
		if s, ok := v.(string); ok {
			val = fmt.Sprintf("%q", s)
		}
		k.raw(fmt.Sprintf(`{"name": %q, "ph": "M", "ts": %s, "pid": %v, "tid": %v, "args": {%q: %s}}`, name, ts, pid, tid, key, val))
	}
	meta("process_name", hostPID, 0, "name", "python3.10")
	meta("process_labels", hostPID, 0, "labels", "CPU")
	meta("process_sort_index", hostPID, 0, "sort_index", hostPID)
	for id := 0; id <= dev; id++ {
		meta("process_name", id, 0, "name", "python3.10")
		meta("process_labels", id, 0, "labels", fmt.Sprintf("GPU %d", id))
		meta("process_sort_index", id, 0, "sort_index", 16777216+id)
	}
	meta("thread_name", dev, -1, "name", fmt.Sprintf("Device %d", dev))
	meta("thread_sort_index", dev, -1, "sort_index", -1)
	meta("thread_name", dev, stream, "name", fmt.Sprintf("stream %d ", stream))
	meta("thread_sort_index", dev, stream, "sort_index", stream)
	meta("thread_name", hostPID, hostPID, "name", fmt.Sprintf("thread %d (python3.10)", hostPID))
	meta("thread_sort_index", hostPID, hostPID, "sort_index", hostPID)
	k.raw(fmt.Sprintf(`{"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler", "ts": %s, "dur": %s, "args": {"Op count": 0}}`,
		Micros(k.base+profStart), Micros(profEnd-profStart)))
	k.raw(fmt.Sprintf(`{"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": %s}`, Micros(k.base+profStart)))
	k.raw(fmt.Sprintf(`{"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": %s}`, Micros(k.base+profEnd)))
	fmt.Fprintf(k.w, "\n  ],\n  \"traceName\": %q\n}\n", fmt.Sprintf("%s_%d.pt.trace.json", g.s.Mechanism, g.s.Seed))
	if err := k.w.Flush(); err != nil {
		return errors.Join(errors.New("kinetogen: writing the trace"), err)
	}
	return nil
}

// op is a PyTorch op and the kernel it launches.
type op struct{ name, kernel string }

// bigOps launch the long kernels of a model's forward pass.
var bigOps = []op{
	{"aten::addmm", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel__5x_cublas"},
	{"aten::mm", "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn"},
	{"aten::bmm", "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8>(cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8::Params)"},
	{"aten::_scaled_dot_product_flash_attention", "void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)"},
	{"aten::cudnn_convolution", "sm80_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x32_stage4_warpsize2x2x1_g1_tensor16x8x16_kernel"},
	{"aten::linear", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"},
}

// mediumOps launch the normalisation and reduction kernels between them.
var mediumOps = []op{
	{"aten::native_layer_norm", "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<c10::BFloat16, float, false>(int, float, c10::BFloat16 const*, c10::BFloat16 const*, c10::BFloat16 const*, float*, float*, c10::BFloat16*)"},
	{"aten::_softmax", "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, c10::BFloat16, float, c10::BFloat16, at::native::(anonymous namespace)::SoftMaxForwardEpilogue>(c10::BFloat16*, c10::BFloat16 const*, int)"},
	{"aten::sum", "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4, 4>)"},
	{"aten::sub", "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::SubFunctor<float> >, std::array<char*, 2ul> >(int, at::native::AUnaryFunctor<float, float, float, at::native::binary_internal::SubFunctor<float> >, std::array<char*, 2ul>)"},
	{"aten::div", "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::DivFunctor<float> >, std::array<char*, 3ul>)"},
	{"aten::argmax", "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4> >(at::native::ReduceOp<float, at::native::ArgMaxOps<float>, unsigned int, long, 4, 4>)"},
}

// smallOps launch the tiny elementwise kernels of an unfused model.
var smallOps = []op{
	{"aten::add", "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)"},
	{"aten::mul", "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul> >(int, at::native::BinaryFunctor<float, float, float, at::native::binary_internal::MulFunctor<float> >, std::array<char*, 3ul>)"},
	{"aten::gelu", "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)"},
	{"aten::silu", "void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)"},
	{"aten::fill_", "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"},
	{"aten::copy_", "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1})"},
	{"aten::neg", "void at::native::vectorized_elementwise_kernel<4, at::native::neg_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::neg_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#7}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)"},
	{"aten::rsqrt", "void at::native::vectorized_elementwise_kernel<4, at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul> >(int, at::native::rsqrt_kernel_cuda(at::TensorIteratorBase&)::{lambda()#2}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}, std::array<char*, 2ul>)"},
}

// tinyGemm is a small linear layer's GEMM: under a few µs on the GPU.
var tinyGemm = op{"aten::addmm", "ampere_sgemm_32x32_sliced1x4_tn"}

// metaOps change a tensor's view, not its data: no kernel.
var metaOps = []string{"aten::t", "aten::view", "aten::reshape", "aten::expand", "aten::transpose"}

// cpuOps are ops on CPU tensors: host work that makes no CUDA call (post-processing, sampling).
var cpuOps = []string{
	"aten::topk", "aten::sort", "aten::cat", "aten::stack", "aten::index_select",
	"aten::nonzero", "aten::where", "aten::softmax", "aten::argmax", "aten::masked_select",
}
