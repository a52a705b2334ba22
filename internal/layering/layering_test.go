// Package layering checks that the arrows between the plugin's packages point one way: the join,
// the diagnosis and the frames are written in the models' types, so a second trace store or
// metrics backend plugs in as a client without them importing it (docs/developer-guide.md, Design).
package layering

import (
	"go/build"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/hsi-profiling/hsi-profiling-datasource/"

// clients are the packages that talk to an upstream or to the hardware.
var clients = []string{"pkg/pyroscope", "pkg/jaeger", "pkg/tempo", "pkg/prometheus", "pkg/nvml", "pkg/upstream", "pkg/buckets"}

// rules: each package, what it must not import, and whether its tests are held to it too.
var rules = []struct {
	pkg       string
	forbidden []string
	tests     bool
}{
	{"pkg/correlate", clients, true},
	{"pkg/diagnose", append(clients, "pkg/frames", "pkg/plugin"), true},
	{"pkg/triage", append(clients, "pkg/correlate", "pkg/frames", "pkg/plugin"), true},
	{"pkg/tail", append(clients, "pkg/frames", "pkg/plugin"), true},
	{"pkg/frames", append(clients, "pkg/plugin"), false},
	{"pkg/classify", append(clients, "pkg/models", "pkg/correlate", "pkg/frames"), true},
	{"pkg/flamegraph", append(clients, "pkg/correlate", "pkg/frames"), true},
	{"pkg/jsonscan", append(clients, "pkg/models", "pkg/otlptrace", "pkg/correlate", "pkg/frames"), true},
	{"pkg/models", append(clients, "pkg/correlate", "pkg/frames", "pkg/diagnose", "pkg/plugin"), true},
}

func root(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

func TestPackagesImportNoLayerAboveThem(t *testing.T) {
	for _, r := range rules {
		p, err := build.ImportDir(filepath.Join(root(t), r.pkg), 0)
		if err != nil {
			t.Fatalf("%s: %v", r.pkg, err)
		}
		imports := p.Imports
		if r.tests {
			imports = append(slices.Clone(imports), p.TestImports...)
		}
		if len(imports) == 0 {
			t.Fatalf("%s: no imports read: the check would pass on nothing", r.pkg)
		}
		for _, imp := range imports {
			own, ok := strings.CutPrefix(imp, module)
			if ok && slices.Contains(r.forbidden, own) {
				t.Errorf("%s imports %s: declare what it needs in pkg/models (or its own types) and let %s implement it", r.pkg, own, own)
			}
		}
	}
}
