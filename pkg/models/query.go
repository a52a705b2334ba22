package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// DefaultProfileTypeID is used when a query (such as Grafana's trace-to-profile link with no
// configured type) leaves profileTypeId empty.
const DefaultProfileTypeID = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

// DefaultMaxNodes matches Grafana's Pyroscope data source.
const DefaultMaxNodes = 16384

// MaxMaxNodes bounds maxNodes: a flame graph frame has a row per node, and a million rows is more
// than Grafana's flame graph draws or its response limit (GF_RESPONSE_LIMIT) lets through.
// Pyroscope applies its own bound too (-querier.max-flamegraph-nodes-max, off by default).
const MaxMaxNodes = 1 << 20

// CheckMaxNodes fills the default for 0 and bounds the rest, naming the range.
func CheckMaxNodes(n *int64) error {
	b := maxNodesBound
	switch {
	case *n == 0:
		*n = b.Default
	case *n < b.Min || *n > b.Max:
		return fmt.Errorf("field \"maxNodes\" must be from %d to %d (0 or unset: %d), got %d", b.Min, b.Max, b.Default, *n)
	}
	return nil
}

// ProfileQuery is the query of the profile, metrics, both and diff types. Field names and
// meanings are those of Grafana's Pyroscope data source (labelSelector, profileTypeId, groupBy,
// spanSelector, maxNodes, limit), so its dashboards and trace-to-profile links work unchanged;
// traceId, perService, baseline and comparison are this plugin's own.
type ProfileQuery struct {
	LabelSelector string   `json:"labelSelector"`
	ProfileTypeID string   `json:"profileTypeId"`
	MaxNodes      int64    `json:"maxNodes"`
	GroupBy       []string `json:"groupBy"`
	// SpanSelector restricts the profile to these spans (the span attribute pyroscope.profile.id,
	// which otel-profiling-go sets to the span ID).
	SpanSelector []string `json:"spanSelector"`
	// TraceID asks for the whole request: every service's span profiles of this trace.
	TraceID string `json:"traceId"`
	// PerService adds one flame graph frame per service to a traceId profile.
	PerService bool `json:"perService"`
	// Limit keeps the top series of a metrics query (0: all), as Grafana's Pyroscope data source.
	Limit int64 `json:"limit"`

	// Baseline and Comparison are the two sides of a diff query.
	Baseline   *DiffSide `json:"baseline"`
	Comparison *DiffSide `json:"comparison"`

	// The fields below are Grafana's Pyroscope data source's, with its meanings (its
	// GrafanaPyroscopeDataQuery), so that its dashboards and Explore links run unchanged.

	// IncludeExemplars asks Pyroscope for exemplars: the individual profiles (or, in a span
	// heatmap, the spans) behind each point, shown as exemplar markers (Pyroscope 1.17+).
	IncludeExemplars bool `json:"includeExemplars"`
	// IncludeHeatmap answers the metrics half as a heatmap of individual profiles' (or spans')
	// values over time instead of series (Pyroscope's SelectHeatmap, 1.19+).
	IncludeHeatmap bool `json:"includeHeatmap"`
	// HeatmapType is HeatmapIndividual (each profile a count) or HeatmapSpan (each span).
	HeatmapType string `json:"heatmapType"`
	// ProfileIDSelector keeps only these individual profiles (UUIDs, from exemplars).
	ProfileIDSelector []string `json:"profileIdSelector"`
	// StackTraceSelector keeps only the stacks under this call site, root first
	// (Pyroscope's stack_trace_selector.call_site).
	StackTraceSelector []string `json:"stackTraceSelector"`
	// Annotations adds Pyroscope's ingestion annotations (throttling, sampling) to the series.
	Annotations *bool `json:"annotations"`
	// TraceIDSelector is Grafana's list form of a trace ID: one ID means the same as traceId,
	// several the merged profile of those requests (TraceIDs).
	TraceIDSelector []string `json:"traceIdSelector"`
	// TraceIDs are the requests the profile is of, traceId's and traceIdSelector's together
	// (each once); TraceID is set too when there is one.
	TraceIDs []string `json:"-"`
	// FrameFilter keeps whole stacks by function name (Pyroscope's frame_filter).
	FrameFilter FrameFilter `json:"frameFilter"`
}

// Heatmap types of Grafana's Pyroscope data source (heatmapType).
const (
	HeatmapIndividual = "individual"
	HeatmapSpan       = "span"
)

// Bounds of the Pyroscope selectors: more profile IDs than exemplars ever list, a call site
// deeper than any real stack, are mistakes.
const (
	MaxProfileIDs    = 1000
	MaxCallSiteDepth = 256
	// MaxTraceIDs bounds the requests one profile query merges (traceIdSelector).
	MaxTraceIDs = 20
)

