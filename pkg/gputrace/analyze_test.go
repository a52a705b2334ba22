package gputrace

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

type truthEvent struct {
	name           string
	device, stream int
	start, end     int64
	launch         int64 // start of the launch call
	memory         bool
}

// randomTrace writes a random trace on two GPUs (streams 7 and 8 on GPU 0, stream 9 on GPU 1)
// and returns what it holds, for figures computed here without the package's code: a bitmap of
// nanoseconds per GPU for the breakdown, sorting for medians, two passes for the standard
// deviation, HTA's rules gap by gap for the idle split.
func randomTrace(t testing.TB, seed uint64) ([]byte, []truthEvent) {
	rng := rand.New(rand.NewPCG(seed, seed))
	var buf bytes.Buffer
	k := kinetogen.NewWriter(&buf, kinetogen.EpochBase, nil)
	names := []string{"gemm", "relu", "softmax", "ncclKernel_AllGather", "layernorm"}
	var truth []truthEvent
	corr := 0
	for s := 0; s < 3; s++ {
		k.Device = s / 2
		at := int64(rng.IntN(5000))
		prevEnd := at
		for i := 0; i < 150; i++ {
			corr++
			d := int64(1 + rng.IntN(3000))
			// Mostly queued ahead, before the stream went idle; sometimes the host fell behind
			// and the call starts after it.
			launch := prevEnd - int64(rng.IntN(4000))
			if rng.IntN(4) == 0 && at > prevEnd {
				launch = prevEnd + 1 + rng.Int64N(at-prevEnd)
			}
			k.Runtime("cudaLaunchKernel", launch, launch+int64(1+rng.IntN(2000)), corr)
			ev := truthEvent{device: k.Device, stream: s + 7, start: at, end: at + d, launch: launch}
			if rng.IntN(6) == 0 {
				ev.memory, ev.name = true, "Memcpy DtoH (Device -> Pinned)"
				k.Memcpy(ev.name, ev.stream, ev.start, ev.end, corr, int64(rng.IntN(1<<20)))
			} else {
				ev.name = names[rng.IntN(len(names))]
				k.Kernel(ev.name, ev.stream, ev.start, ev.end, corr)
			}
			truth = append(truth, ev)
			prevEnd = ev.end
			at = ev.end + int64(rng.IntN(3))*int64(rng.IntN(2000)) // often back-to-back
			if rng.IntN(10) == 0 {
				at += int64(rng.IntN(60_000)) // gaps either side of the 30 µs kernel-wait threshold
			}
		}
	}
	if err := k.Close("random", 0); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), truth
}

