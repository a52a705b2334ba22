package frames

import (
	"encoding/json"
	"maps"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
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
//
// Each row's cause links to what shows its evidence (the hidden link field): a CPU cause to its
// span profile (this data source's profile query; so does host work between kernels, whose CPU it
// shows), a cause read from the request's kernel traces, when other requests' traces are there to
// compare with, to the kernels diff of the request against its service's recent requests (this
// data source's kernels query, view diff), a GPU cause to the GPU dashboard at the span's
// time, the lever to the GPU dashboard over the range, any other to its span in the trace.
//
// The first cause's row also holds the answer in one line (the hidden answer field, null on the
// other rows) for a stat panel: the request's duration, the cause with the time and share it
// explains, and what to do (Answer).
func TraceVerdict(traceID string, causes []diagnose.Cause, lever *correlate.Lever, profileTypeID string, links TraceLinks) *data.Frame {
	n := len(causes)
	if lever != nil {
		n++
	}
	rank := make([]int64, n)
	title, kind, service, evidence, action, caveat, spanIDs, traceIDs := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	ms, share, link, hot := make([]*float64, n), make([]*float64, n), make([]string, n), make([]string, n)
	answer := make([]*string, n)
	if line := Answer(causes); line != "" {
		answer[0] = &line
	}
	for i, c := range causes {
		link[i], hot[i] = causeLink(traceID, c, profileTypeID, links), c.HotFunction
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
		if links.GPUDashboardUID != "" {
			link[i] = gpuDashboardURL(links.GPUDashboardUID, "", "", lever.Start, lever.End)
		}
	}
	f := data.NewFrame(VerdictFrameName,
		data.NewField("rank", nil, rank).SetConfig(&data.FieldConfig{DisplayNameFromDS: "#"}),
		data.NewField("cause", nil, title).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Cause",
			Links: []data.DataLink{{Title: "Show the evidence", URL: "${__data.fields." + fieldLink + "}"}}}),
		data.NewField("explains", nil, ms).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Explains", Unit: "ms"}),
		data.NewField("share", nil, share).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Share of the request", Unit: "percentunit"}),
		data.NewField("evidence", nil, evidence).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Evidence"}),
		data.NewField("action", nil, action).SetConfig(&data.FieldConfig{DisplayNameFromDS: "What to do"}),
		data.NewField("caveat", nil, caveat).SetConfig(&data.FieldConfig{DisplayNameFromDS: "How sure"}),
		data.NewField("kind", nil, kind),
		data.NewField("service", nil, service),
		data.NewField(fieldSpanID, nil, spanIDs).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Span ID", Links: spanLinks(links)}),
		data.NewField(fieldTraceID, nil, traceIDs),
		data.NewField(fieldLink, nil, link).SetConfig(&data.FieldConfig{Custom: map[string]any{"hidden": true}}),
		// For programs reading the answer (the evidence says it in words).
		data.NewField("hotFunction", nil, hot).SetConfig(&data.FieldConfig{Custom: map[string]any{"hidden": true}}),
		// For a stat panel (the table shows the same in its columns).
		data.NewField(fieldAnswer, nil, answer).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Answer", Custom: map[string]any{"hidden": true}}),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}

// fieldLink holds each verdict row's evidence link (a Grafana URL, relative to its root).
const fieldLink = "link"

// fieldAnswer holds the answer in one line, on the first cause's row.
const fieldAnswer = "answer"

// Answer is the verdict in one line, as a person reads it first: the request's duration, its
// first cause with the time and share it explains (and its hot function), and what to do:
//
//	1.1 s request: CPU in nemotron-backend (db_query), 850 ms (77.3%), hot function main.query — CPU work in the service: …
//
// The request's duration is the first cause's time over its share. "" without a cause.
func Answer(causes []diagnose.Cause) string {
	if len(causes) == 0 {
		return ""
	}
	c := causes[0]
	var b strings.Builder
	if c.Share > 0 {
		b.WriteString(formatDuration(time.Duration(float64(c.Explains)/c.Share)) + " request: ")
	}
	b.WriteString(c.Title + ", " + formatDuration(c.Explains))
	if c.Share > 0 {
		b.WriteString(" (" + strconv.FormatFloat(100*c.Share, 'g', 3, 64) + "%)")
	}
	switch {
	case c.OwnFunction != "" && c.HotFunction != "":
		// Where to change the code first; the library frame it spends its time in after.
		b.WriteString(", in " + c.OwnFunction + " (hot function " + c.HotFunction + ")")
	case c.HotFunction != "":
		b.WriteString(", hot function " + c.HotFunction)
	}
	switch {
	case c.Action != "":
		b.WriteString(" — " + c.Action)
	case c.Caveat != "":
		b.WriteString(" — " + c.Caveat)
	}
	return b.String()
}

// formatDuration prints a duration to three significant digits in the unit Grafana's ms unit
// picks: "539 ms", "1.1 s", "12.5 µs".
func formatDuration(d time.Duration) string {
	// Rounded first, so that 999.6 ms reads "1 s", not "1e+03 ms".
	v, _ := strconv.ParseFloat(strconv.FormatFloat(float64(d), 'g', 3, 64), 64)
	for _, u := range []struct {
		ns   float64
		name string
	}{{float64(time.Hour), "h"}, {float64(time.Minute), "min"}, {float64(time.Second), "s"}, {float64(time.Millisecond), "ms"}, {float64(time.Microsecond), "µs"}} {
		if v >= u.ns {
			return strconv.FormatFloat(v/u.ns, 'g', 3, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(v, 'g', 3, 64) + " ns"
}

// causeLink is the URL of what shows a cause's evidence; "" when no link is configured for it.
func causeLink(traceID string, c diagnose.Cause, profileTypeID string, l TraceLinks) string {
	from, to := c.Start.Add(-time.Second), c.End.Add(time.Second)
	switch {
	case (c.Kind == diagnose.CauseCPU || c.Kind == diagnose.CauseHostWork) && c.ProfileID != "" && l.DatasourceUID != "":
		return exploreURL(l.DatasourceUID, map[string]any{
			"queryType":     models.QueryTypeProfile,
			"labelSelector": "{service_name=" + strconv.Quote(c.Service) + "}",
			"profileTypeId": profileTypeID,
			"spanSelector":  []string{c.ProfileID},
		}, from, to, nil)
	case c.KernelDiff && l.DatasourceUID != "":
		// What changed in the request's kernels: against its service's recent requests.
		return exploreURL(l.DatasourceUID, map[string]any{
			"queryType": models.QueryTypeKernels,
			"traceId":   traceID,
			"view":      models.KernelsDiff,
			"baseline":  map[string]any{"recent": models.DefaultKernelBaselineRecent},
		}, from, to, nil)
	case c.GPU != "" && l.GPUDashboardUID != "":
		// A short span's GPU readings are DCGM's around it: show a minute of them.
		mid := c.Start.Add(c.End.Sub(c.Start) / 2)
		return gpuDashboardURL(l.GPUDashboardUID, c.Host, c.GPU, mid.Add(-30*time.Second), mid.Add(30*time.Second))
	case c.SpanID != "" && l.TraceDatasourceUID != "":
		q := map[string]any{"query": traceID}
		if l.TraceDatasourceType == models.TraceDatasourceTempo {
			q["queryType"] = "traceql"
		}
		return exploreURL(l.TraceDatasourceUID, q, from, to, map[string]any{"trace": map[string]any{"spanId": c.SpanID}})
	}
	return ""
}

// exploreURL opens one query in Explore, as Grafana writes its own links (schemaVersion 1,
// panes as JSON).
func exploreURL(datasourceUID string, query map[string]any, from, to time.Time, panelsState map[string]any) string {
	q := maps.Clone(query)
	q["refId"], q["datasource"] = "A", map[string]any{"uid": datasourceUID}
	pane := map[string]any{
		"datasource": datasourceUID,
		"queries":    []any{q},
		"range":      map[string]any{"from": strconv.FormatInt(from.UnixMilli(), 10), "to": strconv.FormatInt(to.UnixMilli(), 10)},
	}
	if panelsState != nil {
		pane["panelsState"] = panelsState
	}
	panes, _ := json.Marshal(map[string]any{"evidence": pane}) // maps of strings: cannot fail
	return "/explore?schemaVersion=1&panes=" + url.QueryEscape(string(panes))
}

// gpuDashboardURL opens the GPU dashboard on one GPU (or every GPU) over [from, to].
func gpuDashboardURL(uid, host, gpu string, from, to time.Time) string {
	v := url.Values{"from": {strconv.FormatInt(from.UnixMilli(), 10)}, "to": {strconv.FormatInt(to.UnixMilli(), 10)}}
	if host != "" {
		v.Set("var-host", host)
	}
	if gpu != "" {
		v.Set("var-gpu", gpu)
	}
	return "/d/" + url.PathEscape(uid) + "?" + v.Encode()
}
