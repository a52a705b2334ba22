package gputrace

import (
	"fmt"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

// timeline builds one request's activities on device 0, stream 7, in ns from 0: each step is
// what the host does and what the GPU does then, as a PyTorch loop would record it.
type timeline struct {
	c    *Collector
	corr int64
}

func newTimeline() *timeline { return &timeline{c: NewCollector(Limits{})} }

// launch records a launch call [s, e) and the kernel it launched [ks, ke).
func (t *timeline) launch(s, e, ks, ke int64) {
	t.corr++
	t.c.Add(activity.Activity{Kind: activity.KindRuntime, Name: "cudaLaunchKernel", Start: s, End: e, Correlation: t.corr})
	t.c.Add(activity.Activity{Kind: activity.KindKernel, Name: "k", Start: ks, End: ke, Stream: 7, Correlation: t.corr})
}

func (t *timeline) copy(s, e, cs, ce int64, name string) {
	t.corr++
	t.c.Add(activity.Activity{Kind: activity.KindRuntime, Name: "cudaMemcpyAsync", Start: s, End: e, Correlation: t.corr})
	t.c.Add(activity.Activity{Kind: activity.KindMemcpy, Name: name, Start: cs, End: ce, Stream: 7, Correlation: t.corr, Bytes: 1 << 20})
}

// op records a CPU operator [s, e) on the host thread.
func (t *timeline) op(name string, s, e int64) {
	t.c.Add(activity.Activity{Kind: activity.KindCPUOp, Name: name, Start: s, End: e})
}

func (t *timeline) call(name string, s, e int64) {
	t.corr++
	t.c.Add(activity.Activity{Kind: activity.KindRuntime, Name: name, Start: s, End: e, Correlation: t.corr})
}

func TestIdleMechanismsOfEachPattern(t *testing.T) {
	const us = 1000
	cases := []struct {
		name  string
		build func(t *timeline)
		want  IdleMechanisms
	}{
		{"sync after each kernel, then host work", func(t *timeline) {
			// kernel 100 µs; cudaStreamSynchronize returns 3 µs after it; 200 µs of Python; next.
			at := int64(0)
			for range 5 {
				t.launch(at, at+5*us, at+6*us, at+106*us)
				t.call("cudaStreamSynchronize", at+5*us, at+109*us)
				at += 309 * us
			}
		}, IdleMechanisms{Sync: 4 * 209 * us, SyncGaps: 4}},
		{"launch-bound: kernels shorter than back-to-back launches", func(t *timeline) {
			for i := range int64(100) {
				s := i * 8 * us
				t.launch(s, s+8*us, s+9*us, s+11*us) // a 2 µs kernel per 8 µs launch
			}
		}, IdleMechanisms{Launch: 99 * 6 * us, LaunchGaps: 99}},
		{"queued kernels: the GPU's own launch latency", func(t *timeline) {
			for i := range int64(10) {
				t.launch(i*us, i*us+us, 100*us+i*52*us, 100*us+i*52*us+50*us) // launched long before, 2 µs apart
			}
		}, IdleMechanisms{Launch: 9 * 2 * us, LaunchGaps: 9}},
		{"host work between asynchronous launches", func(t *timeline) {
			at := int64(0)
			for range 4 {
				t.launch(at, at+5*us, at+6*us, at+56*us) // 50 µs kernel, launched asynchronously
				at += 505 * us                           // then 500 µs of CPU with no CUDA call
			}
		}, IdleMechanisms{HostWork: 3 * 455 * us, HostWorkGaps: 3}},
		{"pageable copies holding the GPU", func(t *timeline) {
			t.copy(0, 400*us, 10*us, 390*us, "Memcpy HtoD (Pageable -> Device)")
			t.launch(395*us, 400*us, 401*us, 451*us)
			// A copy overlapping a kernel counts only outside it; two overlapping copies once.
			t.copy(452*us, 460*us, 420*us, 500*us, "Memcpy HtoD (Pinned -> Device)")
			t.copy(461*us, 470*us, 480*us, 520*us, "Memcpy HtoD (Pinned -> Device)")
		}, IdleMechanisms{Copies: 380*us + 69*us, Launch: 11 * us, LaunchGaps: 1}},
		{"eager dispatch: each op's host time outlasts its one tiny kernel", func(t *timeline) {
			// Every 50 µs an op: 30 µs of dispatch, an 8 µs launch, 10 µs after; 2 µs kernels.
			for i := range int64(20) {
				s := i * 50 * us
				t.op("aten::add", s+2*us, s+50*us)
				t.launch(s+32*us, s+40*us, s+41*us, s+43*us)
			}
		}, IdleMechanisms{Launch: 19 * 48 * us, LaunchGaps: 19, DispatchGaps: 19}},
		{"dispatch through an outer op and a metadata op that launches nothing", func(t *timeline) {
			for i := range int64(10) {
				s := i * 60 * us
				t.op("aten::linear", s+1*us, s+59*us)
				t.op("aten::t", s+3*us, s+9*us) // launches nothing, but inside an op that does
				t.op("aten::addmm", s+10*us, s+58*us)
				t.launch(s+40*us, s+47*us, s+48*us, s+50*us)
			}
		}, IdleMechanisms{Launch: 9 * 58 * us, LaunchGaps: 9, DispatchGaps: 9}},
		{"host work in ops that launch nothing, between launching ops", func(t *timeline) {
			for i := range int64(4) {
				s := i * 600 * us
				t.op("aten::add", s, s+20*us)
				t.launch(s+10*us, s+15*us, s+16*us, s+56*us)
				t.op("aten::topk", s+30*us, s+590*us) // CPU tensors: no CUDA call
			}
		}, IdleMechanisms{HostWork: 3 * 560 * us, HostWorkGaps: 3}},
		{"kernels queued behind work the trace does not hold", func(t *timeline) {
			// All launched up front; each starts 300 µs after the previous one ended.
			for i := range int64(5) {
				t.launch(i*10*us, i*10*us+5*us, 100*us+i*400*us, 100*us+i*400*us+100*us)
			}
			t.call("cudaDeviceSynchronize", 60*us, 1810*us)
		}, IdleMechanisms{Queued: 4 * 300 * us, QueuedGaps: 4}},
		{"cudaEventQuery polls: not a sync", func(t *timeline) {
			t.launch(0, 5*us, 6*us, 106*us)
			t.call("cudaEventQuery", 100*us, 107*us)
			t.launch(300*us, 305*us, 306*us, 406*us)
		}, IdleMechanisms{HostWork: 200 * us, HostWorkGaps: 1}},
	}
	for _, c := range cases {
		tl := newTimeline()
		c.build(tl)
		r := tl.c.Result(AnalysisOptions{})
		if r.GPUIdle != c.want {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, r.GPUIdle, c.want)
		}
		// Every gap went to exactly one mechanism: with the copies, the stream idle time.
		var idle int64
		for _, s := range r.Idle {
			idle += s.Idle
		}
		if got := r.GPUIdle.Queued + r.GPUIdle.Sync + r.GPUIdle.Launch + r.GPUIdle.HostWork; got != idle {
			t.Errorf("%s: mechanisms %d ns, streams idle %d ns", c.name, got, idle)
		}
	}
}