func TestFiguresMatchIndependentComputation(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		data, truth := randomTrace(t, seed)
		r := readFixture(t, data)

		durs := map[string][]int64{}
		var all int64
		for _, e := range truth {
			if !e.memory {
				durs[e.name] = append(durs[e.name], e.end-e.start)
				all += e.end - e.start
			}
		}
		if len(r.Kernels) != len(durs) {
			t.Fatalf("seed %d: %d kernel rows, want %d", seed, len(r.Kernels), len(durs))
		}
		for i, k := range r.Kernels {
			d := durs[k.Name]
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			var sum int64
			for _, x := range d {
				sum += x
			}
			mean := float64(sum) / float64(len(d))
			var ss float64
			for _, x := range d {
				ss += (float64(x) - mean) * (float64(x) - mean)
			}
			med := float64(d[len(d)/2])
			if len(d)%2 == 0 {
				med = float64(d[len(d)/2-1]+d[len(d)/2]) / 2
			}
			std := 0.0
			if len(d) > 1 {
				std = math.Sqrt(ss / float64(len(d)-1))
			}
			if k.Total != sum || k.Instances != int64(len(d)) || k.Min != d[0] || k.Max != d[len(d)-1] ||
				!near(k.Median, med) || math.Abs(k.StdDev-std) > 1e-6*std || !near(k.TimePercent, 100*float64(sum)/float64(all)) {
				t.Errorf("seed %d: %s = %+v; want total %d n %d med %g std %g", seed, k.Name, k, sum, len(d), med, std)
			}
			if i > 0 && r.Kernels[i-1].Total < k.Total {
				t.Errorf("seed %d: not ordered by total", seed)
			}
		}

		// Temporal breakdown of each GPU from a bitmap of its nanoseconds; the file's is their sum.
		var wantAll TemporalBreakdown
		for dev := 0; dev < 2; dev++ {
			var lo, hi int64 = math.MaxInt64, math.MinInt64
			for _, e := range truth {
				if e.device == dev {
					lo, hi = min(lo, e.start), max(hi, e.end)
				}
			}
			const comp, comm, mem = 1, 2, 4
			bits := make([]uint8, hi-lo)
			for _, e := range truth {
				if e.device != dev {
					continue
				}
				var b uint8 = comp
				switch {
				case e.memory:
					b = mem
				case strings.HasPrefix(e.name, "nccl"):
					b = comm
				}
				for x := e.start; x < e.end; x++ {
					bits[x-lo] |= b
				}
			}
			want := TemporalBreakdown{Device: int32(dev), Start: kinetogen.EpochBase + lo, End: kinetogen.EpochBase + hi, Span: hi - lo}
			for _, b := range bits {
				switch {
				case b&comp != 0:
					want.Compute++
				case b&comm != 0:
					want.Communication++
				case b&mem != 0:
					want.Memory++
				default:
					want.Idle++
				}
			}
			if len(r.TemporalByDevice) != 2 || r.TemporalByDevice[dev] != want {
				t.Errorf("seed %d: GPU %d temporal %+v, want %+v", seed, dev, r.TemporalByDevice, want)
			}
			if dev == 0 {
				wantAll.Start, wantAll.End = want.Start, want.End
			}
			wantAll.Start, wantAll.End = min(wantAll.Start, want.Start), max(wantAll.End, want.End)
			wantAll.Span += want.Span
			wantAll.Compute += want.Compute
			wantAll.Communication += want.Communication
			wantAll.Memory += want.Memory
			wantAll.Idle += want.Idle
		}
		if r.Temporal != wantAll {
			t.Errorf("seed %d: file temporal %+v, want %+v", seed, r.Temporal, wantAll)
		}

		// Per stream: idle = its own span − its own busy time, split gap by gap with HTA's
		// rules: host wait when the launch call started after the previous activity ended,
		// else kernel wait under 30 µs, else other.
		for _, s := range r.Idle {
			var want StreamIdle
			var lo, hi, busy, prevEnd int64 = math.MaxInt64, 0, 0, -1
			for _, e := range truth { // in time order on each stream
				if e.stream != int(s.Stream) {
					continue
				}
				lo, hi, busy = min(lo, e.start), max(hi, e.end), busy+e.end-e.start
				if gap := e.start - prevEnd; prevEnd >= 0 && gap > 0 {
					switch {
					case e.launch > prevEnd:
						want.HostWait += gap
					case gap < 30_000:
						want.KernelWait += gap
					default:
						want.Other += gap
					}
				}
				prevEnd = e.end
			}
			if s.Idle != hi-lo-busy || s.Busy != busy || s.HostWait != want.HostWait || s.KernelWait != want.KernelWait || s.Other != want.Other {
				t.Errorf("seed %d: stream %d %+v, want idle %d busy %d split %+v", seed, s.Stream, s, hi-lo-busy, busy, want)
			}
			if s.HostWait == 0 || s.KernelWait == 0 || s.Other == 0 {
				t.Errorf("seed %d: stream %d: the random trace should hold gaps of every kind: %+v", seed, s.Stream, s)
			}
		}
		if r.Launch.Joined != r.Launch.Kernels || r.Launch.Kernels != int64(len(truth))-countMemory(truth) {
			t.Errorf("seed %d: launch %+v", seed, r.Launch)
		}
	}
}

func countMemory(ts []truthEvent) (n int64) {
	for _, e := range ts {
		if e.memory {
			n++
		}
	}
	return n
}

func TestLimitsKeepMemoryBounded(t *testing.T) {
	c := NewCollector(Limits{MaxIntervals: 10, MaxLaunches: 5, MaxSamplesPerKernel: 8, MaxKernelNames: 2})
	for i := int64(0); i < 100; i++ {
		c.Add(activity.Activity{Kind: activity.KindRuntime, Name: "cudaLaunchKernel", Start: i * 10, End: i*10 + 1, Correlation: i + 1})
		c.Add(activity.Activity{Kind: activity.KindKernel, Name: fmt.Sprintf("k%d", i%3), Start: i * 10, End: i*10 + 1 + i%7, Correlation: i + 1})
	}
	r := c.Result(AnalysisOptions{})
	if c.ivals.len() != 10 || c.calls.len() != 5 || len(r.Kernels) != 3 {
		t.Fatalf("kept %d intervals, %d launches, %d names", c.ivals.len(), c.calls.len(), len(r.Kernels))
	}
	var n int64
	for _, k := range r.Kernels {
		n += k.Instances
		if len(c.kernels[k.Name].samples) > 8 || !k.MedianEstimated {
			t.Errorf("%s: %d samples, estimated %v", k.Name, len(c.kernels[k.Name].samples), k.MedianEstimated)
		}
	}
	if n != 100 || r.Kernels[len(r.Kernels)-1].Name != otherKernels && r.Kernels[0].Name != otherKernels && r.Kernels[1].Name != otherKernels {
		t.Errorf("instances %d, rows %+v", n, r.Kernels)
	}
	for _, want := range []string{"cover the first 10", "launch calls", "distinct kernel names", "estimated from a sample"} {
		if !hasNotice(r, want) {
			t.Errorf("no notice %q in %q", want, r.Notices)
		}
	}
}

