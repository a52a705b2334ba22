package gputrace

import (
	"context"
	"os"
)

// analyzeFile opens a trace by path and analyses it as the store does (AnalyzeOpened).
func analyzeFile(path string) (*Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return AnalyzeOpened(context.Background(), f, path, Limits{}, AnalysisOptions{})
}
