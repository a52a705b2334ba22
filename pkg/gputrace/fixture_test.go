package gputrace

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
)

const (
	fixtureTraceID = kinetogen.HandCheckedTraceID
	µs             = 1000
)

// writeFixture writes kinetogen's hand-checked trace (kinetogen.WriteHandChecked).
func writeFixture(t testing.TB, old bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := kinetogen.WriteHandChecked(&buf, old); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// readFixture analyses a Kineto trace's bytes.
func readFixture(t testing.TB, data []byte) *Result {
	t.Helper()
	c := NewCollector(Limits{})
	if err := kineto.Read(bytes.NewReader(data), c); err != nil {
		t.Fatal(err)
	}
	return c.Result(AnalysisOptions{})
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func hasNotice(r *Result, sub string) bool {
	for _, n := range r.Notices {
		if strings.Contains(n.Text, sub) {
			return true
		}
	}
	return false
}
