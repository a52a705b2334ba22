package plugin

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// traceDirsOffMessage answers kernels queries while no trace directory is configured.
const traceDirsOffMessage = "GPU kernel traces: jsonData.traceDirectories is not configured for this data source: add a directory under \"GPU kernel traces\" in its settings (jsonData.traceDirectories, a list of absolute paths such as the seeds' PYTORCH_PROFILE_DIR)"

// maxContentScan bounds how many of the most recent files are opened to look for a trace ID
// inside them when none names it in its file name.
const maxContentScan = 20

// kernelFile is one trace file found under a configured directory.
type kernelFile struct {
	Dir      string    `json:"-"` // the configured directory, resolved
	Rel      string    `json:"file"`
	Abs      string    `json:"-"` // resolved path, inside Dir
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	TraceIDs []string  `json:"traceIds"`
}

// isTraceFile says whether a name is a trace file the kernels query reads.
func isTraceFile(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".json.gz") || strings.HasSuffix(n, ".sqlite")
}

// traceDirs explains why the kernels query cannot run, or returns the trace settings.
func (d *Datasource) traceDirs() (models.TraceSettings, error) {
	ts := d.settings.Traces
	if ts.Err != nil {
		return ts, backend.DownstreamError(fmt.Errorf("invalid GPU kernel trace settings: %w", ts.Err))
	}
	if len(ts.Directories) == 0 {
		return ts, backend.DownstreamError(errors.New(traceDirsOffMessage))
	}
	return ts, nil
}

// inside says whether path lies in root (both resolved).
func inside(root, path string) bool {
	rel, err := filepath.Rel(root, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// resolveTraceRoot resolves a configured directory's own symlinks.
func resolveTraceRoot(dir string) (string, error) {
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("trace directory %s: %w", dir, err)
	}
	return root, nil
}

// statInside resolves path and checks it is a regular trace file inside root within the size
// bound.
func statInside(root, path string, maxBytes int64) (string, fs.FileInfo, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", nil, err
	}
	if !inside(root, real) {
		return "", nil, errors.New("it resolves outside the trace directory")
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", nil, err
	}
	if !fi.Mode().IsRegular() {
		return "", nil, errors.New("not a regular file")
	}
	if fi.Size() > maxBytes {
		return "", nil, fmt.Errorf("%d bytes, over jsonData.traceMaxFileBytes (%d)", fi.Size(), maxBytes)
	}
	return real, fi, nil
}

// listKernelFiles walks the configured directories for trace files, most recent first. The
// walk stops after ts.MaxFiles files; symbolic links are followed only to files that resolve
// inside their directory (linked directories are not entered).
func listKernelFiles(ctx context.Context, ts models.TraceSettings) ([]kernelFile, []string) {
	var (
		out     []kernelFile
		notices []string
		seen    int
	)
	for _, dir := range ts.Directories {
		root, err := resolveTraceRoot(dir)
		if err != nil {
			notices = append(notices, err.Error())
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
			if e.IsDir() || !isTraceFile(e.Name()) {
				return nil
			}
			if seen >= ts.MaxFiles {
				notices = append(notices, fmt.Sprintf("more than %d trace files: the rest were not looked at (jsonData.traceMaxFiles)", ts.MaxFiles))
				return filepath.SkipAll
			}
			seen++
			real, fi, err := statInside(root, p, ts.MaxFileBytes)
			if err != nil {
				if e.Type()&fs.ModeSymlink == 0 && !strings.Contains(err.Error(), "outside") {
					notices = append(notices, fmt.Sprintf("%s skipped: %v", filepath.Base(p), err))
				}
				return nil
			}
			rel, _ := filepath.Rel(root, p)
			out = append(out, kernelFile{Dir: root, Rel: filepath.ToSlash(rel), Abs: real, Size: fi.Size(), Modified: fi.ModTime().UTC(), TraceIDs: gputrace.TraceIDsInFileName(p)})
			return nil
		})
		if err != nil && !errors.Is(err, filepath.SkipAll) {
			notices = append(notices, fmt.Sprintf("trace directory %s: %v", dir, err))
		}
		if seen >= ts.MaxFiles {
			break
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Modified.After(out[j].Modified) })
	return out, notices
}

