package frames

import (
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// Frame names of the tail query.
const (
	TailSummaryFrameName  = "tail summary"
	TailCausesFrameName   = "tail causes"
	TailRequestsFrameName = "tail requests"
)

// TailFigures are the tail's own figures beside its diagnosis: its threshold and how many
// requests reached it.
type TailFigures struct {
	Threshold time.Duration
	Over      int // requests at or over the threshold in the range
}

// Tail presents a tail's diagnosis: the answer in words, the causes ranked by the time they add
// to the tail, and each request diagnosed; parts picks the frames (models.TailParts; empty:
// all). The answer's notices, then what it rests on (d.HowSure), go on the first frame.
func Tail(d diagnose.TailDiagnosis, fig TailFigures, l notices.List, links SlowTraceLinks, parts []string) data.Frames {
	wants := func(p string) bool { return len(parts) == 0 || slices.Contains(parts, p) }
	var out data.Frames
	if wants(models.TailPartSummary) {
		out = append(out, TailSummary(d, fig))
	}
	if wants(models.TailPartCauses) {
		out = append(out, TailCauses(d, links))
	}
	if wants(models.TailPartRequests) {
		out = append(out, TailRequests(d, links))
	}
	if len(out) > 0 {
		// What the answer rests on follows how the tail was chosen.
		for _, line := range d.HowSure {
			l.Info(line)
		}
		out[0].Meta.Notices = append(Notices(l), out[0].Meta.Notices...)
	}
	return out
}

// TailSummary is one row: the answer in words, and the figures it rests on.
func TailSummary(d diagnose.TailDiagnosis, fig TailFigures) *data.Frame {
	answer := d.Summary
	if answer == "" {
		answer = "No tail to diagnose: see the notices."
	}
	var perRequest float64
	if d.TailDiagnosed > 0 {
		perRequest = millis(d.Excess / time.Duration(d.TailDiagnosed))
	}
	msCfg := func(name, desc string) *data.FieldConfig {
		return &data.FieldConfig{DisplayNameFromDS: name, Unit: "ms", Description: desc}
	}
	f := data.NewFrame(TailSummaryFrameName,
		data.NewField("answer", nil, []string{answer}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Why the tail is slow",
			Custom: map[string]any{"cellOptions": map[string]any{"type": "auto", "wrapText": true}, "inspect": true}}),
		data.NewField("standsOut", nil, []bool{d.StandsOut}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "A cause stands out"}),
		data.NewField("threshold", nil, []float64{millis(fig.Threshold)}).SetConfig(msCfg("Threshold", "The duration a request reaches to be in the tail.")),
		data.NewField("over", nil, []int64{int64(fig.Over)}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Requests over it", Description: "Requests of the range at or over the threshold."}),
		data.NewField("diagnosed", nil, []int64{int64(d.TailDiagnosed)}).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Tail requests diagnosed"}),
		data.NewField("median", nil, []float64{millis(d.Baseline)}).SetConfig(msCfg("Median request", "The operation's median duration over the range.")),
		data.NewField("excessPerRequest", nil, []float64{perRequest}).SetConfig(msCfg("Excess per tail request", "A diagnosed tail request's time over the median request, on average: what the causes' shares divide.")),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}

// TailCauses is one row per cause, ranked by the time it adds to the tail: a bar chart of
// cause by share, or a table with the median comparison, the examples and the remedy.
func TailCauses(d diagnose.TailDiagnosis, links SlowTraceLinks) *data.Frame {
	n := len(d.Causes)
	rank, requests, first, medianRequests := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	title, kind, service, peer, hot, example, examples, evidence, action := make([]string, n), make([]string, n), make([]string, n),
		make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	added, share, atMedian, inTail, total, median := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n),
		make([]float64, n), make([]float64, n)
	standsOut := make([]bool, n)
	for i, c := range d.Causes {
		rank[i], title[i], kind[i], service[i], peer[i], hot[i] = int64(i+1), c.Title, c.Kind, c.Service, c.Peer, c.HotFunction
		added[i], share[i], atMedian[i], inTail[i] = millis(c.Added), c.Share, millis(c.PerMedian), millis(c.PerTail)
		requests[i], first[i], medianRequests[i] = int64(c.Requests), int64(c.First), int64(c.MedianRequests)
		total[i], median[i], standsOut[i] = millis(c.Total), millis(c.Median), c.StandsOut
		if len(c.Examples) > 0 {
			example[i] = c.Examples[0]
		}
		examples[i], evidence[i], action[i] = strings.Join(c.Examples, ", "), c.Evidence, c.Action
	}
	msCfg := func(name, desc string) *data.FieldConfig {
		return &data.FieldConfig{DisplayNameFromDS: name, Unit: "ms", Description: desc}
	}
	wrap := func(name string) *data.FieldConfig {
		return &data.FieldConfig{DisplayNameFromDS: name, Custom: map[string]any{"cellOptions": map[string]any{"type": "auto", "wrapText": true}, "inspect": true}}
	}
	exampleCfg := &data.FieldConfig{DisplayNameFromDS: "Example trace ID", Links: slowTraceLinks(links),
		Description: "The tail request where the cause took the longest: its link opens the Request-Level Profiling dashboard for it."}
	f := data.NewFrame(TailCausesFrameName,
		data.NewField("rank", nil, rank).SetConfig(&data.FieldConfig{DisplayNameFromDS: "#"}),
		data.NewField("cause", nil, title).SetConfig(wrap("Cause")),
		data.NewField("share", nil, share).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Share of the tail's excess", Unit: "percentunit", Min: ptr(data.ConfFloat64(0)), Max: ptr(data.ConfFloat64(1)),
			Description: "The time the cause adds to the tail over the time the tail's requests spend beyond the median request."}),
		data.NewField("added", nil, added).SetConfig(msCfg("Time added", "The cause's time in the tail's requests less what as many median requests spend on it.")),
		data.NewField("atMedian", nil, atMedian).SetConfig(msCfg("At the median", "The cause's time per median request, on average (0 where absent).")),
		data.NewField("inTail", nil, inTail).SetConfig(msCfg("In the tail", "The cause's time per tail request, on average (0 where absent).")),
		data.NewField("requests", nil, requests).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Tail requests with it"}),
		data.NewField("first", nil, first).SetConfig(&data.FieldConfig{DisplayNameFromDS: "First in", Description: "Tail requests whose verdict ranks this cause first."}),
		data.NewField("total", nil, total).SetConfig(msCfg("Total in the tail", "The cause's time summed over the tail's requests.")),
		data.NewField("median", nil, median).SetConfig(msCfg("Median where present", "The cause's median time over the tail requests holding it.")),
		data.NewField("medianRequests", nil, medianRequests).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Median requests with it"}),
		data.NewField("standsOut", nil, standsOut).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Stands out",
			Description: "The cause makes the tail: a fifth or more of its excess, at least twice its time at the median."}),
		data.NewField("exampleTraceID", nil, example).SetConfig(exampleCfg),
		data.NewField("examples", nil, examples).SetConfig(wrap("Examples")),
		data.NewField("evidence", nil, evidence).SetConfig(wrap("Evidence (largest instance)")),
		data.NewField("action", nil, action).SetConfig(wrap("Remedy")),
		data.NewField("kind", nil, kind).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Kind"}),
		data.NewField("service", nil, service).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Service"}),
		data.NewField("peer", nil, peer).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Peer"}),
		data.NewField("hotFunction", nil, hot).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Hot function"}),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}

