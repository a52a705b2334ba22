package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/tracestore"
)

// diffID is the i-th request's trace ID of the kernel diff fixtures.
func diffID(i int) string { return fmt.Sprintf("%028x%04x", 0xdef, i) }

// writeKernels writes kinetogen.WriteKernels' trace of the runs at path, modified age ago.
func writeKernels(t *testing.T, path string, age time.Duration, runs ...kinetogen.KernelRun) {
	t.Helper()
	var buf bytes.Buffer
	if err := kinetogen.WriteKernels(&buf, filepath.Base(path), runs); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, buf.String())
	at := time.Now().Add(-age)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// The baseline's requests run gemm 3 × 100 µs, relu 120 × 5 µs and dropout 2 × 20 µs; the
// target's gemm takes 150 µs (+150 µs per request), relu is the same, and softmax is new.
var (
	diffBaselineRuns = []kinetogen.KernelRun{{Name: "gemm", Count: 3, Dur: 100_000}, {Name: "relu", Count: 120, Dur: 5_000}, {Name: "dropout", Count: 2, Dur: 20_000}}
	diffTargetRuns   = []kinetogen.KernelRun{{Name: "gemm", Count: 3, Dur: 150_000}, {Name: "relu", Count: 120, Dur: 5_000}, {Name: "softmax", Count: 1, Dur: 10_000}}
)

// kernelDiffDir lays out a service's uploads by day (base/infer/<day>/infer_<id>...): five
// baseline requests over two days, the target, and another service's request.
func kernelDiffDir(t *testing.T, base string) {
	for i := range 5 {
		day := "2026-11-27"
		if i >= 3 {
			day = "2026-11-26"
		}
		writeKernels(t, filepath.Join(base, "infer", day, "infer_"+diffID(i)+".pt.trace.json"), time.Duration(i+2)*time.Minute, diffBaselineRuns...)
	}
	writeKernels(t, filepath.Join(base, "infer", "2026-11-27", "infer_"+diffID(9)+".pt.trace.json"), time.Minute, diffTargetRuns...)
	writeKernels(t, filepath.Join(base, "train", "2026-11-27", "train_"+diffID(7)+".pt.trace.json"), 0, kinetogen.KernelRun{Name: "backward", Count: 500, Dur: 1_000})
}

// checkGemmFirst asserts the diff answer's first mover is the slowed gemm, +150 µs (+50%) per
// request, with the rest of the rows and the temporal breakdown as built.
func checkGemmFirst(t *testing.T, frames data.Frames, baselineRequests int) {
	t.Helper()
	if len(frames) != 2 || frames[0].Name != "kernel diff" || frames[1].Name != "temporal breakdown diff" {
		t.Fatalf("frames %v", frames)
	}
	k := frames[0]
	if cell(t, k, "name", 0) != "gemm" || cell(t, k, "change", 0) != 150_000.0 || cell(t, k, "change %", 0) != 50.0 ||
		cell(t, k, "mean change", 0) != 50_000.0 || cell(t, k, "total/request baseline", 0) != 300_000.0 || cell(t, k, "count/request target", 0) != 3.0 {
		tbl, _ := k.StringTable(-1, -1)
		t.Fatalf("first mover:\n%s", tbl)
	}
	only := map[string]string{}
	for i := range k.Rows() {
		only[cell(t, k, "name", i).(string)] = cell(t, k, "only in", i).(string)
	}
	if only["dropout"] != "baseline" || only["softmax"] != "target" || only["relu"] != "" || len(only) != 4 {
		t.Errorf("only in: %v", only)
	}
	notes := noticeTexts(k)
	want := "(1 request, 1 file)"
	if baselineRequests > 1 {
		want = fmt.Sprintf("(%d requests, %d files)", baselineRequests, baselineRequests)
	}
	if !strings.Contains(notes, "Baseline: ") || !strings.Contains(notes, want) || baselineRequests > 1 && !strings.Contains(notes, "Figures are per request") {
		t.Errorf("notices lack %q:\n%s", want, notes)
	}
	tb := frames[1]
	// Idle per request: KernelGap between each two of the request's kernels.
	if cell(t, tb, "category", 3) != "idle" || cell(t, tb, "baseline/request", 3) != float64(124*kinetogen.KernelGap) || cell(t, tb, "target/request", 3) != float64(123*kinetogen.KernelGap) {
		tbl, _ := tb.StringTable(-1, -1)
		t.Errorf("temporal breakdown diff:\n%s", tbl)
	}
}

