package models

import (
	"slices"
	"testing"
	"unicode/utf8"
)

// Every query type says what the editor shows of it and what it reads: a type missing one would
// show an empty picker entry, land in no editor group, or warn of every field it is given.
func TestEveryQueryTypeIsDeclaredInFull(t *testing.T) {
	families := []string{FamilyProfile, FamilyRequest, FamilySpans, FamilyGPU}
	var names []string
	for _, s := range QueryTypeSpecs {
		if s.Name == "" || s.Label == "" || len(s.Description) <= 40 || len(s.Fields) == 0 {
			t.Errorf("%q: label %q, description %q, fields %v", s.Name, s.Label, s.Description, s.Fields)
		}
		if !slices.Contains(families, s.Family) {
			t.Errorf("%s: family %q is none of %v", s.Name, s.Family, families)
		}
		if slices.Contains(names, s.Name) {
			t.Errorf("%s is declared twice", s.Name)
		}
		names = append(names, s.Name)
		var bounds []string
		for _, b := range s.Bounds {
			if b.Name == "" || slices.Contains(bounds, b.Name) {
				t.Errorf("%s: bound %q unnamed or repeated", s.Name, b.Name)
			}
			bounds = append(bounds, b.Name)
			if b.Max != 0 && b.Min >= b.Max || b.Default != 0 && (b.Default < b.Min || b.Max != 0 && b.Default > b.Max) {
				t.Errorf("%s: bound %+v is empty or its default outside it", s.Name, b)
			}
		}
		if got, ok := LookupQueryType(s.Name); !ok || got.Name != s.Name {
			t.Errorf("LookupQueryType(%q) = %+v, %v", s.Name, got, ok)
		}
	}
	if !slices.Equal(QueryTypes, names) {
		t.Errorf("QueryTypes = %v, the table's %v", QueryTypes, names)
	}
}

// The picker's menu is as wide as its longest description by letter count; gpuMetrics' stays the
// longest by a tenth, so no other, with wider letters, is cut short.
func TestTheGPUMetricsDescriptionIsTheLongest(t *testing.T) {
	gpu, _ := LookupQueryType(QueryTypeGPUMetrics)
	longest := utf8.RuneCountInString(gpu.Description)
	for _, s := range QueryTypeSpecs {
		if n := utf8.RuneCountInString(s.Description); s.Name != gpu.Name && n*11 > longest*10 {
			t.Errorf("%s's description has %d letters, within a tenth of gpuMetrics' %d", s.Name, n, longest)
		}
	}
}

// The bounds are the parsers': a value just outside each is refused, its default filled in.
func TestParsersEnforceTheDeclaredBounds(t *testing.T) {
	if _, err := ParseSpanQuery(QueryTypeSpanProfile, []byte(`{"service":"a","limit":1501}`)); err == nil {
		t.Error("span limit above its bound accepted")
	}
	if q, err := ParseSpanQuery(QueryTypeSpanProfile, []byte(`{"service":"a","percentile":99.9}`)); err != nil || q.Limit != spanLimitBound.Default {
		t.Errorf("span query = %+v, %v", q, err)
	}
	if q, err := ParseSlowRequestsQuery([]byte(`{}`)); err != nil || q.Limit != slowLimitBound.Default {
		t.Errorf("slow requests query = %+v, %v", q, err)
	}
	if q, err := ParseTraceQuery([]byte(`{"traceId":"a3ce929d0e0e4736"}`)); err != nil || q.MaxNodes != maxNodesBound.Default {
		t.Errorf("trace query = %+v, %v", q, err)
	}
	if q, err := ParseGPUClassQuery([]byte(`{}`)); err != nil || q.MinStep != DCGMCollectInterval {
		t.Errorf("gpuClass query = %+v, %v", q, err)
	}
}
