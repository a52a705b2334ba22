package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// tailAnswer is the tail query's answer for an endpoint whose tail queues in its engine.
func tailAnswer() []*data.Frame {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	queue := diagnose.Cause{Kind: diagnose.CauseQueue, Service: "chat-vllm", Title: "queued in chat-vllm (llm_request)", Explains: ms(640),
		Evidence: []string{"chat-vllm waited 640ms in the engine's queue"}, Action: "the engine was full: add replicas"}
	model := diagnose.Cause{Kind: diagnose.CauseModel, Service: "chat-vllm", Title: "the model in chat-vllm (llm_request)", Explains: ms(250)}
	tail := []diagnose.TailRequest{
		{TraceID: "aaaa0000aaaa0000aaaa0000aaaa0001", Duration: ms(900), Causes: []diagnose.Cause{queue, model}},
		{TraceID: "aaaa0000aaaa0000aaaa0000aaaa0002", Duration: ms(1200), Why: "its trace could not be read"},
	}
	median := []diagnose.TailRequest{{TraceID: "bbbb0000bbbb0000bbbb0000bbbb0001", Duration: ms(260), Causes: []diagnose.Cause{model}}}
	d := diagnose.Tail(tail, median, ms(260))
	var l notices.List
	l.Info("The tail: the 12 request(s) of api POST /v1/chat at or over 850ms (p95 of the 240 requests found)")
	return frames.Tail(d, frames.TailFigures{Threshold: ms(850), Over: 12}, l, frames.SlowTraceLinks{}, nil)
}

func TestTailPrintsTheAnswerTheCausesAndTheRequests(t *testing.T) {
	var asked map[string]any
	ask := func(_ context.Context, model map[string]any) ([]*data.Frame, error) {
		asked = model
		return tailAnswer(), nil
	}
	o, err := parseTailArgs([]string{"api", "POST /v1/chat", "99"})
	if err != nil {
		t.Fatal(err)
	}
	o.rows, o.width, o.maxTraces = 20, 160, 30
	var out bytes.Buffer
	if err := runTail(context.Background(), &out, ask, o); err != nil {
		t.Fatal(err)
	}
	if asked["queryType"] != "tail" || asked["service"] != "api" || asked["operation"] != "POST /v1/chat" || asked["percentile"] != 99.0 || asked["maxTraces"] != 30 {
		t.Errorf("asked %v", asked)
	}
	got := out.String()
	t.Log(got)
	for _, want := range []string{
		"Why api POST /v1/chat is slow now: Queued in chat-vllm (llm_request) makes the tail",
		"how sure: The tail: the 12 request(s)",
		"1 request(s) not diagnosed: its trace could not be read",
		"Causes, by the time each adds to the tail:",
		"queued in chat-vllm (llm_request)",
		"aaaa0000aaaa0000aaaa0000aaaa0001",
		"tail requests: 3 rows",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

func TestTailArguments(t *testing.T) {
	for _, args := range [][]string{{"api"}, {"api", "op", "100"}, {"api", "op", "x"}, {"a", "b", "95", "d"}} {
		if _, err := parseTailArgs(args); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
}
