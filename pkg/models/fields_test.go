package models

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestFieldWarningsNameWhatWasIgnoredAndTheNearestField(t *testing.T) {
	for _, c := range []struct {
		queryType, model string
		want             []string
	}{
		{QueryTypeProfile, `{"refId":"A","queryType":"profile","labelselector":"{service_name=\"api\"}","datasource":{"uid":"x"}}`,
			[]string{`unknown field "labelselector" was ignored: did you mean "labelSelector"?`}},
		{QueryTypeProfile, `{"profileTypeID":"x","maxNode":5,"spanSelectors":["a"]}`,
			[]string{`unknown field "maxNode" was ignored: did you mean "maxNodes"?`,
				`unknown field "profileTypeID" was ignored: did you mean "profileTypeId"?`,
				`unknown field "spanSelectors" was ignored: did you mean "spanSelector"?`}},
		{QueryTypeDiff, `{"baseline":{"form":"now-2h","labelSelector":"{}"},"comparison":{"trace":"abc"}}`,
			[]string{`unknown field "baseline.form" was ignored: did you mean "baseline.from"?`,
				`unknown field "comparison.trace" was ignored: did you mean "comparison.traceId"?`}},
		{QueryTypeTrace, `{"traceId":"x","colour":"red"}`,
			[]string{`unknown field "colour" was ignored: a trace query reads traceId, profileTypeId, allocTypeId, maxNodes, parts`}},
		// Every field of Grafana's Pyroscope query model, as its editor saves it.
		{QueryTypeBoth, `{"labelSelector":"{}","profileTypeId":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","groupBy":[],"includeExemplars":true,"includeHeatmap":true,"heatmapType":"span","profileIdSelector":[],"stackTraceSelector":["main"],"annotations":true,"traceIdSelector":[],"spanSelector":[],"maxNodes":16384,"limit":10}`, nil},
		{QueryTypeMetrics, `{"includeExamplars":true}`,
			[]string{`unknown field "includeExamplars" was ignored: did you mean "includeExemplars"?`}},
		{QueryTypeGPUClass, `{"host":["a"],"format":"timeline","intervalMs":1000}`,
			[]string{`unknown field "host" was ignored: did you mean "hosts"?`}},
		{QueryTypeKernels, `{"file":"a.json","refId":"B"}`, nil},
		// Left over from the editor's other query types: not a mistake.
		{QueryTypeTrace, `{"traceId":"x","labelSelector":"{}","service":"api","metrics":["sm_active"]}`, nil},
		{QueryTypeKernels, `[1,2]`, nil},
		{"nope", `{"x":1}`, nil},
	} {
		got := FieldWarnings(c.queryType, json.RawMessage(c.model))
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %s:\n got %q\nwant %q", c.queryType, c.model, got, c.want)
		}
	}
}

// The lists of fields follow the query models' JSON tags.
func TestQueryFieldsFollowTheModels(t *testing.T) {
	tags := func(v any) []string {
		var out []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			if name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	for queryType, v := range map[string]any{QueryTypeProfile: ProfileQuery{}, QueryTypeTrace: TraceQuery{}, QueryTypeSlowRequests: SlowRequestsQuery{}} {
		if got := slices.Sorted(slices.Values(queryFields[queryType])); !slices.Equal(got, tags(v)) {
			t.Errorf("%s: fields %v, the model's tags %v", queryType, got, tags(v))
		}
	}
	if got := slices.Sorted(slices.Values(gpuFilterFields)); !slices.Equal(got, tags(GPUFilter{})) {
		t.Errorf("GPU filter fields %v, tags %v", got, tags(GPUFilter{}))
	}
	if got := slices.Sorted(slices.Values(diffSideFields)); !slices.Equal(got, tags(DiffSide{})) {
		t.Errorf("diff side fields %v, tags %v", got, tags(DiffSide{}))
	}
	for _, qt := range QueryTypes {
		if queryFields[qt] == nil {
			t.Errorf("query type %s has no field list", qt)
		}
	}
}
