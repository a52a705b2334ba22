package models

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestParseProfileQueryFillsDefaults(t *testing.T) {
	q, err := ParseProfileQuery([]byte(`{"refId":"A","queryType":"profile"}`))
	if err != nil {
		t.Fatal(err)
	}
	if q.LabelSelector != "{}" || q.ProfileTypeID != DefaultProfileTypeID || q.MaxNodes != DefaultMaxNodes {
		t.Errorf("defaults = %+v", q)
	}
}

func TestParseProfileQueryAcceptsGrafanasTraceToProfileQuery(t *testing.T) {
	// The query Grafana's trace view sends (INTEROP.md §1), with Grafana's own extra fields.
	q, err := ParseProfileQuery([]byte(`{"refId":"span-flamegraph-refId","queryType":"profile",
		"labelSelector":"{service_name=\"nemotron-backend\"}","profileTypeId":"","groupBy":[],
		"spanSelector":["9a1c2b3d4e5f6a7b"],"datasource":{"type":"hsi-profiling-datasource","uid":"hsi"},"intervalMs":1000}`))
	if err != nil {
		t.Fatal(err)
	}
	if q.LabelSelector != `{service_name="nemotron-backend"}` || q.ProfileTypeID != DefaultProfileTypeID {
		t.Errorf("query = %+v", q)
	}
}

func TestParseProfileQuerySaysWhichFieldIsWrong(t *testing.T) {
	cases := map[string]string{
		`{"maxNodes":"many"}`:                                `field "maxNodes" must be a whole number from 1 to 1048576, got string`,
		`{"labelSelector":5}`:                                `field "labelSelector" must be a string, got number`,
		`{"groupBy":"service_name"}`:                         `field "groupBy" must be a list, got string`,
		`{"maxNodes":-1}`:                                    `field "maxNodes" must be from 1 to 1048576 (0 or unset: 16384), got -1`,
		`{"maxNodes":99999999999999}`:                        `field "maxNodes" must be from 1 to 1048576 (0 or unset: 16384), got 99999999999999`,
		`{"maxNodes":1e30}`:                                  `field "maxNodes" must be a whole number from 1 to 1048576, got 1e30`,
		`{"maxNodes":2.5}`:                                   `field "maxNodes" must be a whole number from 1 to 1048576, got 2.5`,
		`{"traceId":"4bf92f35-77b3-4da6-a3ce-929d0e0e4736"}`: `field "traceId" must be a trace ID of 32 hex digits without dashes (as Jaeger and Tempo show it), got "4bf92f35-77b3-4da6-a3ce-929d0e0e4736": use "4bf92f3577b34da6a3ce929d0e0e4736"`,
		`{"profileTypeId":"process_cpu"}`:                    `field "profileTypeId" must have the form name:sample_type:sample_unit:period_type:period_unit`,
		`{"profileTypeId":"a::c:d:e"}`:                       `field "profileTypeId" has an empty part 2`,
		`{"labelSelector": "{a=\"b\"}", `:                    `query JSON is malformed`,
		`[]`:                                                 `query JSON must be an object`,
	}
	for in, want := range cases {
		_, err := ParseProfileQuery([]byte(in))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", in, err, want)
		}
	}
}

