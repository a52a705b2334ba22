// Command hsi-gen-ts writes src/generated/vocabulary.ts, the TypeScript editors' copy of the
// vocabularies the backend declares in Go: query types, the DCGM catalogue, the classification
// thresholds and the settings' defaults and ranges (see internal/tsgen).
//
// From the repository root: go generate ./cmd/hsi-gen-ts, or mage generate.
package main

//go:generate go run . -root ../..

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/tsgen"
)

func main() {
	root := flag.String("root", ".", "the repository root")
	flag.Parse()
	if err := write(*root); err != nil {
		fmt.Fprintln(os.Stderr, "hsi-gen-ts:", err)
		os.Exit(1)
	}
}

func write(root string) error {
	files, err := tsgen.Files()
	if err != nil {
		return err
	}
	for path, src := range files {
		if err := os.WriteFile(filepath.Join(root, path), src, 0o644); err != nil {
			return err
		}
	}
	return nil
}
