package gputrace

import (
	"bufio"
	"compress/gzip"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"os"
	"strconv"
	"strings"
	"testing"

	realdatadir "github.com/hsi-profiling/hsi-profiling-datasource/internal/realdata"
)

// Real traces written by real tools, with the figures their own projects recorded for them
// (shared/realdata/README.md says where each comes from). They are third-party data kept beside
// the repository, never copied into it.

// realdata is the path of one real trace (internal/realdata.Path: $HSI_REALDATA, else
// shared/realdata beside the repository); its absence fails the test.
func realdata(t *testing.T, name string) string {
	t.Helper()
	return realdatadir.Path(t, name)
}

func analyzeReal(t *testing.T, name string) *Result {
	t.Helper()
	r, err := analyzeFile(realdata(t, name))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if hasNotice(r, "overlap") {
		t.Errorf("%s: invented overlaps: %q", name, r.Notices)
	}
	return r
}

// The kernel table the PyTorch Profiler TensorBoard plugin shows for the ResNet-50 sample, as
// its end-to-end test recorded it, row by row: calls, total, mean, max and min in µs.
func TestResNet50KernelSummaryIsTensorBoards(t *testing.T) {
	r := analyzeReal(t, "resnet50_worker0.pt.trace.json.gz")
	want := tensorBoardKernelTable(t)
	if len(r.Kernels) != len(want) {
		t.Fatalf("%d kernel names, TensorBoard lists %d", len(r.Kernels), len(want))
	}
	got := map[string]KernelSummary{}
	for _, k := range r.Kernels {
		got[k.Name] = k
	}
	for _, w := range want {
		g, ok := got[w.name]
		// TensorBoard rounds the mean half to even (Python's round).
		if !ok || g.Instances != w.calls || g.Total != w.total*µs || g.Max != w.max*µs || g.Min != w.min*µs ||
			int64(math.RoundToEven(g.Avg/µs)) != w.mean {
			t.Errorf("%s: %+v, TensorBoard: %+v", w.name, g, w)
		}
	}
}

type tbKernel struct {
	name                         string
	calls, total, mean, max, min int64
}

// tensorBoardKernelTable reads the kernel table of the sample resnet50_num_workers_0 from
// TensorBoard's result_check_file.txt: its end-to-end test (test_tensorboard_end2end.py) writes
// one line per page it requests, run by run in the order [resnet50_num_workers_0,
// resnet50_num_workers_4], so this sample's kernel table is the first line whose metadata.sort
// is "Total Duration (us)".
func tensorBoardKernelTable(t *testing.T) []tbKernel {
	t.Helper()
	f, err := os.Open(realdata(t, "tensorboard_result_check_file.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var page struct {
			Metadata struct{ Sort string }
			Data     struct {
				Columns []struct{ Name string }
				Rows    [][]any
			}
		}
		if json.Unmarshal(sc.Bytes(), &page) != nil || page.Metadata.Sort != "Total Duration (us)" {
			continue
		}
		col := map[string]int{}
		for i, c := range page.Data.Columns {
			col[c.Name] = i
		}
		num := func(row []any, name string) int64 {
			i, ok := col[name]
			if !ok {
				t.Fatalf("the kernel table has no column %q: %v", name, page.Data.Columns)
			}
			v, ok := row[i].(float64)
			if !ok || v != math.Trunc(v) {
				t.Fatalf("kernel table: %q = %v, not a whole number", name, row[i])
			}
			return int64(v)
		}
		var out []tbKernel
		for _, row := range page.Data.Rows {
			name, _ := row[col["Name"]].(string)
			out = append(out, tbKernel{name: name, calls: num(row, "Calls"), total: num(row, "Total Duration (us)"),
				mean: num(row, "Mean Duration (us)"), max: num(row, "Max Duration (us)"), min: num(row, "Min Duration (us)")})
		}
		return out
	}
	t.Fatalf("no kernel table (metadata.sort \"Total Duration (us)\") in tensorboard_result_check_file.txt (%v)", sc.Err())
	return nil
}

