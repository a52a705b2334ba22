// Package tracestore finds and opens the kernel traces of a data source: its trace directories
// (through an os.Root each) and buckets (cached listings, streamed objects, spooled Nsight
// exports), a request's traces by trace ID (file name, else content), and the baselines of a
// diff. It reads each file with its format's reader (kineto, nsys) into the analyses (gputrace).
package tracestore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// ErrOutsideDirectory is a trace file that lies, or resolves, outside its trace directory (an
// absolute path, "..", a link leading out): the user's mistake, and never read.
var ErrOutsideDirectory = errors.New("outside the trace directory")

// outsideError is a message users see that errors.Is reads as ErrOutsideDirectory.
type outsideError string

func (e outsideError) Error() string { return string(e) }
func (outsideError) Unwrap() error   { return ErrOutsideDirectory }

// MaxContentScan bounds how many of the most recent files are opened to look for a trace ID
// inside them when none names it in its file name.
const MaxContentScan = 20

// Store is the GPU kernel traces of one data source: the trace files under its configured
// directories. Nothing outside a directory is ever listed or read: a directory's own links are
// resolved at each call (repointing one changes what is read), links inside it are followed only
// to files that stay inside (linked directories are not entered), and reads go through an
// os.Root of the directory.
//
// Buckets (object storage, WithBuckets) are read beside the directories: a bucket's failure is
// a notice naming it, and the directories' and the other buckets' answers stand.
type Store struct {
	dirs         []string
	buckets      []*Bucket
	maxFiles     int
	maxFileBytes int64
	// inside: the trace IDs read inside unnamed files, for the lookups by content.
	inside *insideIDs
}

// NewStore is the store of the given absolute directories; maxFiles bounds the files looked at
// per call (jsonData.traceMaxFiles), maxFileBytes skips larger files (jsonData.traceMaxFileBytes).
func NewStore(dirs []string, maxFiles int, maxFileBytes int64) *Store {
	return &Store{dirs: dirs, maxFiles: maxFiles, maxFileBytes: maxFileBytes, inside: &insideIDs{}}
}

// bucket is the store's bucket of that name, nil for none.
func (s *Store) bucket(name string) *Bucket {
	for _, b := range s.buckets {
		if b.name == name {
			return b
		}
	}
	return nil
}

// WithBuckets adds object-storage buckets to the store.
func (s *Store) WithBuckets(b ...*Bucket) *Store {
	s.buckets = append(s.buckets, b...)
	return s
}

// Close closes the buckets' clients.
func (s *Store) Close() error {
	var errs []error
	for _, b := range s.buckets {
		errs = append(errs, b.Close())
	}
	return errors.Join(errs...)
}

// IsTraceFile says whether a name is a trace file the kernels query reads.
func IsTraceFile(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".json.gz") || strings.HasSuffix(n, ".sqlite")
}

// inside says whether path lies in root (both resolved).
func inside(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveRoot resolves a configured directory's own symlinks.
func resolveRoot(dir string) (string, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("trace directory %s: %w", dir, err)
	}
	return root, nil
}

// statInside resolves path and checks it is a regular trace file inside root within the size
// bound.
func (s *Store) statInside(root, path string) (string, fs.FileInfo, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", nil, err
	}
	if !inside(root, real) {
		return "", nil, outsideError("it resolves outside the trace directory")
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", nil, err
	}
	if !fi.Mode().IsRegular() {
		return "", nil, errors.New("not a regular file")
	}
	if fi.Size() > s.maxFileBytes {
		return "", nil, fmt.Errorf("%d bytes, over jsonData.traceMaxFileBytes (%d)", fi.Size(), s.maxFileBytes)
	}
	return real, fi, nil
}

// List walks the directories for trace files, most recent first, with notices for what was
// skipped. The walk stops after maxFiles files.
func (s *Store) List(ctx context.Context) ([]gputrace.TraceFile, notices.List) {
	var (
		out     []gputrace.TraceFile
		skipped notices.List
		seen    int
	)
	for _, dir := range s.dirs {
		root, err := resolveRoot(dir)
		if err != nil {
			skipped.Warn(err.Error())
			continue
		}
		err = filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if p == root {
					return err
				}
				return nil // unreadable subdirectory: skip it
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			if e.IsDir() || !IsTraceFile(e.Name()) {
				return nil
			}
			if seen >= s.maxFiles {
				skipped.Warnf("more than %d trace files: the rest were not looked at (jsonData.traceMaxFiles)", s.maxFiles)
				return filepath.SkipAll
			}
			seen++
			real, fi, err := s.statInside(root, p)
			if err != nil {
				// A link leading out is left out silently: naming it would tell what lies outside.
				if e.Type()&fs.ModeSymlink == 0 && !errors.Is(err, ErrOutsideDirectory) {
					skipped.Warnf("%s skipped: %v", filepath.Base(p), err)
				}
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			out = append(out, gputrace.TraceFile{Dir: root, Rel: filepath.ToSlash(rel), Abs: real, Size: fi.Size(), Modified: fi.ModTime().UTC(), TraceIDs: activity.TraceIDsInFileName(p)})
			return nil
		})
		if err != nil && !errors.Is(err, filepath.SkipAll) {
			skipped.Warnf("trace directory %s: %v", dir, err)
		}
		if seen >= s.maxFiles {
			break
		}
	}
	out = append(out, s.listBuckets(ctx, &skipped)...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Modified.After(out[j].Modified) })
	return out, skipped
}

