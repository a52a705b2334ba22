package gputrace

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// A kernel diff compares the kernels of a request (the target) with a baseline (another
// request, or several recent requests merged). Each side is built file by file (DiffSide.Add
// keeps per kernel name counts and totals and the summed temporal breakdown, never a file's
// intervals), and its figures are divided by its number of requests, so a baseline of ten
// requests compares with one.

// MinDiffLaunches is the fewest kernel launches a side needs before its per-kernel figures mean
// much: a kernel launched a handful of times moves by a large share from one request to the next.
const MinDiffLaunches = 100

// MaxDiffFileNotices bounds how many of its files' own notices (caps, overlaps) a side passes on.
const MaxDiffFileNotices = 10

// Which side a kernel is the only one on.
const (
	OnlyInBaseline = "baseline"
	OnlyInTarget   = "target"
)

// KernelTotals is one kernel name's launches and summed time on one side.
type KernelTotals struct{ Count, Total int64 }

// DiffSide is the kernel traces of one side of a diff merged: per kernel name the launches and
// the summed time, the temporal breakdown summed over files (and GPUs), and how many requests
// and files it holds.
type DiffSide struct {
	// Name is "baseline" or "target"; Describe says what the side is, in words ("trace 4bf9…",
	// "the 10 most recent traces matching infer/*/infer_*").
	Name, Describe string
	// Requests is how many requests the side's files read belong to (the divisor of its
	// figures); Files the references of the files read, whole or in part, of the Tried.
	Requests int
	Files    []string
	Tried    int
	Kernels  map[string]*KernelTotals
	// Launches is the kernel launches summed over names; KernelTime their time.
	Launches, KernelTime int64
	// Temporal is the files' temporal breakdowns summed (Span, Compute, Communication,
	// Memory, Idle; Start and End unused).
	Temporal TemporalBreakdown
	Notices  notices.List

	fileNotices int             // of the files' own notices passed on so far
	requests    map[string]bool // the requests of the files read
}

// NewDiffSide is an empty side.
func NewDiffSide(name, describe string) *DiffSide {
	return &DiffSide{Name: name, Describe: describe, Kernels: map[string]*KernelTotals{}, requests: map[string]bool{}}
}

// Add merges the analysis of one file of a request into the side; err is the file's read error.
// A file that failed is a warning naming it and the side (what was read before the error
// counts); the other files stand. A request counts once anything of one of its files was read.
// It reports whether anything of the file was read.
func (s *DiffSide) Add(request, file string, r *Result, err error) bool {
	s.Tried++
	if err != nil && r != nil && len(r.Kernels) == 0 && r.Temporal.Span == 0 {
		r = nil // it failed before any GPU activity: counting its request would dilute the side
	}
	switch {
	case err != nil && r != nil:
		s.Notices.Warnf("%s %s: %v (figures cover what was read before it)", s.Name, file, err)
	case err != nil:
		s.Notices.Warnf("%s %s: %v (nothing of it was read; the side's other files stand)", s.Name, file, err)
	}
	if r == nil {
		return false
	}
	s.Files = append(s.Files, file)
	if !s.requests[request] {
		s.requests[request] = true
		s.Requests++
	}
	for _, k := range r.Kernels {
		t := s.Kernels[k.Name]
		if t == nil {
			t = &KernelTotals{}
			s.Kernels[k.Name] = t
		}
		t.Count += k.Instances
		t.Total += k.Total
		s.Launches += k.Instances
		s.KernelTime += k.Total
	}
	s.Temporal.Span += r.Temporal.Span
	s.Temporal.Compute += r.Temporal.Compute
	s.Temporal.Communication += r.Temporal.Communication
	s.Temporal.Memory += r.Temporal.Memory
	s.Temporal.Idle += r.Temporal.Idle
	for _, n := range r.Notices {
		if n.Severity != notices.Warning {
			continue
		}
		if s.fileNotices == MaxDiffFileNotices {
			s.Notices.Warnf("%s: more of its files' notices are left out (the summary view of each file shows them)", s.Name)
		}
		s.fileNotices++
		if s.fileNotices <= MaxDiffFileNotices {
			s.Notices.Add(notices.Notice{Severity: n.Severity, Text: s.Name + " " + file + ": " + n.Text})
		}
	}
	return true
}

// perRequest divides a side's figure by its requests (0 without any).
func (s *DiffSide) perRequest(v int64) float64 {
	if s.Requests == 0 {
		return 0
	}
	return float64(v) / float64(s.Requests)
}

// TemporalPerRequest is the side's temporal breakdown per request: compute, communication,
// memcpy/memset, idle and the span they split, each divided by the side's requests.
func (s *DiffSide) TemporalPerRequest() (span, compute, communication, memory, idle float64) {
	t := s.Temporal
	return s.perRequest(t.Span), s.perRequest(t.Compute), s.perRequest(t.Communication), s.perRequest(t.Memory), s.perRequest(t.Idle)
}

// KernelSide is one kernel's figures on one side, per request of that side.
type KernelSide struct {
	Count, Total                     int64   // summed over the side's requests
	CountPerRequest, TotalPerRequest float64 // divided by the side's requests
	Mean                             float64 // Total / Count; 0 when the side has no launch of it
}

// KernelChange is one kernel name across the two sides.
type KernelChange struct {
	Name             string
	Baseline, Target KernelSide
	// Change is Target.TotalPerRequest − Baseline.TotalPerRequest (ns per request);
	// ChangePercent it in percent of the baseline's (HasPercent false when the baseline has none).
	Change        float64
	ChangePercent float64
	HasPercent    bool
	// MeanChange is Target.Mean − Baseline.Mean (HasMeanChange false unless both sides ran it).
	MeanChange    float64
	HasMeanChange bool
	// OnlyIn is OnlyInBaseline or OnlyInTarget for a kernel one side never ran, else "".
	OnlyIn string
}

