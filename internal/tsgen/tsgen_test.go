package tsgen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The editors import the committed file, so a query type, catalogue or threshold change that is
// not regenerated would ship editors that offer, default or range-check differently from the
// backend.
func TestCommittedFilesAreCurrent(t *testing.T) {
	files, err := Files()
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", path))
		if err != nil {
			t.Errorf("%s is missing: run %s (%v)", path, Command, err)
			continue
		}
		if string(got) != string(want) {
			t.Errorf("%s is stale: run %s\n%s", path, Command, firstDifference(string(got), string(want)))
		}
	}
}

// firstDifference shows the first line that differs, so the failure says what changed.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:", i+1) + "\n  committed: " + gl + "\n  generated: " + wl
		}
	}
	return ""
}

// An empty list (a computed catalogue entry's sources) is [], which the editors map over; null
// would throw there.
func TestEmptyListsAreWrittenAsLists(t *testing.T) {
	ts, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(ts), "null") {
		t.Errorf("the generated file holds null:\n%s", ts)
	}
	if got, err := (object{{"a", list(nil)}, {"b", "<&>"}}).MarshalJSON(); err != nil || string(got) != `{"a":[],"b":"<&>"}` {
		t.Errorf("object = %s, %v", got, err)
	}
}
