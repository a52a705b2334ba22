package tracestore

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	realdatadir "github.com/hsi-profiling/hsi-profiling-datasource/internal/realdata"

	"github.com/thanos-io/objstore"
	"github.com/thanos-io/objstore/providers/filesystem"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// A second request of the bucket tests.
const bucketTraceID = "0af7651916cd43dd8448eb211c80319c"

func upload(t testing.TB, b objstore.Bucket, key string, data []byte) {
	t.Helper()
	if err := b.Upload(context.Background(), key, bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
}

func gzipped(t testing.TB, text string) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func readAll(t testing.TB, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// fleetBucket is a bucket laid out as the docs advise: a prefix per service and day, the trace
// ID in each name; one object lies outside the prefix and one is not a trace.
func fleetBucket(t testing.TB) *objstore.InMemBucket {
	b := objstore.NewInMemBucket()
	upload(t, b, "gpu/infer/2026-11-27/infer_"+storeTraceID+".pt.trace.json.gz", gzipped(t, storeTrace("infer", "bucket_gemm")))
	upload(t, b, "gpu/train/2026-11-27/train_"+bucketTraceID+".pt.trace.json", []byte(storeTrace("train", "bucket_relu")))
	upload(t, b, "gpu/train/2026-11-27/notes.txt", []byte("not a trace"))
	upload(t, b, "other/leak_"+storeTraceID+".json", []byte(storeTrace("leak", "LEAK")))
	return b
}

// faultBucket injects the faults of a bucket gone wrong into an in-memory one.
type faultBucket struct {
	objstore.Bucket
	listErr  error         // IterWithAttributes fails
	getErr   error         // Get fails
	slow     time.Duration // every call waits this long (or for its context)
	slowGet  time.Duration // Get waits this long (or for its context)
	truncate int           // Get's body fails after this many bytes (0: whole)
	readErr  error         // how it fails: io.ErrUnexpectedEOF when nil
	garbage  bool          // Get answers bytes that are no trace
	lists    int           // listings made
}

var errDenied = errors.New("Access Denied. (status 403)")

// closed is minio-go's error for a connection closed before any reply (it rewrites the HTTP
// client's EOF so).
var closed error = &url.Error{Op: "Get", URL: "http://10.0.0.9:9000/traces/gpu/x.json", Err: errors.New("Connection closed by foreign host http://10.0.0.9:9000/traces/gpu/x.json. Retry again.")}

// reset is a connection the store dropped while an object's body was being read.
var reset error = &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 50000},
	Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 9000}, Err: &os.SyscallError{Syscall: "read", Err: syscall.ECONNRESET}}

// refused is what an S3 client says of a store that is down: its HTTP client's error, the
// request's URL first.
var refused error = &url.Error{Op: "Get", URL: "http://10.0.0.9:9000/traces/?list-type=2&prefix=gpu%2F", Err: &net.OpError{
	Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 9), Port: 9000}, Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}}

