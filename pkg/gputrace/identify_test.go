package gputrace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
)

func TestTraceIdentification(t *testing.T) {
	const (
		inName     = "0af7651916cd43dd8448eb211c80319c"
		inTrace    = "b7ad6b7169203331b7ad6b7169203331"
		inMeta     = "00f067aa0ba902b7"
		inArgs     = "1111111111111111111111111111111a"
		inNotAnID  = "1234567890123456" // decimal: a timestamp, not an ID
		inTooShort = "abc123"
	)
	doc := `{"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "request": {"ids": ["span ` + inMeta + `"]}},
	  "custom": "` + inNotAnID + ` ` + inTooShort + `",
	  "traceEvents": [
	    {"ph": "X", "cat": "user_annotation", "name": "detect", "ts": 1, "dur": 5, "args": {"trace_id": "` + inArgs + `"}}
	  ],
	  "traceName": "host_1234.` + inTrace + `.pt.trace.json"}`
	path := filepath.Join(t.TempDir(), "yolo26_detect_"+inName+".json")
	if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	c := NewCollector(Limits{})
	if err := kineto.ReadFile(path, c); err != nil {
		t.Fatal(err)
	}
	r := c.Result(AnalysisOptions{})
	want := map[string]activity.Source{inName: activity.SourceFileName, inTrace: activity.SourceTraceName, inMeta: activity.SourceMetadata, inArgs: activity.SourceAnnotation}
	if len(r.TraceIDs) != len(want) {
		t.Fatalf("ids %+v", r.TraceIDs)
	}
	for _, id := range r.TraceIDs {
		if want[id.ID] != id.Source {
			t.Errorf("%s from %q, want %q", id.ID, id.Source, want[id.ID])
		}
	}
	// A 16-digit Jaeger ID matches the low half of the 32-digit one.
	if !r.Matches("b7ad6b7169203331") || !r.Matches("ffffffffffffffff"+inMeta) || r.Matches(inNotAnID) {
		t.Error("Matches")
	}
	if len(r.Annotations) != 1 || r.Annotations[0].TraceID != inArgs {
		t.Errorf("annotations %+v", r.Annotations)
	}
}
