package kineto

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

const (
	fixtureBase    = kinetogen.EpochBase // ts "1623143089861234.567": 16 digits, as CUDA traces write them
	fixtureTraceID = kinetogen.HandCheckedTraceID
	µs             = 1000
)

// writeFixture writes kinetogen's hand-checked trace (kinetogen.WriteHandChecked).
func writeFixture(t testing.TB, old bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := kinetogen.WriteHandChecked(&buf, old); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readFixture(t testing.TB, data []byte) *gputrace.Result {
	t.Helper()
	c := gputrace.NewCollector(gputrace.Limits{})
	if err := Read(bytes.NewReader(data), c); err != nil {
		t.Fatal(err)
	}
	return c.Result(gputrace.AnalysisOptions{})
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestFixtureHandChecked(t *testing.T) {
	for _, old := range []bool{false, true} {
		r := readFixture(t, writeFixture(t, old))
		// Kernel summary: gemm 20, 30, 10 µs; nccl 40; relu 2. Total 102 µs.
		want := []gputrace.KernelSummary{
			{Name: "gemm", TimePercent: 100 * 60.0 / 102, Total: 60 * µs, Instances: 3, Avg: 20 * µs, Median: 20 * µs, Min: 10 * µs, Max: 30 * µs, StdDev: 10 * µs},
			{Name: "ncclKernel_AllReduce", TimePercent: 100 * 40.0 / 102, Total: 40 * µs, Instances: 1, Avg: 40 * µs, Median: 40 * µs, Min: 40 * µs, Max: 40 * µs},
			{Name: "relu", TimePercent: 100 * 2.0 / 102, Total: 2 * µs, Instances: 1, Avg: 2 * µs, Median: 2 * µs, Min: 2 * µs, Max: 2 * µs},
		}
		if len(r.Kernels) != len(want) {
			t.Fatalf("old=%v: kernels %+v", old, r.Kernels)
		}
		for i, w := range want {
			g := r.Kernels[i]
			if g.Name != w.Name || g.Total != w.Total || g.Instances != w.Instances || g.Min != w.Min || g.Max != w.Max ||
				!near(g.TimePercent, w.TimePercent) || !near(g.Avg, w.Avg) || !near(g.Median, w.Median) || !near(g.StdDev, w.StdDev) {
				t.Errorf("old=%v: kernel %d = %+v, want %+v", old, i, g, w)
			}
		}
		// Span [10,120]; compute 20+30+2+10; comm [60,100] less compute 28; memory [100,105];
		// idle [30,40] and [105,110].
		// Exact to the nanosecond from 16-digit timestamps: through float64 these moved by up
		// to ±128 ns each.
		wantT := gputrace.TemporalBreakdown{Start: fixtureBase + 10*µs, End: fixtureBase + 120*µs, Span: 110 * µs,
			Compute: 62 * µs, Communication: 28 * µs, Memory: 5 * µs, Idle: 15 * µs}
		if r.Temporal != wantT || len(r.TemporalByDevice) != 1 || r.TemporalByDevice[0] != wantT {
			t.Errorf("old=%v: temporal %+v by device %+v, want %+v", old, r.Temporal, r.TemporalByDevice, wantT)
		}
		wantIdle := []gputrace.StreamIdle{
			// gaps 10 µs (launch began before, under 30 µs: kernel wait), 20 µs (launch after:
			// host), 3 µs (launch began as relu ended, not after: kernel wait)
			{Device: 0, Stream: 7, Busy: 62 * µs, Idle: 33 * µs, HostWait: 20 * µs, KernelWait: 13 * µs, Gaps: 3, LongestGap: 20 * µs},
			// gaps 20 ns (the memset has no launch: kernel wait), 9 µs (launch began before:
			// kernel wait)
			{Device: 0, Stream: 8, Busy: 40*µs + 980 + 10*µs, Idle: 9*µs + 20, KernelWait: 9*µs + 20, Gaps: 2, LongestGap: 9 * µs},
		}
		if len(r.Idle) != 2 || r.Idle[0] != wantIdle[0] || r.Idle[1] != wantIdle[1] {
			t.Errorf("old=%v: idle %+v, want %+v", old, r.Idle, wantIdle)
		}
		// Delays 5, 30, 5, 8, 13 µs; relu (2 µs) is shorter than its 5 µs launch.
		wantL := gputrace.LaunchStats{Kernels: 5, Joined: 5, DelayAvg: 12.2 * µs, DelayMedian: 8 * µs, DelayP95: 30 * µs, DelayMax: 30 * µs, ShorterThanLaunch: 0.2}
		if l := r.Launch; l.Kernels != wantL.Kernels || l.Joined != wantL.Joined || !near(l.DelayAvg, wantL.DelayAvg) ||
			l.DelayMedian != wantL.DelayMedian || l.DelayP95 != wantL.DelayP95 || l.DelayMax != wantL.DelayMax || !near(l.ShorterThanLaunch, 0.2) {
			t.Errorf("old=%v: launch %+v, want %+v", old, r.Launch, wantL)
		}
		wantM := []gputrace.MemcpyVolume{
			{Direction: "HtoD", Count: 1, Bytes: 1_000_000, Busy: 10 * µs, BandwidthGBps: 100, Pageable: 1},
			{Direction: "Memset", Count: 1, Bytes: 4096, Busy: 980, BandwidthGBps: 4096.0 / 980},
		}
		if len(r.Memcpy) != 2 || r.Memcpy[0] != wantM[0] || !near(r.Memcpy[1].BandwidthGBps, wantM[1].BandwidthGBps) {
			t.Errorf("old=%v: memcpy %+v, want %+v", old, r.Memcpy, wantM)
		}
		// The synchronize call once, not again for its Context Sync record; the Stream Wait
		// Event does not block the host.
		if r.Sync.Calls != 1 || r.Sync.Time != 20*µs {
			t.Errorf("old=%v: sync %+v, want 1 call of 20 µs", old, r.Sync)
		}
		// Sync 20 µs is 14.3% of the host's 140 µs of calls (longer than the GPUs' 110 µs span);
		// idle 13.6% and copies 9.1% stay under.
		if len(r.Advice) != 1 || r.Advice[0].Pattern != "cuda synchronize bars" || !strings.Contains(r.Advice[0].Evidence, "1 synchronising call took 20µs, 14.3% of the host's traced calls (140µs)") {
			t.Errorf("old=%v: advice %+v", old, r.Advice)
		}
		if !r.Matches(fixtureTraceID) || !r.Matches(strings.ToUpper(fixtureTraceID[16:])) || r.Matches("00000000000000000000000000000001") {
			t.Errorf("old=%v: trace IDs %+v", old, r.TraceIDs)
		}
		// forward: nccl 40 + relu 2; request: the three gemms; the trace: all five.
		// Its GPU idle: [30,40] before the second gemm and [105,110] before the third, both
		// already launched (launch latency); the copy ran alone on the GPU 100–105 (the nccl
		// kernel covers its first 5 µs), the memset inside the copy adds nothing.
		wantA := []gputrace.AnnotationKernels{
			{Name: "request " + fixtureTraceID, TraceID: fixtureTraceID, Start: fixtureBase, End: fixtureBase + 140*µs, Kernels: 3, KernelTime: 60 * µs,
				Idle: gputrace.IdleMechanisms{Launch: 15 * µs, LaunchGaps: 2, Copies: 5 * µs}},
			{Name: "forward", Start: fixtureBase + 45*µs, End: fixtureBase + 90*µs, Kernels: 2, KernelTime: 42 * µs},
		}
		if len(r.Annotations) != 2 || r.Annotations[0] != wantA[0] || r.Annotations[1] != wantA[1] {
			t.Errorf("old=%v: annotations %+v, want %+v", old, r.Annotations, wantA)
		}
		if got := r.KernelTimeFor(strings.ToUpper(fixtureTraceID)); got.Kernels != 5 || got.KernelTime != 102*µs {
			t.Errorf("old=%v: kernel time for the request %+v", old, got)
		}
		if !hasNotice(r, `"mystery_category"×1`) {
			t.Errorf("old=%v: notices %q", old, r.Notices)
		}
	}
}

func hasNotice(r *gputrace.Result, sub string) bool {
	for _, n := range r.Notices {
		if strings.Contains(n.Text, sub) {
			return true
		}
	}
	return false
}

func TestGzipSameAsPlain(t *testing.T) {
	data := writeFixture(t, false)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(data)
	zw.Close()
	a, b := readFixture(t, data), readFixture(t, z.Bytes())
	if a.Temporal != b.Temporal || len(a.Kernels) != len(b.Kernels) || a.Kernels[0] != b.Kernels[0] {
		t.Errorf("gzip differs: %+v vs %+v", a, b)
	}
}

func TestTruncatedKeepsWhatWasRead(t *testing.T) {
	data := writeFixture(t, false)
	cut := bytes.Index(data, []byte(`"relu"`)) // inside the relu kernel event
	c := gputrace.NewCollector(gputrace.Limits{})
	err := Read(bytes.NewReader(data[:cut]), c)
	var pe *ParseError
	if !errors.As(err, &pe) || pe.Event < 0 || pe.Offset <= 0 {
		t.Fatalf("err = %v, want a ParseError with offset and event", err)
	}
	if !strings.Contains(err.Error(), "traceEvents[") || !strings.Contains(err.Error(), "unexpected EOF") {
		t.Errorf("message %q", err)
	}
	r := c.Result(gputrace.AnalysisOptions{})
	if len(r.Kernels) != 2 || r.Kernels[0].Name != "gemm" || r.Kernels[0].Instances != 2 {
		t.Errorf("kernels read before the cut: %+v", r.Kernels)
	}
}

func TestMalformedInputs(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", ``, "not JSON"},
		{"number", `42`, "expected a JSON object"},
		{"events not array", `{"traceEvents": {}}`, "not an array"},
		{"garbage in event", `{"traceEvents": [{"ph": "X",, }]}`, "traceEvents[0]: malformed event"},
		{"garbage after event", `{"traceEvents": [{"ph": "X"} {"ph": "X"}]}`, "traceEvents[1]"},
	} {
		err := Read(strings.NewReader(tc.in), gputrace.NewCollector(gputrace.Limits{}))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestOddValuesAreNotices(t *testing.T) {
	in := `{"traceEvents": [
	 {"ph": "X", "cat": "kernel", "name": "k", "ts": "soon", "dur": 1, "args": {"stream": 7}},
	 {"ph": "X", "cat": "kernel", "name": "k", "ts": 5, "dur": 1, "args": {"stream": "seven"}},
	 {"ph": "X", "cat": "kernel", "name": "k", "ts": -3, "dur": 2, "args": {"stream": 7}},
	 {"ph": "X", "cat": "kernel", "name": "k", "ts": 10, "dur": -2},
	 {"ph": "X", "cat": "kernel", "name": "k", "ts": -2.5, "dur": 2, "args": {"stream": 7}},
	 {"ph": "X", "cat": 7, "name": "k", "ts": 4.5, "dur": 2},
	 [1, 2], null, "x"
	]}`
	c := gputrace.NewCollector(gputrace.Limits{})
	if err := Read(strings.NewReader(in), c); err != nil {
		t.Fatal(err)
	}
	r := c.Result(gputrace.AnalysisOptions{})
	if len(r.Kernels) != 1 || r.Kernels[0].Instances != 3 {
		t.Errorf("kernels %+v", r.Kernels)
	}
	for _, want := range []string{"negative timestamps", "negative durations", "overlap", "wrong type", "no usable ts/dur"} {
		if !hasNotice(r, want) {
			t.Errorf("no notice %q in %q", want, r.Notices)
		}
	}
}

func TestUsToNs(t *testing.T) {
	for in, want := range map[string]int64{
		"5629214836837.123": 5_629_214_836_837_123, "1": 1000, "0.0005": 1, "0.0004": 0,
		"-2.5": -2500, "1e3": 1_000_000, "12.3456": 12346, "-0.0005": -1,
		// 16 integer digits, where float64 is off by up to 128 ns.
		"1623143089861234.567": 1_623_143_089_861_234_567, "1623143089861234.5674999": 1_623_143_089_861_234_567,
		"1623143089861234.5675": 1_623_143_089_861_234_568, "1695835572943623": 1_695_835_572_943_623_000,
		"1623143089861234567e-3": 1_623_143_089_861_234_567, "1.623143089861234567E15": 1_623_143_089_861_234_567,
		"0.000000000000000000000000000000000000001": 0, "000000000000000000000000000000000000001": 1000,
		"0e99999999999999999999": 0, "1e-99999999999999999999": 0, "4611686018427387.903": 4_611_686_018_427_387_903,
	} {
		if got, err := usToNs([]byte(in)); err != nil || got != want {
			t.Errorf("usToNs(%s) = %d, %v; want %d", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"": "missing", "x": "not a decimal number", "-": "not a decimal number", "1.": "not a decimal number",
		".5": "not a decimal number", "1e": "not a decimal number", "1.5.5": "not a decimal number", "0x10": "not a decimal number",
		"1e400": "out of range", "4611686018427387.904": "out of range", "-4611686018427387.904": "out of range",
		"99999999999999999999999": "out of range",
	} {
		if _, err := usToNs([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("usToNs(%q): error %v, want %q", in, err, want)
		}
	}
}

// Two kernels 1 ns apart at 16-digit timestamps: through float64 they overlapped or moved.
func TestSixteenDigitTimestampsAreExact(t *testing.T) {
	var buf bytes.Buffer
	k := kinetogen.NewWriter(&buf, kinetogen.EpochBase, nil)
	k.Runtime("cudaLaunchKernel", 0, 1*µs, 1)
	k.Kernel("a", 7, 2*µs, 2*µs+333, 1)
	k.Runtime("cudaLaunchKernel", 1*µs, 2*µs, 2)
	k.Kernel("b", 7, 2*µs+334, 3*µs+1, 2)
	if err := k.Close("exact", 4*µs); err != nil {
		t.Fatal(err)
	}
	r := readFixture(t, buf.Bytes())
	want := gputrace.TemporalBreakdown{Start: kinetogen.EpochBase + 2*µs, End: kinetogen.EpochBase + 3*µs + 1, Span: µs + 1, Compute: µs, Idle: 1}
	if r.Temporal != want || len(r.Idle) != 1 || r.Idle[0].Overlaps != 0 || r.Idle[0].KernelWait != 1 || hasNotice(r, "overlap") {
		t.Errorf("temporal %+v idle %+v notices %q; want %+v, a 1 ns gap and no overlap", r.Temporal, r.Idle, r.Notices, want)
	}
	if r.Launch.DelayMax != µs || r.Launch.DelayMedian != (µs+334)/2.0 {
		t.Errorf("launch %+v", r.Launch)
	}
}

// A ts or dur that is not a usable number skips its event; the notice names the first one.
func TestBadTimestampNamesEventAndField(t *testing.T) {
	in := `{"traceEvents": [
	 {"ph": "X", "cat": "kernel", "name": "ok", "ts": 1, "dur": 1},
	 {"ph": "X", "cat": "kernel", "name": "late", "ts": 1e400, "dur": 1},
	 {"ph": "X", "cat": "kernel", "name": "long", "ts": 1, "dur": 99999999999999999999}
	]}`
	c := gputrace.NewCollector(gputrace.Limits{})
	if err := Read(strings.NewReader(in), c); err != nil {
		t.Fatal(err)
	}
	r := c.Result(gputrace.AnalysisOptions{})
	if !hasNotice(r, `2 complete events had no usable ts/dur and were skipped (first: traceEvents[1] "late": ts 1e400 µs is out of range`) {
		t.Errorf("notices %q", r.Notices)
	}
	if len(r.Kernels) != 1 || r.Kernels[0].Name != "ok" {
		t.Errorf("kernels %+v", r.Kernels)
	}
}

func TestTraceIDsIn(t *testing.T) {
	got := activity.TraceIDsIn("yolo26_detect_4BF92F3577B34DA6A3CE929D0E0E4736.pt.trace.json a3ce929d0e0e4736 1234567890123456 xa3ce929d0e0e4736")
	if len(got) != 2 || got[0] != fixtureTraceID || got[1] != "a3ce929d0e0e4736" {
		t.Errorf("got %q", got)
	}
}

// A corrupt gzip stream made the decoder return the same read error forever (found by the
// fuzzer, testdata/fuzz/FuzzReadChrome/1609924f950fdde4).
func TestCorruptGzipStops(t *testing.T) {
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(writeFixture(t, false))
	zw.Close()
	data := z.Bytes()
	data[len(data)/2] ^= 0xff
	err := Read(bytes.NewReader(data), gputrace.NewCollector(gputrace.Limits{}))
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v, want a ParseError", err)
	}
}

func TestThreadIDs(t *testing.T) {
	for raw, want := range map[string]int64{`25738`: 25738, `"25738"`: 25738, `7.0`: 7, ``: 0, `null`: 0, `" 12 "`: 12} {
		if got := threadID([]byte(raw)); got != want {
			t.Errorf("tid %s: %d, want %d", raw, got, want)
		}
	}
	a, b := threadID([]byte(`"PyTorch Profiler"`)), threadID([]byte(`"stream 7"`))
	if a <= 0 || b <= 0 || a == b || a != threadID([]byte(`"PyTorch Profiler"`)) {
		t.Errorf("labels: %d, %d", a, b)
	}
}

// sinkLog records what a reader told its sink, in order.
type sinkLog struct{ log []string }

func (s *sinkLog) Add(a activity.Activity) { s.log = append(s.log, fmt.Sprintf("add %+v", a)) }
func (s *sinkLog) Notice(format string, args ...any) {
	s.log = append(s.log, "notice "+fmt.Sprintf(format, args...))
}
func (s *sinkLog) ScanTraceIDs(text string, src activity.Source) {
	s.log = append(s.log, fmt.Sprintf("scan %q", text))
}
func (s *sinkLog) AddFileName(string)  {}
func (s *sinkLog) KeepsTimeline() bool { return true }
func (s *sinkLog) NameProcess(pid int64, name string) {
	s.log = append(s.log, fmt.Sprintf("process %d %q", pid, name))
}
func (s *sinkLog) SetEpoch(int64) {}

// TestFieldsReadAsEncodingJSONReadsThem: the event's fields read their own JSON, and read it as
// encoding/json reads the plain types they stand for (string, json.Number, *float64,
// RawMessage): keys in any case, null as absent, numbers in strings, escapes and bytes that are
// not UTF-8 in names, args of the wrong type, a wrongly typed field counted and the rest of the
// event still read.
func TestFieldsReadAsEncodingJSONReadsThem(t *testing.T) {
	cases := []struct{ name, events, want string }{
		{"keys in any case, a number in a string", `{"PH":"X","Cat":"kernel","NAME":"k","Ts":"1.5","dUr":2,"ARGS":{"Device":2,"STREAM":3,"correlation":"7"}}`,
			`add {Kind:1 Name:k Start:1500 End:3500 Device:2 Stream:3 Correlation:0 Bytes:0 Thread:0 TraceID: WaitStream:-1 WaitCorrelation:0 Process:0 Launcher:0 Grid:[0 0 0] Block:[0 0 0]}`},
		{"null fields are absent", `{"ph":"X","cat":"kernel","name":null,"ts":1,"dur":2,"pid":4,"tid":9,"args":{"device":null,"stream":null}}`,
			`add {Kind:1 Name: Start:1000 End:3000 Device:4 Stream:9 Correlation:0 Bytes:0 Thread:0 TraceID: WaitStream:-1 WaitCorrelation:0 Process:0 Launcher:0 Grid:[0 0 0] Block:[0 0 0]}`},
		{"an arg of the wrong type is zero but present", `{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"pid":4,"tid":9,"args":{"device":"x","stream":1e999}}`,
			`add {Kind:1 Name:k Start:1000 End:3000 Device:0 Stream:0 Correlation:0 Bytes:0 Thread:0 TraceID: WaitStream:-1 WaitCorrelation:0 Process:0 Launcher:0 Grid:[0 0 0] Block:[0 0 0]}`},
		{"escapes and bytes that are not UTF-8", "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\\u00e9\\\"\xff\",\"ts\":1,\"dur\":2}",
			`add {Kind:1 Name:ké"` + "\uFFFD" + ` Start:1000 End:3000 Device:0 Stream:0 Correlation:0 Bytes:0 Thread:0 TraceID: WaitStream:-1 WaitCorrelation:0 Process:0 Launcher:0 Grid:[0 0 0] Block:[0 0 0]}`},
		{"a trace ID in an annotation's args", `{"ph":"X","cat":"user_annotation","name":"req","ts":1,"dur":2,"args":{"trace":"4bf92f3577b34da6a3ce929d0e0e4736"}}`,
			`add {Kind:7 Name:req Start:1000 End:3000 Device:0 Stream:0 Correlation:0 Bytes:0 Thread:0 TraceID:4bf92f3577b34da6a3ce929d0e0e4736 WaitStream:-1 WaitCorrelation:0 Process:0 Launcher:0 Grid:[0 0 0] Block:[0 0 0]}`},
		{"a process's name; not when its args are of the wrong type", `{"ph":"M","name":"process_name","pid":3,"args":{"name":"python"}},{"ph":"M","name":"process_name","pid":4,"args":{"name":5}},{"ph":"M","name":"process_name","pid":5,"args":null}`,
			`process 3 "python"|process 5 ""`},
		{"a wrongly typed field: counted, the rest read", `{"ph":"X","cat":"kernel","name":7,"ts":1,"dur":2},{"ph":"X","cat":"kernel","name":"k","ts":true,"dur":2}`,
			`add {Kind:1 Name: Start:1000 End:3000 Device:0 Stream:0 Correlation:0 Bytes:0 Thread:0 TraceID: WaitStream:-1 WaitCorrelation:0 Process:0 Launcher:0 Grid:[0 0 0] Block:[0 0 0]}|` +
				`notice 1 complete events had no usable ts/dur and were skipped (first: traceEvents[1] "k": ts missing or not a number)|` +
				`notice 2 events had fields of the wrong type (first: traceEvents[0]: name is number, not a string)`},
		{"a string that is not a number stops the event", `{"ph":"X","cat":"kernel","name":"k","ts":" 1","dur":2}`,
			`notice 1 complete events had no usable ts/dur and were skipped (first: traceEvents[0] "k": ts missing or not a number)|` +
				`notice 1 events had fields of the wrong type (first: traceEvents[0]: invalid number literal " 1")`},
	}
	for _, c := range cases {
		var s sinkLog
		if err := Read(strings.NewReader(`{"traceEvents":[`+c.events+`]}`), &s); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := strings.Join(s.log, "|"); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// TestReadingAnEventAllocatesNothing: a trace of many events costs its reader about one
// allocation per distinct name, not a few per event (names interned, numbers and args read in
// place; encoding/json's plain types cost about six an event), so that reading a large trace
// leaves the collector little garbage.
func TestReadingAnEventAllocatesNothing(t *testing.T) {
	var buf bytes.Buffer
	if err := kinetogen.WriteBig(&buf, 4<<20); err != nil {
		t.Fatal(err)
	}
	events := float64(bytes.Count(buf.Bytes(), []byte(`"ph"`)))
	var s countSink
	allocs := testing.AllocsPerRun(2, func() {
		if err := Read(bytes.NewReader(buf.Bytes()), &s); err != nil {
			t.Fatal(err)
		}
	})
	if s.n == 0 || allocs/events > 0.1 {
		t.Errorf("%.0f allocations for %.0f events (%d activities): %.3f an event", allocs, events, s.n, allocs/events)
	}
}

// countSink counts activities and keeps nothing.
type countSink struct{ n int }

func (s *countSink) Add(activity.Activity)                { s.n++ }
func (s *countSink) Notice(string, ...any)                {}
func (s *countSink) ScanTraceIDs(string, activity.Source) {}
func (s *countSink) AddFileName(string)                   {}
func (s *countSink) KeepsTimeline() bool                  { return false }
func (s *countSink) NameProcess(int64, string)            {}
func (s *countSink) SetEpoch(int64)                       {}