// resolveKernelFile finds a file given relative to one of the configured directories; it must
// resolve inside that directory.
func resolveKernelFile(ts models.TraceSettings, file string) (kernelFile, error) {
	rel, err := models.CleanTraceFile(file)
	if err != nil || rel == "" {
		if err == nil {
			err = errors.New("no file given")
		}
		return kernelFile{}, backend.DownstreamError(err)
	}
	if !isTraceFile(rel) {
		return kernelFile{}, backend.DownstreamError(fmt.Errorf("%s is not a trace file (.json, .json.gz, .pt.trace.json, .sqlite)", rel))
	}
	var last error
	for _, dir := range ts.Directories {
		root, err := resolveTraceRoot(dir)
		if err != nil {
			last = err
			continue
		}
		p := filepath.Join(root, rel)
		if !inside(root, p) {
			return kernelFile{}, backend.DownstreamError(fmt.Errorf("%s is outside the trace directories", rel))
		}
		real, fi, err := statInside(root, p, ts.MaxFileBytes)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return kernelFile{}, backend.DownstreamError(fmt.Errorf("trace file %s: %v", rel, err))
		}
		return kernelFile{Dir: root, Rel: filepath.ToSlash(rel), Abs: real, Size: fi.Size(), Modified: fi.ModTime().UTC(), TraceIDs: gputrace.TraceIDsInFileName(p)}, nil
	}
	if last != nil {
		return kernelFile{}, backend.DownstreamError(fmt.Errorf("trace file %s not found: %v", rel, last))
	}
	return kernelFile{}, backend.DownstreamError(fmt.Errorf("trace file %s not found in the trace directories", rel))
}

// analyzedFile is one trace file and its analysis (Err: a per-file error; Result may then
// cover what was read before it).
type analyzedFile struct {
	File   kernelFile
	Result *gputrace.Result
	Err    error
}

// nameMatches says whether the file name names traceID.
func nameMatches(f kernelFile, traceID string) bool {
	for _, id := range f.TraceIDs {
		if id == traceID || (len(id) == 32 && len(traceID) == 16 && id[16:] == traceID) || (len(id) == 16 && len(traceID) == 32 && traceID[16:] == id) {
			return true
		}
	}
	return false
}

// findKernelFiles finds the traces of a request: by the trace ID in the file name first, else
// by the trace IDs inside the most recent maxContentScan files. Files found by content come back
// analysed.
func findKernelFiles(ctx context.Context, ts models.TraceSettings, traceID string) ([]analyzedFile, []string) {
	files, notices := listKernelFiles(ctx, ts)
	var out []analyzedFile
	for _, f := range files {
		if nameMatches(f, traceID) {
			out = append(out, analyzedFile{File: f})
		}
	}
	if len(out) > 0 {
		return out, notices
	}
	scanned := 0
	for _, f := range files {
		if scanned >= maxContentScan || ctx.Err() != nil {
			break
		}
		if len(f.TraceIDs) > 0 {
			continue // names another request
		}
		scanned++
		res, err := analyzeInside(ctx, f, ts.MaxFileBytes)
		if res != nil && res.Matches(traceID) {
			out = append(out, analyzedFile{File: f, Result: res, Err: err})
		}
	}
	if len(out) == 0 && len(files) > scanned {
		notices = append(notices, fmt.Sprintf("no file name names trace %s and only the %d most recent unnamed files were opened to look inside", traceID, scanned))
	}
	return out, notices
}

// analyze fills in the analysis of each file not yet analysed.
func analyze(ctx context.Context, ts models.TraceSettings, files []analyzedFile) {
	for i := range files {
		if files[i].Result == nil && files[i].Err == nil {
			files[i].Result, files[i].Err = analyzeInside(ctx, files[i].File, ts.MaxFileBytes)
		}
	}
}

// analyzeInside opens a listed file through an os.Root of its trace directory and analyses
// what it opened. The checks made when it was listed (inside, regular, size) are made again on
// the open file: were the file swapped in between for a symlink leading out of the directory,
// the Root refuses to follow it, so nothing outside the directory is ever read.
func analyzeInside(ctx context.Context, f kernelFile, maxBytes int64) (*gputrace.Result, error) {
	root, err := os.OpenRoot(f.Dir)
	if err != nil {
		return nil, fmt.Errorf("trace directory %s: %w", f.Dir, err)
	}
	defer root.Close()
	rel, err := filepath.Rel(f.Dir, f.Abs)
	if err != nil || !inside(f.Dir, f.Abs) {
		return nil, errors.New("it resolves outside the trace directory")
	}
	file, err := root.Open(rel)
	if err != nil {
		return nil, fmt.Errorf("cannot open it inside the trace directory: %w", err)
	}
	defer file.Close()
	fi, err := file.Stat()
	switch {
	case err != nil:
		return nil, err
	case !fi.Mode().IsRegular():
		return nil, errors.New("not a regular file")
	case fi.Size() > maxBytes:
		return nil, fmt.Errorf("%d bytes, over jsonData.traceMaxFileBytes (%d)", fi.Size(), maxBytes)
	}
	return gputrace.AnalyzeOpened(ctx, file, f.Abs, gputrace.Limits{}, gputrace.AnalysisOptions{})
}
