package models

import (
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

func TestTraceSettings(t *testing.T) {
	s, err := LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(`{}`)})
	if err != nil || s.Traces.Err != nil || len(s.Traces.Directories) != 0 || s.Traces.MaxFileBytes != 2<<30 || s.Traces.MaxFiles != 10000 {
		t.Fatalf("defaults: %+v %v", s.Traces, err)
	}
	s, _ = LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(`{"traceDirectories":["/a/b/", " "],"traceMaxFileBytes":"1000","traceMaxFiles":5}`)})
	if s.Traces.Err != nil || len(s.Traces.Directories) != 1 || s.Traces.Directories[0] != "/a/b" || s.Traces.MaxFileBytes != 1000 || s.Traces.MaxFiles != 5 {
		t.Fatalf("set: %+v", s.Traces)
	}
	for _, bad := range []struct{ json, key string }{
		{`{"traceDirectories":"/a"}`, "traceDirectories"},
		{`{"traceDirectories":["rel/dir"]}`, "traceDirectories item 1"},
		{`{"traceMaxFileBytes":-1}`, "traceMaxFileBytes"},
		{`{"traceMaxFiles":1.5}`, "traceMaxFiles"},
	} {
		s, _ = LoadSettings(backend.DataSourceInstanceSettings{JSONData: []byte(bad.json)})
		if s.Traces.Err == nil || !strings.Contains(s.Traces.Err.Error(), "jsonData."+bad.key) {
			t.Errorf("%s: err %v, want it to name %s", bad.json, s.Traces.Err, bad.key)
		}
	}
}
