//go:build tools

// Package tools pins the Pyroscope server command so `go build` can build it from this module.
package tools

import _ "github.com/grafana/pyroscope/cmd/pyroscope"
