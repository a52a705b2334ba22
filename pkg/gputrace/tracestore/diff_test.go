package tracestore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	realdatadir "github.com/hsi-profiling/hsi-profiling-datasource/internal/realdata"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/thanos-io/objstore/providers/filesystem"
)

// kernelsTrace is kinetogen.WriteKernels' trace of the runs.
func kernelsTrace(t testing.TB, runs ...kinetogen.KernelRun) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := kinetogen.WriteKernels(&buf, "diff", runs); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// diffTraceID is the i-th request's trace ID of the diff fixtures (a letter a–f in it).
func diffTraceID(i int) string { return fmt.Sprintf("%028x%04x", 0xabc, i) }

func changeOf(t *testing.T, d *gputrace.KernelDiff, name string) gputrace.KernelChange {
	t.Helper()
	for _, c := range d.Kernels {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no kernel %s in the diff", name)
	return gputrace.KernelChange{}
}

// The baseline's requests: gemm 3 × 100 µs, relu 50 × 5 µs, dropout 2 × 20 µs. The target:
// gemm slowed to 150 µs (+150 µs per request), relu the same, no dropout, a new softmax.
var (
	baselineRuns = []kinetogen.KernelRun{{Name: "gemm", Count: 3, Dur: 100_000}, {Name: "relu", Count: 50, Dur: 5_000}, {Name: "dropout", Count: 2, Dur: 20_000}}
	targetRuns   = []kinetogen.KernelRun{{Name: "gemm", Count: 3, Dur: 150_000}, {Name: "relu", Count: 50, Dur: 5_000}, {Name: "softmax", Count: 1, Dur: 10_000}}
)

func TestDefaultBaselineMatch(t *testing.T) {
	id := diffTraceID(1)
	for ref, want := range map[string]string{
		"bucket:fleet/infer/2026-11-27/infer_" + id + ".pt.trace.json.gz": "bucket:fleet/infer/*/infer_*",
		"infer/infer_" + id + ".pt.trace.json":                            "infer/infer_*",
		"2026-11-27/" + id + ".nsys-rep.sqlite":                           "*/*",
		"unnamed.json":                                                    "*",
		"runs/a[1]/x*_" + id + ".json":                                    `runs/a\[1\]/x\*_*`,
	} {
		got := DefaultBaselineMatch(ref)
		if got != want {
			t.Errorf("DefaultBaselineMatch(%q) = %q, want %q", ref, got, want)
		}
		if !(refPattern{glob: got, whole: true}).matches(ref) {
			t.Errorf("%q does not match its own file %q", got, ref)
		}
	}
}

// diffStore lays out a service's traces as "Laying out uploads for a fleet" says, in a folder:
// four baseline requests over two days (the oldest a day earlier), a target request whose gemm
// is slower, another service's request and a broken trace of the service.
func diffStore(t *testing.T) (*Store, string) {
	dir := t.TempDir()
	now := time.Now()
	put := func(rel string, data []byte, age time.Duration) {
		writeStoreFile(t, filepath.Join(dir, rel), string(data), now.Add(-age))
	}
	for i := range 4 {
		day := "2026-11-27"
		if i == 3 {
			day = "2026-11-26"
		}
		put(fmt.Sprintf("infer/%s/infer_%s.pt.trace.json", day, diffTraceID(i)), kernelsTrace(t, baselineRuns...), time.Duration(i+2)*time.Minute)
	}
	target := diffTraceID(9)
	put("infer/2026-11-27/infer_"+target+".pt.trace.json", kernelsTrace(t, targetRuns...), time.Minute)
	put("train/2026-11-27/train_"+diffTraceID(7)+".pt.trace.json", kernelsTrace(t, kinetogen.KernelRun{Name: "backward", Count: 200, Dur: 1_000}), 0)
	return NewStore([]string{dir}, 100, 1<<30), dir
}

func TestStoreDiffAgainstRecentRequests(t *testing.T) {
	s, dir := diffStore(t)
	ctx := context.Background()
	target := diffTraceID(9)
	d, err := s.Diff(ctx, gputrace.DiffRequest{TraceID: target, Baseline: gputrace.DiffBaseline{Recent: 10}})
	if err != nil {
		t.Fatal(err)
	}
	first := d.Kernels[0]
	if first.Name != "gemm" || first.Change != 150_000 || first.ChangePercent != 50 || first.MeanChange != 50_000 {
		t.Fatalf("first mover %+v, want gemm +150 µs per request", first)
	}
	// Both days of the service, not the other service, never the target itself.
	if d.Baseline.Requests != 4 || slices.ContainsFunc(d.Baseline.Files, func(f string) bool { return strings.Contains(f, target) || strings.HasPrefix(f, "train/") }) {
		t.Errorf("baseline files %q", d.Baseline.Files)
	}
	texts := strings.Join(d.Notices.Texts(), "\n")
	for _, want := range []string{
		"baseline: 4 of the 10 most recent requests asked for match infer/*/infer_* (the target's directory, any day, and its name before the trace ID)",
		"Baseline: the 10 most recent requests matching infer/*/infer_* (4 requests, 4 files)",
		"Target: trace " + target + " (1 request, 1 file)",
	} {
		if !strings.Contains(texts, want) {
			t.Errorf("notices lack %q:\n%s", want, texts)
		}
	}

	// The two most recent only.
	d, _ = s.Diff(ctx, gputrace.DiffRequest{TraceID: target, Baseline: gputrace.DiffBaseline{Recent: 2}})
	if want := []string{"infer/2026-11-27/infer_" + diffTraceID(0) + ".pt.trace.json", "infer/2026-11-27/infer_" + diffTraceID(1) + ".pt.trace.json"}; !slices.Equal(d.Baseline.Files, want) {
		t.Errorf("recent 2: %q, want %q", d.Baseline.Files, want)
	}
	// A glob on the name, and one on the whole reference.
	d, _ = s.Diff(ctx, gputrace.DiffRequest{TraceID: target, Baseline: gputrace.DiffBaseline{Recent: 10, Match: "train_*"}})
	if b := changeOf(t, d, "backward"); d.Baseline.Requests != 1 || b.OnlyIn != gputrace.OnlyInBaseline || b.Change != -200_000 || changeOf(t, d, "gemm").OnlyIn != gputrace.OnlyInTarget {
		t.Errorf("train_*: %d requests, backward %+v", d.Baseline.Requests, b)
	}
	d, _ = s.Diff(ctx, gputrace.DiffRequest{TraceID: target, Baseline: gputrace.DiffBaseline{Recent: 10, Match: "infer/2026-11-26/*"}})
	if d.Baseline.Requests != 1 || !strings.Contains(d.Baseline.Files[0], diffTraceID(3)) {
		t.Errorf("one day: %q", d.Baseline.Files)
	}
	// Nothing matches: an empty baseline that says what to do.
	d, _ = s.Diff(ctx, gputrace.DiffRequest{TraceID: target, Baseline: gputrace.DiffBaseline{Match: "nothing_*"}})
	if d.Baseline.Requests != 0 || !strings.Contains(strings.Join(d.Notices.Texts(), "\n"), "baseline: no other request's kernel traces match nothing_*: set baseline.match") {
		t.Errorf("no match: %q", d.Notices.Texts())
	}

	// Another request as the baseline: a baseline of 1 request is little data.
	d, _ = s.Diff(ctx, gputrace.DiffRequest{TraceID: target, Baseline: gputrace.DiffBaseline{TraceID: diffTraceID(2)}})
	if d.Baseline.Requests != 1 || d.Kernels[0].Change != 150_000 || !strings.Contains(strings.Join(d.Notices.Texts(), "\n"), "Little data: the baseline is 1 request") {
		t.Errorf("by trace ID: %+v %q", d.Kernels[0], d.Notices.Texts())
	}
	// A chosen file as the target: the same baseline rule from its reference.
	d, err = s.Diff(ctx, gputrace.DiffRequest{File: "infer/2026-11-27/infer_" + target + ".pt.trace.json", Baseline: gputrace.DiffBaseline{Recent: 10}})
	if err != nil || d.Baseline.Requests != 4 || d.Kernels[0].Change != 150_000 {
		t.Errorf("by file: %v %+v", err, d)
	}
	if _, err := s.Diff(ctx, gputrace.DiffRequest{File: "absent.json"}); !errors.Is(err, gputrace.ErrChosenFile) {
		t.Errorf("absent file: %v", err)
	}
	// No trace of the target: nothing to compare, said first.
	d, _ = s.Diff(ctx, gputrace.DiffRequest{TraceID: diffTraceID(8), Baseline: gputrace.DiffBaseline{Recent: 10}})
	if d.Target.Requests != 0 || d.Baseline.Tried != 0 || !strings.HasPrefix(d.Notices.Texts()[0], "no GPU kernel trace found for trace "+diffTraceID(8)) {
		t.Errorf("no target: %q", d.Notices.Texts())
	}

	// A broken baseline file names itself; the others stand.
	writeStoreFile(t, filepath.Join(dir, "infer/2026-11-27/infer_"+diffTraceID(5)+".pt.trace.json"), `{"traceEvents": [{"ph":`, time.Now().Add(-30*time.Second))
	d, _ = s.Diff(ctx, gputrace.DiffRequest{TraceID: target, Baseline: gputrace.DiffBaseline{Recent: 10}})
	texts = strings.Join(d.Notices.Texts(), "\n")
	if d.Baseline.Requests != 4 || d.Baseline.Tried != 5 || !strings.Contains(texts, "baseline infer/2026-11-27/infer_"+diffTraceID(5)+".pt.trace.json: gputrace: byte 17, traceEvents[0]: malformed event: unexpected EOF (nothing of it was read; the side's other files stand)") || d.Kernels[0].Change != 150_000 {
		t.Errorf("broken file: %d requests of %d files, %+v\n%s", d.Baseline.Requests, d.Baseline.Tried, d.Kernels[0], texts)
	}
}

// A request with several files (one per rank) is one request of the baseline; files reaching the
// bound leave whole requests out.
func TestStoreDiffCountsRequestsNotFiles(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	trace := kernelsTrace(t, baselineRuns...)
	for i := range 3 {
		for rank := range 2 {
			writeStoreFile(t, filepath.Join(dir, fmt.Sprintf("svc/rank%d_%s.json", rank, diffTraceID(i))), string(trace), now.Add(-time.Duration(i+1)*time.Minute))
		}
	}
	for rank := range 2 {
		writeStoreFile(t, filepath.Join(dir, fmt.Sprintf("svc/rank%d_%s.json", rank, diffTraceID(9))), string(kernelsTrace(t, targetRuns...)), now)
	}
	s := NewStore([]string{dir}, 100, 1<<30)
	d, err := s.Diff(context.Background(), gputrace.DiffRequest{TraceID: diffTraceID(9), Baseline: gputrace.DiffBaseline{Recent: 10}})
	if err != nil {
		t.Fatal(err)
	}
	// Two ranks a request: per request, twice one file's figures.
	if gemm := changeOf(t, d, "gemm"); d.Baseline.Requests != 3 || len(d.Baseline.Files) != 6 || gemm.Baseline.TotalPerRequest != 600_000 || d.Target.Requests != 1 || gemm.Change != 300_000 {
		t.Errorf("%d requests, %d files, gemm %+v", d.Baseline.Requests, len(d.Baseline.Files), gemm)
	}
	// Two requests' files reach a bound of 5 files: the third request is left out whole.
	groups := recentRequests(mustList(t, s), defaultPatterns([]gputrace.Found{{File: gputrace.TraceFile{Rel: "svc/rank0_" + diffTraceID(9) + ".json"}}, {File: gputrace.TraceFile{Rel: "svc/rank1_" + diffTraceID(9) + ".json"}}}), nil, []string{diffTraceID(9)}, 10)
	if len(groups) != 3 || len(groups[0].files) != 2 || groups[0].key != diffTraceID(0)[16:] {
		t.Errorf("groups %+v", groups)
	}
	if n := BaselineRequests(mustList(t, s), []gputrace.TraceFile{{Rel: "svc/rank0_" + diffTraceID(9) + ".json", TraceIDs: []string{diffTraceID(9)}}}, diffTraceID(9)); n != 3 {
		t.Errorf("BaselineRequests = %d, want 3", n)
	}
}

func mustList(t *testing.T, s *Store) []gputrace.TraceFile {
	t.Helper()
	files, missed := s.List(context.Background())
	if len(missed) > 0 {
		t.Fatal(missed.Texts())
	}
	return files
}

// Buckets as folders: the day-per-prefix layout of a fleet, and the count the verdict reads.
func TestStoreDiffInABucket(t *testing.T) {
	root := t.TempDir()
	fs, err := filesystem.NewBucket(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		upload(t, fs, fmt.Sprintf("kernels/infer/2026-11-2%d/infer_%s.pt.trace.json.gz", i, diffTraceID(i)), gzipped(t, string(kernelsTrace(t, baselineRuns...))))
	}
	target := diffTraceID(9)
	upload(t, fs, "kernels/infer/2026-11-27/infer_"+target+".pt.trace.json.gz", gzipped(t, string(kernelsTrace(t, targetRuns...))))
	upload(t, fs, "kernels/train/2026-11-27/train_"+diffTraceID(7)+".pt.trace.json.gz", gzipped(t, string(kernelsTrace(t, targetRuns...))))
	s := NewStore(nil, 100, 1<<30).WithBuckets(NewBucket("fleet", fs, BucketOptions{Prefix: "kernels"}))
	d, err := s.Diff(context.Background(), gputrace.DiffRequest{TraceID: target, Baseline: gputrace.DiffBaseline{Recent: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Baseline.Requests != 3 || d.Kernels[0].Name != "gemm" || d.Kernels[0].Change != 150_000 ||
		!strings.Contains(strings.Join(d.Notices.Texts(), "\n"), "matching bucket:fleet/infer/*/infer_*") {
		t.Errorf("%d requests, first %+v, notices %q", d.Baseline.Requests, d.Kernels[0], d.Notices.Texts())
	}
	results, others, warnings := s.KernelTracesWithBaseline(context.Background(), target)
	if len(results) != 1 || others != 3 || len(warnings) != 0 {
		t.Errorf("KernelTracesWithBaseline: %d results, %d others, %q", len(results), others, warnings.Texts())
	}
	if results, others, _ := s.KernelTracesWithBaseline(context.Background(), diffTraceID(8)); results != nil || others != 0 {
		t.Errorf("no trace: %v %d", results, others)
	}
}

// The real traces: ResNet-50 (PyTorch's profiler) against AlexNet (another PyTorch and cuDNN)
// have no kernel name in common, so every kernel is only on one side and says which, with that
// side's own totals; a kernel on both would carry both sides' figures.
func TestStoreDiffRealTraces(t *testing.T) {
	dir := t.TempDir()
	copyReal := func(name, to string) {
		data, err := os.ReadFile(realdatadir.Path(t, name))
		if err != nil {
			t.Fatal(err)
		}
		writeStoreFile(t, filepath.Join(dir, to), string(data), time.Time{})
	}
	resnet, alexnet := diffTraceID(1), diffTraceID(2)
	copyReal("resnet50_worker0.pt.trace.json.gz", "bench/resnet_"+resnet+".pt.trace.json.gz")
	copyReal("alexnet_benchmark.json.gz", "bench/alexnet_"+alexnet+".json.gz")
	s := NewStore([]string{dir}, 100, 1<<30)
	d, err := s.Diff(context.Background(), gputrace.DiffRequest{TraceID: resnet, Baseline: gputrace.DiffBaseline{TraceID: alexnet}})
	if err != nil {
		t.Fatal(err)
	}
	rn := analyzeReal(t, "resnet50_worker0.pt.trace.json.gz")
	an := analyzeReal(t, "alexnet_benchmark.json.gz")
	inResnet, inAlexnet := map[string]gputrace.KernelSummary{}, map[string]gputrace.KernelSummary{}
	for _, k := range rn.Kernels {
		inResnet[k.Name] = k
	}
	for _, k := range an.Kernels {
		inAlexnet[k.Name] = k
	}
	if len(d.Kernels) == 0 {
		t.Fatal("no kernels")
	}
	var onlyT, onlyB, both int
	for _, c := range d.Kernels {
		r, inR := inResnet[c.Name]
		a, inA := inAlexnet[c.Name]
		switch {
		case inR && !inA:
			onlyT++
			if c.OnlyIn != gputrace.OnlyInTarget || c.Target.Total != r.Total || c.Target.Count != r.Instances || c.Change != float64(r.Total) {
				t.Errorf("%s only in ResNet-50: %+v, want total %d × %d", c.Name, c, r.Total, r.Instances)
			}
		case inA && !inR:
			onlyB++
			if c.OnlyIn != gputrace.OnlyInBaseline || c.Baseline.Total != a.Total || c.Change != -float64(a.Total) {
				t.Errorf("%s only in AlexNet: %+v, want total %d", c.Name, c, a.Total)
			}
		case inA && inR:
			both++
			if c.OnlyIn != "" || c.Change != float64(r.Total-a.Total) || math.Abs(c.MeanChange-(r.Avg-a.Avg)) > 1e-6 {
				t.Errorf("%s in both: %+v", c.Name, c)
			}
		default:
			t.Errorf("%s is in neither trace", c.Name)
		}
	}
	if onlyT == 0 || onlyB == 0 || onlyT+onlyB+both != len(d.Kernels) {
		t.Errorf("only in ResNet-50 %d, only in AlexNet %d, both %d of %d", onlyT, onlyB, both, len(d.Kernels))
	}
	for i := 1; i < len(d.Kernels); i++ {
		if math.Abs(d.Kernels[i].Change) > math.Abs(d.Kernels[i-1].Change) {
			t.Fatalf("not ordered by |change| at %d: %v after %v", i, d.Kernels[i].Change, d.Kernels[i-1].Change)
		}
	}
	t.Logf("ResNet-50 vs AlexNet: %d kernels only in ResNet-50, %d only in AlexNet, %d in both; first mover %s %+.0f ns", onlyT, onlyB, both, d.Kernels[0].Name, d.Kernels[0].Change)
}

// FuzzDefaultBaselineMatch: the default baseline rule of any file reference is a glob path.Match
// reads, and it matches the reference it came from.
func FuzzDefaultBaselineMatch(f *testing.F) {
	for _, ref := range []string{"infer/2026-11-27/infer_4bf92f3577b34da6a3ce929d0e0e4736.pt.trace.json",
		"bucket:fleet/a[b]/*?\\/x_4bf92f3577b34da6.json", "2026-11-27/", "", "//..//\x00"} {
		f.Add(ref)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		g := DefaultBaselineMatch(ref)
		if _, err := path.Match(g, ""); err != nil {
			t.Fatalf("DefaultBaselineMatch(%q) = %q, not a glob: %v", ref, g, err)
		}
		if ok, _ := path.Match(g, ref); !ok {
			t.Fatalf("DefaultBaselineMatch(%q) = %q does not match it", ref, g)
		}
	})
}

// analyzeReal analyses one real trace as the store does (AnalyzeOpened).
func analyzeReal(t *testing.T, name string) *gputrace.Result {
	t.Helper()
	path := realdatadir.Path(t, name)
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := AnalyzeOpened(t.Context(), f, path, gputrace.Limits{}, gputrace.AnalysisOptions{})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return r
}
