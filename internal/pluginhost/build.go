package pluginhost

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
)

// Build compiles the plugin (./pkg of the repository at root) into dir under the executable name
// Grafana looks for, <executable>_<os>_<arch>, and returns its path. cgo builds it as the
// linux/amd64 release is (with NVML); race adds the race detector.
func Build(root, dir string, cgo, race bool) (string, error) {
	binary := filepath.Join(dir, "gpx_hsi_profiling_"+runtime.GOOS+"_"+runtime.GOARCH)
	args := []string{"build", "-o", binary}
	if race {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "./pkg")...)
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if cgo {
		build.Env = append(os.Environ(), "CGO_ENABLED=1")
	}
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the plugin: %w\n%s", err, out)
	}
	return binary, nil
}