// profileIDRE is a profile ID as Pyroscope writes them in exemplars: a UUID.
var profileIDRE = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)

// WantsAnnotations says whether the query asked for Pyroscope's ingestion annotations.
func (q *ProfileQuery) WantsAnnotations() bool { return q.Annotations != nil && *q.Annotations }

// normalizePyroscopeFields checks the fields of Grafana's Pyroscope query model.
func (q *ProfileQuery) normalizePyroscopeFields() error {
	switch q.HeatmapType = strings.TrimSpace(q.HeatmapType); q.HeatmapType {
	case "":
		q.HeatmapType = HeatmapIndividual // Grafana's default
	case HeatmapIndividual, HeatmapSpan:
	default:
		return fmt.Errorf("field \"heatmapType\" must be %q or %q, got %q", HeatmapIndividual, HeatmapSpan, truncate(q.HeatmapType, 40))
	}
	if len(q.ProfileIDSelector) > int(profileIDsBound.Max) {
		return fmt.Errorf("field \"profileIdSelector\" holds %d profile IDs; at most %d", len(q.ProfileIDSelector), profileIDsBound.Max)
	}
	ids := q.ProfileIDSelector[:0]
	for i, id := range q.ProfileIDSelector {
		id = strings.TrimSpace(id)
		if id == "" {
			continue // Grafana's editor leaves empty entries
		}
		if !profileIDRE.MatchString(id) {
			return fmt.Errorf("field \"profileIdSelector\" item %d must be a profile ID (a UUID such as 7c9e6679-7425-40de-944b-e07fc1f90ae7, from an exemplar), got %q", i+1, truncate(id, 40))
		}
		ids = append(ids, strings.ToLower(id))
	}
	q.ProfileIDSelector = ids
	if len(q.StackTraceSelector) > int(callSiteBound.Max) {
		return fmt.Errorf("field \"stackTraceSelector\" is a call site of %d frames; at most %d", len(q.StackTraceSelector), callSiteBound.Max)
	}
	for i, fn := range q.StackTraceSelector {
		if len(strings.TrimSpace(fn)) < int(functionNameBound.Min) || len(fn) > int(functionNameBound.Max) {
			return fmt.Errorf("field \"stackTraceSelector\" item %d must be a function name (the call site, root first), got %q", i+1, truncate(fn, 40))
		}
	}
	var traceIDs []string
	for i, id := range q.TraceIDSelector {
		id, err := NormalizeTraceID(fmt.Sprintf("traceIdSelector item %d", i+1), id)
		if err != nil {
			return err
		}
		if id != "" && !slices.Contains(traceIDs, id) {
			traceIDs = append(traceIDs, id)
		}
	}
	q.TraceIDSelector = traceIDs
	if q.TraceID != "" && !slices.Contains(traceIDs, q.TraceID) {
		traceIDs = append([]string{q.TraceID}, traceIDs...)
	}
	if len(traceIDs) > int(traceIDsBound.Max) {
		return fmt.Errorf("fields \"traceId\" and \"traceIdSelector\" name %d traces; at most %d (each is one request's join)", len(traceIDs), traceIDsBound.Max)
	}
	q.TraceIDs = traceIDs
	if len(traceIDs) == 1 {
		q.TraceID = traceIDs[0]
	} else {
		q.TraceID = "" // several: the merged profile of TraceIDs
	}
	if err := q.FrameFilter.Validate(); err != nil {
		return err
	}
	if len(q.ProfileIDSelector) > 0 && (len(q.SpanSelector) > 0 || len(q.TraceIDs) > 0) {
		return errors.New(`field "profileIdSelector" excludes "spanSelector", "traceId" and "traceIdSelector": profile IDs already name the profiles`)
	}
	return nil
}

// DiffSide is one side of a diff: a time range, a label selector, a span selector or a trace ID.
// Unset fields take the query's: its label selector and the panel's time range.
type DiffSide struct {
	// From and To are Unix milliseconds or Grafana-style relative times ("now-1h", "now").
	From string `json:"from"`
	To   string `json:"to"`

	LabelSelector string   `json:"labelSelector"`
	SpanSelector  []string `json:"spanSelector"`
	TraceID       string   `json:"traceId"`
}

