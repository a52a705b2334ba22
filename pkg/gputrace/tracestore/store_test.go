package tracestore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
)

const storeTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"

// storeTrace is a small PyTorch profiler (Kineto) Chrome trace: an annotation naming the
// request and one launch of the kernel named kernel.
func storeTrace(annotation, kernel string) string {
	return `{"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "` + annotation + `", "pid": 1, "tid": 1, "ts": 1763900000001000.000, "dur": 200.000, "args": {"External id": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1763900000001010.000, "dur": 5.000, "args": {"External id": 2, "cbid": 211, "correlation": 11}},
  {"ph": "X", "cat": "kernel", "name": "` + kernel + `", "pid": 0, "tid": 7, "ts": 1763900000001020.000, "dur": 10.000, "args": {"External id": 2, "device": 0, "stream": 7, "correlation": 11}}
]}
`
}

func writeStoreFile(t *testing.T, path, text string, modified time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if !modified.IsZero() {
		if err := os.Chtimes(path, modified, modified); err != nil {
			t.Fatal(err)
		}
	}
}

func symlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

func kernelNames(r *gputrace.Result) string {
	if r == nil {
		return ""
	}
	var names []string
	for _, k := range r.Kernels {
		names = append(names, k.Name)
	}
	return strings.Join(names, ",")
}

func rels(files []gputrace.TraceFile) []string {
	out := []string{}
	for _, f := range files {
		out = append(out, f.Rel)
	}
	return out
}

// storeDirs is a trace directory with a file named for the request, an unnamed one whose
// annotation names it, a non-trace file, and links leading outside (to a file and a directory).
func storeDirs(t *testing.T) (dir, outside string) {
	root := t.TempDir()
	dir, outside = filepath.Join(root, "profiles"), filepath.Join(root, "secret")
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	writeStoreFile(t, filepath.Join(dir, "infer", "infer_"+storeTraceID+".pt.trace.json"), storeTrace("infer", "gemm"), t0)
	writeStoreFile(t, filepath.Join(dir, "unnamed.json"), storeTrace("request "+strings.Repeat("a", 32), "relu"), t0.Add(time.Minute))
	writeStoreFile(t, filepath.Join(dir, "notes.txt"), "not a trace", t0)
	writeStoreFile(t, filepath.Join(outside, "leak.json"), storeTrace("request "+storeTraceID, "LEAK"), t0)
	symlink(t, filepath.Join(outside, "leak.json"), filepath.Join(dir, "link.json"))
	symlink(t, filepath.Join(outside, "leak.json"), filepath.Join(dir, "leak_"+storeTraceID+".json"))
	symlink(t, outside, filepath.Join(dir, "linkdir"))
	symlink(t, "unnamed.json", filepath.Join(dir, "alias.json")) // a link that stays inside
	return dir, outside
}

func TestStoreListsTraceFilesInsideMostRecentFirst(t *testing.T) {
	dir, _ := storeDirs(t)
	s := NewStore([]string{dir}, 100, 1<<20)
	files, noticeList := s.List(context.Background())
	notices := noticeList.Texts()
	// alias.json and unnamed.json are the same file: same time, walk order between them.
	want := []string{"alias.json", "unnamed.json", "infer/infer_" + storeTraceID + ".pt.trace.json"}
	if got := rels(files); !slices.Equal(got, want) {
		t.Errorf("listed %q, want %q (most recent first, links out left out)", rels(files), want)
	}
	if len(notices) != 0 {
		t.Errorf("notices %q: links leading out are left out silently", notices)
	}
	for _, f := range files {
		if !strings.HasPrefix(f.Abs, f.Dir+string(filepath.Separator)) || f.Size == 0 {
			t.Errorf("%s: Abs %s outside %s or size %d", f.Rel, f.Abs, f.Dir, f.Size)
		}
		if strings.HasPrefix(f.Rel, "infer/") && !slices.Equal(f.TraceIDs, []string{storeTraceID}) {
			t.Errorf("%s: trace IDs %q, want the one its name gives", f.Rel, f.TraceIDs)
		}
	}
}

func TestStoreListCapsAndSkips(t *testing.T) {
	dir, _ := storeDirs(t)
	writeStoreFile(t, filepath.Join(dir, "big.json"), strings.Repeat(" ", 2000), time.Time{})
	s := NewStore([]string{dir, filepath.Join(dir, "missing")}, 100, 1000)
	_, noticeList := s.List(context.Background())
	notices := noticeList.Texts()
	all := strings.Join(notices, "\n")
	if !strings.Contains(all, "big.json skipped: 2000 bytes, over jsonData.traceMaxFileBytes (1000)") {
		t.Errorf("notices %q: want the file over the size bound named", notices)
	}
	if !strings.Contains(all, "trace directory "+filepath.Join(dir, "missing")) {
		t.Errorf("notices %q: want the missing directory named", notices)
	}
	files, noticeList2 := NewStore([]string{dir}, 2, 1<<20).List(context.Background())
	notices = noticeList2.Texts()
	if len(files) > 2 || !slices.Contains(notices, "more than 2 trace files: the rest were not looked at (jsonData.traceMaxFiles)") {
		t.Errorf("cap 2: %d files, notices %q", len(files), notices)
	}
}

