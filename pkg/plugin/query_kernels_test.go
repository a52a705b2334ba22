package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
)

const kernelTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"

// kinetoTrace is a small PyTorch profiler (Kineto) Chrome trace: an annotation naming the
// request, two launches of gemm (10 µs, 30 µs) and one of relu (5 µs) on stream 7, stamped as
// Kineto stamps CUDA events: 16-digit epoch microseconds with 3 decimals.
func kinetoTrace(annotation string) string {
	return `{
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}],
  "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "` + annotation + `", "pid": 1, "tid": 1, "ts": 1763900000001000.000, "dur": 200.000, "args": {"External id": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1763900000001010.000, "dur": 5.000, "args": {"External id": 2, "cbid": 211, "correlation": 11}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1763900000001020.000, "dur": 10.000, "args": {"External id": 2, "device": 0, "stream": 7, "correlation": 11}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1763900000001030.000, "dur": 5.000, "args": {"External id": 3, "cbid": 211, "correlation": 12}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1763900000001040.000, "dur": 30.000, "args": {"External id": 3, "device": 0, "stream": 7, "correlation": 12}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1763900000001075.000, "dur": 5.000, "args": {"External id": 4, "cbid": 211, "correlation": 13}},
  {"ph": "X", "cat": "kernel", "name": "relu", "pid": 0, "tid": 7, "ts": 1763900000001080.000, "dur": 5.000, "args": {"External id": 4, "device": 0, "stream": 7, "correlation": 13}}
  ],
  "traceName": "worker.pt.trace.json",
  "displayTimeUnit": "ms"
}
`
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// kernelDirs makes a trace directory: one trace named by the trace ID, one unnamed whose
// annotation names it, and a file outside reached through a symlink.
func kernelDirs(t *testing.T) (dir, outside string) {
	root := t.TempDir()
	dir, outside = filepath.Join(root, "profiles"), filepath.Join(root, "secret")
	writeFile(t, filepath.Join(dir, "infer", "infer_"+kernelTraceID+".pt.trace.json"), kinetoTrace("infer"))
	writeFile(t, filepath.Join(dir, "unnamed.json"), kinetoTrace("request "+strings.Repeat("a", 32)))
	writeFile(t, filepath.Join(outside, "leak.json"), kinetoTrace("leak"))
	if err := os.Symlink(filepath.Join(outside, "leak.json"), filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linkdir")); err != nil {
		t.Fatal(err)
	}
	return dir, outside
}

func runKernels(t *testing.T, ds *Datasource, q string) backend.DataResponse {
	t.Helper()
	res, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{query("A", q)}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Responses["A"]
}

func TestKernelsQueryByTraceID(t *testing.T) {
	dir, _ := kernelDirs(t)
	ds := newTestDatasource(t, map[string]any{"traceDirectories": []string{dir}}, nil)
	r := runKernels(t, ds, `{"queryType":"kernels","traceId":"`+kernelTraceID+`"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	names := []string{}
	for _, f := range r.Frames {
		names = append(names, f.Name)
	}
	if strings.Join(names, ",") != "kernel summary,temporal breakdown,stream idle,launch statistics,memcpy,advice" {
		t.Fatalf("frames %v", names)
	}
	s := r.Frames[0]
	if s.Rows() != 2 || cell(t, s, "name", 0) != "gemm" || cell(t, s, "total", 0) != int64(40000) || cell(t, s, "instances", 0) != int64(2) ||
		cell(t, s, "min", 0) != int64(10000) || cell(t, s, "max", 0) != int64(30000) || cell(t, s, "median", 0) != 20000.0 {
		tbl, _ := s.StringTable(-1, -1)
		t.Fatalf("summary:\n%s", tbl)
	}
	if p := cell(t, s, "time %", 0).(float64); p < 88.8 || p > 88.9 {
		t.Errorf("gemm time %% = %v, want 40/45", p)
	}
	if !strings.Contains(noticeTexts(s), "infer/infer_"+kernelTraceID) {
		t.Errorf("notices %q should name the file", noticeTexts(s))
	}

	// Found by content: the unnamed file's annotation names the trace.
	r = runKernels(t, ds, `{"queryType":"kernels","traceId":"`+strings.Repeat("a", 32)+`"}`)
	if r.Error != nil || r.Frames[0].Rows() != 2 || !strings.Contains(noticeTexts(r.Frames[0]), "unnamed.json") {
		t.Fatalf("by content: %v %s", r.Error, noticeTexts(r.Frames[0]))
	}
	// Not found: empty frames and a notice.
	r = runKernels(t, ds, `{"queryType":"kernels","traceId":"`+strings.Repeat("b", 32)+`"}`)
	if r.Error != nil || r.Frames[0].Rows() != 0 || !strings.Contains(noticeTexts(r.Frames[0]), "no GPU kernel trace found") {
		t.Fatalf("not found: %v %s", r.Error, noticeTexts(r.Frames[0]))
	}
}

// The launches view: per kernel and launch call the phases of cuda_kern_exec_sum, and the
// request's annotation projected onto the GPU work launched inside it.
func TestKernelsQueryLaunchesView(t *testing.T) {
	dir, _ := kernelDirs(t)
	ds := newTestDatasource(t, map[string]any{"traceDirectories": []string{dir}}, nil)
	r := runKernels(t, ds, `{"queryType":"kernels","traceId":"`+kernelTraceID+`","view":"launches"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if len(r.Frames) != 2 || r.Frames[0].Name != "kernel launches" || r.Frames[1].Name != "ranges on the GPU" {
		t.Fatalf("frames %v", r.Frames)
	}
	l := r.Frames[0]
	// gemm: calls of 5 µs, each kernel 5 µs after its call returned, 10 and 30 µs long, so
	// 20 and 40 µs from call to kernel end; relu starts as its call returns.
	if l.Rows() != 2 || cell(t, l, "kernel", 0) != "gemm" || cell(t, l, "launch call", 0) != "cudaLaunchKernel" ||
		cell(t, l, "launches", 0) != int64(2) || cell(t, l, "queued", 0) != int64(2) ||
		cell(t, l, "total avg", 0) != 30000.0 || cell(t, l, "API avg", 0) != 5000.0 || cell(t, l, "kernel avg", 0) != 20000.0 ||
		cell(t, l, "queue avg", 0) != 5000.0 || cell(t, l, "kernel", 1) != "relu" || cell(t, l, "queue max", 1) != int64(0) {
		tbl, _ := l.StringTable(-1, -1)
		t.Fatalf("kernel launches:\n%s", tbl)
	}
	if l.Fields[4].Config == nil || l.Fields[4].Config.Unit != "ns" || !strings.Contains(noticeTexts(l), "infer/infer_"+kernelTraceID) {
		t.Errorf("unit %+v, notices %q", l.Fields[4].Config, noticeTexts(l))
	}
	g := r.Frames[1]
	if g.Rows() != 1 || cell(t, g, "range", 0) != "infer" || cell(t, g, "instances", 0) != int64(1) || cell(t, g, "CPU time", 0) != int64(200000) ||
		cell(t, g, "GPU time", 0) != int64(65000) || cell(t, g, "GPU ops", 0) != int64(3) {
		tbl, _ := g.StringTable(-1, -1)
		t.Fatalf("ranges on the GPU:\n%s", tbl)
	}
	r = runKernels(t, ds, `{"queryType":"kernels","traceId":"`+kernelTraceID+`","view":"timeline?"}`)
	if r.Error == nil || !strings.Contains(r.Error.Error(), `field "view" must be one of summary, launches, criticalPath, timeline, diff, got "timeline?"`) {
		t.Errorf("unknown view: %v", r.Error)
	}
}

func TestKernelsQueryFileAndEscapes(t *testing.T) {
	dir, outside := kernelDirs(t)
	writeFile(t, filepath.Join(dir, "broken.json"), `{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2, "args": {"stream": 7}}, {"ph":`)
	ds := newTestDatasource(t, map[string]any{"traceDirectories": []string{dir}}, nil)
	r := runKernels(t, ds, `{"queryType":"kernels","file":"infer/infer_`+kernelTraceID+`.pt.trace.json"}`)
	if r.Error != nil || r.Frames[0].Rows() != 2 {
		t.Fatalf("file: %v", r.Error)
	}
	// A per-file error is a notice; what was read stays.
	r = runKernels(t, ds, `{"queryType":"kernels","file":"broken.json"}`)
	if r.Error != nil || !strings.Contains(noticeTexts(r.Frames[0]), "broken.json") {
		t.Fatalf("broken: %v %q", r.Error, noticeTexts(r.Frames[0]))
	}
	// A file the store refuses (its cases are pkg/gputrace's TestStoreResolve) is the user's
	// error, named as the store names it.
	for bad, want := range map[string]string{
		"../secret/leak.json":               `field "file" must be a path relative to a trace directory (no ..)`,
		filepath.Join(outside, "leak.json"): `field "file" must be a path relative to a trace directory (not absolute)`,
		"link.json":                         "trace file link.json: it resolves outside the trace directory",
		"linkdir/leak.json":                 "trace file linkdir/leak.json: it resolves outside the trace directory",
		"absent.json":                       "trace file absent.json not found in the trace directories",
	} {
		raw, _ := json.Marshal(map[string]string{"queryType": "kernels", "file": bad})
		r := runKernels(t, ds, string(raw))
		if r.Error == nil || !strings.Contains(r.Error.Error(), want) || r.ErrorSource != backend.ErrorSourceDownstream {
			t.Errorf("%s: error %v (source %q), want a downstream error with %q", bad, r.Error, r.ErrorSource, want)
		}
	}
	// The listing leaves out the symlinks that leave the directory.
	req := httptest.NewRequest(http.MethodGet, "/kernel-files", nil)
	w := httptest.NewRecorder()
	ds.resourceKernelFiles(w, req)
	var got struct {
		Files []gputrace.TraceFile `json:"files"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil || w.Code != 200 {
		t.Fatalf("kernel-files: %d %s", w.Code, w.Body)
	}
	files := []string{}
	for _, f := range got.Files {
		files = append(files, f.Rel)
	}
	all := strings.Join(files, ",")
	if strings.Contains(all, "leak") || strings.Contains(all, "link") || !strings.Contains(all, "infer/infer_"+kernelTraceID+".pt.trace.json") || len(files) != 3 {
		t.Errorf("kernel-files listed %v", files)
	}
	req = httptest.NewRequest(http.MethodGet, "/kernel-files?traceId="+kernelTraceID, nil)
	w = httptest.NewRecorder()
	ds.resourceKernelFiles(w, req)
	if !strings.Contains(w.Body.String(), kernelTraceID) || strings.Contains(w.Body.String(), "unnamed") {
		t.Errorf("kernel-files?traceId: %s", w.Body)
	}
}

// Without a trace directory or bucket, a kernels panel is an empty answer whose notice says
// what to configure, not an error (a dashboard's optional panel stays readable).
func TestKernelsQueryNoDirectory(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{}, nil)
	r := runKernels(t, ds, `{"queryType":"kernels","traceId":"`+kernelTraceID+`"}`)
	if r.Error != nil || len(r.Frames) == 0 || r.Frames[0].Rows() != 0 ||
		!strings.Contains(frameNotices(r.Frames[0]), "jsonData.traceDirectories is not configured") {
		t.Fatalf("answer %v %v, want empty frames whose notice names jsonData.traceDirectories", r.Error, r.Frames)
	}
	r = runKernels(t, ds, `{"queryType":"kernels"}`)
	if r.Error == nil || !strings.Contains(r.Error.Error(), "traceId") {
		t.Fatalf("error %v", r.Error)
	}
}

var _ = data.Notice{}

// TestKernelsQueryCriticalPathView: view "criticalPath" answers the path's two tables with the
// verdict as a notice; an unknown view is a bad query.
func TestKernelsQueryCriticalPathView(t *testing.T) {
	dir, _ := kernelDirs(t)
	ds := newTestDatasource(t, map[string]any{"traceDirectories": []string{dir}}, nil)
	r := runKernels(t, ds, `{"queryType":"kernels","traceId":"`+kernelTraceID+`","view":"criticalPath"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if len(r.Frames) != 2 || r.Frames[0].Name != "critical path" || r.Frames[1].Name != "critical path segments" {
		t.Fatalf("frames %v", r.Frames)
	}
	if r.Frames[0].Rows() == 0 || !strings.Contains(noticeTexts(r.Frames[0]), "critical path") {
		tbl, _ := r.Frames[0].StringTable(-1, -1)
		t.Fatalf("path:\n%s\nnotices %s", tbl, noticeTexts(r.Frames[0]))
	}
	if r = runKernels(t, ds, `{"queryType":"kernels","traceId":"`+kernelTraceID+`","view":"nope"}`); r.Error == nil {
		t.Fatal("an unknown view was accepted")
	}
}
