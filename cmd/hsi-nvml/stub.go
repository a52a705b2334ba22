//go:build !(linux && cgo)

// Command hsi-nvml needs linux and cgo: this build only says so.
package main

import (
	"fmt"
	"os"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/nvml"
)

func main() {
	fmt.Fprintln(os.Stderr, "hsi-nvml:", nvml.NotBuiltMessage, "— build it with CGO_ENABLED=1 on linux")
	os.Exit(1)
}