func TestAdvice(t *testing.T) {
	// 200 kernels of 2 µs each launched by 5 µs calls, 2 ms apart: gaps, small kernels.
	c := NewCollector(Limits{})
	for i := int64(0); i < 200; i++ {
		at := i * 2_000_000
		c.Add(activity.Activity{Kind: activity.KindRuntime, Name: "cudaLaunchKernel", Start: at - 6000, End: at - 1000, Correlation: i + 1})
		c.Add(activity.Activity{Kind: activity.KindKernel, Name: "tiny", Start: at, End: at + 2000, Correlation: i + 1})
	}
	// 100 ms of pageable copies and 50 ms of synchronising.
	c.Add(activity.Activity{Kind: activity.KindMemcpy, Name: "Memcpy HtoD (Pageable -> Device)", Start: 10_000_000, End: 110_000_000, Stream: 3, Bytes: 1 << 30})
	c.Add(activity.Activity{Kind: activity.KindRuntime, Name: "cudaStreamSynchronize", Start: 0, End: 50_000_000})
	r := c.Result(AnalysisOptions{})
	got := map[string]string{}
	for _, a := range r.Advice {
		got[a.Pattern] = a.Evidence
	}
	for pattern, evidence := range map[string]string{
		"long CUDA kernel gaps":  "longest gap on a stream 1.998ms",
		"small frequent kernels": "200 kernels; 100% shorter than their launch call; typical median 2µs; median launch delay 1µs",
		"cudaMemcpy significant": "(100ms over 1 copies, 1 from pageable memory)",
		"cuda synchronize bars":  "1 synchronising call took 50ms",
	} {
		if !strings.Contains(got[pattern], evidence) {
			t.Errorf("%s: evidence %q, want %q", pattern, got[pattern], evidence)
		}
	}
}

// GPUs taking turns: pooled, the file would look busy throughout; each GPU keeps its own idle
// time, and the file's figures are theirs summed.
func TestSeveralGPUsEachKeepTheirIdle(t *testing.T) {
	c := NewCollector(Limits{})
	c.Add(activity.Activity{Kind: activity.KindKernel, Name: "gemm", Device: 0, Stream: 7, Start: 0, End: 10 * µs})
	c.Add(activity.Activity{Kind: activity.KindKernel, Name: "gemm", Device: 1, Stream: 7, Start: 10 * µs, End: 20 * µs})
	c.Add(activity.Activity{Kind: activity.KindKernel, Name: "gemm", Device: 0, Stream: 7, Start: 20 * µs, End: 30 * µs})
	r := c.Result(AnalysisOptions{})
	want := []TemporalBreakdown{
		{Device: 0, Start: 0, End: 30 * µs, Span: 30 * µs, Compute: 20 * µs, Idle: 10 * µs},
		{Device: 1, Start: 10 * µs, End: 20 * µs, Span: 10 * µs, Compute: 10 * µs},
	}
	if len(r.TemporalByDevice) != 2 || r.TemporalByDevice[0] != want[0] || r.TemporalByDevice[1] != want[1] {
		t.Errorf("by device %+v, want %+v", r.TemporalByDevice, want)
	}
	if all := (TemporalBreakdown{Start: 0, End: 30 * µs, Span: 40 * µs, Compute: 30 * µs, Idle: 10 * µs}); r.Temporal != all {
		t.Errorf("file %+v, want %+v", r.Temporal, all)
	}
	if len(r.Advice) != 1 || !strings.Contains(r.Advice[0].Evidence, "GPU idle 25.0% of 40µs (the spans of 2 GPUs summed)") {
		t.Errorf("advice %+v", r.Advice)
	}
}
