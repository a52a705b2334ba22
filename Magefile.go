//go:build mage
// +build mage

package main

import (
	// mage:import
	build "github.com/grafana/grafana-plugin-sdk-go/build"
	"github.com/magefile/mage/sh"
)

// Default configures the default target.
var Default = build.BuildAll

// Generate writes src/generated/vocabulary.ts, the editors' copy of the query types, DCGM catalogue,
// thresholds and settings ranges declared in Go; a Go test fails while it is stale.
func Generate() error { return sh.RunV("go", "generate", "./cmd/hsi-gen-ts") }

func init() {
	// The linux/amd64 binary reads local GPUs through NVML (pkg/nvml), which needs cgo: it links
	// dynamically against glibc only and dlopens libnvidia-ml.so.1 at NVML Init, so it still
	// starts where no NVIDIA driver is installed. Every other platform stays cgo-free and static,
	// with the NVML stub. Building linux/amd64 needs a C compiler (gcc) on the build host.
	_ = build.SetBeforeBuildCallback(func(cfg build.Config) (build.Config, error) {
		if cfg.OS == "linux" && cfg.Arch == "amd64" {
			cfg.EnableCGo = true
			if cfg.Env == nil {
				cfg.Env = map[string]string{}
			}
			cfg.Env["CGO_ENABLED"] = "1"
		}
		return cfg, nil
	})
}
