//go:build tools

// Package tools pins the Jaeger v2 server command so `go build` can build it from this module.
package tools

import _ "github.com/jaegertracing/jaeger/cmd/jaeger"
