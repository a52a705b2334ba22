package frames

import (
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
)

// VerdictFrameName names the trace query's ranked causes.
const VerdictFrameName = "verdict"

// TraceVerdict is the causes of the request's latency (correlate.Verdict), ranked by the time
// each explains: one row per cause with its share of the request, the evidence and where it comes
// from, the recommended action, and what limits the conclusion. The span ID opens the span that
// holds most of the cause in the trace data source.
func TraceVerdict(traceID string, causes []correlate.Cause, links TraceLinks) *data.Frame {
	n := len(causes)
	rank := make([]int64, n)
	title, kind, service, evidence, action, caveat, spanIDs, traceIDs := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ms, share := make([]float64, n), make([]float64, n)
	for i, c := range causes {
		rank[i] = int64(i + 1)
		title[i], kind[i], service[i], action[i], caveat[i], spanIDs[i], traceIDs[i] = c.Title, c.Kind, c.Service, c.Action, c.Caveat, c.SpanID, traceID
		evidence[i] = strings.Join(c.Evidence, "; ")
		ms[i] = float64(c.Explains) / float64(time.Millisecond)
		share[i] = c.Share
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
