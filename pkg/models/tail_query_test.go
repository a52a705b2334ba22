package models

import (
	"testing"
	"time"
)

func TestParseTailQueryDefaults(t *testing.T) {
	q, err := ParseTailQuery([]byte(`{"service":" api ","operation":"POST /chat"}`))
	if err != nil {
		t.Fatal(err)
	}
	if q.Service != "api" || q.Percentile != DefaultTailPercentile || q.MaxTraces != DefaultTailTraces || q.Limit != DefaultSpanTraces || q.ProfileTypeID != DefaultProfileTypeID {
		t.Errorf("%+v", q)
	}
	q, err = ParseTailQuery([]byte(`{"service":"api","operation":"x","slo":true,"maxTraces":5,"parts":["causes"]}`))
	if err != nil || q.Percentile != 0 || !q.SLO || q.MaxTraces != 5 || !q.Wants(TailPartCauses) || q.Wants(TailPartSummary) {
		t.Errorf("%+v, %v", q, err)
	}
	q, err = ParseTailQuery([]byte(`{"service":"api","operation":"x","minDuration":"1.5s"}`))
	if err != nil || q.Percentile != 0 || time.Duration(q.MinDuration) != 1500*time.Millisecond {
		t.Errorf("%+v, %v", q, err)
	}
}