// listBuckets lists every bucket at once; each failure is its own notice.
func (s *Store) listBuckets(ctx context.Context, missed *notices.List) []gputrace.TraceFile {
	files := make([][]gputrace.TraceFile, len(s.buckets))
	notes := make([]notices.List, len(s.buckets))
	errs := safe.ForEach("kernel trace buckets", len(s.buckets), 4, func(i int) error {
		files[i], notes[i] = s.buckets[i].List(ctx, s.maxFiles)
		return nil
	})
	var out []gputrace.TraceFile
	for i := range s.buckets {
		if errs[i] != nil {
			missed.Warnf("bucket %s: %v", s.buckets[i].name, errs[i])
		}
		missed.Merge(notes[i])
		out = append(out, files[i]...)
	}
	return out
}

// CheckBuckets lists each bucket afresh: how many trace objects it holds, or why it could not
// be listed.
func (s *Store) CheckBuckets(ctx context.Context) []gputrace.BucketCheck {
	out := make([]gputrace.BucketCheck, len(s.buckets))
	errs := safe.ForEach("kernel trace bucket check", len(s.buckets), 4, func(i int) (err error) {
		out[i].Name = s.buckets[i].name
		out[i].Objects, out[i].Truncated, err = s.buckets[i].Check(ctx, s.maxFiles)
		return err
	})
	for i := range out {
		out[i].Name, out[i].Err = s.buckets[i].name, errs[i]
	}
	return out
}

// Resolve finds a file given relative to one of the directories (the first that has it); it
// must resolve inside that directory. A bucket object (bucket:<name>/<key>) must lie under its
// bucket's prefix.
func (s *Store) Resolve(file string) (gputrace.TraceFile, error) {
	return s.resolve(context.Background(), file)
}

func (s *Store) resolve(ctx context.Context, file string) (gputrace.TraceFile, error) {
	if file == "" {
		return gputrace.TraceFile{}, errors.New("no file given")
	}
	if ref, ok := strings.CutPrefix(file, BucketRef); ok {
		name, rel, _ := strings.Cut(ref, "/")
		if b := s.bucket(name); b != nil {
			return b.resolve(ctx, rel, s.maxFileBytes)
		}
		return gputrace.TraceFile{}, fmt.Errorf("no bucket named %q in the data source settings (jsonData.kernelBuckets)", name)
	}
	rel := filepath.Clean(file)
	if filepath.IsAbs(rel) || strings.ContainsRune(rel, 0) {
		return gputrace.TraceFile{}, outsideError(rel + " is outside the trace directories")
	}
	if !IsTraceFile(rel) {
		return gputrace.TraceFile{}, fmt.Errorf("%s is not a trace file (.json, .json.gz, .pt.trace.json, .sqlite)", rel)
	}
	var last error
	for _, dir := range s.dirs {
		root, err := resolveRoot(dir)
		if err != nil {
			last = err
			continue
		}
		p := filepath.Join(root, rel)
		if !inside(root, p) {
			return gputrace.TraceFile{}, outsideError(rel + " is outside the trace directories")
		}
		real, fi, err := s.statInside(root, p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return gputrace.TraceFile{}, fmt.Errorf("trace file %s: %w", rel, err)
		}
		return gputrace.TraceFile{Dir: root, Rel: filepath.ToSlash(rel), Abs: real, Size: fi.Size(), Modified: fi.ModTime().UTC(), TraceIDs: activity.TraceIDsInFileName(p)}, nil
	}
	if last != nil {
		return gputrace.TraceFile{}, fmt.Errorf("trace file %s not found: %v", rel, last)
	}
	return gputrace.TraceFile{}, fmt.Errorf("trace file %s not found in the trace directories", rel)
}

// nameMatches says whether the file name names traceID (a 64-bit ID matches the low half of a
// 128-bit one either way round).
func nameMatches(f gputrace.TraceFile, traceID string) bool {
	for _, id := range f.TraceIDs {
		if id == traceID || (len(id) == 32 && len(traceID) == 16 && id[16:] == traceID) || (len(id) == 16 && len(traceID) == 32 && traceID[16:] == id) {
			return true
		}
	}
	return false
}