// The CloverLeaf Nsight Systems export as pipit reads it (its golden GPU trace, one Enter and one
// Leave row per kernel and copy): kernels per short name, copies per direction.
func TestCloverLeafNsysIsPipits(t *testing.T) {
	r := analyzeReal(t, "cloverleaf-nsys.sqlite")
	type agg struct{ count, total, min, max, bytes int64 }
	add := func(m map[string]*agg, key string, d, bytes int64) {
		a := m[key]
		if a == nil {
			a = &agg{min: d, max: d}
			m[key] = a
		}
		a.count++
		a.total += d
		a.min, a.max = min(a.min, d), max(a.max, d)
		a.bytes += bytes
	}

	pipitKernels, pipitCopies := map[string]*agg{}, map[string]*agg{}
	f, err := os.Open(realdata(t, "cloverleaf_gpu_trace.pipit.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) < 2 {
		t.Fatalf("pipit's CSV: %v", err)
	}
	col := map[string]int{}
	for i, c := range rows[0] {
		col[c] = i
	}
	for _, row := range rows[1:] {
		if row[col["Event Type"]] != "Enter" {
			continue
		}
		enter, err1 := strconv.ParseInt(row[col["Timestamp (ns)"]], 10, 64)
		leave, err2 := strconv.ParseInt(row[col["_matching_timestamp"]], 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("pipit's CSV row %v: %v %v", row, err1, err2)
		}
		switch kind := row[col["type"]]; kind {
		case "kernel":
			add(pipitKernels, row[col["Name"]], leave-enter, 0)
		default:
			bytes, err := strconv.ParseInt(row[col["bytes"]], 10, 64)
			if err != nil {
				t.Fatalf("pipit's CSV row %v: bytes: %v", row, err)
			}
			add(pipitCopies, kind, leave-enter, bytes)
		}
	}

	// The summary names kernels as nsys stats does (demangled); pipit by their short names. The
	// export itself says which is which.
	db, err := sql.Open("sqlite", "file:"+realdata(t, "cloverleaf-nsys.sqlite")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	short := map[string]string{}
	q, err := db.Query(`SELECT DISTINCT d.value, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k
	  JOIN StringIds d ON d.id = k.demangledName JOIN StringIds s ON s.id = k.shortName`)
	if err != nil {
		t.Fatal(err)
	}
	for q.Next() {
		var d, s string
		if err := q.Scan(&d, &s); err != nil {
			t.Fatal(err)
		}
		short[d] = s
	}
	q.Close()

	ours := map[string]*agg{}
	for _, k := range r.Kernels {
		s, ok := short[k.Name]
		if !ok {
			t.Fatalf("kernel %q is not in the export", k.Name)
		}
		a := ours[s]
		if a == nil {
			a = &agg{min: k.Min, max: k.Max}
			ours[s] = a
		}
		a.count += k.Instances
		a.total += k.Total
		a.min, a.max = min(a.min, k.Min), max(a.max, k.Max)
	}
	if len(ours) != len(pipitKernels) {
		t.Errorf("%d short kernel names, pipit %d", len(ours), len(pipitKernels))
	}
	var instances int64
	for name, p := range pipitKernels {
		instances += p.count
		if o := ours[name]; o == nil || *o != *p {
			t.Errorf("%s: %+v, pipit %+v", name, o, p)
		}
	}
	// realdata/README.md: "pipit reads 1312 kernels in 3 short names".
	if instances != 1312 || len(pipitKernels) != 3 {
		t.Errorf("pipit's CSV read as %d kernels in %d names, README says 1312 in 3", instances, len(pipitKernels))
	}

	byDir := map[string]MemcpyVolume{}
	for _, m := range r.Memcpy {
		byDir[m.Direction] = m
	}
	if len(byDir) != len(pipitCopies) {
		t.Errorf("copy directions %+v, pipit %v", r.Memcpy, pipitCopies)
	}
	for kind, dir := range map[string]string{"CUDA_MEMCPY_KIND_HTOD": "HtoD", "CUDA_MEMCPY_KIND_DTOH": "DtoH"} {
		p, m := pipitCopies[kind], byDir[dir]
		if p == nil || m.Count != p.count || m.Bytes != p.bytes || m.Busy != p.total {
			t.Errorf("%s: %+v, pipit %+v", dir, m, p)
		}
	}
	// realdata/README.md states what pipit reads: 254 host-to-device copies of 225,065,752 bytes
	// busy 9,346,285 ns; 25 device-to-host copies of 51,200 bytes busy 44,638 ns.
	if h, d := byDir["HtoD"], byDir["DtoH"]; h.Count != 254 || h.Bytes != 225_065_752 || h.Busy != 9_346_285 ||
		d.Count != 25 || d.Bytes != 51_200 || d.Busy != 44_638 {
		t.Errorf("copies %+v, README: HtoD 254 / 225065752 B / 9346285 ns, DtoH 25 / 51200 B / 44638 ns", r.Memcpy)
	}
}

// The idle split of the CloverLeaf export, computed in the export's own SQL with HTA's rules:
// gap by gap on each stream, host wait when the activity's launch call started after the
// previous one ended, else kernel wait under 30 µs, else other. Kernel wait is not 0.
func TestCloverLeafIdleSplitIsHTAs(t *testing.T) {
	r := analyzeReal(t, "cloverleaf-nsys.sqlite")
	db, err := sql.Open("sqlite", "file:"+realdata(t, "cloverleaf-nsys.sqlite")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var host, kernel, other int64
	err = db.QueryRow(`
	  WITH a AS (
	    SELECT start, end, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL
	    UNION ALL SELECT start, end, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_MEMCPY),
	  g AS (
	    SELECT start - LAG(end) OVER w AS gap, LAG(end) OVER w AS prev, correlationId FROM a
	    WINDOW w AS (PARTITION BY streamId ORDER BY start))
	  SELECT
	    COALESCE(SUM(CASE WHEN r.start > g.prev THEN gap END), 0),
	    COALESCE(SUM(CASE WHEN NOT COALESCE(r.start > g.prev, 0) AND gap < 30000 THEN gap END), 0),
	    COALESCE(SUM(CASE WHEN NOT COALESCE(r.start > g.prev, 0) AND gap >= 30000 THEN gap END), 0)
	  FROM g LEFT JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = g.correlationId
	  WHERE g.gap > 0`).Scan(&host, &kernel, &other)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Idle) != 1 || r.Idle[0].HostWait != host || r.Idle[0].KernelWait != kernel || r.Idle[0].Other != other || kernel == 0 {
		t.Errorf("idle %+v, want host wait %d, kernel wait %d (not 0), other %d", r.Idle, host, kernel, other)
	}
	// One GPU: the file's breakdown is that GPU's.
	if len(r.TemporalByDevice) != 1 || r.TemporalByDevice[0] != r.Temporal || r.Temporal.Idle != r.Temporal.Span-r.Temporal.Compute-r.Temporal.Memory {
		t.Errorf("temporal %+v by device %+v", r.Temporal, r.TemporalByDevice)
	}
}

// Each blocking call once: realdata/README.md states that in this trace "the host calls that
// block on the GPU are 21, taking 1.497 ms in all"; each also has a cuda_sync record, and
// Stream Wait Event records block nothing.
func TestAlexNetSynchronisationCountedOnce(t *testing.T) {
	r := analyzeReal(t, "alexnet_benchmark.json.gz")
	if r.Sync.Calls != 21 || r.Sync.Time != 1_497_000 {
		t.Errorf("sync %+v, want 21 calls taking 1.497 ms", r.Sync)
	}
	if share := r.Temporal.Percent(r.Sync.Time); share >= 100 {
		t.Errorf("sync time is %.1f%% of the GPU span", share)
	}
}

// A Triton kernel launched through cuLaunchKernel starts before the call returns: the largest
// launch delay is that negative delay, computed here from the file's decimal text.
func TestTritonNegativeLaunchDelay(t *testing.T) {
	r := analyzeReal(t, "triton_example.json.gz")
	f, err := os.Open(realdata(t, "triton_example.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(zr)
	dec.UseNumber()
	var trace struct {
		TraceEvents []struct {
			Cat     string
			Ts, Dur json.Number
			Args    struct{ Correlation json.Number }
		}
	}
	if err := dec.Decode(&trace); err != nil {
		t.Fatal(err)
	}
	rat := func(n json.Number) *big.Rat {
		v, ok := new(big.Rat).SetString(string(n))
		if !ok {
			t.Fatalf("%q is not a number", n)
		}
		return v
	}
	kernelStart, launchEnd := map[string]*big.Rat{}, map[string]*big.Rat{}
	for _, e := range trace.TraceEvents {
		switch e.Cat {
		case "kernel":
			kernelStart[string(e.Args.Correlation)] = rat(e.Ts)
		case "cuda_driver", "cuda_runtime":
			launchEnd[string(e.Args.Correlation)] = new(big.Rat).Add(rat(e.Ts), rat(e.Dur))
		}
	}
	var delays []int64
	for corr, start := range kernelStart {
		if end, ok := launchEnd[corr]; ok {
			ns := new(big.Rat).Mul(new(big.Rat).Sub(start, end), big.NewRat(1000, 1))
			if !ns.IsInt() {
				t.Fatalf("delay %s ns is not whole", ns)
			}
			delays = append(delays, ns.Num().Int64())
		}
	}
	if len(delays) != 1 || delays[0] >= 0 {
		t.Fatalf("the trace should hold one kernel started before its launch returned: %v", delays)
	}
	if l := r.Launch; l.Joined != 1 || l.DelayMax != delays[0] || l.DelayMedian != float64(delays[0]) {
		t.Errorf("launch %+v, want the one delay %d ns", l, delays[0])
	}
}

// On real traces the idle split is checked against the temporal breakdown, which computes the
// same quantities another way (HTA's): the gaps of every GPU, whatever their mechanism, are the
// GPUs' idle time, and the copy-only time is their memory time. Sync gaps come from blocking
// calls only: alexnet has them; in event_sync_multi_stream the cudaEventQuery polls (each with
// an "Event Sync" record) block nothing, and its one cudaDeviceSynchronize starts after the
// GPU's last gap began, so none of its gaps is a sync gap.
func TestIdleMechanismsOfRealTracesAddUpToTheirIdleTime(t *testing.T) {
	for _, c := range []struct {
		file     string
		syncGaps bool
	}{
		{"resnet50_worker0.pt.trace.json.gz", true},
		{"alexnet_benchmark.json.gz", true},
		{"event_sync_multi_stream.json.gz", false},
		{"cloverleaf-nsys.sqlite", true},
	} {
		r := analyzeReal(t, c.file)
		m := r.GPUIdle
		if got := m.Queued + m.Sync + m.Launch + m.HostWork; got != r.Temporal.Idle {
			t.Errorf("%s: gaps by mechanism %d ns (%+v), GPU idle %d ns", c.file, got, m, r.Temporal.Idle)
		}
		if m.Copies != r.Temporal.Memory {
			t.Errorf("%s: copies %d ns, temporal memory %d ns", c.file, m.Copies, r.Temporal.Memory)
		}
		if (m.SyncGaps > 0) != c.syncGaps {
			t.Errorf("%s: %d sync gaps", c.file, m.SyncGaps)
		}
	}
}

// The one call in event_sync_multi_stream that blocks the host is its cudaDeviceSynchronize
// (about 20 µs): the "Event Sync" records Kineto writes beside each cudaEventQuery stand for a
// call that only polls, and the "Stream Wait Event" record for one that makes a stream wait.
func TestEventQueryPollsAreNotBlockingCalls(t *testing.T) {
	r := analyzeReal(t, "event_sync_multi_stream.json.gz")
	if r.Sync.Calls != 1 || r.Sync.Time != 20_000 {
		t.Errorf("sync %+v, want the one cudaDeviceSynchronize of 20 µs", r.Sync)
	}
}

// Triton's example: one synchronising call of 16.8 µs around a 1.76 µs kernel. Its share is of
// the host's traced calls, which outlast the GPU's span, so no advice says over 100%.
func TestSyncShareOfAShortGPUSpanStaysAShare(t *testing.T) {
	r := analyzeReal(t, "triton_example.json.gz")
	if r.Sync.Calls != 1 || r.HostWindow <= r.Temporal.Span {
		t.Fatalf("sync %+v, host window %d ns, GPU span %d ns: want one call, the host's calls longer than the GPU span", r.Sync, r.HostWindow, r.Temporal.Span)
	}
	for _, a := range r.Advice {
		if strings.Contains(a.Evidence, "calls took") || strings.Contains(a.Evidence, "call took") {
			share := 100 * float64(r.Sync.Time) / float64(r.HostWindow)
			if share > 100 || !strings.Contains(a.Evidence, fmt.Sprintf("%.1f%% of the host's traced calls", share)) {
				t.Errorf("advice %q: want the share of the host's traced calls (%.1f%%)", a.Evidence, share)
			}
		}
	}
}

// A CUPTI-profiler run records 77 kernel launches on the host and no kernel on the GPU: the
// answer says why its GPU figures are empty instead of an empty summary without a word.
func TestLaunchesWithoutKernelRecordsSaySo(t *testing.T) {
	r := analyzeReal(t, "cupti_profiler_no_kernels.json.gz")
	if len(r.Kernels) != 0 {
		t.Fatalf("%d kernels, want none", len(r.Kernels))
	}
	if !hasNotice(r, "77 kernel launches on the host but no kernel records on the GPU") {
		t.Errorf("notices %q: want the launches without kernel records said", r.Notices)
	}
	// A trace with kernels says nothing of the kind.
	if hasNotice(analyzeReal(t, "triton_example.json.gz"), "no kernel records") {
		t.Error("a trace with kernel records is said to have none")
	}
}

// Dispatch against other host work on real traces. ResNet-50's eager training step launches
// thousands of small kernels from its ops: over a thousand of its gaps are the ops' dispatch.
// AlexNet's first convolution holds the host for 10.8 s inside aten::cudnn_convolution (cuDNN's
// first-call initialisation and autotuning) before it launches: one op, but not its dispatch,
// so that gap stays host work.
func TestDispatchGapsOfRealTraces(t *testing.T) {
	r := analyzeReal(t, "resnet50_worker0.pt.trace.json.gz")
	if m := r.GPUIdle; m.DispatchGaps < 1000 || m.DispatchGaps > m.LaunchGaps {
		t.Errorf("resnet50: %+v, want over 1000 dispatch gaps among the launch gaps", m)
	}
	r = analyzeReal(t, "alexnet_benchmark.json.gz")
	if m := r.GPUIdle; m.HostWork < 10_000_000_000 || m.Launch > 10_000_000 {
		t.Errorf("alexnet: %+v, want cuDNN's 10 s first call as host work, not launch overhead", m)
	}
}
