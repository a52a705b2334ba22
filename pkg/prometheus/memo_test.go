package prometheus

import (
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// checked parses a query text once: a text that parsed is remembered, one that does not parse is
// refused every time and never remembered.
func TestCheckedParsesEachTextOnceAndAlwaysRefusesABadOne(t *testing.T) {
	good := metricSelector("vllm:num_requests_waiting", []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "model_name", "m-"+t.Name())})
	text, err := checked(good)
	if _, remembered := parsedQueries.get(text); err != nil || !remembered {
		t.Fatalf("checked(%s) = %q, %v; remembered %v", good, text, err, remembered)
	}
	// An expression no parser reads: a call without its argument.
	bad := &parser.Call{Func: parser.Functions["increase"]}
	for range 2 {
		if _, err := checked(bad); err == nil || !strings.Contains(err.Error(), "internal error: the plugin built the PromQL") {
			t.Errorf("checked(%s): %v", bad, err)
		}
	}
	if _, remembered := parsedQueries.get(bad.String()); remembered {
		t.Error("a text that does not parse was remembered")
	}
}

// A memo answers what was put, and holds at most its bound: when full, it starts over.
func TestTextMemoIsBounded(t *testing.T) {
	m := newTextMemo(3)
	for i := range 3 {
		m.put(strconv.Itoa(i), "v"+strconv.Itoa(i))
	}
	if v, ok := m.get("2"); !ok || v != "v2" {
		t.Errorf("get(2) = %q, %v", v, ok)
	}
	m.put("3", "v3")
	if _, ok := m.get("0"); ok || len(m.texts) != 1 {
		t.Errorf("past its bound the memo holds %v", m.texts)
	}
	if v, ok := m.get("3"); !ok || v != "v3" {
		t.Errorf("get(3) = %q, %v", v, ok)
	}
}

// The inventory's selector of a list of names is the one metricNamesSelector prints, whether it
// is built or kept from an earlier call, and each list has its own.
func TestNamesMatchIsTheSelectorOfItsNames(t *testing.T) {
	for _, names := range [][]string{
		{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE"},
		{"DCGM_FI_DEV_GPU_UTIL"},
		{"container_cpu_usage_seconds_total", "vllm:num_requests_waiting", "a.b"},
	} {
		sel, err := metricNamesSelector(names, nil)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if got, err := namesMatch(names); err != nil || got != sel.String() {
				t.Errorf("namesMatch(%q) = %q, %v; want %q", names, got, err, sel.String())
			}
		}
	}
}
