package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// The views of a kernels query: what it shows of each trace file.
const (
	// KernelsSummary: the kernel summary, breakdowns, launch statistics, copies and advice.
	KernelsSummary = "summary"
	// KernelsLaunches: per-launch times per kernel and launch call (nsys's cuda_kern_exec_sum)
	// and the ranges projected onto the GPU (nvtx_gpu_proj_sum).
	KernelsLaunches = "launches"
	// KernelsCriticalPath: the critical path of the GPU work (HTA's lightweight critical
	// path): its composition and longest segments.
	KernelsCriticalPath = "criticalPath"
	// KernelsTimeline: the activities as a trace frame for Grafana's trace view.
	KernelsTimeline = "timeline"
	// KernelsDiff: the request's kernels against a baseline's (KernelBaseline).
	KernelsDiff = "diff"
)

// KernelsViews lists the views in the order messages name them; the first is the default.
var KernelsViews = []string{KernelsSummary, KernelsLaunches, KernelsCriticalPath, KernelsTimeline, KernelsDiff}

// KernelsQuery is {queryType: "kernels", traceId?, file?, view?, baseline?}: the traces of a
// request, or one file given relative to a configured trace directory, shown as View.
type KernelsQuery struct {
	TraceID string
	File    string
	View    string
	// Baseline is what the diff view compares the request with; nil in the other views.
	Baseline *KernelBaseline `json:",omitempty"`
}

// ParseKernelsQuery reads a kernels query. The file must be a relative path without "..": the
// plugin resolves it inside the configured directories only.
func ParseKernelsQuery(raw json.RawMessage) (*KernelsQuery, error) {
	var q struct {
		TraceID  string          `json:"traceId"`
		File     string          `json:"file"`
		View     string          `json:"view"`
		Baseline json.RawMessage `json:"baseline"`
	}
	if err := Decode(raw, &q); err != nil {
		return nil, err
	}
	view, err := kernelsView(q.View)
	if err != nil {
		return nil, err
	}
	id, err := NormalizeTraceID("traceId", q.TraceID)
	if err != nil {
		return nil, err
	}
	file, err := CleanTraceFile(q.File)
	if err != nil {
		return nil, err
	}
	if id == "" && file == "" {
		return nil, errors.New(`set "traceId" (the request's trace ID) or "file" (a trace file from the list)`)
	}
	out := &KernelsQuery{TraceID: id, File: file, View: view}
	if view == KernelsDiff {
		// Read in the diff view only: a profile diff's sides, left by switching the type in the
		// editor, mean nothing here.
		if out.Baseline, err = parseKernelBaseline(q.Baseline, id); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// kernelsView checks a kernels query's view; unset is the first of KernelsViews.
func kernelsView(v string) (string, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return KernelsViews[0], nil
	case slices.Contains(KernelsViews, v):
		return v, nil
	}
	return "", fmt.Errorf("field \"view\" must be one of %s, got %q", strings.Join(KernelsViews, ", "), truncate(v, 40))
}

// CleanTraceFile checks a file path relative to a trace directory: not absolute, no "..",
// no NUL, at most 1024 bytes. Empty stays empty.
func CleanTraceFile(p string) (string, error) {
	p = strings.TrimSpace(p)
	if p == "" {
		return "", nil
	}
	bad := func(why string) error {
		return fmt.Errorf("field \"file\" must be a path relative to a trace directory (%s), got %q", why, truncate(p, 80))
	}
	switch {
	case len(p) > 1024:
		return "", bad("at most 1024 characters")
	case strings.ContainsRune(p, 0):
		return "", bad("no NUL")
	case filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) || filepath.VolumeName(p) != "":
		return "", bad("not absolute")
	}
	for _, part := range strings.FieldsFunc(p, func(r rune) bool { return r == '/' || r == '\\' }) {
		if part == ".." {
			return "", bad("no ..")
		}
	}
	return filepath.Clean(p), nil
}
