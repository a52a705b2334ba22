package models

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseTraceQueryFillsDefaultsAndPadsShortIDs(t *testing.T) {
	q, err := ParseTraceQuery(json.RawMessage(`{"queryType":"trace","traceId":" A3CE929D0E0E4736 "}`))
	if err != nil {
		t.Fatal(err)
	}
	if q.TraceID != "0000000000000000a3ce929d0e0e4736" || q.ProfileTypeID != DefaultProfileTypeID ||
		q.AllocTypeID != "memory:alloc_space:bytes:space:bytes" || q.MaxNodes != DefaultMaxNodes {
		t.Errorf("%+v", q)
	}
}

func TestParseTraceQuerySaysWhichFieldIsWrong(t *testing.T) {
	cases := map[string]string{
		`{"queryType":"trace"}`: `field "traceId" is required`,
		`{"traceId":"xyz"}`:     `field "traceId" must be a trace ID of 32 hex digits (or 16), without dashes, got "xyz"`,
		`{"traceId":"a3ce929d0e0e4736","allocTypeId":"memory:alloc"}`: `field "allocTypeId" must have the form name:sample_type`,
		`{"traceId":"a3ce929d0e0e4736","profileTypeId":"cpu::a:b:c"}`: `field "profileTypeId" must have the form`,
		`{"traceId":"a3ce929d0e0e4736","maxNodes":-1}`:                `field "maxNodes" must be from 1 to 1048576`,
		`{"traceId":42}`: `field "traceId" must be a string, got number`,
		`{"traceId":"a3ce929d0e0e4736","parts":["verdict","why"]}`: `field "parts": unknown part "why": use some of spans, breakdown, verdict, flamegraph`,
		`{"traceId":"a3ce929d0e0e4736","parts":"verdict"}`:         `field "parts" must be`,
	}
	for model, want := range cases {
		if _, err := ParseTraceQuery(json.RawMessage(model)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", model, err, want)
		}
	}
}

func TestTraceQueryPartsPickTheAnswersFrames(t *testing.T) {
	all, err := ParseTraceQuery(json.RawMessage(`{"traceId":"a3ce929d0e0e4736"}`))
	if err != nil {
		t.Fatal(err)
	}
	one, err := ParseTraceQuery(json.RawMessage(`{"traceId":"a3ce929d0e0e4736","parts":["verdict"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range TraceParts {
		if !all.Wants(p) || one.Wants(p) != (p == TracePartVerdict) {
			t.Errorf("part %s: all wants %v, verdict-only wants %v", p, all.Wants(p), one.Wants(p))
		}
	}
}

func TestParseSlowRequestsQueryReadsDurationsBothWays(t *testing.T) {
	for model, want := range map[string]time.Duration{
		`{"minDuration":"1.5s"}`: 1500 * time.Millisecond,
		`{"minDuration":250}`:    250 * time.Millisecond,
		`{"minDuration":"250"}`:  250 * time.Millisecond,
		`{"minDuration":""}`:     0,
		`{}`:                     0,
	} {
		q, err := ParseSlowRequestsQuery(json.RawMessage(model))
		if err != nil {
			t.Errorf("%s: %v", model, err)
			continue
		}
		if time.Duration(q.MinDuration) != want || q.Limit != DefaultSlowTraces {
			t.Errorf("%s: minDuration %v limit %d", model, time.Duration(q.MinDuration), q.Limit)
		}
	}
	q, err := ParseSlowRequestsQuery(json.RawMessage(`{"service":" nemotron-backend ","endpoint":"/api/detect","limit":5}`))
	if err != nil || q.Service != "nemotron-backend" || q.Endpoint != "/api/detect" || q.Limit != 5 {
		t.Errorf("%+v %v", q, err)
	}
}

func TestParseSlowRequestsQuerySaysWhichFieldIsWrong(t *testing.T) {
	cases := map[string]string{
		`{"minDuration":"soon"}`:      `field "minDuration" must be a duration such as "500ms" or "1.5s", got "soon"`,
		`{"minDuration":"-1s"}`:       `field "minDuration" must not be negative`,
		`{"limit":1000}`:              `field "limit" must be between 1 and 500, got 1000`,
		`{"service":"a\nb"}`:          `field "service" must be a single line`,
		`{"endpoint":["a"]}`:          `field "endpoint" must be a string`,
		`{"parts":["latency","p99"]}`: `field "parts": unknown part "p99": use some of latency, traces (empty: all)`,
	}
	for model, want := range cases {
		if _, err := ParseSlowRequestsQuery(json.RawMessage(model)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", model, err, want)
		}
	}
}
