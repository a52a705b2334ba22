package models

import (
	"strings"
	"testing"
)

func TestTraceSettings(t *testing.T) {
	s := load(t, `{}`, nil)
	if s.bad.Kernels != nil || len(s.Kernels.Directories) != 0 || s.Kernels.MaxFileBytes != 2<<30 || s.Kernels.MaxFiles != 10000 {
		t.Fatalf("defaults: %+v %v", s.Kernels, s.bad.Kernels)
	}
	s = load(t, `{"traceDirectories":["/a/b/", " "],"traceMaxFileBytes":"1000","traceMaxFiles":5}`, nil)
	if s.bad.Kernels != nil || len(s.Kernels.Directories) != 1 || s.Kernels.Directories[0] != "/a/b" || s.Kernels.MaxFileBytes != 1000 || s.Kernels.MaxFiles != 5 {
		t.Fatalf("set: %+v", s.Kernels)
	}
	for _, bad := range []struct{ json, key string }{
		{`{"traceDirectories":"/a"}`, "traceDirectories"},
		{`{"traceDirectories":["rel/dir"]}`, "traceDirectories item 1"},
		{`{"traceMaxFileBytes":-1}`, "traceMaxFileBytes"},
		{`{"traceMaxFiles":1.5}`, "traceMaxFiles"},
	} {
		s = load(t, bad.json, nil)
		if s.bad.Kernels == nil || !strings.Contains(s.bad.Kernels.Error(), "jsonData."+bad.key) {
			t.Errorf("%s: err %v, want it to name %s", bad.json, s.bad.Kernels, bad.key)
		}
	}
}
