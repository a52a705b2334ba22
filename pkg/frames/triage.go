package frames

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/triage"
)

// Frame names of the triage's views.
const (
	TriageFailuresFrameName = "failures"
	TriageRequestsFrameName = "requests"
	TriageSignalsFrameName  = "signals"
)

// TriageLinks says where the triage's links point.
type TriageLinks struct {
	// GPUDashboardUID opens the GPU dashboard at the failure's GPU and minute.
	GPUDashboardUID string
	// RequestDashboardUID opens a failed request's verdict; TraceDatasourceUID and
	// TraceDatasourceType open it in the trace data source's Explore instead, when set.
	RequestDashboardUID, TraceDatasourceUID, TraceDatasourceType string
}

// gpuLinkWindow is the time around a failure the GPU dashboard opens at.
const gpuLinkWindow = 5 * time.Minute

// Triage is the triage query's frame in the asked view, with the answer's notices.
func Triage(ans *triage.Answer, view string, links TriageLinks) data.Frames {
	var f *data.Frame
	switch view {
	case models.TriageRequests:
		f = triageRequests(ans.Requests, links)
	case models.TriageSignals:
		f = triageSignals(ans.Signals)
	default:
		f = triageFailures(ans.Failures, links)
	}
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return withNotices(data.Frames{f}, ans.Notices)
}

func triageFailures(fs []triage.Failure, links TriageLinks) *data.Frame {
	n := len(fs)
	at := make([]time.Time, n)
	count := make([]int64, n)
	cols := map[string][]string{}
	names := []string{"failure", "class", "host", "gpu", "uuid", "pod", "namespace", "container", "gpu shared with", "service", "operation",
		"evidence", "first checks", "mitigation", "mapping", "gpu dashboard", "traces", "class id"}
	for _, c := range names {
		cols[c] = make([]string, n)
	}
	for i, f := range fs {
		at[i], count[i] = f.At.UTC(), int64(f.Count)
		set := func(c, v string) { cols[c][i] = v }
		set("failure", f.Title)
		set("class", f.Runbook.Title)
		set("class id", f.Class)
		set("host", f.Host)
		set("gpu", f.GPU)
		set("uuid", f.UUID)
		set("pod", f.Pod)
		set("namespace", f.Namespace)
		set("container", f.Container)
		set("gpu shared with", strings.Join(f.SharedWith, ", "))
		set("service", f.Service)
		set("operation", f.Operation)
		set("evidence", strings.Join(f.Evidence, "; "))
		set("first checks", f.Runbook.FirstChecks)
		set("mitigation", f.Runbook.Mitigation)
		set("mapping", mappingText(f.Chain))
		if links.GPUDashboardUID != "" && (f.Host != "" || f.GPU != "") {
			m := f.At.Truncate(time.Minute)
			set("gpu dashboard", gpuDashboardURL(links.GPUDashboardUID, f.Host, firstNonEmpty(f.GPU, f.UUID), m.Add(-gpuLinkWindow), m.Add(gpuLinkWindow+time.Minute)))
		}
		if len(f.TraceIDs) > 0 {
			set("traces", verdictURL(links.RequestDashboardUID, f.TraceIDs[0], f.At))
		}
	}
	fields := []*data.Field{data.NewField("time", nil, at)}
	for _, c := range names[:11] {
		fields = append(fields, data.NewField(c, nil, cols[c]))
	}
	fields = append(fields, data.NewField("count", nil, count))
	for _, c := range names[11:] {
		fields = append(fields, data.NewField(c, nil, cols[c]))
	}
	f := data.NewFrame(TriageFailuresFrameName, fields...)
	// The links' titles are what a table's cell shows (the incident dashboard's columns are sized
	// for them); a panel's override adds its links to these rather than replacing them.
	for _, fl := range f.Fields {
		switch fl.Name {
		case "gpu dashboard":
			fl.SetConfig(&data.FieldConfig{Links: []data.DataLink{{Title: "GPU Metrics", URL: "${__value.raw}"}}})
		case "traces":
			fl.SetConfig(&data.FieldConfig{Links: []data.DataLink{{Title: "Traces", URL: "${__value.raw}"}}})
		case "class id":
			fl.SetConfig(&data.FieldConfig{Custom: map[string]any{"hidden": true}})
		}
	}
	return f
}

