package kinetogen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

const (
	testTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	testSpan  = "00f067aa0ba902b7"
)

func scenario(m Mechanism, seed uint64) Scenario {
	return Scenario{Mechanism: m, TraceID: testTrace, SpanID: testSpan, Seed: seed}
}

func write(t testing.TB, s Scenario) ([]byte, Truth) {
	t.Helper()
	var buf bytes.Buffer
	truth, err := Write(&buf, s)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), truth
}

// event is a trace event as the file has it; times stay decimal text.
type event struct {
	Ph, Cat, Name string
	Pid, Tid      any
	Ts, Dur       json.Number
	Args          map[string]any
}

func events(t testing.TB, data []byte) (map[string]json.RawMessage, []event) {
	t.Helper()
	var top map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	var evs []event
	dec = json.NewDecoder(bytes.NewReader(top["traceEvents"]))
	dec.UseNumber()
	if err := dec.Decode(&evs); err != nil {
		t.Fatalf("traceEvents: %v", err)
	}
	return top, evs
}

// ns reads Kineto's "µs with three decimals" exactly.
func ns(t testing.TB, n json.Number) int64 {
	t.Helper()
	s := string(n)
	i := strings.IndexByte(s, '.')
	if i < 0 || len(s)-i != 4 {
		t.Fatalf("time %q has not three decimals", s)
	}
	v, err := strconv.ParseInt(s[:i]+s[i+1:], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

var (
	epochTS = regexp.MustCompile(`^[0-9]{16}\.[0-9]{3}$`)
	dur     = regexp.MustCompile(`^[0-9]+\.[0-9]{3}$`)
	// Kineto's field order for complete events.
	xOrder = regexp.MustCompile(`^  \{"ph": "X", "cat": "[^"]*", "name": ".*", "pid": [^,]+, "tid": [^,]+, "ts": [0-9.]+, "dur": [0-9.]+, "args": \{.*\}\},?$`)
)

func TestScenarioKinetoLayout(t *testing.T) {
	start := time.Date(2025, 3, 14, 15, 9, 26, 535_897_000, time.UTC)
	for _, m := range Mechanisms {
		t.Run(string(m), func(t *testing.T) {
			s := scenario(m, 7)
			s.Start, s.Device = start, 1
			data, truth := write(t, s)
			top, evs := events(t, data)
			for _, key := range []string{"schemaVersion", "deviceProperties", "traceEvents", "traceName"} {
				if _, ok := top[key]; !ok {
					t.Errorf("no %q", key)
				}
			}
			if !bytes.HasPrefix(data, []byte("{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n")) {
				t.Errorf("the trace does not open as Kineto's: %.80q", data)
			}
			var props []struct{ ID int }
			json.Unmarshal(top["deviceProperties"], &props)
			if len(props) != 2 || props[1].ID != 1 {
				t.Errorf("deviceProperties %+v, want GPUs 0 and 1", props)
			}
			for _, line := range strings.Split(string(data), "\n") {
				if strings.HasPrefix(line, `  {"ph": "X"`) && !xOrder.MatchString(line) {
					t.Fatalf("fields out of Kineto's order: %s", line)
				}
			}

			cats := map[string]int{}
			calls := map[int64]event{}
			gpu := map[int64]event{}
			flows := map[string]int{}
			var annots []event
			for _, e := range evs {
				if e.Ts != "" && !epochTS.MatchString(string(e.Ts)) {
					t.Fatalf("%s %q: ts %q is not 16 digits and 3 decimals", e.Cat, e.Name, e.Ts)
				}
				if e.Dur != "" && !dur.MatchString(string(e.Dur)) {
					t.Fatalf("%s %q: dur %q is not 3 decimals", e.Cat, e.Name, e.Dur)
				}
				if e.Ph != "X" {
					if e.Cat == "ac2g" {
						flows[e.Ph]++
					}
					continue
				}
				cats[e.Cat]++
				c, _ := e.Args["correlation"].(json.Number)
				corr, _ := c.Int64()
				switch e.Cat {
				case "cuda_runtime":
					calls[corr] = e
				case "kernel", "gpu_memcpy":
					gpu[corr] = e
					if e.Pid != json.Number("1") || e.Args["device"] != json.Number("1") || e.Tid != json.Number("7") {
						t.Fatalf("GPU event off device 1 stream 7: %+v", e)
					}
				case "user_annotation":
					annots = append(annots, e)
				}
			}
			for _, c := range []string{"cpu_op", "cuda_runtime", "kernel", "user_annotation", "gpu_user_annotation", "cuda_sync", "Trace"} {
				if cats[c] == 0 {
					t.Errorf("no %s events", c)
				}
			}
			if flows["s"] != len(gpu) || flows["f"] != len(gpu) {
				t.Errorf("flows s %d, f %d, want one pair per GPU activity (%d)", flows["s"], flows["f"], len(gpu))
			}
			if len(annots) != 1 || annots[0].Name != "request "+testTrace+" span "+testSpan {
				t.Fatalf("annotations %+v, want one naming the trace and span", annots)
			}
			a0 := ns(t, annots[0].Ts)
			a1 := a0 + ns(t, annots[0].Dur)
			if a0 != start.UnixNano() || a1 != start.Add(DefaultDuration).UnixNano() {
				t.Errorf("annotation [%d, %d], want [Start, Start+Duration]", a0, a1)
			}
			for corr, g := range gpu {
				c, ok := calls[corr]
				if !ok {
					t.Fatalf("GPU activity %q has no launch call (correlation %d)", g.Name, corr)
				}
				if cs := ns(t, c.Ts); cs < a0 || cs > a1 {
					t.Fatalf("launch call at %d outside the annotation", cs)
				}
				if c.Args["External id"] != g.Args["External id"] {
					t.Fatalf("call and work differ in External id: %v, %v", c.Args, g.Args)
				}
			}
			if int64(cats["kernel"]) != truth.Kernels || int64(cats["gpu_memcpy"]) != truth.Transfers {
				t.Errorf("kernels %d, copies %d; truth %d, %d", cats["kernel"], cats["gpu_memcpy"], truth.Kernels, truth.Transfers)
			}
		})
	}
}

// The per-launch truth is the written trace's: each kernel joined to its runtime call on the
// correlation, phase by phase from the file's own times. Some kernels start before their call
// returns (no queue time), as CUPTI records on an idle stream.
func TestScenarioKernelLaunchesAreTheTrace(t *testing.T) {
	unqueued := 0
	for _, m := range Mechanisms {
		for seed := uint64(1); seed <= 3; seed++ {
			data, truth := write(t, scenario(m, seed))
			_, evs := events(t, data)
			calls, kernels := map[string]event{}, map[string]event{}
			for _, e := range evs {
				c, _ := e.Args["correlation"].(json.Number)
				switch {
				case e.Ph != "X":
				case e.Cat == "cuda_runtime":
					calls[string(c)] = e
				case e.Cat == "kernel":
					kernels[string(c)] = e
				}
			}
			type phases struct{ api, queue, exec, total []int64 }
			rows := map[[2]string]*phases{}
			for corr, k := range kernels {
				c, ok := calls[corr]
				if !ok {
					t.Fatalf("%s/%d: kernel %q has no call", m, seed, k.Name)
				}
				cs, ks := ns(t, c.Ts), ns(t, k.Ts)
				ce, ke := cs+ns(t, c.Dur), ks+ns(t, k.Dur)
				key := [2]string{k.Name, c.Name}
				if rows[key] == nil {
					rows[key] = &phases{}
				}
				p := rows[key]
				p.api, p.exec, p.total = append(p.api, ce-cs), append(p.exec, ke-ks), append(p.total, max(ce, ke)-cs)
				if ks >= ce {
					p.queue = append(p.queue, ks-ce)
				} else {
					unqueued++
				}
			}
			var want []LaunchTruth
			for key, p := range rows {
				want = append(want, LaunchTruth{Kernel: key[0], Call: key[1], Count: int64(len(p.api)), Queued: int64(len(p.queue)),
					API: spread(p.api), Queue: spread(p.queue), Exec: spread(p.exec), Total: spread(p.total)})
			}
			slices.SortFunc(want, func(a, b LaunchTruth) int { return strings.Compare(a.Kernel+"\x00"+a.Call, b.Kernel+"\x00"+b.Call) })
			if !reflect.DeepEqual(want, truth.KernelLaunches) {
				t.Errorf("%s/%d: per-launch truth\n%+v\nthe trace's\n%+v", m, seed, truth.KernelLaunches, want)
			}
		}
	}
	if unqueued == 0 {
		t.Error("no kernel starts before its call returns: the queue time's exclusion is not exercised")
	}
}

func TestScenarioDeterministic(t *testing.T) {
	for _, m := range Mechanisms {
		a, ta := write(t, scenario(m, 3))
		b, tb := write(t, scenario(m, 3))
		if !bytes.Equal(a, b) || !reflect.DeepEqual(ta, tb) {
			t.Errorf("%s: the same scenario wrote different traces", m)
		}
	}
}

// kernelCounts is how many times each kernel name runs in the trace.
func kernelCounts(t testing.TB, data []byte) map[string]int {
	_, evs := events(t, data)
	n := map[string]int{}
	for _, e := range evs {
		if e.Cat == "kernel" {
			n[e.Name]++
		}
	}
	return n
}

func TestScenarioSeedsDiffer(t *testing.T) {
	for _, m := range Mechanisms {
		var seen []map[string]int
		nameSets := map[string]bool{}
		for seed := uint64(1); seed <= 6; seed++ {
			data, _ := write(t, scenario(m, seed))
			counts := kernelCounts(t, data)
			for _, prev := range seen {
				if maps.Equal(prev, counts) {
					t.Errorf("%s: seed %d runs the same kernels as an earlier seed: %v", m, seed, counts)
				}
			}
			seen = append(seen, counts)
			names := slices.Sorted(maps.Keys(counts))
			nameSets[strings.Join(names, "\n")] = true
		}
		if len(nameSets) < 2 {
			t.Errorf("%s: every seed uses the same kernel names", m)
		}
	}
}

func TestScenarioMechanismDominates(t *testing.T) {
	for _, m := range Mechanisms {
		for seed := uint64(0); seed < 16; seed++ {
			for _, d := range []time.Duration{3 * time.Millisecond, DefaultDuration, 60 * time.Millisecond} {
				s := scenario(m, seed)
				s.Duration = d
				_, tr := write(t, s)
				if m == MechKernels {
					if share := float64(tr.KernelTime) / float64(tr.Window); share < 0.9 {
						t.Errorf("kernels seed %d %v: kernel time %.3f of the window", seed, d, share)
					}
					continue
				}
				if share := float64(tr.Of(m)) / float64(tr.NoKernel()); share < 0.7 {
					t.Errorf("%s seed %d %v: %.3f of the no-kernel time (%+v)", m, seed, d, share, tr)
				}
			}
		}
	}
}

func TestScenarioTruthFitsWindow(t *testing.T) {
	for _, m := range Mechanisms {
		for seed := uint64(0); seed < 10; seed++ {
			s := scenario(m, seed)
			_, tr := write(t, s)
			if sum := tr.KernelTime + tr.Copies + tr.Queued + tr.Sync + tr.Launch + tr.HostWork; sum != tr.Window {
				t.Errorf("%s seed %d: parts sum to %d, window %d", m, seed, sum, tr.Window)
			}
			for _, v := range []int64{tr.KernelTime, tr.Copies, tr.Queued, tr.Sync, tr.Launch, tr.HostWork} {
				if v < 0 {
					t.Errorf("%s seed %d: negative part in %+v", m, seed, tr)
				}
			}
			start := time.Unix(0, EpochBase)
			if tr.WindowStart <= start.UnixNano() || tr.WindowEnd > start.Add(DefaultDuration).UnixNano() || tr.Window <= 0 {
				t.Errorf("%s seed %d: window [%d, %d] outside the annotation", m, seed, tr.WindowStart, tr.WindowEnd)
			}
			if tr.Kernels == 0 || tr.Launches != tr.Kernels+tr.Transfers || tr.SyncCalls == 0 {
				t.Errorf("%s seed %d: counts %+v", m, seed, tr)
			}
		}
	}
}

// TestScenarioTruthFromFile derives the truth again from the file alone, by brute force over the
// elementary segments between event edges, so that Truth is what the written events hold.
func TestScenarioTruthFromFile(t *testing.T) {
	blocking := map[string]bool{"cudaStreamSynchronize": true, "cudaDeviceSynchronize": true, "cudaEventSynchronize": true, "cudaMemcpy": true}
	for _, m := range Mechanisms {
		for seed := uint64(0); seed < 4; seed++ {
			data, want := write(t, scenario(m, seed))
			_, evs := events(t, data)
			var work, calls, syncs, ops []span
			for _, e := range evs {
				if e.Ph != "X" || e.Cat == "Trace" {
					continue
				}
				s := ns(t, e.Ts)
				x := span{start: s, end: s + ns(t, e.Dur)}
				if c, ok := e.Args["correlation"].(json.Number); ok {
					x.corr, _ = c.Int64()
				}
				switch e.Cat {
				case "kernel", "gpu_memcpy", "gpu_memset":
					x.kernel = e.Cat == "kernel"
					work = append(work, x)
				case "cuda_runtime":
					calls = append(calls, x)
					if blocking[e.Name] {
						syncs = append(syncs, x)
					}
				case "cpu_op":
					ops = append(ops, x)
				}
			}
			var got Truth
			launchOf := map[int64]span{}
			for _, c := range calls {
				for _, w := range work {
					if w.corr == c.corr {
						launchOf[c.corr] = c
					}
				}
			}
			var launches []span
			for _, c := range calls {
				if _, ok := launchOf[c.corr]; ok {
					launches = append(launches, c)
				}
			}
			got.Launches, got.SyncCalls = int64(len(launches)), int64(len(syncs))
			// The host's dispatch: the launch calls and every op one of them starts in.
			dispatch := append([]span(nil), launches...)
			for _, o := range ops {
				for _, c := range launches {
					if o.start <= c.start && c.start <= o.end {
						dispatch = append(dispatch, o)
						break
					}
				}
			}
			coverOf := func(spans []span, ga, gb int64) int64 {
				var cover int64
				cuts := edges(spans, ga, gb)
				for j := 0; j+1 < len(cuts); j++ {
					for _, c := range spans {
						if c.start <= cuts[j] && cuts[j+1] <= c.end {
							cover += cuts[j+1] - cuts[j]
							break
						}
					}
				}
				return cover
			}
			for _, w := range work {
				if w.kernel {
					got.Kernels++
				} else {
					got.Transfers++
				}
			}
			pts := edges(work, math.MinInt64, math.MaxInt64)
			got.WindowStart, got.WindowEnd = pts[0], pts[len(pts)-1]
			got.Window = got.WindowEnd - got.WindowStart
			gapStart, gapEnd := int64(-1), int64(-1)
			for i := 0; i+1 < len(pts); i++ {
				a, b := pts[i], pts[i+1]
				kernel, busy := false, false
				for _, w := range work {
					if w.start <= a && b <= w.end {
						busy, kernel = true, kernel || w.kernel
					}
				}
				switch {
				case kernel:
					got.KernelTime += b - a
				case busy:
					got.Copies += b - a
				default:
					if gapStart < 0 {
						gapStart = a
					}
					gapEnd = b
					continue
				}
				if gapStart < 0 {
					continue
				}
				// A gap [ga, gb) just ended: the activity starting at gb follows it.
				ga, gb := gapStart, gapEnd
				gapStart = -1
				var next span
				for _, w := range work {
					if w.start == gb {
						next = w
						break
					}
				}
				cover := coverOf(launches, ga, gb)
				sync := false
				for _, c := range syncs {
					sync = sync || c.start <= ga && ga <= c.end+SyncSlack
				}
				ln, ok := launchOf[next.corr]
				switch {
				case ok && ln.end <= ga && gb-ga > QueueLatency:
					got.Queued += gb - ga
					got.QueuedGaps++
				case sync:
					got.Sync += gb - ga
					got.SyncGaps++
				case ok && ln.end <= ga, 2*cover >= gb-ga:
					got.Launch += gb - ga
					got.LaunchGaps++
				case ok && gb-ga <= MaxDispatchGap && 2*coverOf(dispatch, ga, gb) >= gb-ga:
					got.Launch += gb - ga
					got.LaunchGaps++
					got.DispatchGaps++
				default:
					got.HostWork += gb - ga
					got.HostWorkGaps++
				}
			}
			got.KernelLaunches = want.KernelLaunches // TestScenarioKernelLaunchesAreTheTrace reads them
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s seed %d:\nfrom the file %+v\nWrite's truth %+v", m, seed, got, want)
			}
		}
	}
}

type span struct {
	start, end, corr int64
	kernel           bool
}

// edges are the distinct starts and ends of the spans, clipped to [lo, hi] (both included), sorted.
func edges(spans []span, lo, hi int64) []int64 {
	set := map[int64]bool{}
	if lo != math.MinInt64 {
		set[lo], set[hi] = true, true
	}
	for _, s := range spans {
		for _, p := range []int64{s.start, s.end} {
			if lo <= p && p <= hi {
				set[p] = true
			}
		}
	}
	out := make([]int64, 0, len(set))
	for p := range set {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func TestScenarioErrors(t *testing.T) {
	for _, c := range []struct {
		s    Scenario
		want string
	}{
		{Scenario{Mechanism: "warp", TraceID: testTrace}, "unknown mechanism"},
		{Scenario{Mechanism: MechSync, TraceID: "xyz"}, "not 32"},
		{Scenario{Mechanism: MechSync, TraceID: "12345678901234567890123456789012"}, "no letter"},
		{Scenario{Mechanism: MechSync, TraceID: testTrace, SpanID: "abc"}, "span ID"},
		{Scenario{Mechanism: MechSync, TraceID: testTrace, Duration: 100 * time.Microsecond}, "too short for two"},
		{Scenario{Mechanism: MechSync, TraceID: testTrace, Start: time.Unix(1, 0)}, "16 integer digits"},
		{Scenario{Mechanism: MechSync, TraceID: testTrace, Start: time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)}, "2096"},
		{Scenario{Mechanism: MechSync, TraceID: testTrace, Duration: time.Hour}, "duration"},
		{Scenario{Mechanism: MechSync, TraceID: testTrace, Device: -1}, "device"},
	} {
		if _, err := Write(io.Discard, c.s); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.s, err, c.want)
		}
	}
}

func TestWriterMicros(t *testing.T) {
	for in, want := range map[int64]string{EpochBase: "1623143089861234.567", 0: "0.000", 1: "0.001", -1500: "-1.500"} {
		if got := Micros(in); got != want {
			t.Errorf("Micros(%d) = %q, want %q", in, got, want)
		}
	}
}

func ExampleWrite() {
	var buf bytes.Buffer
	truth, err := Write(&buf, Scenario{Mechanism: MechSync, TraceID: testTrace, SpanID: testSpan, Seed: 1})
	if err != nil {
		panic(err)
	}
	fmt.Println(truth.Sync*10 >= truth.NoKernel()*7, truth.Window == truth.KernelTime+truth.Copies+truth.Idle())
	// Output: true true
}
