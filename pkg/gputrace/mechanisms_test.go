package gputrace

import (
	"fmt"
	"testing"
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
	t.c.Add(Activity{Kind: KindRuntime, Name: "cudaLaunchKernel", Start: s, End: e, Correlation: t.corr})
	t.c.Add(Activity{Kind: KindKernel, Name: "k", Start: ks, End: ke, Stream: 7, Correlation: t.corr})
}

func (t *timeline) copy(s, e, cs, ce int64, name string) {
	t.corr++
	t.c.Add(Activity{Kind: KindRuntime, Name: "cudaMemcpyAsync", Start: s, End: e, Correlation: t.corr})
	t.c.Add(Activity{Kind: KindMemcpy, Name: name, Start: cs, End: ce, Stream: 7, Correlation: t.corr, Bytes: 1 << 20})
}

func (t *timeline) call(name string, s, e int64) {
	t.corr++
	t.c.Add(Activity{Kind: KindRuntime, Name: name, Start: s, End: e, Correlation: t.corr})
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
		if got := r.GPUIdle.Sync + r.GPUIdle.Launch + r.GPUIdle.HostWork; got != idle {
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
	tl.c.Add(Activity{Kind: KindAnnotation, Name: fmt.Sprintf("request %s span 00f067aa0ba902b7", trace), Start: 0, End: 1000 * us})
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