// An annotation naming the request and a span gets the idle time that began after the work it
// launched; the request's total is the sum of its annotations'.
func TestIdleMechanismsGoToTheAnnotationAndTheRequest(t *testing.T) {
	const us = 1000
	tl := newTimeline()
	trace := "4bf92f3577b34da6a3ce929d0e0e4736"
	tl.c.Add(activity.Activity{Kind: activity.KindAnnotation, Name: fmt.Sprintf("request %s span 00f067aa0ba902b7", trace), Start: 0, End: 1000 * us})
	at := int64(0)
	for range 3 {
		tl.launch(at, at+5*us, at+6*us, at+56*us)
		tl.call("cudaDeviceSynchronize", at+5*us, at+57*us)
		at += 300 * us
	}
	// Work outside the annotation: its gap is the file's, not the request's.
	tl.launch(2000*us, 2005*us, 2006*us, 2056*us)
	r := tl.c.Result(AnalysisOptions{})
	want := IdleMechanisms{Sync: 2 * 250 * us, SyncGaps: 2}
	if got := r.KernelTimeFor(trace).Idle; got != want {
		t.Errorf("request: %+v, want %+v", got, want)
	}
	if len(r.Annotations) != 1 || r.Annotations[0].Idle != want {
		t.Errorf("annotations %+v", r.Annotations)
	}
	if r.GPUIdle.Total() != want.Total()+(2006-656)*us {
		t.Errorf("file %+v", r.GPUIdle)
	}
}