func (f *faultBucket) wait(ctx context.Context) error {
	if f.slow == 0 {
		return nil
	}
	select {
	case <-time.After(f.slow):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *faultBucket) IterWithAttributes(ctx context.Context, dir string, fn func(objstore.IterObjectAttributes) error, o ...objstore.IterOption) error {
	f.lists++
	if err := f.wait(ctx); err != nil {
		return err
	}
	if f.listErr != nil {
		return f.listErr
	}
	return f.Bucket.IterWithAttributes(ctx, dir, fn, o...)
}

func (f *faultBucket) Get(ctx context.Context, name string) (io.ReadCloser, error) {
	if err := f.wait(ctx); err != nil {
		return nil, err
	}
	if f.slowGet > 0 {
		select {
		case <-time.After(f.slowGet):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.getErr != nil {
		return nil, f.getErr
	}
	if f.garbage {
		return io.NopCloser(strings.NewReader("<html>502 Bad Gateway</html>")), nil
	}
	rc, err := f.Bucket.Get(ctx, name)
	if err != nil || f.truncate == 0 {
		return rc, err
	}
	return struct {
		io.Reader
		io.Closer
	}{io.MultiReader(io.LimitReader(rc, int64(f.truncate)), errReader{cmp.Or(f.readErr, io.ErrUnexpectedEOF)}), rc}, nil
}

func (f *faultBucket) IsAccessDeniedErr(err error) bool { return errors.Is(err, errDenied) }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

func TestBucketFindsARequestsTracesByTheTraceIDInTheirNames(t *testing.T) {
	dir, _ := storeDirs(t)
	s := NewStore([]string{dir}, 100, 1<<20).WithBuckets(NewBucket("fleet", fleetBucket(t), BucketOptions{Prefix: "gpu"}))
	found, missed := s.FindByTraceID(context.Background(), storeTraceID)
	got := []string{}
	for _, f := range found {
		got = append(got, f.File.Rel)
	}
	want := []string{"bucket:fleet/infer/2026-11-27/infer_" + storeTraceID + ".pt.trace.json.gz", "infer/infer_" + storeTraceID + ".pt.trace.json"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("found %q, want %q (the object outside the prefix left out); notices %q", got, want, missed.Texts())
	}
	results, warnings := s.KernelTracesOf(context.Background(), storeTraceID)
	names := []string{}
	for _, r := range results {
		names = append(names, kernelNames(r))
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"bucket_gemm", "gemm"}) || len(warnings) != 0 {
		t.Fatalf("kernels %q, warnings %q", names, warnings.Texts())
	}
	// The editor's picker lists the objects as files, with the trace IDs of their names.
	files, _ := s.FilesOf(context.Background(), "")
	var train *gputrace.TraceFile
	for i, f := range files {
		if strings.Contains(f.Rel, "train_") {
			train = &files[i]
		}
		if strings.Contains(f.Rel, "leak") || strings.HasSuffix(f.Rel, ".txt") {
			t.Errorf("listed %s", f.Rel)
		}
	}
	if train == nil || train.Rel != "bucket:fleet/train/2026-11-27/train_"+bucketTraceID+".pt.trace.json" || !slices.Equal(train.TraceIDs, []string{bucketTraceID}) || train.Bucket() != "fleet" {
		t.Fatalf("files %q: want the train object named for its bucket", rels(files))
	}
	// A chosen object is read by its reference; one outside the prefix cannot be named.
	chosen, _, err := s.TracesOf(context.Background(), train.Rel, "")
	if err != nil || len(chosen) != 1 || kernelNames(chosen[0].Result) != "bucket_relu" || chosen[0].File.Size == 0 {
		t.Fatalf("chosen %s: %v %+v", train.Rel, err, chosen)
	}
	for bad, want := range map[string]string{
		"bucket:fleet/../other/leak_" + storeTraceID + ".json": "outside the bucket's prefix",
		"bucket:fleet//x.json":                                 "outside the bucket's prefix",
		"bucket:fleet/train/absent.json":                       "not found in bucket fleet",
		"bucket:nope/x.json":                                   `no bucket named "nope"`,
		"bucket:fleet/train/2026-11-27/notes.txt":              "is not a trace file",
	} {
		_, _, err := s.TracesOf(context.Background(), bad, "")
		if !errors.Is(err, gputrace.ErrChosenFile) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want a chosen-file error with %q", bad, err, want)
		}
	}
}

func TestBucketListingIsCachedAndItsAgeSaid(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	fb := &faultBucket{Bucket: fleetBucket(t)}
	b := NewBucket("fleet", fb, BucketOptions{Prefix: "gpu", TTL: time.Minute, Now: func() time.Time { return now }})
	s := NewStore(nil, 100, 1<<20).WithBuckets(b)
	if _, missed := s.List(context.Background()); fb.lists != 1 || len(missed) != 0 {
		t.Fatalf("first listing: %d listings, notices %q", fb.lists, missed.Texts())
	}
	now = now.Add(42 * time.Second)
	upload(t, fb.Bucket, "gpu/infer/2026-11-27/infer_"+bucketTraceID+".json", []byte(storeTrace("late", "late")))
	files, missed := s.List(context.Background())
	if fb.lists != 1 || len(files) != 2 || !missed.Has("bucket fleet: object list from 42s ago (listed again after 1m0s)") {
		t.Fatalf("within the TTL: %d listings, %q, notices %q", fb.lists, rels(files), missed.Texts())
	}
	now = now.Add(time.Minute)
	files, missed = s.List(context.Background())
	if fb.lists != 2 || len(files) != 3 || len(missed) != 0 {
		t.Fatalf("after the TTL: %d listings, %q, notices %q", fb.lists, rels(files), missed.Texts())
	}
	// A failed listing falls back on the last one and says so.
	now = now.Add(2 * time.Minute)
	fb.listErr = errors.New("connection refused")
	files, missed = s.List(context.Background())
	if len(files) != 3 || !missed.Has("bucket fleet: cannot list it: connection refused; using its list from 2m0s ago") {
		t.Fatalf("failed listing: %q, notices %q", rels(files), missed.Texts())
	}
	// The cache is bounded: the most recent traceMaxFiles objects (key order would keep the
	// oldest days), the cap said.
	mem := objstore.NewInMemBucket()
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 9 {
		key := fmt.Sprintf("infer/2026-11-%02d/step.json", i+1)
		upload(t, mem, key, []byte(storeTrace("s", "k")))
		if err := mem.ChangeLastModified(key, day.AddDate(0, 0, i)); err != nil {
			t.Fatal(err)
		}
	}
	capped := NewStore(nil, 2, 1<<20).WithBuckets(NewBucket("fleet", mem, BucketOptions{}))
	files, missed = capped.List(context.Background())
	if !slices.Equal(rels(files), []string{"bucket:fleet/infer/2026-11-09/step.json", "bucket:fleet/infer/2026-11-08/step.json"}) ||
		!missed.Has("bucket fleet: 9 trace objects under its prefix: only the 2 most recent were looked at (jsonData.traceMaxFiles)") {
		t.Fatalf("capped: %q, notices %q", rels(files), missed.Texts())
	}
}

// A real gzipped Kineto trace (35 MB of JSON) read from a bucket gives the figures it gives from
// a file, and the read holds a fraction of it at once: the object is decoded as it arrives.
func TestBucketReadsARealGzipTraceStreaming(t *testing.T) {
	path := realdatadir.Path(t, "resnet50_worker0.pt.trace.json.gz")
	mem := objstore.NewInMemBucket()
	key := "resnet/2026-11-27/resnet50_" + bucketTraceID + ".pt.trace.json.gz"
	upload(t, mem, key, readAll(t, path))
	s := NewStore(nil, 100, 1<<30).WithBuckets(NewBucket("fleet", mem, BucketOptions{}))
	var (
		res    *gputrace.Result
		missed []string
	)
	peak := peakHeap(func() {
		found, notes, err := s.TracesOf(context.Background(), "", bucketTraceID)
		if err != nil || len(found) != 1 {
			t.Fatalf("%v %+v", err, found)
		}
		res, missed = found[0].Result, notes.Texts()
		if found[0].Err != nil {
			t.Fatal(found[0].Err)
		}
	})
	want, err := analyzeFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Kernels) != len(want.Kernels) || res.Kernels[0] != want.Kernels[0] || len(missed) != 0 {
		t.Fatalf("%d kernels (first %+v), from the file %d (first %+v); notices %q", len(res.Kernels), res.Kernels[0], len(want.Kernels), want.Kernels[0], missed)
	}
	t.Logf("peak heap %.1f MB", float64(peak)/(1<<20))
	if peak > 12<<20 {
		t.Errorf("peak heap %d MB while reading a 35 MB trace: it must not be held whole", peak>>20)
	}
}

