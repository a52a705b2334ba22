// Package testbed starts and stops the real servers the tests and the demo run against:
// Prometheus, Pyroscope 1.12, Jaeger v2 and an S3-compatible object store (SeaweedFS, see
// objectstore.go), on 127.0.0.1 with free ports, plus the demo
// workload (cmd/hsi-demo) whose traces, profiles and metrics they hold, plus GPU series without a
// GPU (a simulated dcgm-exporter and recorded fixtures, see gpus.go). Binaries come from
// testbed/install.sh; everything a bed writes lives in one temporary folder, removed on Stop.
package testbed

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
)

// Endpoints are the URLs of a running bed.
type Endpoints struct {
	PrometheusURL string
	PyroscopeURL  string
	JaegerURL     string // query API (v1 and v3 JSON)
	JaegerOTLP    string // OTLP gRPC host:port
	// TempoURL is the bed's Tempo (the fake, or a real one: tempo.go), multi-tenant with
	// TempoTenant; TempoOTLP its OTLP gRPC receiver, which Jaeger forwards every span to;
	// TempoVersion "fake", or "real" and the binary.
	TempoURL, TempoOTLP, TempoTenant, TempoVersion string
	DemoURL                                        string // the demo's backend service, "" without the demo
	EngineURL                                      string // the demo's simulated LLM engine (POST /v1/completions), "" without the demo
	// GPUSimulatorURL is the simulated dcgm-exporter (GET /metrics), "" without the demo.
	GPUSimulatorURL string
	// ScenarioGPUsURL is the second simulated dcgm-exporter, GPUScenarioCount GPUs on
	// GPUScenarioHost for the scenarios (every class on one of them at any time); DemoBinary the
	// demo's binary (hsi-demo scenario runs them). Both "" without the demo.
	ScenarioGPUsURL string
	DemoBinary      string
	// S3Endpoint is the bed's S3-compatible object store (SeaweedFS), host:port over plain HTTP
	// with path-style buckets; S3AccessKey and S3SecretKey are its keys, made for each bed;
	// S3Bucket (the S3Bucket constant) is created at start.
	S3Endpoint, S3AccessKey, S3SecretKey, S3Bucket string
	// FixtureStart and FixtureEnd are the window of the GPU fixtures backfilled into Prometheus
	// (gpusim.FixtureClass takes them); zero without the demo.
	FixtureStart, FixtureEnd time.Time
}

// Env lists the endpoints as the variables tests and scripts read (see FromEnv).
func (e Endpoints) Env() []string {
	return []string{
		"HSI_TESTBED_PROMETHEUS_URL=" + e.PrometheusURL,
		"HSI_TESTBED_PYROSCOPE_URL=" + e.PyroscopeURL,
		"HSI_TESTBED_JAEGER_URL=" + e.JaegerURL,
		"HSI_TESTBED_JAEGER_OTLP=" + e.JaegerOTLP,
		"HSI_TESTBED_TEMPO_URL=" + e.TempoURL,
		"HSI_TESTBED_TEMPO_OTLP=" + e.TempoOTLP,
		"HSI_TESTBED_TEMPO_TENANT=" + e.TempoTenant,
		"HSI_TESTBED_TEMPO_VERSION=" + e.TempoVersion,
		"HSI_TESTBED_S3_ENDPOINT=" + e.S3Endpoint,
		"HSI_TESTBED_S3_ACCESS_KEY=" + e.S3AccessKey,
		"HSI_TESTBED_S3_SECRET_KEY=" + e.S3SecretKey,
		"HSI_TESTBED_S3_BUCKET=" + e.S3Bucket,
		"HSI_TESTBED_DEMO_URL=" + e.DemoURL,
		"HSI_TESTBED_ENGINE_URL=" + e.EngineURL,
		"HSI_TESTBED_GPU_SIMULATOR_URL=" + e.GPUSimulatorURL,
		"HSI_TESTBED_SCENARIO_GPUS_URL=" + e.ScenarioGPUsURL,
		"HSI_TESTBED_DEMO_BINARY=" + e.DemoBinary,
		"HSI_TESTBED_FIXTURE_START=" + unixOrEmpty(e.FixtureStart),
		"HSI_TESTBED_FIXTURE_END=" + unixOrEmpty(e.FixtureEnd),
	}
}

