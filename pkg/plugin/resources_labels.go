package plugin

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
)

// labelsWindow is how far back the label lookups look without from/to: the longest range
// Pyroscope accepts by default (max_query_length 1d).
const labelsWindow = profileTypesWindow

// resourceServices lists Pyroscope's service_name values, for the editor's service picker.
func (d *Datasource) resourceServices(w http.ResponseWriter, r *http.Request) {
	pyro, err := d.src.Profiles.Get()
	if err != nil {
		writeError(w, err)
		return
	}
	from, to, err := timeRange(r, labelsWindow)
	if err != nil {
		writeError(w, err)
		return
	}
	services, err := pyro.LabelValues(r.Context(), pyroscope.ServiceNameLabel, "{}", from, to)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, services)
}

// resourceLabelNames lists the label names of the series matching the optional selector,
// without Pyroscope's internal __...__ labels.
func (d *Datasource) resourceLabelNames(w http.ResponseWriter, r *http.Request) {
	pyro, selector, from, to, err := d.labelParams(r)
	if err != nil {
		writeError(w, err)
		return
	}
	names, err := pyro.LabelNames(r.Context(), selector, from, to)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, names)
}

// resourceLabelValues lists the values of one label among the series matching the optional
// selector.
func (d *Datasource) resourceLabelValues(w http.ResponseWriter, r *http.Request) {
	pyro, selector, from, to, err := d.labelParams(r)
	if err != nil {
		writeError(w, err)
		return
	}
	label, err := labelParam(r)
	if err != nil {
		writeError(w, err)
		return
	}
	values, err := pyro.LabelValues(r.Context(), label, selector, from, to)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, values)
}

// labelParams returns the Pyroscope client (or why there is none) and reads selector, from and to.
func (d *Datasource) labelParams(r *http.Request) (pyro correlate.ProfileStore, selector string, from, to time.Time, err error) {
	if pyro, err = d.src.Profiles.Get(); err != nil {
		return nil, "", from, to, err
	}
	if selector, err = selectorParam(r.URL.Query().Get("selector")); err != nil {
		return nil, "", from, to, err
	}
	from, to, err = timeRange(r, labelsWindow)
	return pyro, selector, from, to, err
}

// selectorParam validates the selector parameter with the query model's own check, so the
// editor's lookups accept exactly the selectors its queries accept; empty means every series.
func selectorParam(raw string) (string, error) {
	s, err := models.NormalizeLabelSelector("selector", raw)
	if err != nil {
		// NormalizeLabelSelector speaks of query fields; a resource has parameters.
		_, cause := models.ParseLabelSelector(raw)
		return "", fmt.Errorf("parameter \"selector\" must be a label selector such as {service_name=\"api\"}: %v", cause)
	}
	return s, nil
}

// labelParam reads the required label parameter.
func labelParam(r *http.Request) (string, error) {
	label := strings.TrimSpace(r.URL.Query().Get("label"))
	if label == "" {
		return "", fmt.Errorf("parameter \"label\" is required: the label whose values to list, such as %s", pyroscope.ServiceNameLabel)
	}
	if !models.ValidLabelName(label) {
		return "", fmt.Errorf("parameter \"label\" must be a label name (letters, digits and _, not starting with a digit), got %q", truncateParam(label))
	}
	return label, nil
}

func truncateParam(s string) string {
	if r := []rune(s); len(r) > 40 {
		return string(r[:40]) + "…"
	}
	return s
}
