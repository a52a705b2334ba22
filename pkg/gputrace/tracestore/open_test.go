package tracestore

import (
	"context"
	"os"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
)

// analyzeFile opens a trace by path and analyses it as the store does (AnalyzeOpened).
func analyzeFile(path string) (*gputrace.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return AnalyzeOpened(context.Background(), f, path, gputrace.Limits{}, gputrace.AnalysisOptions{})
}
