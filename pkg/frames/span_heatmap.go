package frames

import (
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// SpanHeatmapFrameName names the spanHeatmap query's heatmap frame.
const SpanHeatmapFrameName = "span durations"

// SpanHeatmap is the spanHeatmap query's answer: a heatmap-cells frame of span durations (in
// seconds) over time, and the exemplar frame Grafana's heatmap panel draws over it: the slowest
// span of each time bucket at its end time and duration. Each exemplar's trace ID opens the trace
// in the trace data source with the span focused, and the request's flame graph; its span ID
// opens the span's own flame graph when the span carries a span profile.
func SpanHeatmap(h correlate.SpanHeatmap, found *correlate.OperationSpans, profileTypeID string, links TraceLinks) []*data.Frame {
	cells := make([]HeatmapCell, len(h.Cells))
	for i, c := range h.Cells {
		cells[i] = HeatmapCell{XMax: c.XMax, YMin: c.YMin, YMax: c.YMax, Count: c.Count}
	}
	labels := data.Labels{"service": found.Service}
	if found.Operation != "" {
		labels["operation"] = found.Operation
	}
	heat := HeatmapCells(SpanHeatmapFrameName, labels, cells, "s", h.Step)
	heat.Fields[3].Config = &data.FieldConfig{DisplayNameFromDS: "Spans"}
	return []*data.Frame{heat, spanExemplars(h.Exemplars, profileTypeID, links)}
}

func spanExemplars(spans []models.Span, profileTypeID string, l TraceLinks) *data.Frame {
	n := len(spans)
	ends, durs := make([]time.Time, n), make([]float64, n)
	traceIDs, spanIDs, profileIDs := make([]string, n), make([]string, n), make([]string, n)
	services, ops := make([]string, n), make([]string, n)
	profiled := false
	for i, s := range spans {
		ends[i] = s.Start.Add(s.Duration).UTC()
		durs[i] = s.Duration.Seconds()
		traceIDs[i], spanIDs[i], services[i], ops[i] = s.TraceID, s.SpanID, s.Service, s.Operation
		profileIDs[i], _ = s.ProfileID()
		profiled = profiled || profileIDs[i] != ""
	}
	f := data.NewFrame(ExemplarFrameName,
		data.NewField("Time", nil, ends),
		data.NewField("Value", nil, durs).SetConfig(&data.FieldConfig{DisplayName: "Duration", Unit: "s"}),
		data.NewField(fieldTraceID, nil, traceIDs).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Trace ID", Links: exemplarTraceLinks(l, profileTypeID)}),
		data.NewField(fieldSpanID, nil, spanIDs).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Span ID", Links: spanLinks(l)}),
		data.NewField(fieldService, nil, services).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Service"}),
		data.NewField("operation", nil, ops).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Operation"}),
	)
	if profiled {
		// Only spans that carry the attribute have a span profile; when none of these does, a
		// link would open empty flame graphs.
		f.Fields = append(f.Fields, data.NewField(fieldProfileID, nil, profileIDs).SetConfig(&data.FieldConfig{
			DisplayNameFromDS: "Span profile", Links: functionLinks(l, profileTypeID),
		}))
	}
	f.Meta = &data.FrameMeta{DataTopic: data.DataTopicAnnotations}
	return f
}

// exemplarTraceLinks open the exemplar's trace in the trace data source and the whole request's
// flame graph in this one.
func exemplarTraceLinks(l TraceLinks, profileTypeID string) []data.DataLink {
	var out []data.DataLink
	if l.TraceDatasourceUID != "" {
		q := map[string]any{"query": "${__value.raw}"}
		if l.TraceDatasourceType == models.TraceDatasourceTempo {
			q["queryType"] = "traceql"
		}
		out = append(out, data.DataLink{Title: "Open trace", Internal: &data.InternalDataLink{DatasourceUID: l.TraceDatasourceUID, Query: q}})
	}
	if l.DatasourceUID != "" {
		out = append(out, data.DataLink{Title: "Request flame graph", Internal: &data.InternalDataLink{
			DatasourceUID: l.DatasourceUID, DatasourceName: l.DatasourceName,
			Query: map[string]any{"queryType": models.QueryTypeProfile, "traceId": "${__value.raw}", "profileTypeId": profileTypeID, "perService": true},
		}})
	}
	return out
}
