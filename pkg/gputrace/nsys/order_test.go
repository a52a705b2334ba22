package nsys

import (
	"context"
	"database/sql"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
)

// nsysRow is one row of a hand-made export: its table and its values, in insert order.
type nsysRow struct {
	table string
	q     string
	args  []any
}

// twoProcessRows is an export of two processes (pids 4100 and 4200, on one machine) whose CUDA
// correlation IDs collide, as each process numbers its own: each launches one kernel with
// correlation 1, and process 4100 one copy with correlation 2.
func twoProcessRows() []nsysRow {
	const machine = int64(7) << 48 // globalTid/globalPid's bits above the process
	gtid := func(pid, tid int64) int64 { return machine | pid<<24 | tid }
	gpid := func(pid int64) int64 { return machine | pid<<24 }
	kernel := func(name, corr, pid, start, end int64) nsysRow {
		return nsysRow{"CUPTI_ACTIVITY_KIND_KERNEL", `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid,
		  demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ,
		  staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId)
		  VALUES (?, ?, 0, 1, 7, ?, ?, ?, ?, 32, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1)`, []any{start, end, corr, gpid(pid), name, name}}
	}
	call := func(corr, pid, start, end int64) nsysRow {
		return nsysRow{"CUPTI_ACTIVITY_KIND_RUNTIME", `INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
		  VALUES (?, ?, 1, ?, ?, 2, 0)`, []any{start, end, gtid(pid, pid+1), corr}}
	}
	return []nsysRow{
		call(1, 4100, 0, 5*µs),             // gemm's launch: 5 µs of API, then 5 µs queued
		kernel(0, 1, 4100, 10*µs, 30*µs),   // gemm
		call(1, 4200, 100*µs, 102*µs),      // relu's launch: 2 µs of API, then 98 µs queued
		kernel(1, 1, 4200, 200*µs, 210*µs), // relu
		call(2, 4100, 40*µs, 41*µs),        // the copy's call
		{"CUPTI_ACTIVITY_KIND_MEMCPY", `INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, globalPid, bytes, copyKind)
		  VALUES (?, ?, 0, 1, 7, 2, ?, 1000, 1)`, []any{45 * µs, 50 * µs, gpid(4100)}},
	}
}

// writeNsysRows writes an export of rows in the order given.
func writeNsysRows(t *testing.T, path string, rows []nsysRow) {
	t.Helper()
	writeNsysRowsWith(t, path, rows)
}

