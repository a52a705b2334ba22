// Command hsi-rulegen renders the GPU classification recording rules for a data source's settings,
// so Prometheus classifies with the same thresholds as the plugin:
//
//	go run ./cmd/hsi-rulegen                            # the defaults (the provisioned file)
//	go run ./cmd/hsi-rulegen -settings jsonData.json    # the thresholds in a jsonData file
//
// The settings file is the data source's jsonData object (gpuThresholds, pcieGeneration,
// pcieWidth are read; other keys are ignored).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

func main() {
	settingsPath := flag.String("settings", "", "data source jsonData file (JSON object); empty: the default thresholds")
	flag.Parse()
	th, err := thresholds(*settingsPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hsi-rulegen:", err)
		os.Exit(1)
	}
	fmt.Print(classify.RulesYAML(th))
}

func thresholds(path string) (classify.Thresholds, error) {
	if path == "" {
		return classify.DefaultThresholds(), nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return classify.Thresholds{}, err
	}
	s, bad, err := models.LoadSettings(backend.DataSourceInstanceSettings{JSONData: raw})
	if err != nil {
		return classify.Thresholds{}, fmt.Errorf("%s: %w", path, err)
	}
	if bad.GPU != nil {
		// Invalid.GPU joins every GPU section's errors; only the thresholds matter for the
		// rules, but a settings file with any invalid GPU key is better fixed before rendering.
		return classify.Thresholds{}, fmt.Errorf("%s: %w", path, bad.GPU)
	}
	return s.Classify.Thresholds, nil
}
