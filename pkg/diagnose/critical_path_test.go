package diagnose

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// pathText prints the segments as "op from-to" in ms from t0.
func pathText(t *models.Trace, segs []PathSegment) string {
	var parts []string
	var sum time.Duration
	for _, s := range segs {
		parts = append(parts, fmt.Sprintf("%s %d-%d", t.Spans[s.Span].Operation, s.From.Sub(t0).Milliseconds(), s.To.Sub(t0).Milliseconds()))
		sum += s.Duration()
	}
	return strings.Join(parts, ", ") + fmt.Sprintf(" (%d ms)", sum.Milliseconds())
}

func TestCriticalPathFollowsWhatTheEndWaitedFor(t *testing.T) {
	cases := []struct {
		name  string
		spans []models.Span
		want  string
	}{
		{"sequential calls", []models.Span{
			jspan("r", "", "api", "root", 0, 100),
			jspan("a", "r", "db", "query", 10, 30),
			jspan("b", "r", "model", "predict", 50, 40),
		}, "root 0-10, query 10-40, root 40-50, predict 50-90, root 90-100 (100 ms)"},
		// Parallel calls: the one that ended last is on the path; the other ran beside it.
		{"parallel calls", []models.Span{
			jspan("r", "", "api", "root", 0, 100),
			jspan("a", "r", "db", "query", 5, 45),
			jspan("b", "r", "model", "predict", 10, 60),
		}, "root 0-10, predict 10-70, root 70-100 (100 ms)"},
		// Nested: the path goes down to the deepest span doing the work.
		{"nested", []models.Span{
			jspan("r", "", "api", "root", 0, 100),
			jspan("a", "r", "detector", "GET /detect", 20, 60),
			jspan("b", "a", "detector", "model.predict", 25, 50),
		}, "root 0-20, GET /detect 20-25, model.predict 25-75, GET /detect 75-80, root 80-100 (100 ms)"},
		// An async child outliving its parent counts only inside it; one starting before it too.
		{"clipped children", []models.Span{
			jspan("r", "", "api", "root", 0, 100),
			jspan("a", "r", "queue", "publish", 80, 500),
			jspan("b", "r", "cache", "warm", -20, 30),
		}, "warm 0-10, root 10-80, publish 80-100 (100 ms)"},
		{"no children", []models.Span{jspan("r", "", "api", "root", 0, 42)}, "root 0-42 (42 ms)"},
	}
	for _, c := range cases {
		tr := &models.Trace{Spans: c.spans}
		if got := pathText(tr, CriticalPath(tr, models.RequestRoot(tr))); got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

func TestCriticalPathSurvivesCyclesAndPicksTheLongestRoot(t *testing.T) {
	spans := []models.Span{
		jspan("x", "y", "svc", "x", 0, 10), // x and y are each other's parent: no root among them
		jspan("y", "x", "svc", "y", 2, 5),
		jspan("r", "", "api", "short root", 0, 20),
		jspan("o", "missing", "api", "orphan", 0, 50), // its parent never arrived: a root
	}
	tr := &models.Trace{Spans: spans}
	root := models.RequestRoot(tr)
	if root != 3 {
		t.Fatalf("root %d, want the orphan (the longest root)", root)
	}
	if got := pathText(tr, CriticalPath(tr, root)); got != "orphan 0-50 (50 ms)" {
		t.Errorf("path %s", got)
	}
	// Walking into a cycle ends it rather than looping.
	if got := pathText(tr, CriticalPath(tr, 0)); got != "x 0-2, y 2-7, x 7-10 (10 ms)" {
		t.Errorf("cycle: %s", got)
	}
	if CriticalPath(tr, -1) != nil || models.RequestRoot(&models.Trace{}) != -1 {
		t.Error("no root gave a path")
	}
}
