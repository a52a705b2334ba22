package plugin

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/jaeger"
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

// variableValues runs a parsed query against its upstream. Never nil, so Grafana gets [] and not
// null for an empty answer.
func (d *Datasource) variableValues(ctx context.Context, vq models.VariableQuery, from, to time.Time) ([]variableValue, error) {
	var pyro *pyroscope.Client
	var jae *jaeger.Client
	var err error
	switch {
	case vq.UsesJaeger():
		jae, err = d.jaegerClient()
	case vq.UsesPrometheus():
		_, err = d.prometheusClient()
	default:
		pyro, err = d.pyroscopeClient()
	}
	if err != nil {
		return nil, err
	}
	out := []variableValue{}
	same := func(values []string) []variableValue {
		for _, v := range values {
			out = append(out, variableValue{Text: v, Value: v})
		}
		return out
	}
	switch vq.Function {
	case "profile_types":
		types, err := pyro.ProfileTypes(ctx, from, to)
		if err != nil {
			return nil, err
		}
		// Grafana's Pyroscope variable editor labels profile types the same way.
		for _, t := range types {
			out = append(out, variableValue{Text: t.Name + " - " + t.SampleType, Value: t.ID})
		}
		return out, nil
	case "services":
		values, err := pyro.LabelValues(ctx, pyroscope.ServiceNameLabel, "{}", from, to)
		return same(values), err
	case "label_names":
		names, err := pyro.LabelNames(ctx, vq.Selector, from, to)
		return same(names), err
	case "label_values":
		values, err := pyro.LabelValues(ctx, vq.Label, vq.Selector, from, to)
		return same(values), err
	case "trace_services":
		services, _, err := jae.Services(ctx)
		if err != nil {
			return nil, err
		}
		services = append([]string{}, services...)
		slices.Sort(services)
		return same(services), nil
	case "trace_operations":
		ops, err := jae.Operations(ctx, vq.Service)
		return same(ops), err
	case "trace_ids":
		found, err := jae.FindTraces(ctx, models.TraceSearchQuery{
			Service: vq.Service, MinDuration: vq.MinDuration, Start: from, End: to, Limit: variableTraceLimit,
		})
		if err != nil {
			return nil, err
		}
		// Slowest first: the variable is for picking a slow request to look into.
		slices.SortStableFunc(found, func(a, b models.TraceSummary) int { return cmp.Compare(b.Duration, a.Duration) })
		for _, t := range found {
			op := t.RootOperation
			if op == "" {
				op = "(no root span)"
			}
			out = append(out, variableValue{Text: t.TraceID + " · " + op + " · " + formatTraceDuration(t.Duration), Value: t.TraceID})
		}
		return out, nil
	case "gpu_label_values":
		prom, err := d.gpuPrometheus()
		if err != nil {
			return nil, err
		}
		values, err := prom.GPULabelValues(ctx, vq.Role, models.GPUFilter{Hosts: vq.Hosts}, from, to)
		return same(values), err
	}
	// models.ParseVariableQuery only lets the functions above through.
	return nil, fmt.Errorf("variable function %q is not implemented", vq.Function)
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
