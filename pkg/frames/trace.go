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
		traceIDs, spanIDs      = newColumn[string](fieldTraceID, n), newColumn[string](fieldSpanID, n)
		services, operations   = newColumn[string](fieldService, n), newColumn[string]("operation", n)
		depths                 = newColumn[int64]("depth", n)
		starts                 = newColumn[time.Time]("start", n)
		durations, selfs       = newColumn[float64]("duration", n), newColumn[float64]("self", n)
		cpus, allocs           = newColumn[*int64](models.SampleType(profileTypeID), n), newColumn[*int64](models.SampleType(allocTypeID), n)
		hot, hotSelf, own      = newColumn[*string]("hotFunction", n), newColumn[*int64]("hotFunctionSelf", n), newColumn[*string]("ownFunction", n)
		profileIDs, hosts      = newColumn[string](fieldProfileID, n), newColumn[string](fieldHost, n)
		gpus, gpuVars, migVars = newColumn[string]("gpus", n), newColumn[string](fieldGPUVar, n), newColumn[string](fieldMIGVar, n)
		classes, evidence      = newColumn[*string]("gpuClass", n), newColumn[*string]("gpuEvidence", n)
		shares, utils          = newColumn[*float64]("gpuClassShare", n), newColumn[*float64]("gpuUtil", n)
		mems, pcies            = newColumn[*float64]("gpuMemActivity", n), newColumn[*float64]("gpuPcie", n)
		kernelTimes            = newColumn[*int64]("gpuKernelTime", n)
	)
	// By pointer: a copy of a row whose fields the cells point at would escape, one per row.
	for i := range rows {
		r := &rows[i]
		traceIDs.set(i, traceID)
		spanIDs.set(i, r.Span.SpanID)
		services.set(i, r.Span.Service)
		operations.set(i, r.Span.Operation)
		depths.set(i, int64(r.Depth))
		starts.set(i, r.Span.Start.UTC())
		durations.set(i, millis(r.Span.Duration))
		selfs.set(i, millis(r.Self))
		cpus.set(i, r.CPU)
		allocs.set(i, r.Alloc)
		if r.HotFunction != "" {
			hot.set(i, &r.HotFunction)
			hotSelf.set(i, &r.HotSelf)
		}
		if r.OwnFunction != "" {
			own.set(i, &r.OwnFunction)
		}
		profileIDs.set(i, r.ProfileID)
		hosts.set(i, r.Host)
		shown, gpuVar, migVar := gpuCell(r)
		gpus.set(i, shown)
		gpuVars.set(i, gpuVar)
		migVars.set(i, migVar)
		kernelTimes.set(i, r.GPUKernelTime)
		if w := r.GPU; w != nil {
			class := string(w.Class)
			classes.set(i, &class)
			if len(w.Evidence) > 0 {
				e := strings.Join(w.Evidence, "; ")
				evidence.set(i, &e)
			}
			shares.set(i, num(w.ClassShare*100))
			utils.set(i, num(w.Util))
			mems.set(i, num(w.MemActivity))
			pcies.set(i, num(w.PCIe))
		}
	}
	hidden := map[string]any{"hidden": true}
	f := data.NewFrame(TraceSpansFrameName,
		traceIDs.SetConfig(&data.FieldConfig{DisplayNameFromDS: "Trace ID", Custom: hidden}),
		spanIDs.SetConfig(&data.FieldConfig{DisplayNameFromDS: "Span ID", Links: spanLinks(links)}),
		services.SetConfig(&data.FieldConfig{DisplayNameFromDS: "Service"}),
		operations.SetConfig(&data.FieldConfig{DisplayNameFromDS: "Operation"}),
		depths.SetConfig(&data.FieldConfig{DisplayNameFromDS: "Depth", Description: "0 for a root span, 1 for its children, ..."}),
		starts.SetConfig(&data.FieldConfig{DisplayNameFromDS: "Start"}),
		durations.SetConfig(&data.FieldConfig{DisplayNameFromDS: "Duration", Unit: "ms"}),
		selfs.SetConfig(&data.FieldConfig{DisplayNameFromDS: "Self time", Unit: "ms",
			Description: "The span's duration minus the time covered by its child spans (overlapping children counted once)."}),
		cpus.SetConfig(&data.FieldConfig{Unit: ProfileUnit(profileTypeID),
			Description: "Total of the span's own profile (" + profileTypeID + "); empty when the span has none: otel-profiling-go profiles each service's local root span, whose profile includes its children in that service."}),
		allocs.SetConfig(&data.FieldConfig{Unit: ProfileUnit(allocTypeID),
			Description: "Total of the span's own allocation profile (" + allocTypeID + "); empty when the span has none or the profiler cannot label allocations with spans (Go's heap profiles cannot)."}),
		hot.SetConfig(&data.FieldConfig{DisplayNameFromDS: "Hot function", Links: functionLinks(links, profileTypeID),
			Description: "The function with the largest self value in the span's own profile (" + profileTypeID + ")."}),
		hotSelf.SetConfig(&data.FieldConfig{DisplayNameFromDS: "Hot function self", Unit: ProfileUnit(profileTypeID)}),
		own.SetConfig(&data.FieldConfig{DisplayNameFromDS: "In own code",
			Description: "The deepest frame of the service's own code on the hot function's heaviest path (not runtime, standard library or third-party code): where to change the code when the hot function is a library's."}),
		profileIDs.SetConfig(&data.FieldConfig{DisplayNameFromDS: "Profile ID", Custom: hidden}),
		hosts.SetConfig(&data.FieldConfig{DisplayNameFromDS: "Host"}),
		gpus.SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPUs", Links: gpuLinks(links),
			Description: "The GPUs whose figures the row shows, each MIG instance on its own (\"0 MIG 1g.10gb #3\"); without figures, the GPUs the span's service names in its GPU attribute, else all GPUs of its host."}),
		gpuVars.SetConfig(&data.FieldConfig{Custom: hidden}),
		migVars.SetConfig(&data.FieldConfig{Custom: hidden}),
		classes.SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPU class",
			Description: "The dominant workload class of the span's GPUs over its window."}),
		evidence.SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPU evidence",
			Description: "The figures and thresholds behind the GPU class, at one of the window's readings."}),
		shares.SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPU class share", Unit: "percent", Decimals: ptr(uint16(0)),
			Description: "Share of the window's GPU readings in the dominant class."}),
		utils.SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPU util", Unit: "percent", Decimals: ptr(uint16(1)),
			Description: "Mean GPU utilisation (DCGM_FI_DEV_GPU_UTIL, else the graphics engine's activity) over the span's window."}),
		mems.SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPU memory activity", Unit: "percent", Decimals: ptr(uint16(1)),
			Description: "Mean share of time device memory was busy (DCGM_FI_PROF_DRAM_ACTIVE, else DCGM_FI_DEV_MEM_COPY_UTIL) over the span's window."}),
		pcies.SetConfig(&data.FieldConfig{DisplayNameFromDS: "PCIe", Unit: "Bps",
			Description: "Mean PCIe traffic, transmitted plus received, over the span's window."}),
		kernelTimes.SetConfig(&data.FieldConfig{DisplayNameFromDS: "GPU kernel time", Unit: "ns",
			Description: "GPU kernel time the request's kernel traces (jsonData.traceDirectories) attribute to the span through their annotations; empty when no trace was captured."}),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}

// gpuCell is what the GPUs column shows and the values the GPU dashboard's gpu and mig
// variables get: the GPUs whose figures the row shows, each MIG instance on its own, else those
// the service names, else all; one GPU (or one MIG instance) links to it, several to all ($__all).
func gpuCell(r *correlate.SpanRow) (shown, gpuVar, migVar string) {
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
