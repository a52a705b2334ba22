package models

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// KernelBaseline is what a kernels diff (view "diff") compares the request's kernel traces with:
// another request ({"traceId": "..."}) or the most recent requests' traces merged
// ({"recent": N, "match": "<glob>"}). Match is a glob on the file reference (path.Match): one
// without "/" matches the file's name (infer_*), one with "/" the whole reference
// (infer/*/infer_*, bucket:fleet/infer/*/*); empty, the target's own group (gputrace's default
// rule: its directory, any day, and its name before the trace ID).
type KernelBaseline struct {
	TraceID string `json:"traceId,omitempty"`
	Recent  int    `json:"recent,omitempty"`
	Match   string `json:"match,omitempty"`
}

// Bounds of a kernels diff's baseline.
const (
	// DefaultKernelBaselineRecent is how many recent requests a baseline given no traceId
	// merges (also when no baseline is given).
	DefaultKernelBaselineRecent = 10
	// MaxKernelBaselineRecent bounds baseline.recent: each request's traces are read in full.
	MaxKernelBaselineRecent = 100
	// MaxKernelBaselineMatch bounds baseline.match, in characters.
	MaxKernelBaselineMatch = 256
)

// kernelBaselineFields are the fields of a kernels diff's baseline.
var kernelBaselineFields = []string{"traceId", "recent", "match"}

// parseKernelBaseline reads a kernels diff's baseline; absent, it is the default number of
// recent requests. target is the query's own (normalised) trace ID, which the baseline must not be.
func parseKernelBaseline(raw json.RawMessage, target string) (*KernelBaseline, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return &KernelBaseline{Recent: DefaultKernelBaselineRecent}, nil
	}
	var b struct {
		TraceID json.RawMessage `json:"traceId"`
		Recent  json.RawMessage `json:"recent"`
		Match   json.RawMessage `json:"match"`
	}
	if raw[0] != '{' || json.Unmarshal(raw, &b) != nil {
		return nil, fmt.Errorf(`field "baseline" must be an object: {"traceId": "<another request>"} or {"recent": N, "match": "<glob>"}, got %s`, truncate(string(raw), 40))
	}
	traceID, err := stringField("baseline.traceId", b.TraceID)
	if err != nil {
		return nil, err
	}
	match, err := stringField("baseline.match", b.Match)
	if err != nil {
		return nil, err
	}
	recent, err := baselineRecent(b.Recent)
	if err != nil {
		return nil, err
	}
	id, err := NormalizeTraceID("baseline.traceId", traceID)
	if err != nil {
		return nil, err
	}
	match = strings.TrimSpace(match)
	switch {
	case id != "" && (recent != 0 || match != ""):
		return nil, errors.New(`field "baseline" takes "traceId" (another request) or "recent" and "match" (the most recent requests), not both`)
	case id != "":
		if sameTrace(id, target) {
			return nil, fmt.Errorf(`field "baseline.traceId" must be another request than "traceId", got %q`, id)
		}
		return &KernelBaseline{TraceID: id}, nil
	}
	if err := checkBaselineMatch(match); err != nil {
		return nil, err
	}
	if recent == 0 {
		recent = DefaultKernelBaselineRecent
	}
	return &KernelBaseline{Recent: recent, Match: match}, nil
}

// stringField reads an optional string member of a nested object.
func stringField(field string, raw json.RawMessage) (string, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("field %q must be a string, got %s", field, truncate(string(raw), 40))
	}
	return s, nil
}

// baselineRecent reads baseline.recent: unset (0) or a whole number in bounds.
func baselineRecent(raw json.RawMessage) (int, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return 0, nil
	}
	b := kernelBaselineRecentBound
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < b.Min || n > b.Max {
		return 0, fmt.Errorf("field %q must be a whole number from %d to %d (the most recent requests merged into the baseline), got %s", b.Name, b.Min, b.Max, truncate(string(raw), 40))
	}
	return int(n), nil
}

// checkBaselineMatch checks baseline.match: a glob path.Match reads, at most
// MaxKernelBaselineMatch characters, without NUL.
func checkBaselineMatch(m string) error {
	bad := func(why string) error {
		return fmt.Errorf("field \"baseline.match\" must be a glob on the trace file's reference such as infer_* or infer/*/infer_* (%s), got %q", why, truncate(m, 80))
	}
	switch {
	case len(m) > MaxKernelBaselineMatch:
		return bad(fmt.Sprintf("at most %d characters", MaxKernelBaselineMatch))
	case strings.ContainsRune(m, 0):
		return bad("no NUL")
	}
	if _, err := path.Match(m, ""); err != nil {
		return bad("* ? [a-z] and \\ as in path.Match; a [ must be closed")
	}
	return nil
}

// sameTrace says whether two normalised trace IDs name the same request: equal, or a 64-bit ID
// (padded with zeros) and the low half of a 128-bit one.
func sameTrace(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if a == b {
		return true
	}
	zero := strings.Repeat("0", 16)
	return (strings.HasPrefix(a, zero) || strings.HasPrefix(b, zero)) && a[16:] == b[16:]
}