// unixOrEmpty writes a time as Unix seconds, the zero time as "".
func unixOrEmpty(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return strconv.FormatInt(t.Unix(), 10)
}

func unixFromEnv(name string) time.Time {
	sec, err := strconv.ParseInt(os.Getenv(name), 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(sec, 0)
}

// FromEnv returns the endpoints of a bed started elsewhere (scripts/test.sh starts one for the
// whole suite), or ok=false when the variables are not set.
func FromEnv() (Endpoints, bool) {
	e := Endpoints{
		PrometheusURL: os.Getenv("HSI_TESTBED_PROMETHEUS_URL"),
		PyroscopeURL:  os.Getenv("HSI_TESTBED_PYROSCOPE_URL"),
		JaegerURL:     os.Getenv("HSI_TESTBED_JAEGER_URL"),
		JaegerOTLP:    os.Getenv("HSI_TESTBED_JAEGER_OTLP"),
		TempoURL:      os.Getenv("HSI_TESTBED_TEMPO_URL"),
		TempoOTLP:     os.Getenv("HSI_TESTBED_TEMPO_OTLP"),
		TempoTenant:   os.Getenv("HSI_TESTBED_TEMPO_TENANT"),
		TempoVersion:  os.Getenv("HSI_TESTBED_TEMPO_VERSION"),
		S3Endpoint:    os.Getenv("HSI_TESTBED_S3_ENDPOINT"),
		S3AccessKey:   os.Getenv("HSI_TESTBED_S3_ACCESS_KEY"),
		S3SecretKey:   os.Getenv("HSI_TESTBED_S3_SECRET_KEY"),
		S3Bucket:      os.Getenv("HSI_TESTBED_S3_BUCKET"),
		DemoURL:       os.Getenv("HSI_TESTBED_DEMO_URL"),
		EngineURL:     os.Getenv("HSI_TESTBED_ENGINE_URL"),

		GPUSimulatorURL: os.Getenv("HSI_TESTBED_GPU_SIMULATOR_URL"),
		ScenarioGPUsURL: os.Getenv("HSI_TESTBED_SCENARIO_GPUS_URL"),
		DemoBinary:      os.Getenv("HSI_TESTBED_DEMO_BINARY"),
		FixtureStart:    unixFromEnv("HSI_TESTBED_FIXTURE_START"),
		FixtureEnd:      unixFromEnv("HSI_TESTBED_FIXTURE_END"),
	}
	return e, e.PrometheusURL != "" && e.PyroscopeURL != "" && e.JaegerURL != ""
}

// Options choose what a bed runs.
type Options struct {
	// Demo starts the demo workload's three services, the simulated dcgm-exporter, and loads the
	// GPU fixtures into Prometheus.
	Demo bool
	// KeepDir leaves the bed's folder (logs, data) in place after Stop.
	KeepDir bool
	// S3IfInstalled starts the S3 object store only when testbed/install.sh built it (the
	// first run, scripts/run.sh, does not: its answers read no bucket, and the build takes
	// minutes); otherwise a bed without it fails to start, as the tests need it.
	S3IfInstalled bool
	// Log receives progress lines; nil discards them.
	Log func(format string, args ...any)
}

// Bed is a running test bed.
type Bed struct {
	Endpoints
	Dir   string
	procs []*process
	// closers stop what runs inside the bed's own process (the Tempo fake).
	closers []func()
	opts    Options
	// seaweed is the object store's weed process, seaweedPorts its listeners (tests check that
	// Stop leaves neither behind).
	seaweed      *process
	seaweedPorts seaweedPorts
}

// ReadyTimeout bounds how long a bed may take to start, servers and demo together.
const ReadyTimeout = 90 * time.Second

// Start launches the servers (and the demo) and waits until each answers.
func Start(ctx context.Context, opts Options) (b *Bed, err error) {
	if opts.Log == nil {
		opts.Log = func(string, ...any) {}
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	bins, err := binaries(root, opts.S3IfInstalled)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "hsi-testbed-")
	if err != nil {
		return nil, err
	}
	b = &Bed{Dir: dir, opts: opts}
	defer func() {
		if err != nil {
			b.Stop()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, ReadyTimeout)
	defer cancel()
	started := time.Now()

	ports, err := freePorts(28)
	if err != nil {
		return nil, err
	}
	promPort, pyroHTTP, pyroGRPC, pyroMember := ports[0], ports[1], ports[2], ports[3]
	jOTLPgrpc, jOTLPhttp, jQueryHTTP, jQueryGRPC, jHealth := ports[4], ports[5], ports[6], ports[7], ports[8]
	demoPorts := map[string]int{"backend": ports[9], "detector": ports[10], "enrichment": ports[11], "engine": ports[12]}
	gpuSimPort, scenarioGPUPort, kubeStatePort := ports[13], ports[14], ports[15]
	weedPorts := seaweedPorts{master: ports[16], masterGRPC: ports[17], volume: ports[18], volumeGRPC: ports[19],
		filer: ports[20], filerGRPC: ports[21], s3: ports[22], s3GRPC: ports[23]}
	tempoHTTP, tempoGRPC, tempoOTLP, tempoMember := ports[24], ports[25], ports[26], ports[27]

	b.PrometheusURL = "http://" + addr(promPort)
	b.PyroscopeURL = "http://" + addr(pyroHTTP)
	b.JaegerURL = "http://" + addr(jQueryHTTP)
	b.JaegerOTLP = addr(jOTLPgrpc)
	if bins.seaweedfs != "" {
		b.S3Endpoint = addr(weedPorts.s3)
		b.S3AccessKey, b.S3SecretKey = newS3Keys()
		b.S3Bucket = S3Bucket
	}

	promData := filepath.Join(dir, "prometheus-data")
	jobs := map[string][]string{}
	if opts.Demo {
		for _, s := range DemoServices {
			jobs[DemoJob] = append(jobs[DemoJob], addr(demoPorts[s]))
		}
		jobs[GPUJob] = []string{addr(gpuSimPort), addr(scenarioGPUPort)}
		jobs[gpusim.KubeStateJob] = []string{addr(kubeStatePort)}
		b.GPUSimulatorURL = "http://" + addr(gpuSimPort)
		b.ScenarioGPUsURL = "http://" + addr(scenarioGPUPort)
		// Before Prometheus opens its data folder, so it loads the blocks.
		if err := b.loadGPUFixtures(ctx, promData); err != nil {
			return nil, err
		}
	}
	prom, err := b.startPrometheus(root, promPort, promData, jobs)
	if err != nil {
		return nil, err
	}
	pyro, err := b.startPyroscope(bins.pyroscope, pyroHTTP, pyroGRPC, pyroMember)
	if err != nil {
		return nil, err
	}
	if err := b.startTempo(ctx, tempoHTTP, tempoGRPC, tempoOTLP, tempoMember); err != nil {
		return nil, err
	}
	jaeger, err := b.startJaeger(bins.jaeger, jOTLPgrpc, jOTLPhttp, jQueryHTTP, jQueryGRPC, jHealth)
	if err != nil {
		return nil, err
	}
	if bins.seaweedfs != "" {
		weedStarted := time.Now()
		weed, err := b.startSeaweed(bins.seaweedfs, weedPorts)
		if err != nil {
			return nil, err
		}
		opts.Log("waiting for Prometheus, Pyroscope, Jaeger and SeaweedFS")
		if err := b.waitS3Ready(ctx, weed); err != nil {
			return nil, err
		}
		opts.Log("SeaweedFS's S3 gateway ready, bucket %s created, %s after weed started", b.S3Bucket, time.Since(weedStarted).Round(100*time.Millisecond))
	} else {
		opts.Log("no S3 object store: SeaweedFS is not built (testbed/install.sh builds it; scripts/test.sh needs it)")
	}
	if err := prom.waitReady(ctx, b.PrometheusURL+"/-/ready", statusOK); err != nil {
		return nil, err
	}
	if err := jaeger.waitReady(ctx, b.JaegerURL+"/api/v3/services", statusOK); err != nil {
		return nil, err
	}
	if err := pyro.waitReady(ctx, b.PyroscopeURL+"/ready", func(status int, body []byte) bool {
		return status == 200 && strings.TrimSpace(string(body)) == "ready"
	}); err != nil {
		return nil, err
	}
	s3 := b.S3Endpoint
	if s3 == "" {
		s3 = "none"
	}
	opts.Log("Prometheus %s · Pyroscope %s · Jaeger %s · Tempo %s (%s) · S3 %s, all ready %s after the start",
		b.PrometheusURL, b.PyroscopeURL, b.JaegerURL, b.TempoURL, b.TempoVersion, s3, time.Since(started).Round(100*time.Millisecond))
	if opts.Demo {
		if err := checkGPUFixtures(ctx, b.Endpoints); err != nil {
			return nil, err
		}
		if err := b.startDemo(ctx, root, demoPorts, gpuSimPort, scenarioGPUPort, kubeStatePort); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Stop ends every process of the bed and removes its folder (unless KeepDir).
func (b *Bed) Stop() {
	for i := len(b.procs) - 1; i >= 0; i-- {
		start := time.Now()
		b.procs[i].stop(10 * time.Second)
		if b.opts.Log != nil {
			b.opts.Log("stopped %s in %s", b.procs[i].name, time.Since(start).Round(100*time.Millisecond))
		}
	}
	b.procs = nil
	for _, c := range b.closers {
		c()
	}
	b.closers = nil
	b.removeSeaweedSockets()
	if !b.opts.KeepDir && b.Dir != "" {
		os.RemoveAll(b.Dir)
	}
}

func (b *Bed) start(name string, env []string, bin string, args ...string) (*process, error) {
	p, err := startProcess(name, b.Dir, env, bin, args...)
	if err != nil {
		return nil, err
	}
	b.procs = append(b.procs, p)
	return p, nil
}

func statusOK(status int, _ []byte) bool { return status == 200 }

type serverBinaries struct{ pyroscope, jaeger, seaweedfs string }

// binaries finds the servers built by testbed/install.sh; with s3IfInstalled a missing
// SeaweedFS is no error (seaweedfs is then "").
func binaries(root string, s3IfInstalled bool) (serverBinaries, error) {
	versions, err := readVersions(filepath.Join(root, "testbed", "versions.sh"))
	if err != nil {
		return serverBinaries{}, err
	}
	dir := binDir()
	bins := serverBinaries{
		pyroscope: filepath.Join(dir, "pyroscope-"+versions["PYROSCOPE_VERSION"]),
		jaeger:    filepath.Join(dir, "jaeger-"+versions["JAEGER_VERSION"]),
		seaweedfs: filepath.Join(dir, "seaweedfs-"+versions["SEAWEEDFS_VERSION"]),
	}
	if _, err := os.Stat(bins.seaweedfs); err != nil && s3IfInstalled {
		bins.seaweedfs = ""
	}
	for _, p := range []string{bins.pyroscope, bins.jaeger, bins.seaweedfs} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			return bins, fmt.Errorf("test bed server %s is missing: run testbed/install.sh first", p)
		}
	}
	for _, tool := range []string{"prometheus", "promtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			return bins, fmt.Errorf("%s is not on PATH: run testbed/install.sh first", tool)
		}
	}
	return bins, nil
}

// binDir is where testbed/install.sh caches the servers: $HSI_TESTBED_CACHE/bin, by default
// ~/.cache/hsi-profiling/bin (outside the clone, so other clones reuse them).
func binDir() string {
	if d := os.Getenv("HSI_TESTBED_CACHE"); d != "" {
		return filepath.Join(d, "bin")
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "hsi-profiling", "bin")
}

// RepoRoot finds the repository root (the folder holding testbed/versions.sh) from the working
// directory upwards, so tests in any package and the commands find the same files.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "testbed", "versions.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("repository root (with testbed/versions.sh) not found above the working directory")
		}
		dir = parent
	}
}

func readVersions(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		if k, v, ok := strings.Cut(line, "="); ok && !strings.HasPrefix(line, "#") {
			out[k] = strings.Trim(v, `"'`)
		}
	}
	return out, s.Err()
}
