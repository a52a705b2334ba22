package models

import (
	"fmt"
	"regexp"
)

// FrameFilter keeps whole stacks by the names of their functions: Grafana's Pyroscope data
// source's frameFilter, sent to Pyroscope as the frame_filter of the stack-trace selector. A
// stack is kept when each include (an exact name, a regex) matches one of its frames and none of
// its frames is excluded; the frames themselves are never cut. Regexes are Go's (RE2), matched
// anywhere in the name unless anchored, as Pyroscope compiles them (pkg/phlaredb/symdb's
// FrameMatcher in grafana/pyroscope).
type FrameFilter struct {
	IncludeFunctionNames       []string `json:"includeFunctionNames,omitempty"`
	ExcludeFunctionNames       []string `json:"excludeFunctionNames,omitempty"`
	IncludeFunctionNameRegexes []string `json:"includeFunctionNameRegexes,omitempty"`
	ExcludeFunctionNameRegexes []string `json:"excludeFunctionNameRegexes,omitempty"`
}

// MaxFrameFilterItems bounds each list of a frame filter: more names than a stack has frames is a
// mistake, and each regex is run against every function name Pyroscope holds.
const MaxFrameFilterItems = 256

// Empty says whether the filter keeps every stack.
func (f FrameFilter) Empty() bool {
	return len(f.IncludeFunctionNames)+len(f.ExcludeFunctionNames)+len(f.IncludeFunctionNameRegexes)+len(f.ExcludeFunctionNameRegexes) == 0
}

// Validate checks the sizes and compiles the regexes, naming the field and item of the first
// that fails, before Pyroscope is asked: Pyroscope refuses a bad regex (invalid_argument), and
// a server that ignores the field would answer as if there were none.
func (f FrameFilter) Validate() error {
	for _, list := range []struct {
		name  string
		items []string
		regex bool
	}{
		{"includeFunctionNames", f.IncludeFunctionNames, false},
		{"excludeFunctionNames", f.ExcludeFunctionNames, false},
		{"includeFunctionNameRegexes", f.IncludeFunctionNameRegexes, true},
		{"excludeFunctionNameRegexes", f.ExcludeFunctionNameRegexes, true},
	} {
		field := "frameFilter." + list.name
		if len(list.items) > MaxFrameFilterItems {
			return fmt.Errorf("field %q holds %d items; at most %d", field, len(list.items), MaxFrameFilterItems)
		}
		for i, item := range list.items {
			if len(item) > 4096 {
				return fmt.Errorf("field %q item %d is %d bytes long; at most 4096", field, i+1, len(item))
			}
			if !list.regex {
				continue
			}
			if _, err := regexp.Compile(item); err != nil {
				return fmt.Errorf("field %q item %d is not a regular expression (Go's RE2 syntax, as Pyroscope reads it): %v", field, i+1, err)
			}
		}
	}
	return nil
}

// Matcher compiles the filter for Keeps; call Validate first (a regex that does not compile
// matches nothing here).
func (f FrameFilter) Matcher() *FrameMatcher {
	m := &FrameMatcher{include: f.IncludeFunctionNames, exclude: map[string]bool{}}
	for _, name := range f.ExcludeFunctionNames {
		m.exclude[name] = true
	}
	for _, p := range f.IncludeFunctionNameRegexes {
		if re, err := regexp.Compile(p); err == nil {
			m.includeRE = append(m.includeRE, re)
		} else {
			m.includeRE = append(m.includeRE, regexp.MustCompile(`[^\s\S]`)) // matches nothing
		}
	}
	for _, p := range f.ExcludeFunctionNameRegexes {
		if re, err := regexp.Compile(p); err == nil {
			m.excludeRE = append(m.excludeRE, re)
		}
	}
	return m
}

// FrameMatcher judges stacks as Pyroscope's FrameMatcher does.
type FrameMatcher struct {
	include   []string
	includeRE []*regexp.Regexp
	exclude   map[string]bool
	excludeRE []*regexp.Regexp
}

// Excluded says whether a frame of this name drops its stack.
func (m *FrameMatcher) Excluded(name string) bool {
	if m.exclude[name] {
		return true
	}
	for _, re := range m.excludeRE {
		if re.MatchString(name) {
			return true
		}
	}
	return false
}

// Includes is how many includes there are; IncludedBy lists the ones (by index below Includes)
// that a frame of this name satisfies.
func (m *FrameMatcher) Includes() int { return len(m.include) + len(m.includeRE) }

// IncludedBy appends to dst the indexes of the includes a frame of this name satisfies.
func (m *FrameMatcher) IncludedBy(dst []int, name string) []int {
	for i, n := range m.include {
		if n == name {
			dst = append(dst, i)
		}
	}
	for i, re := range m.includeRE {
		if re.MatchString(name) {
			dst = append(dst, len(m.include)+i)
		}
	}
	return dst
}