func TestKernelsDiffAgainstTheServicesRecentRequests(t *testing.T) {
	dir := t.TempDir()
	kernelDiffDir(t, dir)
	ds := newTestDatasource(t, map[string]any{"traceDirectories": []string{dir}}, nil)
	r := runKernels(t, ds, `{"queryType":"kernels","traceId":"`+diffID(9)+`","view":"diff"}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	checkGemmFirst(t, r.Frames, 5)
	if notes := noticeTexts(r.Frames[0]); !strings.Contains(notes, "match infer/*/infer_* (the target's directory, any day, and its name before the trace ID)") {
		t.Errorf("the default rule is not named:\n%s", notes)
	}
	// Three most recent; another request; a chosen file as the target.
	for q, requests := range map[string]int{
		`{"queryType":"kernels","traceId":"` + diffID(9) + `","view":"diff","baseline":{"recent":3}}`:                               3,
		`{"queryType":"kernels","traceId":"` + diffID(9) + `","view":"diff","baseline":{"recent":50,"match":"infer/2026-11-26/*"}}`: 2,
		`{"queryType":"kernels","file":"infer/2026-11-27/infer_` + diffID(9) + `.pt.trace.json","view":"diff","baseline":{}}`:       5,
		`{"queryType":"kernels","traceId":"` + diffID(9) + `","view":"diff","baseline":{"traceId":"` + diffID(4)[16:] + `"}}`:       1,
	} {
		r := runKernels(t, ds, q)
		if r.Error != nil {
			t.Fatalf("%s: %v", q, r.Error)
		}
		checkGemmFirst(t, r.Frames, requests)
	}
	// One baseline request is little data.
	r = runKernels(t, ds, `{"queryType":"kernels","traceId":"`+diffID(9)+`","view":"diff","baseline":{"traceId":"`+diffID(1)+`"}}`)
	if notes := noticeTexts(r.Frames[0]); !strings.Contains(notes, "Little data: the baseline is 1 request") {
		t.Errorf("one baseline request:\n%s", notes)
	}
	// A baseline the query names wrongly is the query's error, naming the field.
	r = runKernels(t, ds, `{"queryType":"kernels","traceId":"`+diffID(9)+`","view":"diff","baseline":{"recent":500}}`)
	if r.Error == nil || !strings.Contains(r.Error.Error(), `field "baseline.recent" must be a whole number from 1 to 100`) {
		t.Errorf("bad recent: %v", r.Error)
	}
	// The summary view is unchanged by a baseline left in the query.
	r = runKernels(t, ds, `{"queryType":"kernels","traceId":"`+diffID(9)+`","baseline":{"recent":3}}`)
	if r.Error != nil || r.Frames[0].Name != "kernel summary" {
		t.Errorf("summary: %v %v", r.Error, r.Frames)
	}
}

func TestKernelsDiffInABucket(t *testing.T) {
	bucketDir := t.TempDir()
	kernelDiffDir(t, filepath.Join(bucketDir, "kernels"))
	ds := newTestDatasource(t, map[string]any{
		"kernelBuckets": []map[string]any{{"name": "fleet", "provider": "filesystem", "directory": bucketDir, "prefix": "kernels"}},
	}, nil)
	r := runKernels(t, ds, `{"queryType":"kernels","traceId":"`+diffID(9)+`","view":"diff","baseline":{"recent":4}}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	checkGemmFirst(t, r.Frames, 4)
	if notes := noticeTexts(r.Frames[0]); !strings.Contains(notes, "matching bucket:fleet/infer/*/infer_*") {
		t.Errorf("notices:\n%s", notes)
	}
}

// realTrace is the path of one of the real traces kept beside the repository (see
// pkg/gputrace's realdata tests): $HSI_REALDATA, else shared/realdata above the package, else
// the workplace's.
func realTrace(t *testing.T, name string) string {
	t.Helper()
	dirs := []string{os.Getenv("HSI_REALDATA")}
	if wd, err := os.Getwd(); err == nil {
		for dir := filepath.Dir(wd); filepath.Dir(dir) != dir; dir = filepath.Dir(dir) {
			dirs = append(dirs, filepath.Join(dir, "shared", "realdata"))
		}
	}
	for _, dir := range append(dirs, "/work/shared/realdata") {
		if dir == "" {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return filepath.Join(dir, name)
		}
	}
	t.Fatalf("real trace %s is missing: set HSI_REALDATA to the directory of the real traces", name)
	return ""
}

// ResNet-50 against AlexNet (real PyTorch profiler traces, copied into a temporary folder under
// request names): no kernel name in common, so every row is "only in" one side.
func TestKernelsDiffRealTraces(t *testing.T) {
	dir := t.TempDir()
	for name, to := range map[string]string{
		"resnet50_worker0.pt.trace.json.gz": "bench/resnet_" + diffID(1) + ".pt.trace.json.gz",
		"alexnet_benchmark.json.gz":         "bench/alexnet_" + diffID(2) + ".json.gz",
	} {
		raw, err := os.ReadFile(realTrace(t, name))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, to), string(raw))
	}
	ds := newTestDatasource(t, map[string]any{"traceDirectories": []string{dir}}, nil)
	r := runKernels(t, ds, `{"queryType":"kernels","traceId":"`+diffID(1)+`","view":"diff","baseline":{"traceId":"`+diffID(2)+`"}}`)
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	k := r.Frames[0]
	counts := map[string]int{}
	for i := range k.Rows() {
		only := cell(t, k, "only in", i).(string)
		counts[only]++
		change := cell(t, k, "change", i).(float64)
		if only == "target" && (change <= 0 || !null(t, k, "mean baseline", i)) || only == "baseline" && (change >= 0 || !null(t, k, "mean target", i)) {
			t.Errorf("row %d (%s, only in %s): change %v", i, cell(t, k, "name", i), only, change)
		}
	}
	if counts["target"] == 0 || counts["baseline"] == 0 || counts[""] != 0 {
		t.Errorf("only in: %v", counts)
	}
	if notes := noticeTexts(k); !strings.Contains(notes, "Little data: the baseline is 1 request") {
		t.Errorf("notices:\n%s", notes)
	}
}