// Grafana's Pyroscope fields: its defaults, its list forms, and what they cannot mean together.
func TestGrafanaPyroscopeFieldsAreCheckedAndNormalised(t *testing.T) {
	q, err := ParseProfileQuery(json.RawMessage(`{"profileIdSelector":["", " 7C9E6679-7425-40de-944b-e07fc1f90ae7 "],"traceIdSelector":[],"stackTraceSelector":["main","main.handle"],"annotations":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if q.HeatmapType != HeatmapIndividual || len(q.ProfileIDSelector) != 1 || q.ProfileIDSelector[0] != "7c9e6679-7425-40de-944b-e07fc1f90ae7" || !q.WantsAnnotations() || q.TraceID != "" {
		t.Errorf("parsed %+v", q)
	}
	q, err = ParseProfileQuery(json.RawMessage(`{"traceIdSelector":["4bf92f3577b34da6a3ce929d0e0e4736"]}`))
	if err != nil || q.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || len(q.TraceIDs) != 1 {
		t.Errorf("one trace ID in traceIdSelector is traceId: %+v %v", q, err)
	}
	// Several: the merged profile of those requests, traceId's among them, each once.
	q, err = ParseProfileQuery(json.RawMessage(`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","traceIdSelector":["00F067AA0BA902B700F067AA0BA902B7","","4bf92f3577b34da6a3ce929d0e0e4736"]}`))
	if err != nil || q.TraceID != "" || !slices.Equal(q.TraceIDs, []string{"00f067aa0ba902b700f067aa0ba902b7", "4bf92f3577b34da6a3ce929d0e0e4736"}) {
		t.Errorf("traceId with two in traceIdSelector: %+v %v", q, err)
	}
	q, err = ParseProfileQuery(json.RawMessage(`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","traceIdSelector":["00f067aa0ba902b700f067aa0ba902b7"]}`))
	if err != nil || q.TraceID != "" || len(q.TraceIDs) != 2 {
		t.Errorf("traceId and another in traceIdSelector: %+v %v", q, err)
	}
	many := make([]string, MaxTraceIDs+1)
	for i := range many {
		many[i] = fmt.Sprintf("%032x", i+1)
	}
	tooMany, _ := json.Marshal(map[string]any{"traceIdSelector": many})
	for model, want := range map[string]string{
		`{"heatmapType":"spans"}`:            `field "heatmapType" must be "individual" or "span", got "spans"`,
		`{"profileIdSelector":["7c9e6679"]}`: `field "profileIdSelector" item 1 must be a profile ID (a UUID`,
		`{"stackTraceSelector":["main",""]}`: `field "stackTraceSelector" item 2 must be a function name`,
		string(tooMany):                      `name 21 traces; at most 20`,
		`{"traceIdSelector":["4bf92f3577b34da6a3ce929d0e0e4736","00f067aa0ba902b700f067aa0ba902b7"],"spanSelector":["00f067aa0ba902b7"]}`:                          `field "spanSelector" cannot be combined with "traceId" or "traceIdSelector"`,
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanSelector":["00f067aa0ba902b7"]}`:                                                                       `Pyroscope refuses span and trace selectors together`,
		`{"profileIdSelector":["7c9e6679-7425-40de-944b-e07fc1f90ae7"],"spanSelector":["00f067aa0ba902b7"]}`:                                                       `field "profileIdSelector" excludes "spanSelector", "traceId" and "traceIdSelector"`,
		`{"profileIdSelector":["7c9e6679-7425-40de-944b-e07fc1f90ae7"],"traceIdSelector":["4bf92f3577b34da6a3ce929d0e0e4736","00f067aa0ba902b700f067aa0ba902b7"]}`: `profile IDs already name the profiles`,
		`{"traceIdSelector":["not-hex"]}`: `traceIdSelector item 1`,
	} {
		_, err := ParseProfileQuery(json.RawMessage(model))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", model, err, want)
		}
	}
}

func TestFrameFilterReadsGrafanasFieldAndNamesABadRegex(t *testing.T) {
	q, err := ParseProfileQuery([]byte(`{"profileTypeId":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","labelSelector":"{}","frameFilter":{"includeFunctionNames":["main.work"],"excludeFunctionNameRegexes":["sleep$"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	if q.FrameFilter.Empty() || q.FrameFilter.IncludeFunctionNames[0] != "main.work" || q.FrameFilter.ExcludeFunctionNameRegexes[0] != "sleep$" {
		t.Errorf("read %+v", q.FrameFilter)
	}
	for field, raw := range map[string]string{
		`"frameFilter.includeFunctionNameRegexes" item 2 is not a regular expression`: `{"frameFilter":{"includeFunctionNameRegexes":["^main","["]}}`,
		`"frameFilter.excludeFunctionNameRegexes" item 1 is not a regular expression`: `{"frameFilter":{"excludeFunctionNameRegexes":["("]}}`,
		`field "frameFilter" must be`: `{"frameFilter":["main"]}`,
	} {
		if _, err := ParseProfileQuery([]byte(raw)); err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v", raw, err)
		}
	}
	if warnings := FieldWarnings(QueryTypeMetrics, []byte(`{"frameFilter":{}}`)); len(warnings) != 0 {
		t.Errorf("warnings %v", warnings)
	}
}