// An Nsight export is spooled to a temporary file for SQLite, and the file is removed after,
// whether the read succeeded or not.
func TestBucketSpoolsNsightExportsAndRemovesTheFile(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	path := realdatadir.Path(t, "cloverleaf-nsys.sqlite")
	data := readAll(t, path)
	mem := objstore.NewInMemBucket()
	upload(t, mem, "hpc/cloverleaf_"+bucketTraceID+".sqlite", data)
	upload(t, mem, "hpc/cut_"+storeTraceID+".sqlite", data[:len(data)/3])
	s := NewStore(nil, 100, 1<<30).WithBuckets(NewBucket("hpc", mem, BucketOptions{}))
	found, _, err := s.TracesOf(context.Background(), "", bucketTraceID)
	want, werr := analyzeFile(path)
	if err != nil || werr != nil || len(found) != 1 || found[0].Err != nil || len(found[0].Result.Kernels) != len(want.Kernels) {
		t.Fatalf("%v %v %+v", err, werr, found)
	}
	found, missed, _ := s.TracesOf(context.Background(), "", storeTraceID)
	if len(found) != 1 || found[0].Err == nil || !strings.Contains(strings.Join(missed.Texts(), "\n"), "bucket:hpc/hpc/cut_"+storeTraceID+".sqlite: ") {
		t.Fatalf("a cut export: %+v, notices %q", found, missed.Texts())
	}
	// Over traceMaxFileBytes: the spool stops there.
	small := NewStore(nil, 100, 1<<20).WithBuckets(NewBucket("hpc", mem, BucketOptions{}))
	found, _, _ = small.TracesOf(context.Background(), "", bucketTraceID)
	if len(found) != 1 || !errors.Is(found[0].Err, errOverMax) {
		t.Fatalf("over the bound: %+v", found)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Fatalf("temporary files left behind: %v", left)
	}
}

