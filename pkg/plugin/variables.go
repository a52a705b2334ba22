package plugin

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
)

// Template variables. Grafana's metricFindQuery sends the variable's query text, already
// interpolated, to GET /variable?query=...&from=...&to=... and shows the answer's
// [{"text", "value"}] as the variable's options. The query language (models.ParseVariableQuery)
// is a few Prometheus-style functions; this file runs a parsed query against its upstream.

// variableTraceLimit bounds trace_ids: a dropdown of more traces is not something anyone reads.
const variableTraceLimit = 50

// variableValue is one option of a template variable (Grafana's MetricFindValue).
type variableValue struct {
	Text  string `json:"text"`
	Value string `json:"value"`
}

// resourceVariable answers a template variable's query.
func (d *Datasource) resourceVariable(w http.ResponseWriter, r *http.Request) {
	vq, err := models.ParseVariableQuery(r.URL.Query().Get("query"))
	if err != nil {
		writeError(w, fmt.Errorf("parameter \"query\": %w", err))
		return
	}
	window := labelsWindow
	if vq.UsesJaeger() {
		window = traceSearchWindow
	}
	from, to, err := timeRange(r, window)
	if err != nil {
		writeError(w, err)
		return
	}
	values, err := d.variableValues(r.Context(), vq, from, to)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, values)
}

// variableFunction runs one function of the variable query language against its upstream.
type variableFunction struct {
	upstream string // where its values come from, for the reader of this table
	run      func(ctx context.Context, src correlate.Sources, vq models.VariableQuery, from, to time.Time) ([]variableValue, error)
}

// traceStoreName is the upstream of the trace variables: Jaeger or Tempo, as the settings choose.
const traceStoreName = models.Jaeger + " or " + models.Tempo

// variableFunctions are the functions models.ParseVariableQuery lets through, one a line.
var variableFunctions = map[string]variableFunction{
	"profile_types": {models.Pyroscope, profileTypeValues},
	"services": {models.Pyroscope, pyroscopeValues(func(ctx context.Context, p correlate.ProfileStore, vq models.VariableQuery, from, to time.Time) ([]string, error) {
		return p.LabelValues(ctx, pyroscope.ServiceNameLabel, "{}", from, to)
	})},
	"label_names": {models.Pyroscope, pyroscopeValues(func(ctx context.Context, p correlate.ProfileStore, vq models.VariableQuery, from, to time.Time) ([]string, error) {
		return p.LabelNames(ctx, vq.Selector, from, to)
	})},
	"label_values": {models.Pyroscope, pyroscopeValues(func(ctx context.Context, p correlate.ProfileStore, vq models.VariableQuery, from, to time.Time) ([]string, error) {
		return p.LabelValues(ctx, vq.Label, vq.Selector, from, to)
	})},
	"trace_services":   {traceStoreName, traceServiceValues},
	"trace_operations": {traceStoreName, traceOperationValues},
	"trace_ids":        {traceStoreName, traceIDValues},
	"gpu_label_values": {models.Prometheus, gpuLabelValues},
}

// variableValues runs a parsed query against its upstream. Never nil, so Grafana gets [] and not
// null for an empty answer.
func (d *Datasource) variableValues(ctx context.Context, vq models.VariableQuery, from, to time.Time) ([]variableValue, error) {
	fn, ok := variableFunctions[vq.Function]
	if !ok { // models.ParseVariableQuery only lets the table's functions through
		return nil, fmt.Errorf("variable function %q is not implemented", vq.Function)
	}
	values, err := fn.run(ctx, d.src, vq, from, to)
	if values == nil && err == nil {
		values = []variableValue{}
	}
	return values, err
}

// same is each value as its own text.
func same(values []string) []variableValue {
	out := make([]variableValue, 0, len(values))
	for _, v := range values {
		out = append(out, variableValue{Text: v, Value: v})
	}
	return out
}

// pyroscopeValues is a function of Pyroscope's labels whose values are their own text.
func pyroscopeValues(list func(ctx context.Context, p correlate.ProfileStore, vq models.VariableQuery, from, to time.Time) ([]string, error)) func(context.Context, correlate.Sources, models.VariableQuery, time.Time, time.Time) ([]variableValue, error) {
	return func(ctx context.Context, src correlate.Sources, vq models.VariableQuery, from, to time.Time) ([]variableValue, error) {
		pyro, err := src.Profiles.Get()
		if err != nil {
			return nil, err
		}
		values, err := list(ctx, pyro, vq, from, to)
		return same(values), err
	}
}

func profileTypeValues(ctx context.Context, src correlate.Sources, _ models.VariableQuery, from, to time.Time) ([]variableValue, error) {
	pyro, err := src.Profiles.Get()
	if err != nil {
		return nil, err
	}
	types, err := pyro.ProfileTypes(ctx, from, to)
	if err != nil {
		return nil, err
	}
	// Grafana's Pyroscope variable editor labels profile types the same way.
	out := make([]variableValue, 0, len(types))
	for _, t := range types {
		out = append(out, variableValue{Text: t.Name + " - " + t.SampleType, Value: t.ID})
	}
	return out, nil
}

func traceServiceValues(ctx context.Context, src correlate.Sources, _ models.VariableQuery, _, _ time.Time) ([]variableValue, error) {
	jae, err := src.Traces.Get()
	if err != nil {
		return nil, err
	}
	services, _, err := jae.Services(ctx)
	if err != nil {
		return nil, err
	}
	return same(slices.Sorted(slices.Values(services))), nil
}

func traceOperationValues(ctx context.Context, src correlate.Sources, vq models.VariableQuery, _, _ time.Time) ([]variableValue, error) {
	jae, err := src.Traces.Get()
	if err != nil {
		return nil, err
	}
	ops, err := jae.Operations(ctx, vq.Service)
	return same(ops), err
}

func traceIDValues(ctx context.Context, src correlate.Sources, vq models.VariableQuery, from, to time.Time) ([]variableValue, error) {
	jae, err := src.Traces.Get()
	if err != nil {
		return nil, err
	}
	found, err := jae.FindTraces(ctx, models.TraceSearchQuery{
		Service: vq.Service, MinDuration: vq.MinDuration, Start: from, End: to, Limit: variableTraceLimit,
	})
	if err != nil {
		return nil, err
	}
	// Slowest first: the variable is for picking a slow request to look into.
	slices.SortStableFunc(found, func(a, b models.TraceSummary) int { return cmp.Compare(b.Duration, a.Duration) })
	out := make([]variableValue, 0, len(found))
	for _, t := range found {
		op := cmp.Or(t.RootOperation, "(no root span)")
		out = append(out, variableValue{Text: t.TraceID + " · " + op + " · " + formatTraceDuration(t.Duration), Value: t.TraceID})
	}
	return out, nil
}

func gpuLabelValues(ctx context.Context, src correlate.Sources, vq models.VariableQuery, from, to time.Time) ([]variableValue, error) {
	gpus, err := src.GPUs.Get()
	if err != nil {
		return nil, err
	}
	values, err := gpus.GPULabelValues(ctx, vq.Role, models.GPUFilter{Hosts: vq.Hosts}, from, to)
	return same(values), err
}

// formatTraceDuration rounds to what a person compares at a glance: 1.234s, 850ms, 420µs.
func formatTraceDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return d.Round(time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	}
	return d.Round(time.Microsecond).String()
}