func triageRequests(rs []triage.Request, links TriageLinks) *data.Frame {
	n := len(rs)
	at := make([]time.Time, n)
	fb := make([]*float64, n)
	ids, svc, op, class, msg, pod, host, gpu := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, r := range rs {
		at[i], ids[i], svc[i], op[i], msg[i], host[i], gpu[i] = r.At.UTC(), r.TraceID, r.Service, r.Operation, r.Error, r.Host, r.GPU
		class[i] = triage.RunbookOf(r.Class).Title
		if r.Pod != "" && r.Namespace != "" {
			pod[i] = r.Namespace + "/" + r.Pod
		} else {
			pod[i] = r.Pod
		}
		fb[i] = num(r.FramebufferUsed)
	}
	return data.NewFrame(TriageRequestsFrameName,
		data.NewField("time", nil, at),
		data.NewField("trace ID", nil, ids).SetConfig(&data.FieldConfig{Links: slowTraceLinks(SlowTraceLinks{
			RequestDashboardUID: links.RequestDashboardUID, TraceDatasourceUID: links.TraceDatasourceUID, TraceDatasourceType: links.TraceDatasourceType})}),
		data.NewField("service", nil, svc),
		data.NewField("operation", nil, op),
		data.NewField("class", nil, class),
		data.NewField("error", nil, msg),
		data.NewField("pod", nil, pod),
		data.NewField("host", nil, host),
		data.NewField("gpu", nil, gpu),
		data.NewField("framebuffer used", nil, fb).SetConfig(&data.FieldConfig{Unit: "percent"}),
	)
}

func triageSignals(ss []triage.Signal) *data.Frame {
	n := len(ss)
	class, sig, status, detail := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, s := range ss {
		class[i], sig[i], status[i], detail[i] = s.Class, s.Signal, s.Status, s.Detail
	}
	return data.NewFrame(TriageSignalsFrameName,
		data.NewField("class", nil, class), data.NewField("signal", nil, sig),
		data.NewField("status", nil, status), data.NewField("detail", nil, detail))
}

// verdictURL opens the latest failed request's verdict in the Request-Level Profiling dashboard,
// around the failure; that dashboard links on to the trace in the trace data source. The URL is
// the cell's value, which Grafana's ${__value.raw} interpolation encodes once more: it holds
// nothing that encoding would change (no "%"), and an empty cell makes no link.
func verdictURL(uid, traceID string, at time.Time) string {
	path := "/d/" + url.PathEscape(uid)
	if uid == models.DefaultRequestDashboardUID {
		path += "/" + RequestDashboardSlug
	}
	v := url.Values{"var-trace_id": {traceID}, "from": {strconv.FormatInt(at.Add(-15*time.Minute).UnixMilli(), 10)},
		"to": {strconv.FormatInt(at.Add(15*time.Minute).UnixMilli(), 10)}}
	return path + "?" + v.Encode()
}

// mappingText is a failure's mapping chain as the user manual shows it (incidents.md, "The mapping
// chain"): the request's trace ID and the GPU's UUID shortened to their first characters, each
// whole elsewhere (the traces column, the uuid column). Whole, each is one word wider than the
// dashboard's wrapping column, and ran past its edge.
func mappingText(c triage.Chain) string {
	c.Request = shortID(c.Request)
	if id, rest, _ := strings.Cut(c.GPU, " "); strings.HasPrefix(id, "GPU-") || strings.HasPrefix(id, "MIG-") {
		c.GPU = strings.TrimSpace(shortID(id) + " " + rest)
	}
	return c.String()
}

// shortID is an ID's first 8 characters and an ellipsis, or the ID when that is no shorter.
func shortID(id string) string {
	if len(id) <= 9 {
		return id
	}
	return id[:8] + "…"
}

func firstNonEmpty(xs ...string) string {
	for _, x := range xs {
		if x != "" {
			return x
		}
	}
	return ""
}
