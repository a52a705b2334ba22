package testbed

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/scenario"
)

// RunScenario runs `hsi-demo scenario` (the bed's demo binary): one slow request of kind, drawn
// from seed, sent through the bed (spans to its Jaeger, span profiles to its Pyroscope, GPUs on
// its scenario exporter, a kernel trace into traceDir for the GPU-idle kinds). It returns what
// the scenario made and the demo's log.
func (e Endpoints) RunScenario(ctx context.Context, kind scenario.Kind, seed uint64, traceDir string) (scenario.Result, string, error) {
	if e.DemoBinary == "" {
		return scenario.Result{}, "", fmt.Errorf("the bed runs no demo (HSI_TESTBED_DEMO_BINARY): start it with the demo")
	}
	args := []string{"scenario", "--kind=" + string(kind), "--seed=" + strconv.FormatUint(seed, 10),
		"--otlp=" + e.JaegerOTLP, "--pyroscope=" + e.PyroscopeURL, "--trace-dir=" + traceDir,
		"--gpu-host=" + GPUScenarioHost, "--gpus=" + strconv.Itoa(GPUScenarioCount), "--prometheus=" + e.PrometheusURL}
	if !e.FixtureEnd.IsZero() {
		// Prometheus holds the fixtures' backfilled blocks up to here: new samples come after.
		args = append(args, "--series-since="+strconv.FormatInt(e.FixtureEnd.Unix(), 10))
	}
	cmd := exec.CommandContext(ctx, e.DemoBinary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	var res scenario.Result
	if err := cmd.Run(); err != nil {
		return res, stderr.String(), fmt.Errorf("hsi-demo scenario --kind=%s --seed=%d: %w", kind, seed, err)
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return res, stderr.String(), fmt.Errorf("hsi-demo scenario printed %q: %w", stdout.String(), err)
	}
	return res, stderr.String(), nil
}
