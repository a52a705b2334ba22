package nsys

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
)

// nsysSchema is the part of the Nsight Systems export schema the reader uses, as documented
// in "Nsight Systems: Exporter SQLite Schema" (column names and types of nsys 2024.x).
const nsysSchema = `
CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,
  mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER, registersPerThread INTEGER NOT NULL,
  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,
  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,
  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
  localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,
  returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
  deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER, srcContextId INTEGER,
  dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER, graphNodeId INTEGER, virtualAddress INTEGER);
CREATE TABLE NVTX_EVENTS (start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,
  rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,
  textId INTEGER, domainId INTEGER, uint64Value INTEGER, int64Value INTEGER, doubleValue REAL,
  uint32Value INTEGER, int32Value INTEGER, floatValue REAL, jsonTextId INTEGER, jsonText TEXT);
`

// writeNsysFixture builds the same activity as writeFixture (less the memset and the NCCL
// kernel's name spelled nsys's way) in ns from 0.
const µs = 1000

func writeNsysFixture(t testing.TB, path string, withRuntime bool) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	schema := nsysSchema
	if !withRuntime {
		schema = strings.Replace(schema, "CUPTI_ACTIVITY_KIND_RUNTIME", "UNUSED_RUNTIME", 1)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.Exec(q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(schema)
	for id, s := range []string{"gemm", "relu", "ncclKernel_AllReduce_RING_LL_Sum_float", "cudaLaunchKernel_v7000",
		"cudaMemcpyAsync_v3020", "cudaDeviceSynchronize_v3020", "request " + kinetogen.HandCheckedTraceID, "void gemm<float>(int)", "ncclAllReduce"} {
		exec("INSERT INTO StringIds VALUES (?, ?)", id, s)
	}
	kernel := func(short, demangled, stream, corr int, start, end int64) {
		exec(`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, streamId, correlationId,
		  demangledName, shortName, registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ,
		  staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId)
		  VALUES (?, ?, 0, 1, ?, ?, ?, ?, 32, 66, 1, 1, 128, 1, 1, 0, 0, 0, 0, ?)`, start, end, stream, corr, demangled, short, corr)
	}
	runtime := func(name, corr int, start, end int64) {
		if withRuntime {
			exec(`INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue)
			  VALUES (?, ?, 1, 281474976710656, ?, ?, 0)`, start, end, corr, name)
		}
	}
	runtime(3, 1, 0, 5*µs)
	runtime(3, 2, 6*µs, 10*µs)
	kernel(0, 7, 7, 1, 10*µs, 30*µs)
	kernel(0, 7, 7, 2, 40*µs, 70*µs)
	runtime(3, 5, 50*µs, 52*µs)
	kernel(2, 2, 8, 5, 60*µs, 100*µs)
	runtime(3, 3, 80*µs, 85*µs)
	kernel(1, 1, 7, 3, 90*µs, 92*µs)
	runtime(4, 4, 92*µs, 95*µs)
	exec(`INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, streamId, correlationId, bytes, copyKind)
	  VALUES (?, ?, 0, 1, 7, 4, 1000000, 1)`, 95*µs, 105*µs)
	runtime(3, 7, 95*µs, 97*µs)
	kernel(0, 7, 8, 7, 110*µs, 120*µs)
	runtime(5, 0, 120*µs, 140*µs)
	exec(`INSERT INTO NVTX_EVENTS (start, end, eventType, textId) VALUES (0, ?, 59, 6)`, 140*µs)
}

func TestNsysExport(t *testing.T) {
	dir := t.TempDir()
	writeNsysFixture(t, filepath.Join(dir, "plain.sqlite"), true)
	path := filepath.Join(dir, "yolo26 report?#1%20.sqlite") // characters a URI must escape
	if err := os.Rename(filepath.Join(dir, "plain.sqlite"), path); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(path)
	r, err := analyzeFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// By name too (SQLite's URI), where the analysis cannot hand SQLite the open file.
	if err := Read(context.Background(), path, gputrace.NewCollector(gputrace.Limits{})); err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(path)
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || !after.ModTime().Equal(before.ModTime()) || after.Size() != before.Size() {
		t.Errorf("the export was written to: %d files in its directory", len(entries))
	}
	// Kernel names are the demangled ones, as cuda_gpu_kern_sum shows them.
	if len(r.Kernels) != 3 || r.Kernels[0].Name != "void gemm<float>(int)" || r.Kernels[0].Total != 60*µs ||
		r.Kernels[0].Instances != 3 || r.Kernels[0].StdDev != 10*µs || r.Kernels[0].Median != 20*µs {
		t.Errorf("kernels %+v", r.Kernels)
	}
	// As the Chrome fixture without the memset: memory [100,105] is the memcpy alone.
	want := gputrace.TemporalBreakdown{Start: 10 * µs, End: 120 * µs, Span: 110 * µs, Compute: 62 * µs, Communication: 28 * µs, Memory: 5 * µs, Idle: 15 * µs}
	if r.Temporal != want {
		t.Errorf("temporal %+v, want %+v", r.Temporal, want)
	}
	if r.Idle[0].HostWait != 20*µs || r.Idle[0].KernelWait != 13*µs || r.Idle[0].Other != 0 {
		t.Errorf("idle %+v", r.Idle)
	}
	if r.Launch.Joined != 5 || r.Launch.DelayMedian != 8*µs || r.Launch.ShorterThanLaunch != 0.2 {
		t.Errorf("launch %+v", r.Launch)
	}
	if len(r.Memcpy) != 1 || r.Memcpy[0].Direction != "HtoD" || r.Memcpy[0].BandwidthGBps != 100 {
		t.Errorf("memcpy %+v", r.Memcpy)
	}
	if r.Sync.Calls != 1 || r.Sync.Time != 20*µs || len(r.Advice) != 1 {
		t.Errorf("sync %+v advice %+v", r.Sync, r.Advice)
	}
	if !r.Matches(kinetogen.HandCheckedTraceID) {
		t.Errorf("trace IDs %+v", r.TraceIDs)
	}
	if got := r.KernelTimeFor(kinetogen.HandCheckedTraceID); got.Kernels != 5 || got.KernelTime != 102*µs {
		t.Errorf("kernel time for the request %+v", got)
	}
}

func TestNsysAbsentTablesAreNoActivity(t *testing.T) {
	path := filepath.Join(t.TempDir(), "noruntime.sqlite")
	writeNsysFixture(t, path, false)
	r, err := analyzeFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Kernels) != 3 || r.Launch.Joined != 0 || r.Launch.Kernels != 5 || r.Sync.Calls != 0 {
		t.Errorf("kernels %d launch %+v sync %+v", len(r.Kernels), r.Launch, r.Sync)
	}
}

func TestNsysBadFiles(t *testing.T) {
	dir := t.TempDir()
	notSQLite := filepath.Join(dir, "junk.sqlite")
	os.WriteFile(notSQLite, []byte("this is not a database, just text that is long enough to be read"), 0o600)
	if _, err := analyzeFile(notSQLite); err == nil {
		t.Error("junk file read without error")
	}
	if _, err := analyzeFile(filepath.Join(dir, "missing.sqlite")); err == nil {
		t.Error("missing file read without error")
	}
	wrong := filepath.Join(dir, "wrong.sqlite")
	db, _ := sql.Open("sqlite", wrong)
	db.Exec("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (begin INTEGER)")
	db.Close()
	_, err := analyzeFile(wrong)
	if err == nil || !strings.Contains(err.Error(), "has no column start") {
		t.Errorf("wrong schema: %v", err)
	}
	empty := filepath.Join(dir, "empty.sqlite")
	db, _ = sql.Open("sqlite", empty)
	db.Exec("CREATE TABLE other (x INTEGER)")
	db.Close()
	if _, err := analyzeFile(empty); err == nil || !strings.Contains(err.Error(), "not an Nsight Systems export") {
		t.Errorf("empty: %v", err)
	}
}