// KernelDiff is a request's kernels against a baseline's: per kernel name, biggest change in
// time per request first; both sides, to read their temporal breakdowns per request; and
// notices (how the sides were normalised, little data, files that failed).
type KernelDiff struct {
	Baseline, Target *DiffSide
	Kernels          []KernelChange
	Notices          notices.List
}

// Diff compares the target with the baseline, each side's figures divided by its requests.
// Kernels are ordered by the absolute change in time per request, then by name.
func Diff(base, target *DiffSide) *KernelDiff {
	d := &KernelDiff{Baseline: base, Target: target}
	names := make(map[string]bool, len(base.Kernels)+len(target.Kernels))
	for n := range base.Kernels {
		names[n] = true
	}
	for n := range target.Kernels {
		names[n] = true
	}
	side := func(s *DiffSide, name string) KernelSide {
		t := s.Kernels[name]
		if t == nil || s.Requests == 0 {
			return KernelSide{}
		}
		k := KernelSide{Count: t.Count, Total: t.Total, CountPerRequest: s.perRequest(t.Count), TotalPerRequest: s.perRequest(t.Total)}
		if t.Count > 0 {
			k.Mean = float64(t.Total) / float64(t.Count)
		}
		return k
	}
	d.Kernels = make([]KernelChange, 0, len(names))
	for n := range names {
		c := KernelChange{Name: n, Baseline: side(base, n), Target: side(target, n)}
		c.Change = c.Target.TotalPerRequest - c.Baseline.TotalPerRequest
		if c.Baseline.TotalPerRequest > 0 {
			c.ChangePercent, c.HasPercent = 100*c.Change/c.Baseline.TotalPerRequest, true
		}
		switch {
		case c.Baseline.Count == 0 && c.Target.Count > 0:
			c.OnlyIn = OnlyInTarget
		case c.Target.Count == 0 && c.Baseline.Count > 0:
			c.OnlyIn = OnlyInBaseline
		case c.Baseline.Count > 0:
			c.MeanChange, c.HasMeanChange = c.Target.Mean-c.Baseline.Mean, true
		}
		d.Kernels = append(d.Kernels, c)
	}
	sort.Slice(d.Kernels, func(i, j int) bool {
		ai, aj := math.Abs(d.Kernels[i].Change), math.Abs(d.Kernels[j].Change)
		if ai != aj {
			return ai > aj
		}
		return d.Kernels[i].Name < d.Kernels[j].Name
	})
	d.Notices.Merge(target.Notices)
	d.Notices.Merge(base.Notices)
	for _, s := range []*DiffSide{target, base} {
		if s.Tried > 0 && s.Requests == 0 {
			d.Notices.Warnf("None of the %s's %s could be read (%s): its figures are empty.", s.Name, plural(s.Tried, "file"), s.Describe)
		}
	}
	if few := littleData(base, target); few != "" {
		d.Notices.Warn(few)
	}
	d.Notices.Info(normalisation(base, target))
	return d
}

// littleData warns when a side's figures come from too little to compare: a baseline of one
// request, or a side with fewer than MinDiffLaunches kernel launches; "" otherwise.
func littleData(base, target *DiffSide) string {
	var few []string
	switch {
	case base.Requests == 1 && base.Launches < MinDiffLaunches:
		few = append(few, fmt.Sprintf("the baseline is 1 request of %d kernel launches", base.Launches))
	case base.Requests == 1:
		few = append(few, "the baseline is 1 request")
	case base.Requests > 0 && base.Launches < MinDiffLaunches:
		few = append(few, fmt.Sprintf("the baseline holds %d kernel launches", base.Launches))
	}
	if target.Requests > 0 && target.Launches < MinDiffLaunches {
		few = append(few, fmt.Sprintf("the target holds %d kernel launches", target.Launches))
	}
	if len(few) == 0 {
		return ""
	}
	return fmt.Sprintf("Little data: %s (baseline %s, %d launches; target %s, %d launches); with one baseline request or under %d launches a kernel's time moves from one request to the next by more than most changes, so read the changes as a hint, not a measurement: widen the baseline (more recent requests: baseline.recent).",
		strings.Join(few, " and "), requests(base.Requests), base.Launches, requests(target.Requests), target.Launches, MinDiffLaunches)
}

// normalisation says what each side is and how it was brought to one request.
func normalisation(base, target *DiffSide) string {
	describe := func(s *DiffSide) string {
		return fmt.Sprintf("%s (%s, %s), %d kernel launches, kernel time %s",
			s.Describe, requests(s.Requests), plural(len(s.Files), "file"), s.Launches, formatNs(s.KernelTime))
	}
	text := "Baseline: " + describe(base) + ". Target: " + describe(target) + "."
	if base.Requests > 1 || target.Requests > 1 {
		text += " Figures are per request: each side's counts and times are divided by its number of requests, so the sides compare whatever their sizes."
	}
	return text
}

func requests(n int) string { return plural(n, "request") }

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// formatNs prints nanoseconds to three significant digits: "1.25 s", "340 µs".
func formatNs(ns int64) string {
	d := time.Duration(ns)
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.3g s", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.3g ms", float64(d)/1e6)
	case d >= time.Microsecond:
		return fmt.Sprintf("%.3g µs", float64(d)/1e3)
	}
	return fmt.Sprintf("%d ns", ns)
}
