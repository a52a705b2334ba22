package testbed

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
)

// GPU series of the bed (no GPU needed), both under Prometheus job "dcgm":
//
//   - live: `hsi-demo gpus` simulates dcgm-exporter for GPUSimHost (the demo's host.name) with
//     GPUSimCount GPUs, every series labelled simulated="true"; classes follow gpusim.Live;
//   - recorded: the fixtures of internal/gpusim (hosts fixture-node-a to fixture-node-d) for
//     the two hours before the bed starts, one sample every 15 s, backfilled with promtool into
//     Prometheus' data folder before Prometheus starts. Endpoints.FixtureStart/FixtureEnd give
//     the window; gpusim.FixtureClass says which class each GPU shows when. With them, under job
//     "kube-state-metrics", the kube-state-metrics series of fixture-node-d's pods;
//     gpusim.FixtureIncidents says which failures both show when.
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
	// The DCGM fixtures, then the kube-state-metrics series of fixture-node-d's pods: two files,
	// each backfilled into the same folder (overlapping blocks are allowed).
	for _, file := range []struct {
		name  string
		write func(io.Writer, time.Time, time.Time, time.Duration) error
	}{{"gpu-fixtures.om", gpusim.WriteFixtures}, {"kube-state-fixtures.om", gpusim.WriteKubeStateFixtures}} {
		if err := backfill(ctx, filepath.Join(b.Dir, file.name), dataDir, start, end, file.write); err != nil {
			return err
		}
	}
	b.FixtureStart, b.FixtureEnd = start, end
	b.opts.Log("GPU fixtures %s..%s backfilled (hosts %s, %s, %s, %s; kube-state-metrics of %s's pods)", start.Format(time.TimeOnly), end.Format(time.TimeOnly),
		gpusim.FixtureHostA, gpusim.FixtureHostB, gpusim.FixtureHostC, gpusim.FixtureHostD, gpusim.FixtureHostD)
	return nil
}

// backfill writes one fixture file at path and loads it into dataDir with promtool.
func backfill(ctx context.Context, path, dataDir string, start, end time.Time, write func(io.Writer, time.Time, time.Time, time.Duration) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f, start, end, gpusim.FixtureStep)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing the fixtures %s: %w", filepath.Base(path), err)
	}
	defer os.Remove(path) // ~60 MB for the DCGM series; the blocks hold the data
	cmd := exec.CommandContext(ctx, "promtool", "tsdb", "create-blocks-from", "openmetrics", path, dataDir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("backfilling the fixtures %s with promtool: %v\n%s", filepath.Base(path), err, out)
	}
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
	// The kube-state-metrics fixtures: one restart counter per container of host D's pods.
	sel := `kube_pod_container_status_restarts_total{job="` + gpusim.KubeStateJob + `",instance="` + gpusim.KubeStateInstance + `",simulated="true"}`
	got, err := countSeries(ctx, e.PrometheusURL, sel, e.FixtureEnd)
	if err != nil {
		return fmt.Errorf("prometheus: %w", err)
	}
	if want := len(gpusim.KubeStateContainers()); got != want {
		return fmt.Errorf("prometheus has %d series %s at %s, want %d", got, sel, e.FixtureEnd, want)
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

// startKubeState runs the simulated kube-state-metrics of the demo's pods on port (the detector's
// pod first: its tokenizer container is OOM-killed gpusim.KubeOOMKillAfter after the start).
func (b *Bed) startKubeState(ctx context.Context, bin string, port int) error {
	pods := []string{DemoPods["detector"], DemoPods["engine"], DemoPods["enrichment"], DemoPods["backend"]}
	p, err := b.start("kube-state", nil, bin, "kube-state", "--listen="+addr(port), "--node="+GPUSimHost, "--pods="+strings.Join(pods, ","))
	if err != nil {
		return err
	}
	if err := p.waitReady(ctx, "http://"+addr(port)+"/metrics", statusOK); err != nil {
		return err
	}
	b.opts.Log("simulated kube-state-metrics: the demo's pods on %s at http://%s", GPUSimHost, addr(port))
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
	// The live kube-state-metrics has OOM-killed the detector pod's tokenizer.
	_, pod, _ := strings.Cut(DemoPods["detector"], "/")
	sel = `kube_pod_container_status_last_terminated_reason{job="` + gpusim.KubeStateJob + `",pod="` + pod + `",container="` + gpusim.KubeLiveTokenizer + `",reason="OOMKilled",simulated="true"}`
	if n, err = countSeries(ctx, e.PrometheusURL, sel, time.Time{}); err != nil {
		return fmt.Errorf("prometheus: %w", err)
	}
	if n != 1 {
		return fmt.Errorf("prometheus has not scraped the simulated OOM kill yet (%s)", sel)
	}
	return nil
}
