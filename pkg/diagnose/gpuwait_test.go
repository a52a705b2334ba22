package diagnose

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// gpuWork writes one request's GPU work into a collector, as a profiler on the GPU service would
// record it, under an annotation naming the trace and the span, from span start s for about
// window ns. It returns the GPU idle time it injected for the mechanism asked (ns).
type gpuWork struct {
	c    *gputrace.Collector
	rng  *rand.Rand
	corr int64
}

func (g *gpuWork) launch(s, e, ks, ke int64) {
	g.corr++
	g.c.Add(activity.Activity{Kind: activity.KindRuntime, Name: "cudaLaunchKernel", Start: s, End: e, Correlation: g.corr})
	g.c.Add(activity.Activity{Kind: activity.KindKernel, Name: fmt.Sprintf("kernel_%d", g.rng.IntN(5)), Start: ks, End: ke, Stream: 7, Correlation: g.corr})
}

func (g *gpuWork) copy(s, e, cs, ce int64) {
	g.corr++
	g.c.Add(activity.Activity{Kind: activity.KindRuntime, Name: "cudaMemcpyAsync", Start: s, End: e, Correlation: g.corr})
	g.c.Add(activity.Activity{Kind: activity.KindMemcpy, Name: "Memcpy HtoD (Pageable -> Device)", Start: cs, End: ce, Stream: 7, Correlation: g.corr, Bytes: (ce - cs) * 10})
}

func (g *gpuWork) op(name string, s, e int64) {
	g.c.Add(activity.Activity{Kind: activity.KindCPUOp, Name: name, Start: s, End: e})
}

func (g *gpuWork) call(name string, s, e int64) {
	g.corr++
	g.c.Add(activity.Activity{Kind: activity.KindRuntime, Name: name, Start: s, End: e, Correlation: g.corr})
}

// write fills [0, window) with the mechanism's pattern and returns the idle time it holds.
func (g *gpuWork) write(kind string, window int64) (injected int64) {
	const us = 1000
	r := func(lo, hi int64) int64 { return lo + g.rng.Int64N(hi-lo+1) }
	at := int64(0)
	for at < window {
		switch kind {
		case PartHostSync: // kernel, blocking sync, then host work before the next launch
			k := r(50, 400) * us
			g.launch(at, at+5*us, at+6*us, at+6*us+k)
			g.call("cudaStreamSynchronize", at+5*us, at+9*us+k)
			host := r(300, 2000) * us
			next := at + 9*us + k + host
			if next+6*us < window {
				injected += next + 6*us - (at + 6*us + k)
			}
			at = next
		case PartLaunch: // tiny kernels, back-to-back launches
			l := r(5, 12) * us
			g.launch(at, at+l, at+l+us, at+l+us+r(1, 3)*us)
			at += l
		case dispatch: // eager ops: tens of µs of dispatch around one launch of a tiny kernel
			pre, l, post := r(10, 60)*us, r(4, 10)*us, r(3, 15)*us
			g.op("aten::"+randomName(g.rng), at, at+pre+l+post)
			g.launch(at+pre, at+pre+l, at+pre+l+us, at+pre+l+us+r(1, 3)*us)
			at += pre + l + post + r(1, 4)*us
		case PartSharedGPU: // launched at once; each kernel starts after another tenant's work
			if at == 0 {
				n := window / (600 * us)
				start := int64(50 * us)
				for i := range n {
					k, wait := r(50, 200)*us, r(100, 500)*us
					start += wait
					g.launch(i*8*us, i*8*us+6*us, start, start+k)
					if i > 0 {
						injected += wait
					}
					start += k
				}
				g.call("cudaDeviceSynchronize", n*8*us, start+5*us)
				at = window
			}
		case PartCopies: // pageable copies, short kernels between
			c := r(200, 900) * us
			g.copy(at, at+c+20*us, at+10*us, at+10*us+c)
			injected += c
			g.launch(at+c+20*us, at+c+25*us, at+c+26*us, at+c+30*us)
			at += c + 30*us
		case PartHostWork: // an asynchronous launch, then host work with no CUDA call
			k := r(50, 300) * us
			g.launch(at, at+5*us, at+6*us, at+6*us+k)
			host := k + r(300, 2000)*us
			if at+host+6*us < window {
				injected += host - k
			}
			at += host
		}
	}
	if kind == PartLaunch || kind == dispatch {
		injected = -1 // computed from the collector: nearly all the gaps
	}
	return injected
}

