package plugin

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// traceSearchWindow is how far back the editor's trace search looks when it sends no range.
const traceSearchWindow = time.Hour

// maxTraceSearchLimit bounds one search: each hit is a whole trace that Jaeger loads and sends.
const maxTraceSearchLimit = 1000

// resourceTraceServices lists the services the trace store knows, for the trace editor's service picker.
func (d *Datasource) resourceTraceServices(w http.ResponseWriter, r *http.Request) {
	jae, err := d.src.Traces.Get()
	if err != nil {
		writeError(w, err)
		return
	}
	services, _, err := jae.Services(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	// Sorted for the picker; never null, so the editor need not special-case an empty Jaeger.
	services = append([]string{}, services...)
	slices.Sort(services)
	writeJSON(w, http.StatusOK, services)
}

// resourceTraceOperations lists a service's operations (span names) the trace store knows, sorted, for the
// span editors' operation picker: ?service= (required).
func (d *Datasource) resourceTraceOperations(w http.ResponseWriter, r *http.Request) {
	jae, err := d.src.Traces.Get()
	if err != nil {
		writeError(w, err)
		return
	}
	service := r.URL.Query().Get("service")
	if service == "" {
		writeError(w, fmt.Errorf("parameter \"service\" is required: operations are listed per service"))
		return
	}
	if err := models.CheckName(service); err != nil {
		writeError(w, fmt.Errorf("parameter \"service\" %w", err))
		return
	}
	ops, err := jae.Operations(r.Context(), service)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ops)
}

// resourceTraces searches Jaeger for the trace editor:
// service (required), operation, minDuration (500ms, 1s, ...), limit (1-1000, default 20), and
// from/to in Unix milliseconds (default the last hour). Slowest first.
func (d *Datasource) resourceTraces(w http.ResponseWriter, r *http.Request) {
	jae, err := d.src.Traces.Get()
	if err != nil {
		writeError(w, err)
		return
	}
	q, err := traceQuery(r)
	if err != nil {
		writeError(w, err)
		return
	}
	found, err := jae.FindTraces(r.Context(), q)
	if err != nil {
		writeError(w, err)
		return
	}
	if found == nil {
		found = []models.TraceSummary{}
	}
	writeJSON(w, http.StatusOK, found)
}

// traceQuery reads the search parameters; each error names the parameter and what it accepts.
func traceQuery(r *http.Request) (models.TraceSearchQuery, error) {
	p := r.URL.Query()
	q := models.TraceSearchQuery{Service: p.Get("service"), Operation: p.Get("operation"), Limit: models.DefaultTraceLimit}
	if q.Service == "" {
		return q, fmt.Errorf("parameter \"service\" is required: the trace store is searched one service at a time")
	}
	for name, v := range map[string]string{"service": q.Service, "operation": q.Operation} {
		if err := models.CheckName(v); err != nil {
			return q, fmt.Errorf("parameter %q %w", name, err)
		}
	}
	if v := p.Get("minDuration"); v != "" {
		// Go's syntax, which is also Jaeger's and Grafana's for sub-day durations.
		dur, err := time.ParseDuration(v)
		if err != nil || dur < 0 {
			return q, fmt.Errorf("parameter \"minDuration\" must be a duration such as 500ms or 1s, got %q", v)
		}
		q.MinDuration = dur
	}
	if v := p.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxTraceSearchLimit {
			return q, fmt.Errorf("parameter \"limit\" must be a whole number from 1 to %d, got %q", maxTraceSearchLimit, v)
		}
		q.Limit = n
	}
	from, to, err := timeRange(r, traceSearchWindow)
	if err != nil {
		return q, err
	}
	q.Start, q.End = from, to
	return q, nil
}
