package models

import (
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
)

func TestParseGPUClassQueryDefaults(t *testing.T) {
	q, err := ParseGPUClassQuery([]byte(`{"queryType":"gpuClass","refId":"A"}`))
	if err != nil {
		t.Fatal(err)
	}
	if q.Format != GPUClassFormatAll || q.MinStep != 30*time.Second || !q.Empty() {
		t.Errorf("query %+v", q)
	}
}

func TestParseGPUClassQueryReadsTheFilterAndOptions(t *testing.T) {
	q, err := ParseGPUClassQuery([]byte(`{"queryType":"gpuClass","hosts":[" fixture-node-a ","fixture-node-a"],"gpus":["0","GPU-1234"],
		"models":["Tesla T4"],"pods":["p"],"namespaces":["inference"],"format":"shares","minStep":"15s"}`))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(q.Hosts, ",") != "fixture-node-a" || strings.Join(q.GPUs, ",") != "0,GPU-1234" || q.Models[0] != "Tesla T4" ||
		q.Pods[0] != "p" || q.Namespaces[0] != "inference" || q.Format != GPUClassFormatShares || q.MinStep != 15*time.Second {
		t.Errorf("query %+v", q)
	}
}

func TestParseGPUClassQueryNamesTheField(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"format":"graph"}`, `field "format" must be "all" (the default: timeline, summary and shares), "timeline", "summary" or "shares" (numeric series, for alert rules), got "graph"`},
		{`{"minStep":"500ms"}`, `field "minStep" must be whole seconds of at least 1s, such as "15s" or "1m", got "500ms"`},
		{`{"minStep":"soon"}`, `field "minStep" must be whole seconds`},
		{`{"minStep":30}`, `field "minStep" must be a string, got number`},
		{`{"hosts":"a"}`, `field "hosts" must be a list`},
		{`{"hosts":[""]}`, `field "hosts" item 1 is empty`},
	} {
		_, err := ParseGPUClassQuery([]byte(c.json))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.json, err, c.want)
		}
	}
}

func TestGPUClassQueryClasses(t *testing.T) {
	q, err := ParseGPUClassQuery([]byte(`{"format":"shares","classes":["thermal-throttled"," power-throttled","thermal-throttled"]}`))
	if err != nil || len(q.Classes) != 2 || q.Classes[0] != classify.ThermalThrottled || q.Classes[1] != classify.PowerThrottled {
		t.Fatalf("classes %v, %v", q, err)
	}
	for _, bad := range []string{`{"classes":["hot"]}`, `{"classes":["no data"]}`, `{"classes":"idle"}`} {
		if _, err := ParseGPUClassQuery([]byte(bad)); err == nil || !strings.Contains(err.Error(), `"classes"`) {
			t.Errorf("%s: %v, want an error naming the field", bad, err)
		}
	}
}
