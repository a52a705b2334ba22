package models

import (
	"strings"
	"testing"
)

func TestParseGPULocalQuery(t *testing.T) {
	for raw, want := range map[string]string{`{}`: "devices", `{"view":"xid"}`: "xid", `{"view":" class "}`: "class", `{"view":"processes"}`: "processes", `{"view":"series"}`: "series"} {
		q, err := ParseGPULocalQuery([]byte(raw))
		if err != nil || q.View != want {
			t.Errorf("%s: %+v, %v", raw, q, err)
		}
	}
	if _, err := ParseGPULocalQuery([]byte(`{"view":"nope"}`)); err == nil || !strings.Contains(err.Error(), `must be one of devices, processes, xid, series, class, got "nope"`) {
		t.Errorf("bad view: %v", err)
	}
}