func TestStoreResolve(t *testing.T) {
	dir, outside := storeDirs(t)
	writeStoreFile(t, filepath.Join(dir, "big.json"), strings.Repeat(" ", 2000), time.Time{})
	other := t.TempDir()
	writeStoreFile(t, filepath.Join(other, "second.json"), storeTrace("x", "k"), time.Time{})
	s := NewStore([]string{dir, other}, 100, 1000)
	f, err := s.Resolve("infer/infer_" + storeTraceID + ".pt.trace.json")
	if err != nil || f.Dir == "" || !slices.Equal(f.TraceIDs, []string{storeTraceID}) {
		t.Fatalf("resolve: %+v %v", f, err)
	}
	if f, err := s.Resolve("second.json"); err != nil || f.Rel != "second.json" {
		t.Errorf("second directory: %+v %v", f, err)
	}
	for file, want := range map[string]string{
		"":                               "no file given",
		"notes.txt":                      "notes.txt is not a trace file (.json, .json.gz, .pt.trace.json, .sqlite)",
		"../secret/leak.json":            "../secret/leak.json is outside the trace directories",
		"infer/../../secret/x.json":      "../secret/x.json is outside the trace directories",
		filepath.Join(outside, "a.json"): filepath.Join(outside, "a.json") + " is outside the trace directories",
		"link.json":                      "trace file link.json: it resolves outside the trace directory",
		"linkdir/leak.json":              "trace file linkdir/leak.json: it resolves outside the trace directory",
		"big.json":                       "trace file big.json: 2000 bytes, over jsonData.traceMaxFileBytes (1000)",
		"absent.json":                    "trace file absent.json not found in the trace directories",
	} {
		if _, err := s.Resolve(file); err == nil || err.Error() != want {
			t.Errorf("Resolve(%q): %v, want %q", file, err, want)
		}
	}
	// Naming a file outside, and only that, is ErrOutsideDirectory: the plugin reports it as the
	// user's mistake.
	for file, want := range map[string]bool{
		"../secret/leak.json":            true,
		filepath.Join(outside, "a.json"): true,
		"link.json":                      true,
		"linkdir/leak.json":              true,
		"notes.txt":                      false,
		"big.json":                       false,
		"absent.json":                    false,
	} {
		if _, err := s.Resolve(file); errors.Is(err, ErrOutsideDirectory) != want {
			t.Errorf("Resolve(%q): %v, ErrOutsideDirectory %v", file, err, !want)
		}
	}
	gone := NewStore([]string{filepath.Join(dir, "gone")}, 100, 1000)
	if _, err := gone.Resolve("a.json"); err == nil || !strings.HasPrefix(err.Error(), "trace file a.json not found: trace directory "+filepath.Join(dir, "gone")) {
		t.Errorf("missing directory: %v", err)
	}
}

func TestStoreFindByTraceID(t *testing.T) {
	dir, _ := storeDirs(t)
	s := NewStore([]string{dir}, 100, 1<<20)
	ctx := context.Background()
	// By name; the link named for the request leads outside and is not used.
	found, _ := s.FindByTraceID(ctx, storeTraceID)
	if len(found) != 1 || found[0].File.Rel != "infer/infer_"+storeTraceID+".pt.trace.json" || found[0].Result != nil {
		t.Fatalf("by name: %+v", found)
	}
	// The low 64 bits of a 128-bit ID name the same request.
	if found, _ := s.FindByTraceID(ctx, storeTraceID[16:]); len(found) != 1 {
		t.Errorf("by the 64-bit ID: %+v", found)
	}
	s.AnalyzeAll(ctx, found)
	if found[0].Err != nil || kernelNames(found[0].Result) != "gemm" {
		t.Errorf("analysed: %v %q", found[0].Err, kernelNames(found[0].Result))
	}
	// By content, analysed already: the unnamed file (and its alias inside) names the request.
	found, _ = s.FindByTraceID(ctx, strings.Repeat("a", 32))
	if len(found) != 2 || kernelNames(found[0].Result) != "relu" {
		t.Fatalf("by content: %+v", found)
	}
	// Nowhere: a notice says how far the search inside files went.
	found, notices := s.FindByTraceID(ctx, strings.Repeat("b", 32))
	if len(found) != 0 || !notices.Has(fmt.Sprintf("no file name names trace %s and only 2 unnamed file(s) were looked inside: a lookup opens at most the %d most recent it has not read whole before; name trace files after their request's trace ID to find them at once", strings.Repeat("b", 32), MaxContentScan)) {
		t.Errorf("not found: %+v %q", found, notices)
	}
}