// ParseProfileQuery decodes and validates a query of the profile family, filling defaults.
func ParseProfileQuery(raw json.RawMessage) (*ProfileQuery, error) {
	q := &ProfileQuery{}
	if err := Decode(raw, q); err != nil {
		return nil, err
	}
	var err error
	if q.LabelSelector, err = NormalizeLabelSelector("labelSelector", q.LabelSelector); err != nil {
		return nil, err
	}
	q.ProfileTypeID = strings.TrimSpace(q.ProfileTypeID)
	if q.ProfileTypeID == "" {
		q.ProfileTypeID = DefaultProfileTypeID
	}
	if err := ValidateProfileTypeID(q.ProfileTypeID); err != nil {
		return nil, err
	}
	if q.SpanSelector, err = NormalizeSpanSelector("spanSelector", q.SpanSelector); err != nil {
		return nil, err
	}
	if q.TraceID, err = NormalizeTraceID("traceId", q.TraceID); err != nil {
		return nil, err
	}
	if err := q.normalizePyroscopeFields(); err != nil {
		return nil, err
	}
	if len(q.TraceIDs) > 0 && len(q.SpanSelector) > 0 {
		return nil, errors.New(`field "spanSelector" cannot be combined with "traceId" or "traceIdSelector": a trace ID already selects its spans, and Pyroscope refuses span and trace selectors together`)
	}
	for i, g := range q.GroupBy {
		if !ValidLabelName(g) {
			return nil, fmt.Errorf("field \"groupBy\" item %d must be a label name, got %q", i+1, truncate(g, 40))
		}
	}
	if err := CheckMaxNodes(&q.MaxNodes); err != nil {
		return nil, err
	}
	if q.Limit < profileLimitBound.Min {
		return nil, fmt.Errorf("field \"limit\" must be zero (all series) or positive, got %d", q.Limit)
	}
	for name, side := range map[string]*DiffSide{"baseline": q.Baseline, "comparison": q.Comparison} {
		if side == nil {
			continue
		}
		if err := side.normalize(name); err != nil {
			return nil, err
		}
	}
	return q, nil
}

func (s *DiffSide) normalize(name string) (err error) {
	s.From, s.To = strings.TrimSpace(s.From), strings.TrimSpace(s.To)
	if s.LabelSelector != "" {
		if s.LabelSelector, err = NormalizeLabelSelector(name+".labelSelector", s.LabelSelector); err != nil {
			return err
		}
	}
	if s.SpanSelector, err = NormalizeSpanSelector(name+".spanSelector", s.SpanSelector); err != nil {
		return err
	}
	if s.TraceID, err = NormalizeTraceID(name+".traceId", s.TraceID); err != nil {
		return err
	}
	if s.TraceID != "" && len(s.SpanSelector) > 0 {
		return fmt.Errorf(`fields "%s.traceId" and "%s.spanSelector" exclude each other`, name, name)
	}
	return nil
}

// Range resolves the side's time range against now; unset ends take the panel's range.
func (s *DiffSide) Range(panelFrom, panelTo, now time.Time, name string) (from, to time.Time, err error) {
	from, to = panelFrom, panelTo
	if s.From != "" {
		if from, err = ParseTime(s.From, now); err != nil {
			return from, to, fmt.Errorf("field \"%s.from\": %w", name, err)
		}
	}
	if s.To != "" {
		if to, err = ParseTime(s.To, now); err != nil {
			return from, to, fmt.Errorf("field \"%s.to\": %w", name, err)
		}
	}
	if !from.Before(to) {
		return from, to, fmt.Errorf("field \"%s.from\" must be before \"%s.to\"", name, name)
	}
	return from, to, nil
}

// ParseTime reads Unix milliseconds or a Grafana-style relative time: "now", "now-1h", "now-90m".
func ParseTime(s string, now time.Time) (time.Time, error) {
	if s == "now" {
		return now, nil
	}
	if rest, ok := strings.CutPrefix(s, "now-"); ok {
		d, err := time.ParseDuration(expandDays(rest))
		if err != nil || d <= 0 {
			return time.Time{}, fmt.Errorf("%q is not a relative time such as now-1h, now-30m or now-2d", s)
		}
		return now.Add(-d), nil
	}
	var ms int64
	if _, err := fmt.Sscanf(s, "%d", &ms); err != nil || fmt.Sprint(ms) != s || ms < 0 {
		return time.Time{}, fmt.Errorf("%q is neither Unix milliseconds nor a relative time such as now-1h", s)
	}
	return time.UnixMilli(ms), nil
}

// expandDays lets "2d" through time.ParseDuration, which stops at hours.
func expandDays(s string) string {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		var days int
		if _, err := fmt.Sscanf(n, "%d", &days); err == nil && fmt.Sprint(days) == n {
			return fmt.Sprintf("%dh", days*24)
		}
	}
	return s
}

// NormalizeLabelSelector checks that s is a Prometheus-style label selector ({a="b", c=~"d"}),
// as Pyroscope reads them, so a typo is reported here with the field's name rather than by
// Pyroscope. Empty means every series: "{}".
func NormalizeLabelSelector(field, s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "{}" {
		return "{}", nil
	}
	if _, err := ParseLabelSelector(s); err != nil {
		return "", fmt.Errorf("field %q is not a label selector such as {service_name=\"api\"}: %v", field, err)
	}
	return s, nil
}

