//go:build tools

// Package tools pins the SeaweedFS server command (weed) so `go build` can build it from this module.
package tools

import _ "github.com/seaweedfs/seaweedfs/weed"
