package plugin

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/prometheus"
)

// gpuLabelsWindow is how far back the GPU pickers look without from/to.
const gpuLabelsWindow = profileTypesWindow

// gpuCatalogueEntry is one metric of the gpu-metrics resource.
type gpuCatalogueEntry struct {
	Name         string   `json:"name"`
	Title        string   `json:"title"`
	Description  string   `json:"description"`
	Unit         string   `json:"unit"`
	Sources      []string `json:"sources,omitempty"`
	ComputedFrom []string `json:"computedFrom,omitempty"`
}

// resourceGPUMetrics lists the GPU metric catalogue (with this data source's metric name
// overrides) for the editor's metric picker. It needs no upstream.
func (d *Datasource) resourceGPUMetrics(w http.ResponseWriter, _ *http.Request) {
	if d.invalid.GPU != nil {
		writeError(w, fmt.Errorf("invalid GPU settings: %w", d.invalid.GPU))
		return
	}
	cat := prometheus.NewCatalogue(d.settings.DCGM)
	out := []gpuCatalogueEntry{}
	for _, m := range cat.Metrics() {
		e := gpuCatalogueEntry{Name: m.Name, Title: m.Title, Description: m.Description, Unit: m.Unit, ComputedFrom: m.ComputedFrom}
		for _, s := range m.Sources {
			e.Sources = append(e.Sources, s.Metric)
		}
		out = append(out, e)
	}
	writeJSON(w, http.StatusOK, out)
}

// gpuFilterParams are the query parameters that scope gpu-label-values, one value per
// repetition (hosts=a&hosts=b), as the editor's multi-selects send them.
var gpuFilterParams = []string{"hosts", "gpus", "models", "pods", "namespaces"}

// resourceGPULabelValues lists one role's values among the DCGM series, across every label
// name the role goes by: GET gpu-label-values?role=host|gpu|uuid|model|pod|namespace|container|mig
// with optional from, to (Unix ms), hosts, gpus, models, pods, namespaces and gpuSelector to
// scope it (the GPUs of the chosen hosts, say).
func (d *Datasource) resourceGPULabelValues(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	for name := range q {
		if name != "role" && name != "from" && name != "to" && name != "gpuSelector" && !slices.Contains(gpuFilterParams, name) {
			writeError(w, fmt.Errorf("unknown parameter %q; gpu-label-values takes role, from, to, gpuSelector, %s", name, strings.Join(gpuFilterParams, ", ")))
			return
		}
	}
	role := q.Get("role")
	if !slices.Contains(models.GPURoles, role) {
		writeError(w, fmt.Errorf("parameter \"role\" must be one of %s, got %q", strings.Join(models.GPURoles, ", "), role))
		return
	}
	filter := models.GPUFilter{Hosts: q["hosts"], GPUs: q["gpus"], Models: q["models"], Pods: q["pods"], Namespaces: q["namespaces"], GPUSelector: q.Get("gpuSelector")}
	if err := filter.Normalize(""); err != nil {
		writeError(w, err)
		return
	}
	from, to, err := timeRange(r, gpuLabelsWindow)
	if err != nil {
		writeError(w, err)
		return
	}
	prom, err := d.src.GPUs.Get()
	if err != nil {
		writeError(w, err)
		return
	}
	values, err := prom.GPULabelValues(r.Context(), role, filter, from, to)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, values)
}