// dispatch is the launch-overhead pattern of eager ops (the cause is PartLaunch).
const dispatch = "dispatch"

func randomName(rng *rand.Rand) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 3+rng.IntN(10))
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

// Randomised requests nobody here built: a caller, a GPU service whose span's GPU work shows one
// mechanism (names, durations and kernel counts drawn at random), its kernel trace naming the
// trace and the span as a profiler annotation would. The first cause is that mechanism, in that
// service, with its one remedy, explaining the injected idle time within 10 %.
func TestRandomGPUWaitsAreNamedByTheirMechanism(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 22))
	remedies := map[string]string{
		PartHostSync: ".item()", PartLaunch: "CUDA graph", PartCopies: "pin_memory=True", PartHostWork: "off the critical path",
		PartSharedGPU: "MIG slice",
	}
	for n := range 120 {
		pattern := []string{PartHostSync, PartLaunch, PartCopies, PartHostWork, dispatch, PartSharedGPU}[n%6]
		kind := pattern
		if pattern == dispatch {
			kind = PartLaunch
		}
		caller, gpuSvc := randomName(rng)+"-api", randomName(rng)+"-gpu"
		window := (20 + rng.Int64N(800)) * int64(time.Millisecond)
		spanMs := int(window/int64(time.Millisecond)) + 2
		root := jspan(fmt.Sprintf("a%015x", n), "", caller, "POST /"+randomName(rng), 0, spanMs+10)
		gpuSpan := jspan(fmt.Sprintf("b%015x", n), root.SpanID, gpuSvc, randomName(rng), 5, spanMs)
		tr := &models.Trace{TraceID: root.TraceID, Spans: []models.Span{root, gpuSpan}}

		g := &gpuWork{c: gputrace.NewCollector(gputrace.Limits{}), rng: rand.New(rand.NewPCG(uint64(n), 9))}
		g.c.Add(activity.Activity{Kind: activity.KindAnnotation, Name: "request " + tr.TraceID + " span " + gpuSpan.SpanID, Start: 0, End: window + int64(time.Millisecond)})
		injected := g.write(pattern, window)
		result := g.c.Result(gputrace.AnalysisOptions{})
		if injected < 0 {
			injected = result.GPUIdle.Launch
		}
		ans := answerOf(tr, nil, nil)
		correlate.AttributeKernels(ans.Rows, tr.TraceID, []*gputrace.Result{result})
		ans.KernelTraces = []*gputrace.Result{result}
		d := Request(ans)
		first := d.Verdict[0]
		if first.Kind != kind || first.Service != gpuSvc || first.SpanID != gpuSpan.SpanID {
			t.Fatalf("request %d (%s, %s): first cause %s %q\nbreakdown %s", n, pattern, time.Duration(window), first.Kind, first.Title, partsText(d.Breakdown))
		}
		if got := float64(first.Explains); got < 0.9*float64(injected) || got > 1.1*float64(injected) {
			t.Errorf("request %d (%s): explains %s, injected %s", n, pattern, first.Explains, time.Duration(injected))
		}
		if !strings.Contains(first.Action, remedies[kind]) {
			t.Errorf("request %d (%s): action %q", n, pattern, first.Action)
		}
		if pattern == dispatch && !strings.Contains(first.Title, "op dispatch") {
			t.Errorf("request %d (dispatch): title %q does not name the ops' dispatch", n, first.Title)
		}
		for k, r := range remedies {
			if k != kind && strings.Contains(first.Action, r) {
				t.Errorf("request %d (%s): the action also gives %s's remedy: %q", n, kind, k, first.Action)
			}
		}
	}
}

// A span's kernel traces hold more idle time than the span has left on the path: the mechanisms
// are scaled down in proportion and the parts still add up to the request.
func TestIdlePartsScaleToTheSpansTime(t *testing.T) {
	m := gputrace.IdleMechanisms{Sync: 600, Launch: 300, Copies: 100}
	parts := idleParts(m, 500)
	var sum time.Duration
	for _, p := range parts {
		sum += p.d
	}
	if sum != 500 || parts[0].d != 0 || parts[1].d != 300 || parts[2].d != 150 || parts[3].d != 50 || parts[4].d != 0 {
		t.Errorf("parts %+v", parts)
	}
	if parts := idleParts(m, 5000); parts[1].d != 600 || parts[2].d != 300 {
		t.Errorf("unscaled parts %+v", parts)
	}
}

