package testbed

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
)

// GPU series of the bed (no GPU needed), both under Prometheus job "dcgm":
//
//   - live: `hsi-demo gpus` simulates dcgm-exporter for GPUSimHost (the demo's host.name) with
//     GPUSimCount GPUs, every series labelled simulated="true"; classes follow gpusim.Live;
//   - recorded: the fixtures of internal/gpusim (hosts fixture-node-a and fixture-node-b) for
//     the two hours before the bed starts, one sample every 15 s, backfilled with promtool into
//     Prometheus' data folder before Prometheus starts. Endpoints.FixtureStart/FixtureEnd give
//     the window; gpusim.FixtureClass says which class each GPU shows when.
const (
	GPUSimHost  = "gpu-node-1"
	GPUSimCount = 2
	// GPUScenarioHost is a second simulated host for the scenarios (internal/scenario): its
	// GPUScenarioCount GPUs run gpusim.Live three classes apart, so with seven of them every class
	// is on some GPU at every moment.
	GPUScenarioHost  = "gpu-node-2"
	GPUScenarioCount = 7
	// GPUJob is the job label of the simulated and the recorded GPU series.
	GPUJob = "dcgm"
)

// fixtureTimeout bounds writing and backfilling the fixtures (about a second on 2 cores).
const fixtureTimeout = 60 * time.Second

// loadGPUFixtures writes the fixtures for the two hours up to now and backfills them into
// dataDir, which Prometheus then opens.
func (b *Bed) loadGPUFixtures(ctx context.Context, dataDir string) error {
	ctx, cancel := context.WithTimeout(ctx, fixtureTimeout)
	defer cancel()
	end := time.Now().Truncate(gpusim.FixtureStep)
	start := end.Add(-gpusim.FixtureHistory)
	path := filepath.Join(b.Dir, "gpu-fixtures.om")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = gpusim.WriteFixtures(f, start, end, gpusim.FixtureStep)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the GPU fixtures: %w", err)
	}
	defer os.Remove(path) // ~30 MB; the blocks hold the data
	cmd := exec.CommandContext(ctx, "promtool", "tsdb", "create-blocks-from", "openmetrics", path, dataDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("backfilling the GPU fixtures with promtool: %v\n%s", err, out)
	}
	b.FixtureStart, b.FixtureEnd = start, end
	b.opts.Log("GPU fixtures %s..%s backfilled (hosts %s, %s, %s)", start.Format(time.TimeOnly), end.Format(time.TimeOnly),
		gpusim.FixtureHostA, gpusim.FixtureHostB, gpusim.FixtureHostC)
	return nil
}

// checkGPUFixtures asks Prometheus' API for the fixture GPUs at the window's end.
func checkGPUFixtures(ctx context.Context, e Endpoints) error {
	want := map[string]int{}
	for _, g := range gpusim.FixtureGPUs() {
		want[g.Exporter.HostLabel()+"="+strconv.Quote(g.Host)] += len(g.LabelSets())
	}
	for selector, n := range want {
		got, err := countSeries(ctx, e.PrometheusURL, `DCGM_FI_DEV_GPU_UTIL{job="`+GPUJob+`",`+selector+`}`, e.FixtureEnd)
		if err != nil {
			return fmt.Errorf("prometheus: %w", err)
		}
		if got != n {
			return fmt.Errorf("prometheus has %d fixture GPUs with %s at %s, want %d", got, selector, e.FixtureEnd, n)
		}
	}
	return nil
}

// countSeries runs count(selector) at t (now if zero).
func countSeries(ctx context.Context, prometheusURL, selector string, t time.Time) (int, error) {
	q := url.Values{"query": {"count(" + selector + ")"}}
	if !t.IsZero() {
		q.Set("time", strconv.FormatInt(t.Unix(), 10))
	}
	var res struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := getJSON(ctx, prometheusURL+"/api/v1/query?"+q.Encode(), &res); err != nil {
		return 0, err
	}
	if len(res.Data.Result) == 0 {
		return 0, nil
	}
	s, _ := res.Data.Result[0].Value[1].(string)
	return strconv.Atoi(s)
}

// startGPUSimulator runs `hsi-demo gpus` on port and waits until it serves /metrics.
func (b *Bed) startGPUSimulator(ctx context.Context, bin string, port int) error {
	p, err := b.start("gpu-simulator", nil, bin, "gpus",
		"--listen="+addr(port), "--host="+GPUSimHost, "--gpus="+strconv.Itoa(GPUSimCount),
		"--pods=0="+DemoPods["detector"]+",1="+DemoPods["engine"])
	if err != nil {
		return err
	}
	if err := p.waitReady(ctx, b.GPUSimulatorURL+"/metrics", statusOK); err != nil {
		return err
	}
	b.opts.Log("simulated dcgm-exporter: %d GPUs on %s at %s", GPUSimCount, GPUSimHost, b.GPUSimulatorURL)
	return nil
}

// startScenarioGPUs runs the scenarios' simulated dcgm-exporter (no pods) on port.
func (b *Bed) startScenarioGPUs(ctx context.Context, bin string, port int) error {
	p, err := b.start("scenario-gpus", nil, bin, "gpus",
		"--listen="+addr(port), "--host="+GPUScenarioHost, "--gpus="+strconv.Itoa(GPUScenarioCount))
	if err != nil {
		return err
	}
	if err := p.waitReady(ctx, b.ScenarioGPUsURL+"/metrics", statusOK); err != nil {
		return err
	}
	b.opts.Log("simulated dcgm-exporter for the scenarios: %d GPUs on %s at %s", GPUScenarioCount, GPUScenarioHost, b.ScenarioGPUsURL)
	return nil
}

// gpuSimHistory is how long Prometheus must have scraped the simulator before tests start: GPU
// queries align their range to steps of up to 30 s, so a minute-old bed would have its only
// samples after the last aligned step and answer "no data".
const gpuSimHistory = 45 * time.Second

// gpuSimDataReady checks that Prometheus has scraped the simulator for gpuSimHistory.
func gpuSimDataReady(ctx context.Context, e Endpoints) error {
	// With the offset, a series counts only if it had a sample gpuSimHistory ago.
	sel := `DCGM_FI_DEV_GPU_UTIL{job="` + GPUJob + `",Hostname="` + GPUSimHost + `",simulated="true"} offset ` + gpuSimHistory.String()
	n, err := countSeries(ctx, e.PrometheusURL, sel, time.Time{})
	if err != nil {
		return fmt.Errorf("prometheus: %w", err)
	}
	if n != GPUSimCount {
		return fmt.Errorf("prometheus has %d simulated GPUs on %s scraped for %s, want %d", n, GPUSimHost, gpuSimHistory, GPUSimCount)
	}
	sel = `DCGM_FI_DEV_GPU_UTIL{job="` + GPUJob + `",Hostname="` + GPUScenarioHost + `",simulated="true"} offset ` + gpuSimHistory.String()
	if n, err = countSeries(ctx, e.PrometheusURL, sel, time.Time{}); err != nil {
		return fmt.Errorf("prometheus: %w", err)
	}
	if n != GPUScenarioCount {
		return fmt.Errorf("prometheus has %d simulated GPUs on %s scraped for %s, want %d", n, GPUScenarioHost, gpuSimHistory, GPUScenarioCount)
	}
	return nil
}