// ParseLabelSelector parses a selector with the PromQL parser; "{}" gives no matchers.
func ParseLabelSelector(s string) ([]*labels.Matcher, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "{}" {
		return nil, nil
	}
	return selectorParser.ParseMetricSelector(s)
}

// selectorParser is Prometheus' own PromQL parser: selectors are never hand-parsed.
var selectorParser = parser.NewParser(parser.Options{})

// NormalizeSpanSelector lower-cases and checks span IDs (16 hex digits each).
func NormalizeSpanSelector(field string, ids []string) ([]string, error) {
	out := make([]string, 0, len(ids))
	for i, id := range ids {
		id = strings.ToLower(strings.TrimSpace(id))
		if !isHex(id, 16) {
			return nil, fmt.Errorf("field %q item %d must be a span ID of 16 hex digits, got %q", field, i+1, truncate(ids[i], 40))
		}
		out = append(out, id)
	}
	return out, nil
}

// NormalizeTraceID accepts a trace ID of 32 hex digits, or 16 (Jaeger's 64-bit IDs, padded to
// 32 with leading zeros as Jaeger stores them); empty stays empty.
func NormalizeTraceID(field, id string) (string, error) {
	id = strings.ToLower(strings.TrimSpace(id))
	switch {
	case id == "":
		return "", nil
	case isHex(id, 32):
		return id, nil
	case isHex(id, 16):
		return strings.Repeat("0", 16) + id, nil
	}
	if plain := strings.ReplaceAll(id, "-", ""); plain != id && isHex(plain, 32) {
		return "", fmt.Errorf("field %q must be a trace ID of 32 hex digits without dashes (as Jaeger and Tempo show it), got %q: use %q", field, truncate(id, 40), plain)
	}
	return "", fmt.Errorf("field %q must be a trace ID of 32 hex digits (or 16), without dashes, got %q", field, truncate(id, 40))
}

// isHex reports whether s is exactly n hex digits.
func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// ValidLabelName reports whether s is a valid Prometheus/Pyroscope label name.
func ValidLabelName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// SampleType is the second part of a profile type ID ("cpu", "alloc_objects", ...): it names
// the value of series frames and the profile columns of the span table.
func SampleType(profileTypeID string) string {
	parts := strings.Split(profileTypeID, ":")
	if len(parts) < 2 || parts[1] == "" {
		return "value"
	}
	return parts[1]
}

// ValidateProfileTypeID checks the name:type:unit:period_type:period_unit form.
func ValidateProfileTypeID(id string) error {
	parts := strings.Split(id, ":")
	if len(parts) != 5 {
		return fmt.Errorf("field \"profileTypeId\" must have the form name:sample_type:sample_unit:period_type:period_unit (e.g. %s), got %q", DefaultProfileTypeID, truncate(id, 80))
	}
	for i, p := range parts {
		if p == "" {
			return fmt.Errorf("field \"profileTypeId\" has an empty part %d in %q", i+1, truncate(id, 80))
		}
	}
	return nil
}

// Decode unmarshals query JSON into dst and, when it fails, says which field was wrong and how.
// Unknown fields are allowed: Grafana adds its own (refId, datasource, intervalMs, ...).
func Decode(raw json.RawMessage, dst any) error {
	if len(raw) == 0 {
		return nil
	}
	err := json.Unmarshal(raw, dst)
	if err == nil {
		return nil
	}
	if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
		field := te.Field
		if field == "" {
			return fmt.Errorf("query JSON must be an object, got %s", te.Value)
		}
		got := te.Value
		if kind := te.Type.Kind().String(); strings.HasPrefix(kind, "int") || strings.HasPrefix(kind, "uint") {
			// encoding/json reports a number too large or not whole as "number 1e+30".
			if n, ok := strings.CutPrefix(te.Value, "number "); ok {
				got = n
			}
			if r, ok := wholeNumberRanges[field]; ok {
				return fmt.Errorf("field %q must be a whole number from %s, got %s", field, r, got)
			}
			return fmt.Errorf("field %q must be a whole number, got %s", field, got)
		}
		return fmt.Errorf("field %q must be %s, got %s", field, describeGoType(te.Type.Kind().String()), got)
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Errorf("query JSON is malformed at byte %d: %v", se.Offset, se)
	}
	return fmt.Errorf("query JSON could not be read: %v", err)
}

// wholeNumberRanges say the allowed range of number fields, for the message when a value does not
// even decode.
var wholeNumberRanges = map[string]string{
	"maxNodes": fmt.Sprintf("%d to %d", maxNodesBound.Min, maxNodesBound.Max),
}

func describeGoType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "int", "int64", "int32", "uint", "uint64", "float64", "float32":
		return "a number"
	case "bool":
		return "true or false"
	case "slice", "array":
		return "a list"
	case "map", "struct", "ptr":
		return "an object"
	}
	return kind
}
