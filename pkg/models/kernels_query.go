package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// KernelsQuery is {queryType: "kernels", traceId?, file?}: the traces of a request, or one file
// given relative to a configured trace directory.
type KernelsQuery struct {
	TraceID string
	File    string
	// View is "" (the analyses' frames) or KernelsViewCriticalPath.
	View string
}

// KernelsViewCriticalPath asks for the critical path of the GPU work (HTA's lightweight
// critical path): its composition and longest segments.
const KernelsViewCriticalPath = "criticalPath"

// ParseKernelsQuery reads a kernels query. The file must be a relative path without "..": the
// plugin resolves it inside the configured directories only.
func ParseKernelsQuery(raw json.RawMessage) (*KernelsQuery, error) {
	var q struct {
		TraceID string `json:"traceId"`
		File    string `json:"file"`
		View    string `json:"view"`
	}
	if err := Decode(raw, &q); err != nil {
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
	switch q.View {
	case "", KernelsViewCriticalPath:
	default:
		return nil, fmt.Errorf("field \"view\" must be %q or empty, got %q", KernelsViewCriticalPath, truncate(q.View, 40))
	}
	return &KernelsQuery{TraceID: id, File: file, View: q.View}, nil
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
