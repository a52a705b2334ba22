package models

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// gpuFilterFields are the GPUFilter's fields (gpuMetrics and gpuClass).
var gpuFilterFields = []string{"hosts", "gpus", "models", "pods", "namespaces", "gpuSelector"}

// profileFields are the fields of the profile family (ProfileQuery).
var profileFields = []string{"labelSelector", "profileTypeId", "maxNodes", "groupBy", "spanSelector", "traceId", "perService", "limit", "baseline", "comparison",
	"includeExemplars", "includeHeatmap", "heatmapType", "profileIdSelector", "stackTraceSelector", "annotations", "traceIdSelector", "frameFilter"}

// spanFields are the fields of the span queries (SpanQuery).
var spanFields = []string{"service", "operation", "minDuration", "percentile", "limit", "profileTypeId", "maxNodes"}

// The fields of the tail query: an endpoint, how its tail is chosen, how many requests.
var tailFields = []string{"service", "operation", "percentile", "minDuration", "slo", "maxTraces", "limit", "profileTypeId", "parts"}

// The fields of the GPU queries: the filter's and their own.
var (
	gpuMetricsFields = append(slices.Clone(gpuFilterFields), "metrics", "aggregation")
	gpuClassFields   = append(slices.Clone(gpuFilterFields), "format", "minStep", "classes")
	triageFields     = append(slices.Clone(gpuFilterFields), "view", "services", "classes")
)

// queryFields are the fields each query type reads (QueryTypeSpecs); anything else in a query is
// ignored, and FieldWarnings says so.
var queryFields = func() map[string][]string {
	out := map[string][]string{}
	for _, s := range QueryTypeSpecs {
		out[s.Name] = s.Fields
	}
	return out
}()

// diffSideFields are the fields of a diff's baseline and comparison (DiffSide).
var diffSideFields = []string{"from", "to", "labelSelector", "spanSelector", "traceId"}

// grafanaFields are what Grafana itself puts in every query model (dashboards, Explore,
// alerting, the query editor's own state): never the user's mistake.
var grafanaFields = []string{"refId", "datasource", "datasourceId", "hide", "key", "queryType", "intervalMs", "maxDataPoints", "interval", "intervalFactor", "legendFormat", "editorMode", "format", "exemplar", "instant", "range"}

// FieldWarnings names the fields of a query model that no query type reads, each with the nearest
// field its type does read when there is one ("labelselector": did you mean "labelSelector"?). A
// field the user misspelt is otherwise silently ignored, and the answer covers more than asked.
// Fields of other query types are not named (the editor keeps them when the type changes).
// Models that are not JSON objects give no warning (the parser says why).
func FieldWarnings(queryType string, raw json.RawMessage) []string {
	known, ok := queryFields[queryType]
	if !ok {
		return nil
	}
	var model map[string]json.RawMessage
	if json.Unmarshal(raw, &model) != nil {
		return nil
	}
	out := unknownFields("", model, known, queryType)
	if spec, _ := LookupQueryType(queryType); spec.Family == FamilyProfile {
		for _, side := range []string{"baseline", "comparison"} {
			out = append(out, nestedWarnings(side, model[side], diffSideFields, kernelBaselineFields, queryType)...)
		}
	}
	if queryType == QueryTypeKernels {
		out = append(out, nestedWarnings("baseline", model["baseline"], kernelBaselineFields, diffSideFields, queryType)...)
	}
	return out
}

// nestedWarnings names the unknown fields of a nested object; the fields another query type
// reads in its object of the same name (a profile diff's baseline, a kernels diff's) are left
// over from switching the type, and passed over quietly.
func nestedWarnings(name string, raw json.RawMessage, known, others []string, queryType string) []string {
	var nested map[string]json.RawMessage
	if json.Unmarshal(raw, &nested) != nil {
		return nil
	}
	for k := range nested {
		if !slices.Contains(known, k) && slices.Contains(others, k) {
			delete(nested, k)
		}
	}
	return unknownFields(name+".", nested, known, queryType)
}

func unknownFields(prefix string, model map[string]json.RawMessage, known []string, queryType string) []string {
	var names []string
	for name := range model {
		// A field of another query type is left over from switching the type in the editor,
		// which keeps the fields: not a mistake, and a warning on every such panel would be noise.
		if !slices.Contains(known, name) && (prefix != "" || !slices.Contains(grafanaFields, name) && !anyQueryField(name)) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		switch near := nearestField(name, known); {
		case near != "":
			out = append(out, fmt.Sprintf("unknown field %q was ignored: did you mean %q?", prefix+truncate(name, 40), prefix+near))
		default:
			out = append(out, fmt.Sprintf("unknown field %q was ignored: a %s query reads %s", prefix+truncate(name, 40), queryType, prefix+strings.Join(known, ", "+prefix)))
		}
	}
	return out
}

// anyQueryField says whether some query type reads the field.
func anyQueryField(name string) bool {
	for _, fields := range queryFields {
		if slices.Contains(fields, name) {
			return true
		}
	}
	return false
}

// nearestField is the known field a misspelt name most likely meant: the same letters in another
// case, or at most two edits away (one for names under six letters); "" when none.
func nearestField(name string, known []string) string {
	best, bestD := "", -1
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
		d := editDistance(strings.ToLower(name), strings.ToLower(k))
		if d <= min(2, max(1, len(k)/3)) && (bestD < 0 || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance between a and b: insertions,
// deletions, substitutions and swaps of neighbours ("form" for "from") cost one each.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return max(len(a), len(b)) // not a field name: do not spend on it
	}
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
