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
	os.Exit(testbed.MainWithPlugin(m, &bed, testbed.PluginBuild{CGO: true, Race: raceBuild, Path: &binary}))
}
