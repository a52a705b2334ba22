package frames

import (
	"cmp"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// TraceSpansFrameName names the trace query's table of spans.
const TraceSpansFrameName = "spans"

// TraceLinks says where the spans frame's data links point.
type TraceLinks struct {
	// TraceDatasourceUID is the Jaeger or Tempo data source span links open in Explore ("" : no
	// span link); TraceDatasourceType picks its query model (models.TraceDatasourceJaeger/Tempo).
	TraceDatasourceUID  string
	TraceDatasourceType string
	// GPUDashboardUID is the dashboard GPU links open.
	GPUDashboardUID string
	// DatasourceUID and DatasourceName are this data source: function links run its profile
	// query for the span ("" UID: no function link).
	DatasourceUID  string
	DatasourceName string
}

// Fields of the spans frame that links refer to by name.
const (
	fieldTraceID   = "traceID"
	fieldSpanID    = "spanID"
	fieldService   = "service"
	fieldProfileID = "profileID"
	fieldHost      = "host"
	fieldGPUVar    = "gpuVar"
	fieldMIGVar    = "migVar"
)

// TraceSpans is the trace query's table: one row per span, depth first. Cells the upstreams
// could not fill are null (shown empty), never zero. Links: the span ID opens the trace in the
// trace data source with that span focused, the hot function opens the span's profile in
// Explore, the GPUs open the GPU dashboard for the host and GPU over the panel's time range.
func TraceSpans(traceID string, rows []correlate.SpanRow, profileTypeID, allocTypeID string, links TraceLinks) *data.Frame {
	n := len(rows)
	var (
		traceIDs, spanIDs, services, operations = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		depths                                  = make([]int64, n)
		starts                                  = make([]time.Time, n)
		durations, selfs                        = make([]float64, n), make([]float64, n)
		cpus, allocs, hotSelf                   = make([]*int64, n), make([]*int64, n), make([]*int64, n)
		hot, own                                = make([]*string, n), make([]*string, n)
		profileIDs, hosts, gpus, gpuVars        = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		migVars                                 = make([]string, n)
		classes, evidence                       = make([]*string, n), make([]*string, n)
		shares, utils, mems, pcies              = make([]*float64, n), make([]*float64, n), make([]*float64, n), make([]*float64, n)
		kernelTimes                             = make([]*int64, n)
	)
	// By pointer: a copy of a row whose fields the cells point at would escape, one per row.
	for i := range rows {
		r := &rows[i]
		traceIDs[i], spanIDs[i], services[i], operations[i] = traceID, r.Span.SpanID, r.Span.Service, r.Span.Operation
		depths[i] = int64(r.Depth)
		starts[i] = r.Span.Start.UTC()
		durations[i], selfs[i] = millis(r.Span.Duration), millis(r.Self)
		cpus[i], allocs[i] = r.CPU, r.Alloc
		if r.HotFunction != "" {
			hot[i], hotSelf[i] = &r.HotFunction, &r.HotSelf
		}
		if r.OwnFunction != "" {
			own[i] = &r.OwnFunction
		}
		profileIDs[i], hosts[i] = r.ProfileID, r.Host
		gpus[i], gpuVars[i], migVars[i] = gpuCell(*r)
		kernelTimes[i] = r.GPUKernelTime
		if w := r.GPU; w != nil {
			class := string(w.Class)
			classes[i] = &class
			if len(w.Evidence) > 0 {
				e := strings.Join(w.Evidence, "; ")
				evidence[i] = &e
			}
			shares[i] = num(w.ClassShare * 100)
			utils[i], mems[i], pcies[i] = num(w.Util), num(w.MemActivity), num(w.PCIe)
		}
	}
	hidden := map[string]any{"hidden": true}
	f := data.NewFrame(TraceSpansFrameName,
		data.NewField(fieldTraceID, nil, traceIDs).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Trace ID", Custom: hidden}),
		data.NewField(fieldSpanID, nil, spanIDs).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Span ID", Links: spanLinks(links)}),
		data.NewField(fieldService, nil, services).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Service"}),
		data.NewField("operation", nil, operations).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Operation"}),
		data.NewField("depth", nil, depths).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Depth", Description: "0 for a root span, 1 for its children, ..."}),
		data.NewField("start", nil, starts).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Start"}),
		data.NewField("duration", nil, durations).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Duration", Unit: "ms"}),
		data.NewField("self", nil, selfs).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Self time", Unit: "ms",
			Description: "The span's duration minus the time covered by its child spans (overlapping children counted once)."}),
		data.NewField(models.SampleType(profileTypeID), nil, cpus).SetConfig(&data.FieldConfig{Unit: ProfileUnit(profileTypeID),
			Description: "Total of the span's own profile (" + profileTypeID + "); empty when the span has none: otel-profiling-go profiles each service's local root span, whose profile includes its children in that service."}),
		data.NewField(models.SampleType(allocTypeID), nil, allocs).SetConfig(&data.FieldConfig{Unit: ProfileUnit(allocTypeID),
			Description: "Total of the span's own allocation profile (" + allocTypeID + "); empty when the span has none or the profiler cannot label allocations with spans (Go's heap profiles cannot)."}),
		data.NewField("hotFunction", nil, hot).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Hot function", Links: functionLinks(links, profileTypeID),
			Description: "The function with the largest self value in the span's own profile (" + profileTypeID + ")."}),
		data.NewField("hotFunctionSelf", nil, hotSelf).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Hot function self", Unit: ProfileUnit(profileTypeID)}),
		data.NewField("ownFunction", nil, own).SetConfig(&data.FieldConfig{DisplayNameFromDS: "In own code",
			Description: "The deepest frame of the service's own code on the hot function's heaviest path (not runtime, standard library or third-party code): where to change the code when the hot function is a library's."}),
		data.NewField(fieldProfileID, nil, profileIDs).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Profile ID", Custom: hidden}),
		data.NewField(fieldHost, nil, hosts).SetConfig(&data.FieldConfig{DisplayNameFromDS: "Host"}),
		data.NewField("gpus", nil, gpus).SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPUs", Links: gpuLinks(links),
			Description: "The GPUs whose figures the row shows, each MIG instance on its own (\"0 MIG 1g.10gb #3\"); without figures, the GPUs the span's service names in its GPU attribute, else all GPUs of its host."}),
		data.NewField(fieldGPUVar, nil, gpuVars).SetConfig(&data.FieldConfig{Custom: hidden}),
		data.NewField(fieldMIGVar, nil, migVars).SetConfig(&data.FieldConfig{Custom: hidden}),
		data.NewField("gpuClass", nil, classes).SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPU class",
			Description: "The dominant workload class of the span's GPUs over its window."}),
		data.NewField("gpuEvidence", nil, evidence).SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPU evidence",
			Description: "The figures and thresholds behind the GPU class, at one of the window's readings."}),
		data.NewField("gpuClassShare", nil, shares).SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPU class share", Unit: "percent", Decimals: ptr(uint16(0)),
			Description: "Share of the window's GPU readings in the dominant class."}),
		data.NewField("gpuUtil", nil, utils).SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPU util", Unit: "percent", Decimals: ptr(uint16(1)),
			Description: "Mean GPU utilisation (DCGM_FI_DEV_GPU_UTIL, else the graphics engine's activity) over the span's window."}),
		data.NewField("gpuMemActivity", nil, mems).SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPU memory activity", Unit: "percent", Decimals: ptr(uint16(1)),
			Description: "Mean share of time device memory was busy (DCGM_FI_PROF_DRAM_ACTIVE, else DCGM_FI_DEV_MEM_COPY_UTIL) over the span's window."}),
		data.NewField("gpuPcie", nil, pcies).SetConfig(&data.FieldConfig{DisplayNameFromDS: "PCIe", Unit: "Bps",
			Description: "Mean PCIe traffic, transmitted plus received, over the span's window."}),
		data.NewField("gpuKernelTime", nil, kernelTimes).SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPU kernel time", Unit: "ns",
			Description: "GPU kernel time the request's kernel traces (jsonData.traceDirectories) attribute to the span through their annotations; empty when no trace was captured."}),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}

