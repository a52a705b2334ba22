package models

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
)

// GPU class query formats: which frames the query returns.
const (
	GPUClassFormatAll      = "all"      // timeline, summary and shares (the default)
	GPUClassFormatTimeline = "timeline" // the state timeline only
	GPUClassFormatSummary  = "summary"  // the table only
	// GPUClassFormatShares returns only the numeric share series: what a Grafana alert rule
	// must ask for, as server-side expressions refuse string fields.
	GPUClassFormatShares = "shares"
)

// DCGMCollectInterval is dcgm-exporter's default collect interval: the default smallest step of
// a gpuClass query, as finer steps only repeat samples.
const DCGMCollectInterval = 30 * time.Second

// GPUClassQuery is the query of the gpuClass type:
//
//	{"queryType":"gpuClass","hosts":["fixture-node-a"],"gpus":["0","3"],"models":[],
//	 "pods":[],"namespaces":[],"format":"all","minStep":"30s","classes":["thermal-throttled"]}
//
// The filter fields are GPUFilter's (gpuSelector too); format picks the frames; minStep is the
// smallest step (default 30 s, DCGM's collect interval): the step is the panel's interval, but
// never below it; classes keeps only those classes' share series (empty: every class), so that
// an alert rule makes one instance per GPU and class that matters, not one per GPU and class.
type GPUClassQuery struct {
	GPUFilter
	Format  string           `json:"format"`
	Classes []classify.Class `json:"classes"`
	MinStep time.Duration    `json:"-"`
}

// ParseGPUClassQuery decodes and validates a gpuClass query, filling defaults.
func ParseGPUClassQuery(raw json.RawMessage) (*GPUClassQuery, error) {
	// The filter and the rest are decoded apart so that type errors name "gpus", not the
	// embedded struct's path "GPUFilter.gpus".
	f, err := ParseGPUFilter(raw)
	if err != nil {
		return nil, err
	}
	var rest struct {
		Format  string   `json:"format"`
		MinStep string   `json:"minStep"`
		Classes []string `json:"classes"`
	}
	if err := Decode(raw, &rest); err != nil {
		return nil, err
	}
	q := &GPUClassQuery{GPUFilter: *f, Format: strings.TrimSpace(rest.Format), MinStep: time.Duration(minStepBound.Default) * time.Second}
	switch q.Format {
	case "":
		q.Format = GPUClassFormatAll
	case GPUClassFormatAll, GPUClassFormatTimeline, GPUClassFormatSummary, GPUClassFormatShares:
	default:
		return nil, fmt.Errorf("field \"format\" must be %q (the default: timeline, summary and shares), %q, %q or %q (numeric series, for alert rules), got %q",
			GPUClassFormatAll, GPUClassFormatTimeline, GPUClassFormatSummary, GPUClassFormatShares, truncate(q.Format, 40))
	}
	for _, c := range rest.Classes {
		class := classify.Class(strings.TrimSpace(c))
		if class == classify.NoData || !slices.Contains(classify.Classes, class) {
			return nil, fmt.Errorf("field \"classes\" lists the classes whose shares to answer, among %s; got %q", classNames(), truncate(c, 40))
		}
		if !slices.Contains(q.Classes, class) {
			q.Classes = append(q.Classes, class)
		}
	}
	if s := strings.TrimSpace(rest.MinStep); s != "" {
		d, err := parseStepDuration(s)
		if err != nil || d < time.Duration(minStepBound.Min)*time.Second || d%time.Second != 0 {
			return nil, fmt.Errorf("field \"minStep\" must be whole seconds of at least %ds, such as \"15s\" or \"1m\", got %q", minStepBound.Min, truncate(s, 40))
		}
		q.MinStep = d
	}
	return q, nil
}

// classNames lists the classes a query may name, quoted.
func classNames() string {
	var names []string
	for _, c := range classify.Classes {
		if c != classify.NoData {
			names = append(names, strconv.Quote(string(c)))
		}
	}
	return strings.Join(names, ", ")
}
