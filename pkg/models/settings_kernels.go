package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// KernelTraceSettings say where the GPU kernel traces (PyTorch profiler Chrome traces, Nsight Systems
// SQLite exports) of the kernels query are read from, and how much of them.
type KernelTraceSettings struct {
	// Directories are the absolute, read-only directories searched for trace files
	// (jsonData.traceDirectories, a list). Empty: the kernels query is off.
	Directories []string
	// MaxFileBytes skips larger files (jsonData.traceMaxFileBytes, default 2 GiB).
	MaxFileBytes int64
	// MaxFiles bounds the files scanned per query (jsonData.traceMaxFiles, default 10000).
	MaxFiles int
	// Buckets are the object-storage buckets read beside the directories
	// (jsonData.kernelBuckets, settings_buckets.go).
	Buckets []KernelBucket
}

// Defaults of the trace settings.
const (
	DefaultTraceMaxFileBytes int64 = 2 << 30
	DefaultTraceMaxFiles           = 10000
	maxTraceDirectories            = 32
)

// loadKernelTraces reads the KernelTraceSettings keys of jsonData; errors name the key.
func loadKernelTraces(j jsonFields, secure map[string]string, out *KernelTraceSettings) error {
	*out = KernelTraceSettings{MaxFileBytes: DefaultTraceMaxFileBytes, MaxFiles: DefaultTraceMaxFiles}
	var errs []error
	if raw, ok := j["traceDirectories"]; ok && string(raw) != "null" {
		var dirs []string
		if err := json.Unmarshal(raw, &dirs); err != nil {
			errs = append(errs, fmt.Errorf(`jsonData.traceDirectories must be a list of absolute directory paths, such as ["/var/lib/profiles"], got %s`, truncate(string(raw), 40)))
		} else if len(dirs) > maxTraceDirectories {
			errs = append(errs, fmt.Errorf("jsonData.traceDirectories lists %d directories; at most %d", len(dirs), maxTraceDirectories))
		} else {
			for i, d := range dirs {
				d = strings.TrimSpace(d)
				if d == "" {
					continue
				}
				if !filepath.IsAbs(d) || strings.ContainsRune(d, 0) {
					errs = append(errs, fmt.Errorf("jsonData.traceDirectories item %d must be an absolute path, got %q", i+1, truncate(d, 80)))
					continue
				}
				out.Directories = append(out.Directories, filepath.Clean(d))
			}
		}
	}
	if v, err := j.number("traceMaxFileBytes"); err != nil {
		errs = append(errs, err)
	} else if v < 0 || v != float64(int64(v)) {
		errs = append(errs, fmt.Errorf("jsonData.traceMaxFileBytes must be a positive whole number of bytes, got %v", v))
	} else if v > 0 {
		out.MaxFileBytes = int64(v)
	}
	if v, err := j.number("traceMaxFiles"); err != nil {
		errs = append(errs, err)
	} else if v < 0 || v != float64(int(v)) || v > 10_000_000 {
		errs = append(errs, fmt.Errorf("jsonData.traceMaxFiles must be a positive whole number (at most 10000000), got %v", v))
	} else if v > 0 {
		out.MaxFiles = int(v)
	}
	var err error
	if out.Buckets, err = loadKernelBuckets(j, secure); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
