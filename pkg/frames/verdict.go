package frames

import (
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
)

// VerdictFrameName names the trace query's ranked causes.
const VerdictFrameName = "verdict"

// LeverKind is the kind of the verdict's runbook-002 row.
const LeverKind = "lever"

// TraceVerdict is the causes of the request's latency (correlate.Verdict), ranked by the time
// each explains: one row per cause with its share of the request, the evidence and where it comes
// from, the recommended action, and what limits the conclusion. The span ID opens the span that
// holds most of the cause in the trace data source. Runbook 002's lever for the request's service
// (when there is one) is the last row, kind "lever", explaining no time of its own (null).
func TraceVerdict(traceID string, causes []correlate.Cause, lever *correlate.Lever, links TraceLinks) *data.Frame {
	n := len(causes)
	if lever != nil {
		n++
	}
	rank := make([]int64, n)
	title, kind, service, evidence, action, caveat, spanIDs, traceIDs := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ms, share := make([]*float64, n), make([]*float64, n)
	for i, c := range causes {
		rank[i] = int64(i + 1)
		title[i], kind[i], service[i], action[i], caveat[i], spanIDs[i], traceIDs[i] = c.Title, c.Kind, c.Service, c.Action, c.Caveat, c.SpanID, traceID
		evidence[i] = strings.Join(c.Evidence, "; ")
		explains, sh := float64(c.Explains)/float64(time.Millisecond), c.Share
		ms[i], share[i] = &explains, &sh
	}
	if lever != nil {
		i := n - 1
		rank[i], kind[i], service[i], traceIDs[i] = int64(n), LeverKind, lever.Service, traceID
		title[i] = "Runbook 002 lever for " + lever.Service + " over the panel's range: " + lever.Name
		evidence[i] = strings.Join(lever.Answers, "; ")
		action[i] = lever.Action
		if len(lever.Unknown) > 0 {
			caveat[i] = "unknown: " + strings.Join(lever.Unknown, "; ")
		}
	}
	f := data.NewFrame(VerdictFrameName,
		data.NewField("rank", nil, rank).SetConfig(&data.FieldConfig{DisplayNameFromDS: "#"}),
		data.NewField("cause", nil, title).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Cause"}),
		data.NewField("explains", nil, ms).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Explains", Unit: "ms"}),
		data.NewField("share", nil, share).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Share of the request", Unit: "percentunit"}),
		data.NewField("evidence", nil, evidence).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Evidence"}),
		data.NewField("action", nil, action).SetConfig(&data.FieldConfig{DisplayNameFromDS: "What to do"}),
		data.NewField("caveat", nil, caveat).SetConfig(&data.FieldConfig{DisplayNameFromDS: "How sure"}),
		data.NewField("kind", nil, kind),
		data.NewField("service", nil, service),
		data.NewField(fieldSpanID, nil, spanIDs).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Span ID", Links: spanLinks(links)}),
		data.NewField(fieldTraceID, nil, traceIDs),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}