func TestStoreKernelTracesOfARequest(t *testing.T) {
	dir, _ := storeDirs(t)
	// A file named for another request that cannot be read as a trace.
	writeStoreFile(t, filepath.Join(dir, "broken_"+strings.Repeat("c", 32)+".json"), `{"traceEvents": [`, time.Time{})
	s := NewStore([]string{dir}, 100, 1<<20)
	ctx := context.Background()
	results, warnings := s.KernelTracesOf(ctx, storeTraceID)
	if len(results) != 1 || kernelNames(results[0]) != "gemm" || len(warnings) != 0 {
		t.Errorf("by name: %v %q", results, warnings)
	}
	results, warnings = s.KernelTracesOf(ctx, strings.Repeat("c", 32))
	if len(warnings) != 1 || !strings.HasPrefix(warnings[0].Text, "GPU kernel trace broken_"+strings.Repeat("c", 32)+".json: ") {
		t.Errorf("unreadable: %v %q", results, warnings)
	}
	// Most requests have no kernel trace: nothing to say.
	if results, warnings = s.KernelTracesOf(ctx, strings.Repeat("b", 32)); len(results) != 0 || len(warnings) != 0 {
		t.Errorf("none: %v %q", results, warnings)
	}
}

func TestStoreContentScanIsBounded(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	// The oldest file names the request inside; MaxContentScan newer ones come before it.
	writeStoreFile(t, filepath.Join(dir, "old.json"), storeTrace("request "+storeTraceID, "k"), t0)
	for i := range MaxContentScan {
		writeStoreFile(t, filepath.Join(dir, fmt.Sprintf("new%02d.json", i)), storeTrace("other", "k"), t0.Add(time.Duration(i+1)*time.Minute))
	}
	s := NewStore([]string{dir}, 100, 1<<20)
	found, notices := s.FindByTraceID(context.Background(), storeTraceID)
	if len(found) != 0 || !notices.Has(fmt.Sprintf("no file name names trace %s and only %d unnamed file(s) were looked inside: a lookup opens at most the %d most recent it has not read whole before; name trace files after their request's trace ID to find them at once", storeTraceID, MaxContentScan, MaxContentScan)) {
		t.Errorf("found %+v, notices %q", found, notices)
	}
	// The next lookup knows what the newest files hold without opening them, and opens the
	// next ones: the oldest file is found.
	found, notices = s.FindByTraceID(context.Background(), storeTraceID)
	if len(found) != 1 || found[0].File.Rel != "old.json" || len(notices) != 0 {
		t.Errorf("second lookup: found %+v, notices %q", found, notices)
	}
}

// A lookup by content does not open again a file it read whole before, while its size and time
// stay; a file that changed is read again.
func TestStoreContentLookupRemembersWhatFilesHold(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	path := filepath.Join(dir, "worker0.pt.trace.json")
	other := strings.Repeat("b", 32)
	writeStoreFile(t, path, storeTrace("request "+storeTraceID, "gemm"), t0)
	s := NewStore([]string{dir}, 100, 1<<20)
	ctx := context.Background()
	if found, _ := s.FindByTraceID(ctx, other); len(found) != 0 {
		t.Fatalf("a file without the request: %+v", found)
	}
	// Same size and time, another request inside: the store goes by what it read before, and
	// does not open the file to learn it.
	writeStoreFile(t, path, storeTrace("request "+other, "gemm"), t0)
	if found, notices := s.FindByTraceID(ctx, other); len(found) != 0 || len(notices) != 0 {
		t.Errorf("a file read before was opened again: %+v %q", found, notices)
	}
	// Changed (its time moved): read again, and what it holds now is found.
	writeStoreFile(t, path, storeTrace("request "+other, "gemm"), t0.Add(time.Minute))
	if found, _ := s.FindByTraceID(ctx, other); len(found) != 1 || kernelNames(found[0].Result) != "gemm" {
		t.Errorf("a changed file: %+v", found)
	}
}

