package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
)

// tailOptions say which endpoint's tail to explain and how it is chosen.
type tailOptions struct {
	service, operation string
	percentile         float64 // 0: the plugin's default (95)
	maxTraces          int     // 0: the plugin's default (20)
	rows, width        int
}

// parseTailArgs reads "SERVICE OPERATION [PERCENTILE]".
func parseTailArgs(args []string) (tailOptions, error) {
	if len(args) < 2 || len(args) > 3 {
		return tailOptions{}, errors.New(`tail needs a service and an operation, and may take a percentile: tail api-gateway "POST /v1/chat" 99`)
	}
	o := tailOptions{service: args[0], operation: args[1]}
	if len(args) == 3 {
		p, err := strconv.ParseFloat(args[2], 64)
		if err != nil || p <= 0 || p >= 100 {
			return tailOptions{}, fmt.Errorf("the percentile %q is not a number above 0 and below 100", args[2])
		}
		o.percentile = p
	}
	return o, nil
}

// runTail asks the tail query and prints what its dashboard row shows: the answer, the causes
// ranked by the time they add with the median comparison, what the answer rests on, and the
// requests diagnosed.
func runTail(ctx context.Context, w io.Writer, ask asker, o tailOptions) error {
	model := map[string]any{"queryType": "tail", "service": o.service, "operation": o.operation}
	if o.percentile > 0 {
		model["percentile"] = o.percentile
	}
	if o.maxTraces > 0 {
		model["maxTraces"] = o.maxTraces
	}
	fs, err := ask(ctx, model)
	if err != nil {
		return err
	}
	var summary, causes, requests *data.Frame
	var notices []data.Notice
	for _, f := range fs {
		switch f.Name {
		case frames.TailSummaryFrameName:
			summary = f
		case frames.TailCausesFrameName:
			causes = f
		case frames.TailRequestsFrameName:
			requests = f
		}
		if f.Meta != nil {
			notices = append(notices, f.Meta.Notices...)
		}
	}
	if summary != nil && summary.Rows() > 0 {
		answer, _ := summary.FieldByName("answer")
		fmt.Fprintln(w, wrap("", fmt.Sprintf("Why %s %s is slow now: %s", o.service, o.operation, cell(answer, 0)), o.width, "  "))
	}
	for _, n := range notices {
		label := "how sure: "
		if n.Severity == data.NoticeSeverityWarning || n.Severity == data.NoticeSeverityError {
			label = "note: "
		}
		fmt.Fprintln(w, wrap(label, n.Text, o.width, "  "))
	}
	if causes != nil && causes.Rows() > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Causes, by the time each adds to the tail:")
		frameTable(causes, o.rows, []string{"rank", "cause", "share", "atMedian", "inTail", "requests", "exampleTraceID"}, nil).write(w, o.width)
	}
	if requests != nil {
		fmt.Fprintln(w)
		printFrameTable(w, requests, o.rows, o.width, []string{"group", "traceID", "duration", "topCause", "topCauseMs", "why"})
	}
	return nil
}