// Each fault of a bucket is a notice naming the bucket (and the object when one was being
// read); the directories' and the other buckets' traces stand.
func TestBucketFaultsAreNoticesAndTheRestStands(t *testing.T) {
	dir, _ := storeDirs(t)
	for _, c := range []struct {
		name  string
		fault func(*faultBucket)
		want  string
	}{
		{"down", func(f *faultBucket) { f.listErr = refused }, "bucket broken: cannot list it: unreachable (dial tcp 10.0.0.9:9000: connect: connection refused)"},
		{"down, an object", func(f *faultBucket) { f.getErr = refused }, "bucket:broken/infer/2026-11-27/infer_" + storeTraceID + ".pt.trace.json.gz: unreachable (dial tcp 10.0.0.9:9000: connect: connection refused)"},
		{"closed before any reply", func(f *faultBucket) { f.getErr = closed }, "bucket:broken/infer/2026-11-27/infer_" + storeTraceID + ".pt.trace.json.gz: the connection closed before any reply arrived (EOF)"},
		{"a listing that is no XML", func(f *faultBucket) { f.listErr = &xml.SyntaxError{Msg: "invalid UTF-8", Line: 2} }, "bucket broken: cannot list it: invalid reply, not the XML the store sends (XML syntax error on line 2: invalid UTF-8)"},
		{"a listing cut short", func(f *faultBucket) { f.listErr = io.ErrUnexpectedEOF }, "bucket broken: cannot list it: reply cut short: the connection ended before the whole reply arrived (unexpected EOF)"},
		{"refusing the listing", func(f *faultBucket) { f.listErr = errDenied }, "bucket broken: cannot list it: access denied (403)"},
		{"slow", func(f *faultBucket) { f.slow = time.Second }, "bucket broken: cannot list it: no answer within 50ms"},
		{"slow to open the object", func(f *faultBucket) { f.slowGet = time.Second }, "bucket:broken/infer/2026-11-27/infer_" + storeTraceID + ".pt.trace.json.gz: no answer within 50ms"},
		{"refusing the object", func(f *faultBucket) { f.getErr = errDenied }, "bucket:broken/infer/2026-11-27/infer_" + storeTraceID + ".pt.trace.json.gz: access denied (403)"},
		{"garbage", func(f *faultBucket) { f.garbage = true }, "bucket:broken/infer/2026-11-27/infer_" + storeTraceID + ".pt.trace.json.gz: not a readable PyTorch profiler trace (byte 0: "},
		{"truncated", func(f *faultBucket) { f.truncate = 20 }, "bucket:broken/infer/2026-11-27/infer_" + storeTraceID + ".pt.trace.json.gz: cut short after 20 bytes: the connection ended before the whole object arrived (unexpected EOF)"},
		{"reset", func(f *faultBucket) { f.truncate, f.readErr = 20, reset }, "bucket:broken/infer/2026-11-27/infer_" + storeTraceID + ".pt.trace.json.gz: the transfer failed after 20 bytes: the connection failed (read tcp 10.0.0.1:50000->10.0.0.9:9000: read: connection reset by peer)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			fb := &faultBucket{Bucket: fleetBucket(t)}
			c.fault(fb)
			other := objstore.NewInMemBucket()
			upload(t, other, "other_"+storeTraceID+".json", []byte(storeTrace("other", "other_kernel")))
			s := NewStore([]string{dir}, 100, 1<<20).WithBuckets(
				NewBucket("broken", fb, BucketOptions{Prefix: "gpu", Timeout: 50 * time.Millisecond}),
				NewBucket("healthy", other, BucketOptions{}))
			found, missed, err := s.TracesOf(context.Background(), "", storeTraceID)
			if err != nil {
				t.Fatal(err)
			}
			kernels := []string{}
			for _, f := range found {
				if f.Result != nil {
					kernels = append(kernels, kernelNames(f.Result))
				}
			}
			all := strings.Join(missed.Texts(), "\n")
			if !slices.Contains(kernels, "gemm") || !slices.Contains(kernels, "other_kernel") || !strings.Contains(all, c.want) {
				t.Fatalf("kernels %q (want the directory's gemm and the healthy bucket's), notices %q (want %q)", kernels, missed.Texts(), c.want)
			}
			// The trace join's view says the same.
			results, warnings := s.KernelTracesOf(context.Background(), storeTraceID)
			if len(results) < 2 || (!strings.Contains(c.want, "cannot list") && !strings.Contains(strings.Join(warnings.Texts(), "\n"), c.want)) {
				t.Fatalf("join: %d results, warnings %q", len(results), warnings.Texts())
			}
		})
	}
}

