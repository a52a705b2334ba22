package gputrace

import (
	"context"
	"os"
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

// AnalyzeFile reads one trace (an .sqlite/.db Nsight Systems export, anything else a Chrome
// trace) and analyses it. On a read error the result covers what was read and the error is
// returned beside it.
func AnalyzeFile(ctx context.Context, path string, l Limits, o AnalysisOptions) (*Result, error) {
	c := NewCollector(l)
	var err error
	if lower := strings.ToLower(path); strings.HasSuffix(lower, ".sqlite") || strings.HasSuffix(lower, ".db") {
		err = ReadNsys(ctx, path, c)
	} else {
		err = ReadChromeFile(path, c)
	}
	return c.Result(o), err
}
