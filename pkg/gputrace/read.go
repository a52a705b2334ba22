package gputrace

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
)

// ReadChromeFile reads a Chrome trace file, noting the trace IDs in its name.
func ReadChromeFile(path string, c *Collector) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	c.AddFileName(path)
	return ReadChrome(f, c)
}

// AnalyzeOpened analyses a trace the caller has already opened and checked; name (the file's
// path) says its kind and carries the trace IDs of its name. Nothing is opened by name again
// where it can be helped: an Nsight Systems export is read by SQLite, which opens files by name,
// so on Linux it is given /proc/self/fd/N, the very file f, and a path swapped after the
// caller's checks (a symlink put in its place) is never read.
func AnalyzeOpened(ctx context.Context, f *os.File, name string, l Limits, o AnalysisOptions) (*Result, error) {
	c := NewCollector(l)
	c.AddFileName(name)
	var err error
	if isNsys(name) {
		path := name // elsewhere SQLite opens the path the caller checked
		if runtime.GOOS == "linux" {
			if self := fmt.Sprintf("/proc/self/fd/%d", f.Fd()); fileExists(self) {
				path = self
			}
		}
		err = readNsysAt(ctx, path, c)
	} else {
		err = ReadChrome(f, c)
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
