package testbed

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// DemoServices are the demo workload's services, in the order they start: the backend last, as
// it calls the others. "engine" is the simulated LLM server (vLLM's spans and metrics).
var DemoServices = []string{"detector", "enrichment", "engine", "backend"}

// DemoPods are the Kubernetes pods the demo's services say they run in (k8s.pod.name and
// k8s.namespace.name); the simulated dcgm-exporter maps GPU 0 and GPU 1 to the first two, as
// dcgm-exporter's pod mapping does, so a span naming no GPU meets its own pod's GPU.
var DemoPods = map[string]string{
	"detector":   "inference/ai-detector-0",
	"engine":     "inference/nemotron-llm-0",
	"enrichment": "inference/ai-enrichment-0",
	"backend":    "inference/nemotron-backend-0",
}

// DemoJob is the Prometheus job of the demo's services.
const DemoJob = "hsi-demo"

// RulesDir holds the project's Prometheus rule files (relative to the repository root); the bed
// loads its *.yml when the folder exists.
const RulesDir = "provisioning/prometheus/rules"

// prometheusConfig is the bed's Prometheus configuration: every job at the bed's 1 s interval,
// and the project's rule files if there are any.
func prometheusConfig(root string, jobs map[string][]string) string {
	cfg := "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
	if st, err := os.Stat(filepath.Join(root, RulesDir)); err == nil && st.IsDir() {
		cfg += "rule_files:\n  - " + strconv.Quote(filepath.Join(root, RulesDir, "*.yml")) + "\n"
	}
	names := make([]string, 0, len(jobs))
	for name := range jobs {
		names = append(names, name)
	}
	sort.Strings(names)
	if len(names) > 0 {
		cfg += "scrape_configs:\n"
	}
	for _, name := range names {
		cfg += "  - job_name: " + name + "\n    static_configs:\n      - targets: [" + strings.Join(quoteAll(jobs[name]), ", ") + "]\n"
	}
	return cfg
}

func (b *Bed) startPrometheus(root string, port int, dataDir string, jobs map[string][]string) (*process, error) {
	path := filepath.Join(b.Dir, "prometheus.yml")
	if err := os.WriteFile(path, []byte(prometheusConfig(root, jobs)), 0o644); err != nil {
		return nil, err
	}
	return b.start("prometheus", nil, "prometheus",
		"--config.file="+path,
		"--storage.tsdb.path="+dataDir,
		"--web.listen-address="+addr(port),
		"--web.enable-lifecycle",
		// The scenarios write the series the bed cannot scrape from a real source (a pod's
		// cAdvisor throttling, a shared GPU's per-pod series, an engine's preemptions).
		"--web.enable-remote-write-receiver",
	)
}

func (b *Bed) startPyroscope(bin string, httpPort, grpcPort, memberPort int) (*process, error) {
	args := []string{
		"-server.http-listen-address=127.0.0.1", "-server.http-listen-port=" + strconv.Itoa(httpPort),
		"-server.grpc-listen-address=127.0.0.1", "-server.grpc-listen-port=" + strconv.Itoa(grpcPort),
		"-storage.backend=filesystem", "-storage.filesystem.dir=" + filepath.Join(b.Dir, "pyroscope-data"),
		"-self-profiling.disable-push=true",
		// Its rings advertise the machine's address unless told otherwise (TESTBED.md).
		"-memberlist.bind-addr=127.0.0.1", "-memberlist.bind-port=" + strconv.Itoa(memberPort),
		"-memberlist.advertise-addr=127.0.0.1",
	}
	for _, flag := range []string{
		"compactor.ring.instance-addr", "distributor.ring.instance-addr", "ingester.lifecycler.addr",
		"overrides-exporter.ring.instance-addr", "query-frontend.instance-addr",
		"query-scheduler.ring.instance-addr", "store-gateway.sharding-ring.instance-addr",
	} {
		args = append(args, "-"+flag+"=127.0.0.1")
	}
	return b.start("pyroscope", nil, bin, args...)
}

// jaegerConfig is the bed's Jaeger v2, configured as docker-compose.yaml's: memory storage, the
// spans forwarded to Tempo, and the query server's HTTP keep-alive on (Jaeger's default is off,
// which makes every request a new connection; the troubleshooting guide tells users to set it).
const jaegerConfig = `service:
  extensions: [jaeger_storage, jaeger_query, healthcheckv2]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter, otlp/tempo]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  healthcheckv2:
    use_v2: true
    http:
      endpoint: %[5]s
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: %[3]s
      keep_alives_enabled: true
    grpc:
      endpoint: %[4]s
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 100000
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %[1]s
      http:
        endpoint: %[2]s
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
  otlp/tempo:
    endpoint: %[6]s
    tls:
      insecure: true
    headers:
      X-Scope-OrgID: %[7]s
`

func (b *Bed) startJaeger(bin string, otlpGRPC, otlpHTTP, queryHTTP, queryGRPC, health int) (*process, error) {
	path := filepath.Join(b.Dir, "jaeger.yaml")
	// Jaeger forwards every span it takes to the bed's Tempo as well (startTempo runs first).
	cfg := fmt.Sprintf(jaegerConfig, addr(otlpGRPC), addr(otlpHTTP), addr(queryHTTP), addr(queryGRPC), addr(health), b.TempoOTLP, b.TempoTenant)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	return b.start("jaeger", nil, bin, "--config="+path)
}

// startDemo builds cmd/hsi-demo and runs its three services, each its own process (CPU profiles
// are per process), pointed at the bed's Pyroscope and Jaeger, then the simulated dcgm-exporters
// (the demo's host, and the scenarios').
func (b *Bed) startDemo(ctx context.Context, root string, ports map[string]int, gpuSimPort, scenarioGPUPort, kubeStatePort int) error {
	bin := filepath.Join(b.Dir, "hsi-demo")
	b.DemoBinary = bin
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/hsi-demo")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the demo workload: %v\n%s", err, out)
	}
	b.DemoURL = "http://" + addr(ports["backend"])
	b.EngineURL = "http://" + addr(ports["engine"])
	for _, svc := range DemoServices {
		p, err := b.start("demo-"+svc, nil, bin, "serve",
			"--service="+svc,
			"--listen="+addr(ports[svc]),
			"--detector=http://"+addr(ports["detector"]),
			"--enrichment=http://"+addr(ports["enrichment"]),
			"--engine="+b.EngineURL,
			"--pod="+DemoPods[svc],
			"--pyroscope="+b.PyroscopeURL,
			"--otlp="+b.JaegerOTLP,
		)
		if err != nil {
			return err
		}
		if err := p.waitReady(ctx, "http://"+addr(ports[svc])+"/healthz", statusOK); err != nil {
			return err
		}
	}
	b.opts.Log("demo workload: backend %s (detector, enrichment, simulated LLM engine %s behind it)", b.DemoURL, b.EngineURL)
	if err := b.startGPUSimulator(ctx, bin, gpuSimPort); err != nil {
		return err
	}
	if err := b.startKubeState(ctx, bin, kubeStatePort); err != nil {
		return err
	}
	return b.startScenarioGPUs(ctx, bin, scenarioGPUPort)
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}