// A shared GPU the DCGM series name other pods on: the cause names them, quotes the GPU's
// utilisation and links to the GPU; without other pods it says the work is outside the request
// and what would name it.
func TestSharedGPUNamesTheOtherPods(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 7))
	for n := range 20 {
		caller, gpuSvc := randomName(rng)+"-api", randomName(rng)+"-gpu"
		window := (50 + rng.Int64N(500)) * int64(time.Millisecond)
		spanMs := int(window/int64(time.Millisecond)) + 2
		root := jspan(fmt.Sprintf("e%015x", n), "", caller, "POST /"+randomName(rng), 0, spanMs+10)
		gpuSpan := jspan(fmt.Sprintf("f%015x", n), root.SpanID, gpuSvc, randomName(rng), 5, spanMs)
		tr := &models.Trace{TraceID: root.TraceID, Spans: []models.Span{root, gpuSpan}}
		g := &gpuWork{c: gputrace.NewCollector(gputrace.Limits{}), rng: rand.New(rand.NewPCG(uint64(n), 5))}
		g.c.Add(activity.Activity{Kind: activity.KindAnnotation, Name: "request " + tr.TraceID + " span " + gpuSpan.SpanID, Start: 0, End: window + int64(time.Millisecond)})
		g.write(PartSharedGPU, window)
		result := g.c.Result(gputrace.AnalysisOptions{})
		ans := answerOf(tr, nil, nil)
		correlate.AttributeKernels(ans.Rows, tr.TraceID, []*gputrace.Result{result})
		ans.KernelTraces = []*gputrace.Result{result}
		other := classify.Pod{Namespace: "batch", Name: randomName(rng) + "-trainer-0"}
		tenant := models.GPUProcess{GPU: 1 + rng.IntN(7), PID: 1000 + uint32(rng.IntN(30000)), Name: randomName(rng), UsedBytes: new(float64(1+rng.IntN(40)) * (1 << 30))}
		ownPID := uint32(rng.IntN(900) + 2)
		for i := range ans.Rows {
			if ans.Rows[i].Span.SpanID != gpuSpan.SpanID {
				continue
			}
			switch n % 3 {
			case 0:
				ans.Rows[i].GPU = &correlate.GPUWindow{GPUs: []classify.GPU{{Host: "gpu-node-3", Index: "2"}}, Class: classify.ComputeBound, ClassShare: 1,
					Util: 97, MemActivity: 40, PCIe: math.NaN(), FBUsed: math.NaN(), FBFree: math.NaN(), Samples: 3, SharedWith: []classify.Pod{other}}
			case 1:
				ans.Rows[i].Tenants = &correlate.LocalTenants{Host: "lab-box", OwnPID: ownPID, Processes: []models.GPUProcess{tenant}}
			}
		}
		first := verdictOf(ans)[0]
		if first.Kind != CauseSharedGPU || first.Service != gpuSvc {
			t.Fatalf("request %d: first cause %s %q", n, first.Kind, first.Title)
		}
		ev := strings.Join(first.Evidence, "\n")
		switch {
		case n%3 == 0:
			if !strings.Contains(first.Title, "GPU shared with batch/"+other.Name) || !strings.Contains(ev, "utilisation 97%") || first.Host != "gpu-node-3" || first.GPU != "2" {
				t.Errorf("request %d: %q, evidence %q, GPU %s/%s", n, first.Title, ev, first.Host, first.GPU)
			}
		case n%3 == 1:
			name := fmt.Sprintf("%s (pid %d)", tenant.Name, tenant.PID)
			if !strings.Contains(first.Title, "GPU shared with "+name) || !strings.Contains(ev, fmt.Sprintf("own pid %d", ownPID)) ||
				!strings.Contains(ev, fmt.Sprintf("GPU %d, %d.0 GiB of its memory", tenant.GPU, int(*tenant.UsedBytes)>>30)) ||
				first.Host != "lab-box" || first.GPU != fmt.Sprint(tenant.GPU) || !strings.Contains(first.Caveat, "when the query runs") {
				t.Errorf("request %d: %q, evidence %q, caveat %q, GPU %s/%s", n, first.Title, ev, first.Caveat, first.Host, first.GPU)
			}
		case !strings.HasPrefix(first.Title, "GPU busy with work outside this request") || !strings.Contains(first.Caveat, "gpuLocal"):
			t.Errorf("request %d: %q, caveat %q", n, first.Title, first.Caveat)
		}
		if !strings.Contains(ev, "launch-to-start delay") {
			t.Errorf("request %d: evidence %q", n, ev)
		}
	}
}
