package models

import (
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

func TestTraceSettings(t *testing.T) {
	s, err := LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(`{}`)})
	if err != nil || s.Kernels.Err != nil || len(s.Kernels.Directories) != 0 || s.Kernels.MaxFileBytes != 2<<30 || s.Kernels.MaxFiles != 10000 {
		t.Fatalf("defaults: %+v %v", s.Kernels, err)
	}
	s, _ = LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(`{"traceDirectories":["/a/b/", " "],"traceMaxFileBytes":"1000","traceMaxFiles":5}`)})
	if s.Kernels.Err != nil || len(s.Kernels.Directories) != 1 || s.Kernels.Directories[0] != "/a/b" || s.Kernels.MaxFileBytes != 1000 || s.Kernels.MaxFiles != 5 {
		t.Fatalf("set: %+v", s.Kernels)
	}
	for _, bad := range []struct{ json, key string }{
		{`{"traceDirectories":"/a"}`, "traceDirectories"},
		{`{"traceDirectories":["rel/dir"]}`, "traceDirectories item 1"},
		{`{"traceMaxFileBytes":-1}`, "traceMaxFileBytes"},
		{`{"traceMaxFiles":1.5}`, "traceMaxFiles"},
	} {
		s, _ = LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(bad.json)})
		if s.Kernels.Err == nil || !strings.Contains(s.Kernels.Err.Error(), "jsonData."+bad.key) {
			t.Errorf("%s: err %v, want it to name %s", bad.json, s.Kernels.Err, bad.key)
		}
	}
}
