package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Query types, as dashboards store them (PRODUCT.md). Only the ones this build answers are
// registered with the query mux; the others say so in a per-query error.
const (
	QueryTypeProfile = "profile"
)

// DefaultProfileTypeID is used when a query (such as Grafana's trace-to-profile link with no
// configured type) leaves profileTypeId empty.
const DefaultProfileTypeID = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

// DefaultMaxNodes matches Grafana's Pyroscope data source.
const DefaultMaxNodes = 16384

// ProfileQuery asks for a flame graph. Field names and meanings are those of Grafana's Pyroscope
// data source, so its dashboards and trace-to-profile links work unchanged.
type ProfileQuery struct {
	LabelSelector string   `json:"labelSelector"`
	ProfileTypeID string   `json:"profileTypeId"`
	MaxNodes      int64    `json:"maxNodes"`
	GroupBy       []string `json:"groupBy"`
}

// ParseProfileQuery decodes and validates a profile query, filling defaults.
func ParseProfileQuery(raw json.RawMessage) (*ProfileQuery, error) {
	q := &ProfileQuery{}
	if err := Decode(raw, q); err != nil {
		return nil, err
	}
	q.LabelSelector = strings.TrimSpace(q.LabelSelector)
	if q.LabelSelector == "" {
		q.LabelSelector = "{}"
	}
	q.ProfileTypeID = strings.TrimSpace(q.ProfileTypeID)
	if q.ProfileTypeID == "" {
		q.ProfileTypeID = DefaultProfileTypeID
	}
	if err := ValidateProfileTypeID(q.ProfileTypeID); err != nil {
		return nil, err
	}
	switch {
	case q.MaxNodes == 0:
		q.MaxNodes = DefaultMaxNodes
	case q.MaxNodes < 0:
		return nil, fmt.Errorf("field \"maxNodes\" must be positive, got %d", q.MaxNodes)
	}
	return q, nil
}

// ValidateProfileTypeID checks the name:type:unit:period_type:period_unit form.
func ValidateProfileTypeID(id string) error {
	parts := strings.Split(id, ":")
	if len(parts) != 5 {
		return fmt.Errorf("field \"profileTypeId\" must have the form name:sample_type:sample_unit:period_type:period_unit (e.g. %s), got %q", DefaultProfileTypeID, id)
	}
	for i, p := range parts {
		if p == "" {
			return fmt.Errorf("field \"profileTypeId\" has an empty part %d in %q", i+1, id)
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
		return fmt.Errorf("field %q must be %s, got %s", field, describeGoType(te.Type.Kind().String()), te.Value)
	}
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		return fmt.Errorf("query JSON is malformed at byte %d: %v", se.Offset, se)
	}
	return fmt.Errorf("query JSON could not be read: %v", err)
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
	case "map", "struct":
		return "an object"
	}
	return kind
}
