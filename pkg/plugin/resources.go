package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// profileTypesWindow is how far back the editor's profile type list looks by default; Pyroscope
// refuses longer ranges by default (max_query_length 1d).
const profileTypesWindow = 24 * time.Hour

// newResourceMux serves the editors' lookups. Routes only ever call the configured upstreams'
// APIs; none takes a URL or a path from the request.
func (d *Datasource) newResourceMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /upstreams", d.resourceUpstreams)
	mux.HandleFunc("GET /profile-types", d.resourceProfileTypes)
	mux.HandleFunc("GET /services", d.resourceServices)
	mux.HandleFunc("GET /label-names", d.resourceLabelNames)
	mux.HandleFunc("GET /label-values", d.resourceLabelValues)
	mux.HandleFunc("GET /variable", d.resourceVariable)
	mux.HandleFunc("GET /trace-services", d.resourceTraceServices)
	mux.HandleFunc("GET /trace-operations", d.resourceTraceOperations)
	mux.HandleFunc("GET /traces", d.resourceTraces)
	mux.HandleFunc("GET /gpu-metrics", d.resourceGPUMetrics)
	mux.HandleFunc("GET /gpu-label-values", d.resourceGPULabelValues)
	mux.HandleFunc("GET /kernel-files", d.resourceKernelFiles)
	return mux
}

// resourceUpstreams says which upstreams are configured (names and state only, no settings), so
// the editor can say which query types cannot work.
func (d *Datasource) resourceUpstreams(w http.ResponseWriter, _ *http.Request) {
	type state struct {
		Name       string `json:"name"`
		Configured bool   `json:"configured"`
		Error      string `json:"error,omitempty"`
	}
	var out []state
	for _, u := range d.settings.Upstreams() {
		s := state{Name: u.Name, Configured: u.Configured()}
		if err := d.invalid.Upstream(u.Name); err != nil {
			s.Error = err.Error()
		}
		out = append(out, s)
	}
	writeJSON(w, http.StatusOK, out)
}

// resourceProfileTypes lists Pyroscope's profile types for the editor's picker.
func (d *Datasource) resourceProfileTypes(w http.ResponseWriter, r *http.Request) {
	pyro, err := d.src.Profiles.Get()
	if err != nil {
		writeError(w, err)
		return
	}
	from, to, err := timeRange(r, profileTypesWindow)
	if err != nil {
		writeError(w, err)
		return
	}
	types, err := pyro.ProfileTypes(r.Context(), from, to)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, types)
}

// timeRange reads the optional from and to parameters (Unix milliseconds, as the editor sends
// the dashboard's range); without them it is the last window.
func timeRange(r *http.Request, window time.Duration) (from, to time.Time, err error) {
	to = time.Now()
	from = to.Add(-window)
	q := r.URL.Query()
	for name, dst := range map[string]*time.Time{"from": &from, "to": &to} {
		v := q.Get(name)
		if v == "" {
			continue
		}
		ms, perr := strconv.ParseInt(v, 10, 64)
		if perr != nil || ms < 0 {
			return from, to, fmt.Errorf("parameter %q must be Unix milliseconds, got %q", name, v)
		}
		*dst = time.UnixMilli(ms)
	}
	if !from.Before(to) {
		return from, to, fmt.Errorf("parameter \"from\" must be before \"to\"")
	}
	return from, to, nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if err := json.NewEncoder(w).Encode(v); err != nil {
		backend.Logger.Warn("writing resource response failed", "error", err)
	}
}

// writeError answers with {"error": "..."}: 502 when an upstream failed, 400 for anything the
// user must fix.
func writeError(w http.ResponseWriter, err error) {
	status := http.StatusBadRequest
	if _, ok := errors.AsType[*upstream.Error](err); ok {
		status = http.StatusBadGateway
	}
	writeJSON(w, status, map[string]string{"error": err.Error()})
}