// TailRequests is one row per request asked, the tail's then the median sample's, each with its
// top cause or why it has no verdict.
func TailRequests(d diagnose.TailDiagnosis, links SlowTraceLinks) *data.Frame {
	all := append(append([]diagnose.TailRequest{}, d.Tail...), d.Median...)
	n := len(all)
	group, ids, top, why, warnings := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	starts := make([]time.Time, n)
	durs, topMs := make([]float64, n), make([]*float64, n)
	diagnosed := make([]bool, n)
	for i, r := range all {
		group[i] = "tail"
		if i >= len(d.Tail) {
			group[i] = "median"
		}
		ids[i], starts[i], durs[i], diagnosed[i], why[i] = r.TraceID, r.Start.UTC(), millis(r.Duration), r.Diagnosed(), r.Why
		if len(r.Causes) > 0 {
			top[i], topMs[i] = r.Causes[0].Title, ptr(millis(r.Causes[0].Explains))
		}
		warnings[i] = strings.Join(r.Warnings, " ")
	}
	f := data.NewFrame(TailRequestsFrameName,
		data.NewField("group", nil, group).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Group"}),
		data.NewField("traceID", nil, ids).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Trace ID", Links: slowTraceLinks(links)}),
		data.NewField("start", nil, starts).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Start"}),
		data.NewField("duration", nil, durs).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Duration", Unit: "ms"}),
		data.NewField("diagnosed", nil, diagnosed).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Diagnosed"}),
		data.NewField("topCause", nil, top).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Top cause"}),
		data.NewField("topCauseMs", nil, topMs).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Top cause time", Unit: "ms"}),
		data.NewField("why", nil, why).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Why not diagnosed"}),
		data.NewField("warnings", nil, warnings).SetConfig(&data.FieldConfig{DisplayNameFromDS: "What its join lacked"}),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}