func TestStoreFileSwappedAfterItsChecks(t *testing.T) {
	// A file is checked when it is listed or resolved, and read after: whoever can write into
	// the trace directory could put a symlink leading out in its place in between. The read goes
	// through an os.Root of the directory (and SQLite gets the opened file itself), so the swap
	// finds an error, never the outside file.
	dir, outside := filepath.Join(t.TempDir(), "profiles"), filepath.Join(t.TempDir(), "outside")
	const marker = "OUTSIDE_MARKER_7f3a"
	writeStoreFile(t, filepath.Join(dir, "swap.json"), storeTrace("inside", "inside_kernel"), time.Time{})
	writeStoreFile(t, filepath.Join(outside, "leak.json"), storeTrace("outside", marker), time.Time{})
	if err := testbed.WriteNsysKernel(filepath.Join(dir, "swap.sqlite"), "inside_kernel"); err != nil {
		t.Fatal(err)
	}
	if err := testbed.WriteNsysKernel(filepath.Join(outside, "leak.sqlite"), marker); err != nil {
		t.Fatal(err)
	}
	s := NewStore([]string{dir}, 100, 1<<20)
	for name, leak := range map[string]string{"swap.json": "leak.json", "swap.sqlite": "leak.sqlite"} {
		f, err := s.Resolve(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		// Before the swap the file reads, the Nsight export through /proc/self/fd on Linux.
		res, err := s.Analyze(context.Background(), f)
		if err != nil || kernelNames(res) != "inside_kernel" {
			t.Fatalf("%s before the swap: %v, kernels %q", name, err, kernelNames(res))
		}
		if err := os.Remove(f.Abs); err != nil {
			t.Fatal(err)
		}
		symlink(t, filepath.Join(outside, leak), f.Abs)
		// The swap is real: reading the checked path by name now reads the outside file.
		if res, _ := analyzeFile(f.Abs); !strings.Contains(kernelNames(res), marker) {
			t.Fatalf("%s: the swapped path does not lead to the outside file (kernels %q)", name, kernelNames(res))
		}
		res, err = s.Analyze(context.Background(), f)
		if err == nil || strings.Contains(kernelNames(res), marker) {
			t.Errorf("%s swapped for a link out of the directory: err %v, kernels %q", name, err, kernelNames(res))
		}
	}
}

func TestStoreOpenRechecksTheFile(t *testing.T) {
	dir := t.TempDir()
	writeStoreFile(t, filepath.Join(dir, "grows.json"), storeTrace("x", "k"), time.Time{})
	s := NewStore([]string{dir}, 100, 1000)
	f, err := s.Resolve("grows.json")
	if err != nil {
		t.Fatal(err)
	}
	// Grown past the bound after it was checked: the open file is checked again.
	writeStoreFile(t, f.Abs, strings.Repeat(" ", 2000), time.Time{})
	if _, err := s.Open(f); err == nil || err.Error() != "2000 bytes, over jsonData.traceMaxFileBytes (1000)" {
		t.Errorf("grown file: %v", err)
	}
	// Replaced by a directory of the same name.
	if err := os.Remove(f.Abs); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(f.Abs, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Open(f); err == nil || err.Error() != "not a regular file" {
		t.Errorf("directory: %v", err)
	}
}

func TestStoreTracesOfAChosenFileOrARequest(t *testing.T) {
	dir, _ := storeDirs(t)
	s := NewStore([]string{dir}, 100, 1<<20)
	ctx := context.Background()
	// A request's traces, analysed.
	files, missed, err := s.TracesOf(ctx, "", storeTraceID)
	if err != nil || len(files) != 1 || files[0].Result == nil || len(missed) != 0 {
		t.Fatalf("by trace ID: %+v %v %v", files, missed.Texts(), err)
	}
	// A request nothing names: no file, and a warning that says so.
	other := strings.Repeat("e", 32)
	if files, missed, err = s.TracesOf(ctx, "", other); err != nil || len(files) != 0 ||
		!missed.Has("no GPU kernel trace found for trace "+other+" in the trace directories") {
		t.Errorf("nothing found: %+v %v %v", files, missed.Texts(), err)
	}
	// A chosen file: read as named, or the user's error, its message kept.
	if files, _, err = s.TracesOf(ctx, "unnamed.json", ""); err != nil || len(files) != 1 || files[0].Result == nil {
		t.Errorf("chosen file: %+v %v", files, err)
	}
	for _, bad := range []string{"../secret/x.json", "/etc/passwd.json", "missing.json", "notes.txt"} {
		_, _, err := s.TracesOf(ctx, bad, "")
		if !errors.Is(err, gputrace.ErrChosenFile) {
			t.Errorf("%s: %v is not the user's error", bad, err)
		}
		if strings.Contains(bad, "..") || strings.HasPrefix(bad, "/") {
			if !errors.Is(err, ErrOutsideDirectory) || !strings.Contains(err.Error(), "outside the trace directories") {
				t.Errorf("%s: %v", bad, err)
			}
		}
	}
}
