package gputrace

import (
	"context"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/nsys"
)

// analyzeFile reads a trace file with its format's reader (by name, as the store tells them)
// and analyses it.
func analyzeFile(path string) (*Result, error) { return analyzeFileWith(path, Limits{}) }

// analyzeFileWith is analyzeFile with other limits: the timeline, the critical path.
func analyzeFileWith(path string, l Limits) (*Result, error) {
	c := NewCollector(l)
	var err error
	if lower := strings.ToLower(path); strings.HasSuffix(lower, ".sqlite") || strings.HasSuffix(lower, ".db") {
		err = nsys.Read(context.Background(), path, c)
	} else {
		err = kineto.ReadFile(path, c)
	}
	return c.Result(AnalysisOptions{}), err
}