// A bucket whose client could not be made, and the health check's lines.
func TestBucketChecksAndBrokenBuckets(t *testing.T) {
	root := t.TempDir()
	fs, err := filesystem.NewBucket(root)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		upload(t, fs, fmt.Sprintf("svc/2026-11-27/step%d_%s.json", i, storeTraceID), []byte(storeTrace("s", fmt.Sprint("k", i))))
	}
	s := NewStore(nil, 100, 1<<20).WithBuckets(
		NewBucket("disk", fs, BucketOptions{Prefix: "svc"}),
		BrokenBucket("cloud", errors.New("cannot make its gcs client: no credentials")),
		NewBucket("denied", &faultBucket{Bucket: objstore.NewInMemBucket(), listErr: errDenied}, BucketOptions{}))
	checks := s.CheckBuckets(context.Background())
	if len(checks) != 3 || checks[0].Name != "disk" || checks[0].Objects != 3 || checks[0].Err != nil ||
		checks[1].Err == nil || checks[1].Err.Error() != "bucket cloud: cannot be used: cannot make its gcs client: no credentials" ||
		checks[2].Err == nil || !strings.Contains(checks[2].Err.Error(), "bucket denied: cannot list it: access denied (403)") {
		t.Fatalf("checks %+v", checks)
	}
	results, warnings := s.KernelTracesOf(context.Background(), storeTraceID)
	if len(results) != 3 || !strings.Contains(strings.Join(warnings.Texts(), "\n"), "cannot make its gcs client") {
		t.Fatalf("%d results, warnings %q", len(results), warnings.Texts())
	}
	// The filesystem provider resolves paths: a key that climbs out is refused before it is asked.
	if _, err := s.Resolve("bucket:disk/../../etc/passwd.json"); !errors.Is(err, ErrOutsideDirectory) {
		t.Fatalf("climbing out: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, "outside_"+storeTraceID+".json"), []byte(storeTrace("o", "OUT")), 0o644); err != nil {
		t.Fatal(err)
	}
	if files, _ := s.FilesOf(context.Background(), ""); slices.ContainsFunc(files, func(f gputrace.TraceFile) bool { return strings.Contains(f.Rel, "outside_") }) {
		t.Fatalf("listed an object outside the prefix: %q", rels(files))
	}
}

// Credentials are never in a notice, even when a provider's error would carry one.
func TestBucketNoticesRedactCredentials(t *testing.T) {
	secret := "AKIAVERYSECRET123"
	fb := &faultBucket{Bucket: fleetBucket(t), listErr: errors.New("signature mismatch for key " + secret)}
	s := NewStore(nil, 100, 1<<20).WithBuckets(NewBucket("fleet", fb, BucketOptions{Prefix: "gpu", Secrets: []string{secret}}))
	_, missed, _ := s.TracesOf(context.Background(), "", storeTraceID)
	all := strings.Join(missed.Texts(), "\n")
	if strings.Contains(all, secret) || !strings.Contains(all, "signature mismatch for key [redacted]") {
		t.Fatalf("notices %q", missed.Texts())
	}
}