// gpuCell is what the GPUs column shows and the values the GPU dashboard's gpu and mig
// variables get: the GPUs whose figures the row shows, each MIG instance on its own, else those
// the service names, else all; one GPU (or one MIG instance) links to it, several to all ($__all).
func gpuCell(r correlate.SpanRow) (shown, gpuVar, migVar string) {
	switch {
	case r.Host == "":
		return "", "", ""
	case r.GPU != nil && len(r.GPU.GPUs) > 0:
		names := make([]string, len(r.GPU.GPUs))
		for i, g := range r.GPU.GPUs {
			names[i] = g.Device()
		}
		if len(names) > 1 {
			return strings.Join(names, ","), "$__all", "$__all"
		}
		g := r.GPU.GPUs[0]
		gpuVar, migVar = cmp.Or(g.Index, g.UUID), cmp.Or(g.MIG, "$__all")
		return names[0], gpuVar, migVar
	case len(r.GPUs) == 1:
		return r.GPUs[0], r.GPUs[0], "$__all"
	case len(r.GPUs) > 1:
		return strings.Join(r.GPUs, ","), "$__all", "$__all"
	}
	return "all", "$__all", "$__all"
}

func spanLinks(l TraceLinks) []data.DataLink {
	if l.TraceDatasourceUID == "" {
		return nil
	}
	// As Grafana's own Tempo data source links spans: the trace by ID, with the span focused.
	q := map[string]any{"query": "${__data.fields." + fieldTraceID + "}"}
	if l.TraceDatasourceType == models.TraceDatasourceTempo {
		q["queryType"] = "traceql"
	}
	state := data.ExplorePanelsState(map[string]any{"trace": map[string]any{"spanId": "${__value.raw}"}})
	return []data.DataLink{{Title: "Open span in trace", Internal: &data.InternalDataLink{
		DatasourceUID: l.TraceDatasourceUID, Query: q, ExplorePanelsState: &state,
	}}}
}

func functionLinks(l TraceLinks, profileTypeID string) []data.DataLink {
	if l.DatasourceUID == "" {
		return nil
	}
	return []data.DataLink{{Title: "Span profile", Internal: &data.InternalDataLink{
		DatasourceUID: l.DatasourceUID, DatasourceName: l.DatasourceName,
		Query: map[string]any{
			"queryType":     models.QueryTypeProfile,
			"labelSelector": `{service_name="${__data.fields.` + fieldService + `}"}`,
			"profileTypeId": profileTypeID,
			"spanSelector":  []any{"${__data.fields." + fieldProfileID + "}"},
		},
	}}}
}

func gpuLinks(l TraceLinks) []data.DataLink {
	if l.GPUDashboardUID == "" {
		return nil
	}
	// Grafana URI-encodes each interpolated value; ${__url_time_range} keeps the panel's range.
	return []data.DataLink{{
		Title: "GPU dashboard",
		URL: "/d/" + url.PathEscape(l.GPUDashboardUID) + "?var-host=${__data.fields." + fieldHost + "}&var-gpu=${__data.fields." + fieldGPUVar +
			"}&var-mig=${__data.fields." + fieldMIGVar + "}&${__url_time_range}",
	}}
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// num is v as a nullable cell: NaN (no reading) becomes null.
func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}
