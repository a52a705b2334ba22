package models

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestSpanQueryDefaultsAndBounds(t *testing.T) {
	q, err := ParseSpanQuery(QueryTypeSpanProfile, json.RawMessage(`{"service":" api ","operation":"GET /","percentile":95}`))
	if err != nil {
		t.Fatal(err)
	}
	if q.Service != "api" || q.Limit != DefaultSpanTraces || q.ProfileTypeID != DefaultProfileTypeID || q.MaxNodes != DefaultMaxNodes || q.Percentile != 95 {
		t.Errorf("parsed %+v", q)
	}
	q, err = ParseSpanQuery(QueryTypeSpanHeatmap, json.RawMessage(`{"service":"api","minDuration":"20ms","percentile":95}`))
	if err != nil || q.Percentile != 0 || time.Duration(q.MinDuration) != 20*time.Millisecond {
		t.Errorf("a heatmap ignores a percentile left from a span profile: %+v %v", q, err)
	}
}

func TestSpanQueryErrorsSayWhatIsWrong(t *testing.T) {
	for model, want := range map[string]string{
		`{}`:                               `field "service" is required`,
		`{"service":"a","limit":5000}`:     `field "limit" (traces read from the trace search) must be between 1 and 1500, got 5000`,
		`{"service":"a","percentile":100}`: `field "percentile" must be above 0 and below 100`,
		`{"service":"a","percentile":95,"minDuration":5}`: `fields "minDuration" and "percentile" exclude each other`,
		`{"service":"a","minDuration":"soon"}`:            `field "minDuration" must be a duration such as "500ms"`,
		`{"service":"a\nb"}`:                              `field "service" must be a single line`,
		`{"service":"a","profileTypeId":"cpu"}`:           `field "profileTypeId" must have the form name:sample_type:sample_unit:period_type:period_unit`,
	} {
		_, err := ParseSpanQuery(QueryTypeSpanProfile, json.RawMessage(model))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", model, err, want)
		}
	}
}

func TestProfileIDIsASpanIDOrNothing(t *testing.T) {
	for v, want := range map[string][2]any{
		"":                 {"", false},
		"00f067aa0ba902b7": {"00f067aa0ba902b7", false},
		"00F067AA0BA902B7": {"00F067AA0BA902B7", false},
		"44249":            {"", true}, // a number a store made of it
		"/detect":          {"", true},
		"00f067aa0ba902bz": {"", true},
	} {
		id, bad := Span{Attributes: map[string]string{ProfileIDAttribute: v}}.ProfileID()
		if id != want[0] || bad != want[1] {
			t.Errorf("%q: %q %v, want %q %v", v, id, bad, want[0], want[1])
		}
	}
}