// The health check lists afresh and says a failed listing, even with an older listing cached
// (which a query still uses, with a warning).
func TestBucketCheckSaysAFailedListingDespiteTheCache(t *testing.T) {
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	fb := &faultBucket{Bucket: fleetBucket(t)}
	s := NewStore(nil, 100, 1<<20).WithBuckets(NewBucket("fleet", fb, BucketOptions{Prefix: "gpu", Now: func() time.Time { return now }}))
	if checks := s.CheckBuckets(context.Background()); checks[0].Err != nil || checks[0].Objects != 2 {
		t.Fatalf("healthy: %+v", checks)
	}
	fb.listErr = refused
	checks := s.CheckBuckets(context.Background())
	if checks[0].Err == nil || checks[0].Err.Error() != "bucket fleet: cannot list it: unreachable (dial tcp 10.0.0.9:9000: connect: connection refused)" {
		t.Fatalf("down, listed before: %+v, want the failure", checks)
	}
	now = now.Add(2 * time.Minute)
	files, missed := s.List(context.Background())
	if len(files) != 2 || !missed.Has("bucket fleet: cannot list it: unreachable (dial tcp 10.0.0.9:9000: connect: connection refused); using its list from 2m0s ago") {
		t.Fatalf("a query, listed before: %q, notices %q", rels(files), missed.Texts())
	}
}

// Callers that come while a slow bucket is being listed wait for that listing, not each for
// the one before theirs: a dashboard's panels all answer within the bucket's timeout.
func TestBucketCallersShareTheListingUnderWay(t *testing.T) {
	const timeout = 400 * time.Millisecond
	fb := &faultBucket{Bucket: fleetBucket(t), slow: time.Minute}
	b := NewBucket("slow", fb, BucketOptions{Prefix: "gpu", Timeout: timeout})
	const callers = 5
	took := make([]time.Duration, callers)
	notes := make([]notices.List, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			start := time.Now()
			_, notes[i] = b.List(context.Background(), 100)
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	for i := range callers {
		if !notes[i].Has("bucket slow: cannot list it: no answer within 400ms") || took[i] > 3*timeout {
			t.Errorf("caller %d: %v, notices %q; want the timeout said within %v", i, took[i], notes[i].Texts(), 3*timeout)
		}
	}
	if fb.lists != 1 {
		t.Errorf("%d listings for %d callers at once, want 1", fb.lists, callers)
	}
	// A caller that gives up does not fail the listing for the others, and the next call
	// lists again.
	fb.slow = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	quit := make(chan notices.List)
	go func() {
		_, n := b.List(ctx, 100)
		quit <- n
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if n := <-quit; !strings.Contains(strings.Join(n.Texts(), "\n"), "bucket slow: cannot list it: context canceled") {
		t.Errorf("the caller that gave up: notices %q", n.Texts())
	}
	if files, n := b.List(context.Background(), 100); len(files) != 2 || len(n) != 0 {
		t.Errorf("after it: %q, notices %q", rels(files), n.Texts())
	}
}

// An object's notice says whether its figures cover part of it or nothing of it was read.
func TestBucketObjectNoticeSaysWhatWasRead(t *testing.T) {
	for _, c := range []struct {
		fault func(*faultBucket)
		want  string
	}{
		{func(f *faultBucket) { f.getErr = errDenied }, "access denied (403): the credentials may not read this bucket (nothing of it was read)"},
		{func(f *faultBucket) { f.truncate = 20 }, "(unexpected EOF) (figures cover what was read before it)"},
	} {
		fb := &faultBucket{Bucket: fleetBucket(t)}
		c.fault(fb)
		s := NewStore(nil, 100, 1<<20).WithBuckets(NewBucket("fleet", fb, BucketOptions{Prefix: "gpu"}))
		_, missed, err := s.TracesOf(context.Background(), "", storeTraceID)
		if err != nil || !strings.Contains(strings.Join(missed.Texts(), "\n"), c.want) {
			t.Errorf("%v, notices %q; want %q", err, missed.Texts(), c.want)
		}
	}
}
