package models

import (
	"reflect"
	"strings"
	"testing"
)

const diffTarget = "4bf92f3577b34da6a3ce929d0e0e4736"

func TestKernelsQueryViews(t *testing.T) {
	for raw, want := range map[string]KernelsQuery{
		`{"traceId":"` + diffTarget + `"}`:                                                {TraceID: diffTarget, View: KernelsSummary},
		`{"traceId":"` + diffTarget + `","view":" summary "}`:                             {TraceID: diffTarget, View: KernelsSummary},
		`{"traceId":"` + diffTarget + `","view":"diff"}`:                                  {TraceID: diffTarget, View: KernelsDiff, Baseline: &KernelBaseline{Recent: DefaultKernelBaselineRecent}},
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":null}`:                  {TraceID: diffTarget, View: KernelsDiff, Baseline: &KernelBaseline{Recent: DefaultKernelBaselineRecent}},
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{}}`:                    {TraceID: diffTarget, View: KernelsDiff, Baseline: &KernelBaseline{Recent: DefaultKernelBaselineRecent}},
		`{"file":"a/b.json","view":"diff","baseline":{"recent":3}}`:                       {File: "a/b.json", View: KernelsDiff, Baseline: &KernelBaseline{Recent: 3}},
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"match":" infer_* "}}`: {TraceID: diffTarget, View: KernelsDiff, Baseline: &KernelBaseline{Recent: DefaultKernelBaselineRecent, Match: "infer_*"}},
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"recent":100,"match":"bucket:fleet/infer/*/infer_*"}}`: {TraceID: diffTarget, View: KernelsDiff,
			Baseline: &KernelBaseline{Recent: 100, Match: "bucket:fleet/infer/*/infer_*"}},
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"traceId":"B3CE929D0E0E4736"}}`: {TraceID: diffTarget, View: KernelsDiff,
			Baseline: &KernelBaseline{TraceID: "0000000000000000b3ce929d0e0e4736"}},
		// A profile diff's side left by switching the query type is not read outside the diff view.
		`{"traceId":"` + diffTarget + `","baseline":{"from":"now-1h","traceId":"zz"}}`: {TraceID: diffTarget, View: KernelsSummary},
	} {
		got, err := ParseKernelsQuery([]byte(raw))
		if err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("%s:\n got %+v (baseline %+v)\nwant %+v (baseline %+v)", raw, *got, got.Baseline, want, want.Baseline)
		}
	}
}

func TestKernelsQueryDiffErrorsNameTheField(t *testing.T) {
	for raw, want := range map[string]string{
		`{"traceId":"` + diffTarget + `","view":"flame"}`:                                                        `field "view" must be one of summary, launches, criticalPath, timeline, diff, got "flame"`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":[1]}`:                                          `field "baseline" must be an object: {"traceId": "<another request>"} or {"recent": N, "match": "<glob>"}, got [1]`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":"x"}`:                                          `field "baseline" must be an object`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"recent":0}}`:                                 `field "baseline.recent" must be a whole number from 1 to 100 (the most recent requests merged into the baseline), got 0`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"recent":101}}`:                               `field "baseline.recent" must be a whole number from 1 to 100`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"recent":2.5}}`:                               `field "baseline.recent" must be a whole number from 1 to 100 (the most recent requests merged into the baseline), got 2.5`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"recent":"10"}}`:                              `field "baseline.recent" must be a whole number`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"match":"infer_[a"}}`:                         `field "baseline.match" must be a glob on the trace file's reference such as infer_* or infer/*/infer_* (* ? [a-z] and \ as in path.Match; a [ must be closed), got "infer_[a"`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"match":7}}`:                                  `field "baseline.match" must be a string, got 7`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"match":"` + strings.Repeat("x", 257) + `"}}`: `(at most 256 characters)`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"traceId":"xyz"}}`:                            `field "baseline.traceId" must be a trace ID of 32 hex digits (or 16), without dashes, got "xyz"`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"traceId":"` + diffTarget + `"}}`:             `field "baseline.traceId" must be another request than "traceId"`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"traceId":"a3ce929d0e0e4736"}}`:               `field "baseline.traceId" must be another request than "traceId"`,
		`{"traceId":"` + diffTarget + `","view":"diff","baseline":{"traceId":"a3ce929d0e0e4737","recent":3}}`:    `field "baseline" takes "traceId" (another request) or "recent" and "match" (the most recent requests), not both`,
		`{"view":"diff","baseline":{"recent":3}}`:                                                                `set "traceId" (the request's trace ID) or "file"`,
	} {
		_, err := ParseKernelsQuery([]byte(raw))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", raw, err, want)
		}
	}
}

func TestKernelsBaselineFieldWarnings(t *testing.T) {
	got := FieldWarnings(QueryTypeKernels, []byte(`{"traceId":"`+diffTarget+`","view":"diff","baseline":{"recnet":3,"from":"now-1h","bogus":1}}`))
	want := []string{
		`unknown field "baseline.bogus" was ignored: a kernels query reads baseline.traceId, baseline.recent, baseline.match`,
		`unknown field "baseline.recnet" was ignored: did you mean "baseline.recent"?`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("warnings %q, want %q", got, want)
	}
	// A profile diff passes over a kernels baseline's fields left by switching the type.
	if got := FieldWarnings(QueryTypeDiff, []byte(`{"baseline":{"recent":3,"match":"x","form":"now-1h"}}`)); len(got) != 1 || !strings.Contains(got[0], `"baseline.form"`) {
		t.Errorf("profile diff warnings %q", got)
	}
}
