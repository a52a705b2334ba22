package tracestore

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/nsys"
)

// ReadChromeFile reads a Chrome trace file, noting the trace IDs in its name.
func ReadChromeFile(path string, c *gputrace.Collector) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c.AddFileName(path)
	return kineto.Read(f, c)
}

// AnalyzeOpened analyses a trace the caller has already opened and checked; name (the file's
// path) says its kind and carries the trace IDs of its name. Nothing is opened by name again
// where it can be helped: an Nsight Systems export is read by SQLite, which opens files by name,
// so on Linux it is given /proc/self/fd/N, the very file f, and a path swapped after the
// caller's checks (a symlink put in its place) is never read.
func AnalyzeOpened(ctx context.Context, f *os.File, name string, l gputrace.Limits, o gputrace.AnalysisOptions) (*gputrace.Result, error) {
	c := gputrace.NewCollector(l)
	c.AddFileName(name)
	var err error
	if isNsys(name) {
		path := name // elsewhere SQLite opens the path the caller checked
		if runtime.GOOS == "linux" {
			if self := fmt.Sprintf("/proc/self/fd/%d", f.Fd()); fileExists(self) {
				path = self
			}
		}
		err = nsys.ReadAt(ctx, path, c)
	} else {
		err = kineto.Read(f, c)
	}
	return c.Result(o), err
}

func isNsys(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasSuffix(lower, ".sqlite") || strings.HasSuffix(lower, ".db")
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