// FindByTraceID finds the traces of a request: by the trace ID in the file name first, else by
// the trace IDs inside the most recent MaxContentScan files that name no request. Files found
// by content come back analysed.
func (s *Store) FindByTraceID(ctx context.Context, traceID string) ([]gputrace.Found, notices.List) {
	files, missed := s.List(ctx)
	out, more := s.findIn(ctx, files, traceID)
	missed.Merge(more)
	return out, missed
}

// findIn is FindByTraceID over a listing already made.
func (s *Store) findIn(ctx context.Context, files []gputrace.TraceFile, traceID string) ([]gputrace.Found, notices.List) {
	var (
		out    []gputrace.Found
		missed notices.List
	)
	for _, f := range files {
		if nameMatches(f, traceID) {
			out = append(out, gputrace.Found{File: f})
		}
	}
	if len(out) > 0 {
		return out, missed
	}
	// Unnamed files are looked inside, the most recent first: those read whole before by what
	// they hold (not opened again unless they changed), the others opened, MaxContentScan at most.
	looked, opened := 0, 0
	for _, f := range files {
		if ctx.Err() != nil {
			break
		}
		if len(f.TraceIDs) > 0 || f.BucketName != "" {
			continue // names another request, or an object: a bucket is never downloaded to look inside
		}
		if known, ok := s.inside.get(f); ok {
			looked++
			if !known.Matches(traceID) {
				continue
			}
		} else if opened >= MaxContentScan {
			continue
		} else {
			looked++
			opened++
		}
		res, err := s.Analyze(ctx, f)
		if res != nil && err == nil {
			s.inside.put(f, res)
		}
		if res != nil && res.Matches(traceID) {
			out = append(out, gputrace.Found{File: f, Result: res, Err: err})
		}
	}
	if len(out) == 0 && len(files) > looked {
		missed.Warnf("no file name names trace %s and only %d unnamed file(s) were looked inside: a lookup opens at most the %d most recent it has not read whole before; name trace files after their request's trace ID to find them at once", traceID, looked, MaxContentScan)
	}
	return out, missed
}

// AnalyzeAll fills in the analysis of each file not yet analysed.
func (s *Store) AnalyzeAll(ctx context.Context, files []gputrace.Found) {
	s.analyzeAll(ctx, files, gputrace.Limits{})
}

// analyzeAll is AnalyzeAll with limits; with other limits than the defaults a file found by
// its content (read with the defaults) is read again.
func (s *Store) analyzeAll(ctx context.Context, files []gputrace.Found, l gputrace.Limits) {
	for i := range files {
		f := &files[i]
		if f.Result == nil && f.Err == nil || l != (gputrace.Limits{}) && f.Result != nil {
			f.Result, f.Err = s.AnalyzeWith(ctx, f.File, l)
		}
	}
}

// KernelTracesOf is the analysed kernel traces of a request (FindByTraceID, then AnalyzeAll),
// with warnings about files that could not be searched or read: the trace join's view.
func (s *Store) KernelTracesOf(ctx context.Context, traceID string) ([]*gputrace.Result, notices.List) {
	files, warnings := s.FindByTraceID(ctx, traceID)
	if len(files) == 0 {
		// Most requests have no kernel trace: the span table says nothing about it.
		return nil, nil
	}
	return s.analyzeFound(ctx, files, warnings)
}

// analyzeFound analyses a request's files and adds a warning for each that failed.
func (s *Store) analyzeFound(ctx context.Context, files []gputrace.Found, warnings notices.List) ([]*gputrace.Result, notices.List) {
	s.AnalyzeAll(ctx, files)
	results := make([]*gputrace.Result, 0, len(files))
	for _, f := range files {
		if f.Err != nil {
			warnings.Warnf("GPU kernel trace %s: %v", f.File.Rel, f.Err)
		}
		results = append(results, f.Result)
	}
	return results, warnings
}

// Open opens a listed file through an os.Root of its trace directory. The checks made when it
// was listed (inside, regular, size) are made again on the open file: were the file swapped in
// between for a symlink leading out of the directory, the Root refuses to follow it, so nothing
// outside the directory is ever read.
func (s *Store) Open(f gputrace.TraceFile) (*os.File, error) {
	if f.BucketName != "" {
		return nil, errors.New("a bucket object is not a file: analyse it with Analyze")
	}
	root, err := os.OpenRoot(f.Dir)
	if err != nil {
		return nil, fmt.Errorf("trace directory %s: %w", f.Dir, err)
	}
	defer root.Close()
	rel, err := filepath.Rel(f.Dir, f.Abs)
	if err != nil || !inside(f.Dir, f.Abs) {
		return nil, outsideError("it resolves outside the trace directory")
	}
	file, err := root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("cannot open it inside the trace directory: %w", err)
	}
	fi, err := file.Stat()
	switch {
	case err != nil:
	case !fi.Mode().IsRegular():
		err = errors.New("not a regular file")
	case fi.Size() > s.maxFileBytes:
		err = fmt.Errorf("%d bytes, over jsonData.traceMaxFileBytes (%d)", fi.Size(), s.maxFileBytes)
	}
	if err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}