// null says whether a nullable cell is empty.
func null(t *testing.T, f *data.Frame, field string, row int) bool {
	t.Helper()
	fd, i := f.FieldByName(field)
	if i < 0 {
		t.Fatalf("frame %q has no field %q", f.Name, field)
	}
	_, ok := fd.ConcreteAt(row)
	return !ok
}

// requestKernels writes a Kineto trace of one request's GPU work on its span: an annotation
// naming the trace and the span, and launches of kernels inside it, 20 ms of them.
func requestKernels(t *testing.T, path, traceID, spanID string) {
	t.Helper()
	var buf bytes.Buffer
	k := kinetogen.NewWriter(&buf, kinetogen.EpochBase, nil)
	k.Span("user_annotation", "forward span="+spanID+" trace="+traceID, 0, 30_000_000)
	at := int64(1_000_000)
	for corr := 1; corr <= 4; corr++ {
		k.Runtime("cudaLaunchKernel", at-5_000, at-1_000, corr)
		k.Kernel("gemm", 7, at, at+5_000_000, corr)
		at += 5_000_000 + kinetogen.KernelGap
	}
	if err := k.Close("detector", 30_000_000); err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, buf.String())
}

// The verdict's GPU causes link to the kernels diff of the request against its service's recent
// requests when the trace directory holds another request of the service; else not.
func TestTraceVerdictLinksGPUKernelsToTheKernelsDiff(t *testing.T) {
	b := newJoinBed(t, joinBedOptions{settings: map[string]any{"traceDatasourceUid": "jaeger-uid"}})
	traceID, span := b.trace.TraceID, b.trace.Spans[4].SpanID // ai-detector's model.predict
	dir := t.TempDir()
	requestKernels(t, filepath.Join(dir, "detector", "detector_"+traceID+".pt.trace.json"), traceID, span)
	b.ds.src.Kernels = correlate.Ready[correlate.KernelStore](tracestore.NewStore([]string{dir}, 100, 1<<30))
	gpuLink := func() string {
		t.Helper()
		r := b.query(t, traceModel)
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		v := r.Frames[2]
		kind, _ := v.FieldByName("kind")
		link, _ := v.FieldByName("link")
		for i := range v.Rows() {
			if kind.At(i) == "gpu kernels" {
				return link.At(i).(string)
			}
		}
		tbl, _ := v.StringTable(-1, -1)
		t.Fatalf("no GPU kernels cause:\n%s", tbl)
		return ""
	}
	if l := gpuLink(); strings.Contains(l, "kernels") {
		t.Errorf("no other request of the service, yet the link is %q", l)
	}
	// Another request of the detector, and one of another folder.
	requestKernels(t, filepath.Join(dir, "detector", "detector_"+diffID(1)+".pt.trace.json"), diffID(1), span)
	requestKernels(t, filepath.Join(dir, "other", "x_"+diffID(2)+".pt.trace.json"), diffID(2), span)
	l := gpuLink()
	u, err := url.Parse(l)
	if err != nil {
		t.Fatal(err)
	}
	var panes map[string]map[string]any
	if err := json.Unmarshal([]byte(u.Query().Get("panes")), &panes); err != nil {
		t.Fatalf("%q: %v", l, err)
	}
	q := panes["evidence"]["queries"].([]any)[0].(map[string]any)
	if q["queryType"] != "kernels" || q["view"] != "diff" || q["traceId"] != traceID || panes["evidence"]["datasource"] != "hsi-uid" {
		t.Fatalf("GPU kernels link %v", panes)
	}
	// The link's query answers: the request against the other detector request.
	raw, _ := json.Marshal(q)
	r := b.query(t, string(raw))
	if r.Error != nil || r.Frames[0].Name != "kernel diff" || !strings.Contains(noticeTexts(r.Frames[0]), "match detector/detector_* (the target's directory") {
		t.Errorf("the linked diff: %v %s", r.Error, noticeTexts(r.Frames[0]))
	}
}
