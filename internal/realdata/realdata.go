// Package realdata finds, for tests, the real traces kept beside the repository
// (shared/realdata: third-party files with their sources, never copied into the project).
package realdata

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Path is the path of one real trace: under $HSI_REALDATA, else under shared/realdata in the
// nearest folder above the working directory that has one, else /work/shared/realdata. Its
// absence fails the test: the figures checked on it are the point.
func Path(t testing.TB, name string) string {
	t.Helper()
	var tried []string
	for _, dir := range dirs() {
		path := filepath.Join(dir, name)
		if _, err := os.Stat(path); err == nil {
			return path
		}
		tried = append(tried, path)
	}
	t.Fatalf("real trace %s is missing (looked at %s): the tests read the real traces from shared/realdata beside the repository; set HSI_REALDATA to their directory", name, strings.Join(tried, ", "))
	return ""
}

func dirs() []string {
	if dir := os.Getenv("HSI_REALDATA"); dir != "" {
		return []string{dir}
	}
	var out []string
	if wd, err := os.Getwd(); err == nil {
		for dir := filepath.Dir(wd); ; dir = filepath.Dir(dir) {
			out = append(out, filepath.Join(dir, "shared", "realdata"))
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	return append(out, "/work/shared/realdata")
}