// writeNsysRowsWith is writeNsysRows with more names in StringIds (ids from 3).
func writeNsysRowsWith(t *testing.T, path string, rows []nsysRow, names ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(nsysSchema); err != nil {
		t.Fatal(err)
	}
	for id, s := range append([]string{"gemm", "relu", "cudaLaunchKernel_v7000"}, names...) {
		if _, err := db.Exec("INSERT INTO StringIds VALUES (?, ?)", id, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range rows {
		if _, err := db.Exec(r.q, r.args...); err != nil {
			t.Fatalf("%s: %v", r.q, err)
		}
	}
}

// analyzeFile reads an export into the analyses.
func analyzeFile(path string) (*gputrace.Result, error) {
	c := gputrace.NewCollector(gputrace.Limits{})
	err := Read(context.Background(), path, c)
	return c.Result(gputrace.AnalysisOptions{}), err
}

func analyzeWith(t *testing.T, path string, l gputrace.Limits) *gputrace.Result {
	t.Helper()
	c := gputrace.NewCollector(l)
	if err := Read(context.Background(), path, c); err != nil {
		t.Fatal(err)
	}
	return c.Result(gputrace.AnalysisOptions{})
}

// A multi-process export repeats correlation IDs: each kernel and copy joins the call of its own
// process (per launch, on the timeline, on the critical path), not the other process's.
func TestNsysJoinsEachKernelToItsOwnProcesssCall(t *testing.T) {
	path := filepath.Join(t.TempDir(), "two-processes.sqlite")
	writeNsysRows(t, path, twoProcessRows())
	r := analyzeWith(t, path, gputrace.Limits{Timeline: true, CriticalPath: true})
	got := map[string]gputrace.LaunchSummary{}
	for _, l := range r.Launches {
		got[l.Kernel] = l
	}
	if g := got["gemm"]; g.Count != 1 || g.APITime.Total != 5*µs || g.QueueTime.Total != 5*µs {
		t.Errorf("gemm launched %+v, want its own process's call: 5 µs of API, 5 µs queued", g)
	}
	if g := got["relu"]; g.Count != 1 || g.APITime.Total != 2*µs || g.QueueTime.Total != 98*µs {
		t.Errorf("relu launched %+v, want its own process's call: 2 µs of API, 98 µs queued", g)
	}
	tree := r.Timeline.Tree()
	for i, a := range r.Timeline.Activities {
		if a.Kind != activity.KindKernel && a.Kind != activity.KindMemcpy {
			continue
		}
		j := tree.Launch[i]
		if j < 0 {
			t.Errorf("%s at %d: no launch call on the timeline", a.Name, a.Start)
			continue
		}
		if call := r.Timeline.Activities[j]; call.Process != a.Launcher {
			t.Errorf("%s of process %d joined to a call of process %d on the timeline", a.Name, a.Launcher, call.Process)
		}
	}
}

// Since Nsight Systems 2025.6 an export's rows are not in time order: the analysis of rows in
// any order is the analysis of the rows in time order.
func TestNsysRowsInAnyOrderAnalyseTheSame(t *testing.T) {
	dir := t.TempDir()
	inOrder := filepath.Join(dir, "in-order.sqlite")
	writeNsysRows(t, inOrder, twoProcessRows())
	l := gputrace.Limits{Timeline: true, CriticalPath: true}
	want := analyzeWith(t, inOrder, l)
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 5 {
		rows := twoProcessRows()
		rng.Shuffle(len(rows), func(a, b int) { rows[a], rows[b] = rows[b], rows[a] })
		path := filepath.Join(dir, "shuffled"+string(rune('a'+i))+".sqlite")
		writeNsysRows(t, path, rows)
		got := analyzeWith(t, path, l)
		if !reflect.DeepEqual(got.Launches, want.Launches) || !reflect.DeepEqual(got.Temporal, want.Temporal) ||
			!reflect.DeepEqual(got.Launch, want.Launch) || !reflect.DeepEqual(got.Kernels, want.Kernels) ||
			!reflect.DeepEqual(got.CriticalPath, want.CriticalPath) || !reflect.DeepEqual(got.Timeline.Tree(), want.Timeline.Tree()) {
			t.Errorf("shuffle %d analyses differently from the rows in time order:\n got %+v\nwant %+v", i, got.Launches, want.Launches)
		}
	}
}

// A CUDA graph launch (vLLM's and SGLang's decode) is one call whose correlation all its kernels
// share: every kernel stays in the per-launch figures, under the graph launch, and on the
// critical path (HTA drops kernels that share a correlation).
func TestGraphLaunchKeepsEveryKernel(t *testing.T) {
	const pid = 4100
	gpid := int64(pid) << 24
	rows := []nsysRow{{"CUPTI_ACTIVITY_KIND_RUNTIME", `INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
		  VALUES (0, ?, 1, ?, 9, 3, 0)`, []any{4 * µs, gpid | 1}}}
	for i, name := range []int64{0, 1, 0} { // gemm, relu, gemm: one graph, three nodes
		start := int64(10+10*i) * µs
		rows = append(rows, nsysRow{"CUPTI_ACTIVITY_KIND_KERNEL", `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid,
		  demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ,
		  staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId)
		  VALUES (?, ?, 0, 1, 7, 9, ?, ?, ?, 32, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1)`, []any{start, start + 10*µs, gpid, name, name}})
	}
	path := filepath.Join(t.TempDir(), "graph.sqlite")
	writeNsysRowsWith(t, path, rows, "cudaGraphLaunch_v10000")
	r := analyzeWith(t, path, gputrace.Limits{CriticalPath: true, Timeline: true})
	got := map[string]gputrace.LaunchSummary{}
	for _, l := range r.Launches {
		got[l.Kernel] = l
	}
	if g := got["gemm"]; g.API != "cudaGraphLaunch" || g.Count != 2 || g.KernelTime.Total != 20*µs {
		t.Errorf("gemm's launches %+v, want 2 under cudaGraphLaunch", g)
	}
	if g := got["relu"]; g.API != "cudaGraphLaunch" || g.Count != 1 {
		t.Errorf("relu's launches %+v, want 1 under cudaGraphLaunch", g)
	}
	if r.Launch.Joined != 3 {
		t.Errorf("%d kernels joined to a call, want all 3", r.Launch.Joined)
	}
	p := r.CriticalPath
	if p == nil || p.Length != 40*µs || p.GPU != 30*µs {
		t.Fatalf("critical path %+v, want the call then all three kernels: 40 µs, 30 of them on the GPU", p)
	}
	tree := r.Timeline.Tree()
	for i, a := range r.Timeline.Activities {
		if a.Kind == activity.KindKernel && tree.Launch[i] < 0 {
			t.Errorf("kernel %s at %d µs has no launch call on the timeline", a.Name, a.Start/µs)
		}
	}
}

// An Nsight export has no cuda_sync records: a blocking synchronisation call still makes the
// GPU work it waited for a dependency of the host's next step (a sync edge from the last
// activity that ended while it waited), so the critical path runs through that kernel rather
// than through the call's host time.
func TestNsysBlockingCallsMakeSyncEdges(t *testing.T) {
	const pid = 4100
	gtid := int64(pid)<<24 | 1
	call := func(name, corr, start, end int64) nsysRow {
		return nsysRow{"CUPTI_ACTIVITY_KIND_RUNTIME", `INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
		  VALUES (?, ?, 1, ?, ?, ?, 0)`, []any{start, end, gtid, corr, name}}
	}
	kernel := func(corr, start, end int64) nsysRow {
		return nsysRow{"CUPTI_ACTIVITY_KIND_KERNEL", `INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId, globalPid,
		  demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ,
		  staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId)
		  VALUES (?, ?, 0, 1, 7, ?, ?, 0, 0, 32, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1)`, []any{start, end, corr, int64(pid) << 24}}
	}
	for _, syncCall := range []string{"cudaStreamSynchronize_v3020", "cudaDeviceSynchronize_v3020", "cudaEventSynchronize_v3020"} {
		t.Run(syncCall, func(t *testing.T) {
			rows := []nsysRow{
				call(2, 1, 0, 2*µs), kernel(1, 5*µs, 100*µs), // a long kernel
				call(3, 0, 3*µs, 101*µs), // the host waits for it
				call(2, 2, 102*µs, 104*µs), kernel(2, 106*µs, 120*µs),
			}
			path := filepath.Join(t.TempDir(), "sync.sqlite")
			writeNsysRowsWith(t, path, rows, syncCall)
			p := analyzeWith(t, path, gputrace.Limits{CriticalPath: true}).CriticalPath
			if p == nil || len(p.SyncEdges) != 1 || p.SyncEdges[0] != [2]int64{1 | pid<<32, 0} {
				t.Fatalf("critical path %+v, want one sync edge from the long kernel to the call", p)
			}
			if p.GPU != 95*µs+14*µs {
				t.Errorf("critical path: %d µs on the GPU of %d µs, want both kernels on it (109 µs)", p.GPU/µs, p.Length/µs)
			}
		})
	}
}

// Graph launches count as launches: an export with graph launches and no kernel records warns
// that the GPU side was not recorded.
func TestGraphLaunchesWithoutKernelsWarn(t *testing.T) {
	rows := []nsysRow{{"CUPTI_ACTIVITY_KIND_RUNTIME", `INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
		  VALUES (0, ?, 1, ?, 9, 3, 0)`, []any{4 * µs, int64(4100)<<24 | 1}}}
	path := filepath.Join(t.TempDir(), "graph-no-kernels.sqlite")
	writeNsysRowsWith(t, path, rows, "cudaGraphLaunch_v10000")
	r := analyzeWith(t, path, gputrace.Limits{})
	if !slices.ContainsFunc(r.Notices.Texts(), func(n string) bool { return strings.Contains(n, "1 kernel launches on the host but no kernel records") }) {
		t.Errorf("notices %q", r.Notices)
	}
}