// Analyze opens a listed file inside its directory (Open) and analyses what it opened.
func (s *Store) Analyze(ctx context.Context, f gputrace.TraceFile) (*gputrace.Result, error) {
	return s.AnalyzeWith(ctx, f, gputrace.Limits{})
}

// AnalyzeWith is Analyze with other limits: the timeline, the critical path.
func (s *Store) AnalyzeWith(ctx context.Context, f gputrace.TraceFile, l gputrace.Limits) (*gputrace.Result, error) {
	if f.BucketName != "" {
		b := s.bucket(f.BucketName)
		if b == nil {
			return nil, fmt.Errorf("no bucket named %q in the data source settings (jsonData.kernelBuckets)", f.BucketName)
		}
		return b.analyze(ctx, f, s.maxFileBytes, l)
	}
	file, err := s.Open(f)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return AnalyzeOpened(ctx, file, f.Abs, l, gputrace.AnalysisOptions{})
}

// TracesOf answers the kernels query: one chosen file (file, relative to a trace directory), or
// else the traces of a request (FindByTraceID), each analysed. A file that fails to read keeps
// what was read before the failure and says so in a warning; a request without any trace file
// says so too. An error is the user's: a file outside the directories or that does not exist.
func (s *Store) TracesOf(ctx context.Context, file, traceID string) ([]gputrace.Found, notices.List, error) {
	return s.TracesOfWith(ctx, file, traceID, gputrace.Limits{})
}

// TimelinesOf is TracesOf with each file's timeline (Result.Timeline): the kernels query's
// timeline view.
func (s *Store) TimelinesOf(ctx context.Context, file, traceID string) ([]gputrace.Found, notices.List, error) {
	return s.TracesOfWith(ctx, file, traceID, gputrace.Limits{Timeline: true})
}

// TracesOfWith is TracesOf with other limits: the timeline, the critical path.
func (s *Store) TracesOfWith(ctx context.Context, file, traceID string, l gputrace.Limits) ([]gputrace.Found, notices.List, error) {
	var (
		files  []gputrace.Found
		missed notices.List
	)
	if file != "" {
		f, err := s.resolve(ctx, file)
		if err != nil {
			return nil, nil, gputrace.ChosenFileError(err)
		}
		files = []gputrace.Found{{File: f}}
	} else {
		files, missed = s.FindByTraceID(ctx, traceID)
	}
	s.analyzeAll(ctx, files, l)
	read := 0
	for _, f := range files {
		switch {
		case f.Err != nil && f.Result != nil:
			missed.Warnf("%s: %v (figures cover what was read before it)", f.File.Rel, f.Err)
		case f.Err != nil:
			missed.Warnf("%s: %v (nothing of it was read)", f.File.Rel, f.Err)
		}
		if f.Result != nil {
			read++
		}
	}
	if read == 0 && traceID != "" {
		missed.Warnf("no GPU kernel trace found for trace %s in the trace %s", traceID, s.where())
	}
	return files, missed, nil
}

// where says where traces are looked for, in a notice.
func (s *Store) where() string {
	switch {
	case len(s.buckets) == 0:
		return "directories"
	case len(s.dirs) == 0:
		return "buckets"
	}
	return "directories and buckets"
}

// FilesOf lists the trace files, most recent first, or with a trace ID only that request's,
// each naming the trace IDs it holds (read inside for the files found by content): the editor's
// file picker. Never nil, nor any file's TraceIDs, so JSON answers [] and not null.
func (s *Store) FilesOf(ctx context.Context, traceID string) ([]gputrace.TraceFile, notices.List) {
	var (
		files  []gputrace.TraceFile
		missed notices.List
	)
	if traceID == "" {
		files, missed = s.List(ctx)
	} else {
		var found []gputrace.Found
		found, missed = s.FindByTraceID(ctx, traceID)
		for _, f := range found {
			if f.Result != nil {
				f.File.TraceIDs = nil
				for _, t := range f.Result.TraceIDs {
					f.File.TraceIDs = append(f.File.TraceIDs, t.ID)
				}
			}
			files = append(files, f.File)
		}
	}
	if files == nil {
		files = []gputrace.TraceFile{}
	}
	for i := range files {
		if files[i].TraceIDs == nil {
			files[i].TraceIDs = []string{}
		}
	}
	return files, missed
}
