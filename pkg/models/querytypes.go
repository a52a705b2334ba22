package models

import "time"

// Query types, as dashboards store them (docs/sources/query-types.md). Each has one entry in
// QueryTypeSpecs, which says everything else about it.
const (
	QueryTypeProfile = "profile"
	QueryTypeMetrics = "metrics"
	QueryTypeBoth    = "both"
	QueryTypeDiff    = "diff"

	// Query types of the request-level join.
	QueryTypeTrace        = "trace"
	QueryTypeSlowRequests = "slowRequests"

	// Query types of profiles-to-traces from the trace store's own search (Jaeger), which works
	// with any Pyroscope: Grafana's span heatmaps need Tempo and a Pyroscope with SelectHeatmap.

	// QueryTypeSpanHeatmap is an operation's span durations over time, as a heatmap whose
	// exemplars (the slowest span of each time bucket) link to the trace and the span's profile.
	QueryTypeSpanHeatmap = "spanHeatmap"
	// QueryTypeSpanProfile is the merged profile of every profiled span of an operation slower
	// than a duration or a percentile: what one short span has too few samples to show.
	QueryTypeSpanProfile = "spanProfile"
	// QueryTypeTail is an operation's slow tail diagnosed together: the causes that add time to
	// its slowest requests, against the same causes in its median requests.
	QueryTypeTail = "tail"

	// QueryTypeGPUMetrics answers DCGM series from Prometheus by catalogue name (gpu_query.go).
	QueryTypeGPUMetrics = "gpuMetrics"
	// QueryTypeGPUClass classifies GPUs' workloads over time (compute-, memory-, PCIe-bound,
	// throttled, idle, balanced) from DCGM series, with evidence and the seeds' actions.
	QueryTypeGPUClass = "gpuClass"
	// QueryTypeGPULocal reads the GPUs of the Grafana host through NVML (pkg/nvml), when
	// jsonData.nvmlEnabled is set.
	QueryTypeGPULocal = "gpuLocal"
	// QueryTypeKernels analyses the GPU kernel traces (PyTorch profiler Chrome traces, Nsight
	// Systems SQLite exports) captured for a request, read from jsonData.traceDirectories.
	QueryTypeKernels = "kernels"
	// QueryTypeTriage lists the GPU fleet's failures of a range by runbook 002's classes (OOM
	// kills, CUDA OOM, XID, ECC, the memory envelope), with evidence, first checks and links.
	QueryTypeTriage = "triage"
)

// Families group the query types as the editor does: the types of a family share their fields
// and the editor's rows for them.
const (
	FamilyProfile = "profile" // Pyroscope's flame graphs and series, over a selection
	FamilyRequest = "request" // one request, or the slowest: traces joined with profiles
	FamilySpans   = "spans"   // an operation's spans, from the trace search
	FamilyGPU     = "gpu"     // DCGM series, their classification, local GPUs, kernel traces
)

// QueryTypeSpec declares one query type: what the editor's picker shows of it, the fields its
// parser reads and the bounds it enforces. The editor's copy (src/generated/vocabulary.ts) is
// generated from QueryTypeSpecs, so the two cannot drift.
type QueryTypeSpec struct {
	Name  string // as dashboards store it
	Label string // the picker's entry
	// Description is the picker's line under the label. The menu is as wide as its longest
	// description by letter count: gpuMetrics' stays the longest by a tenth or more, so that no
	// other, with wider letters, is cut short.
	Description string
	Family      string
	// Fields are the JSON fields the type reads; FieldWarnings names any other.
	Fields []string
	// Bounds are the numeric limits the parser enforces, which the editor checks again.
	Bounds []Bound
}

// Bound is a numeric limit a parser enforces on a query field: the value's range, a list's
// length ("items") or a text's length ("characters"), as Unit says.
type Bound struct {
	// Name is the JSON field bounded, or what of it (functionName: each frame of a call site).
	Name string
	// Default is what 0 or an unset field stands for; 0: the value itself.
	Default int64
	// Min and Max are the range; Max 0: no upper bound.
	Min, Max int64
	// MinOpen and MaxOpen exclude the end itself (a percentile above 0, below 100).
	MinOpen, MaxOpen bool
	// Unit is "" for a number or a count, "s" for a duration in whole seconds, "items" for a
	// list's length, "characters" for a text's length.
	Unit string
}

// The bounds, each declared once and read by its parser.
var (
	maxNodesBound     = Bound{Name: "maxNodes", Default: DefaultMaxNodes, Min: 1, Max: MaxMaxNodes}
	profileLimitBound = Bound{Name: "limit", Min: 0} // the top series; 0: all
	profileIDsBound   = Bound{Name: "profileIdSelector", Max: MaxProfileIDs, Unit: "items"}
	// traceIDsBound: each trace is one request's join (its trace read, its spans' profiles).
	traceIDsBound = Bound{Name: "traceIdSelector", Max: MaxTraceIDs, Unit: "items"}
	callSiteBound = Bound{Name: "stackTraceSelector", Max: MaxCallSiteDepth, Unit: "items"}
	// functionNameBound: no function name is longer; a longer one is a paste gone wrong.
	functionNameBound = Bound{Name: "functionName", Min: 1, Max: 4096, Unit: "characters"}
	slowLimitBound    = Bound{Name: "limit", Default: DefaultSlowTraces, Min: 1, Max: MaxSlowTraces}
	spanLimitBound    = Bound{Name: "limit", Default: DefaultSpanTraces, Min: 1, Max: MaxSpanTraces}
	percentileBound   = Bound{Name: "percentile", Min: 0, Max: 100, MinOpen: true, MaxOpen: true}
	tailPercentile    = Bound{Name: "percentile", Default: DefaultTailPercentile, Min: 0, Max: 100, MinOpen: true, MaxOpen: true}
	tailTracesBound   = Bound{Name: "maxTraces", Default: DefaultTailTraces, Min: 1, Max: MaxTailTraces}
	// minStepBound: below a second, steps only repeat DCGM's samples.
	minStepBound      = Bound{Name: "minStep", Default: int64(DCGMCollectInterval / time.Second), Min: 1, Unit: "s"}
	filterValuesBound = Bound{Name: "filterValues", Max: MaxGPUFilterValues, Unit: "items"}
	// triageServicesBound: each service is one trace search.
	triageServicesBound       = Bound{Name: "services", Max: MaxTriageServices, Unit: "items"}
	kernelBaselineRecentBound = Bound{Name: "baseline.recent", Default: DefaultKernelBaselineRecent, Min: 1, Max: MaxKernelBaselineRecent}
	profileQueryBounds        = []Bound{maxNodesBound, profileLimitBound, profileIDsBound, traceIDsBound, callSiteBound, functionNameBound}
)

