//go:build integration

// Package load puts a dashboard's worth of concurrent queries through one plugin process, over
// the plugin protocol Grafana speaks (pluginhost: go-plugin handshake, pluginv2 gRPC), against
// the real test bed: every query type and the editors' resource calls, at least 20 in flight.
// It fails on any failure the upstreams did not cause, and when the process's goroutines or heap
// do not come back to their level before the load; it reports latency percentiles per query
// type. Short by default (runs in scripts/test.sh); HSI_LOAD_QUERIES, HSI_LOAD_INFLIGHT and
// HSI_LOAD_REPORT make the long form and write its table.
package load

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

var (
	bed testbed.Endpoints
	// binary is the plugin built with cgo, as the linux/amd64 release is, so gpuLocal goes
	// through NVML for real (this machine has no NVIDIA driver: NVML answers it is unavailable).
	// Under `go test -race` the plugin is built with the race detector too.
	binary string
)

func TestMain(m *testing.M) {
	os.Exit(func() int {
		dir, err := os.MkdirTemp("", "hsi-load-")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dir)
		// The executable name Grafana looks for: <executable>_<os>_<arch>.
		binary = filepath.Join(dir, "gpx_hsi_profiling_"+runtime.GOOS+"_"+runtime.GOARCH)
		root, err := testbed.RepoRoot()
		if err != nil {
			panic(err)
		}
		args := []string{"build", "-o", binary}
		if raceBuild {
			args = append(args, "-race")
		}
		build := exec.Command("go", append(args, "./pkg")...)
		build.Dir = root
		build.Env = append(os.Environ(), "CGO_ENABLED=1")
		if out, err := build.CombinedOutput(); err != nil {
			os.Stderr.Write(out)
			return 1
		}
		return testbed.MainForTests(m, &bed)
	}())
}