// QueryTypeSpecs are every query type, in the editor's picker order.
var QueryTypeSpecs = []QueryTypeSpec{
	{Name: QueryTypeProfile, Label: "Profile", Family: FamilyProfile,
		Description: "Flame graph of the selected services: all requests, one request (trace ID) or some spans",
		Fields:      profileFields, Bounds: profileQueryBounds},
	{Name: QueryTypeMetrics, Label: "Metrics", Family: FamilyProfile,
		Description: "Profile values over time as series, one per value of the labels grouped by",
		Fields:      profileFields, Bounds: profileQueryBounds},
	{Name: QueryTypeBoth, Label: "Both", Family: FamilyProfile,
		Description: "Flame graph and profile values over time, of the same selection",
		Fields:      profileFields, Bounds: profileQueryBounds},
	{Name: QueryTypeDiff, Label: "Diff", Family: FamilyProfile,
		Description: "Diff flame graph: a baseline (e.g. the last hour) against a comparison (e.g. a slow request)",
		Fields:      profileFields, Bounds: profileQueryBounds},
	{Name: QueryTypeTrace, Label: "Request (trace)", Family: FamilyRequest,
		Description: "One request: each span's duration, CPU, allocations and GPU state, and its flame graph",
		Fields:      []string{"traceId", "profileTypeId", "allocTypeId", "maxNodes", "parts"}, Bounds: []Bound{maxNodesBound}},
	{Name: QueryTypeSlowRequests, Label: "Slow requests", Family: FamilyRequest,
		Description: "Latency percentiles by endpoint and the slowest recent traces, of one service or all",
		Fields:      []string{"service", "endpoint", "limit", "minDuration", "parts"}, Bounds: []Bound{slowLimitBound}},
	{Name: QueryTypeSpanHeatmap, Label: "Span heatmap", Family: FamilySpans,
		Description: "An operation's span durations over time, the slowest span of each step linked to its trace",
		Fields:      spanFields, Bounds: []Bound{spanLimitBound, maxNodesBound}},
	{Name: QueryTypeSpanProfile, Label: "Span profile", Family: FamilySpans,
		Description: "One flame graph merged from every span of an operation slower than a duration",
		Fields:      spanFields, Bounds: []Bound{spanLimitBound, percentileBound, maxNodesBound}},
	{Name: QueryTypeTail, Label: "Slow tail (why is p99 up?)", Family: FamilySpans,
		Description: "An endpoint's slowest requests diagnosed together: what adds their time, against its median",
		Fields:      tailFields, Bounds: []Bound{tailPercentile, tailTracesBound, spanLimitBound}},
	{Name: QueryTypeGPUMetrics, Label: "GPU metrics", Family: FamilyGPU,
		Description: "DCGM series (utilisation, memory, power, clocks, PCIe, NVLink, errors) per GPU, per host or fleet-wide",
		Fields:      gpuMetricsFields, Bounds: []Bound{filterValuesBound}},
	{Name: QueryTypeGPUClass, Label: "GPU class", Family: FamilyGPU,
		Description: "Per GPU: compute-, memory- or PCIe-bound, throttled or idle, with the recommended action",
		Fields:      gpuClassFields, Bounds: []Bound{filterValuesBound, minStepBound}},
	{Name: QueryTypeGPULocal, Label: "Local GPUs (NVML)", Family: FamilyGPU,
		Description: "Live GPUs of the host Grafana runs on, read through NVML: devices, processes, XID errors",
		Fields:      []string{"view"}},
	{Name: QueryTypeKernels, Label: "GPU kernels", Family: FamilyGPU,
		Description: "Kernel summary, breakdowns and advice from the GPU kernel traces captured for a request",
		Fields:      []string{"traceId", "file", "view", "baseline"}, Bounds: []Bound{kernelBaselineRecentBound}},
	{Name: QueryTypeTriage, Label: "GPU incidents (triage)", Family: FamilyGPU,
		Description: "Failures by class: OOM kills, CUDA OOM, XID, ECC, full memory; evidence and first checks",
		Fields:      triageFields, Bounds: []Bound{filterValuesBound, triageServicesBound}},
}

// QueryTypes lists every query type's name in the editor's picker order.
var QueryTypes = queryTypeNames()

func queryTypeNames() []string {
	out := make([]string, len(QueryTypeSpecs))
	for i, s := range QueryTypeSpecs {
		out[i] = s.Name
	}
	return out
}

// LookupQueryType finds a query type's declaration by name.
func LookupQueryType(name string) (QueryTypeSpec, bool) {
	for _, s := range QueryTypeSpecs {
		if s.Name == name {
			return s, true
		}
	}
	return QueryTypeSpec{}, false
}
