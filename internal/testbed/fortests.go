package testbed

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver, as pkg/gputrace reads exports

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
)

// ForTests returns the endpoints of the bed named by the HSI_TESTBED_* variables (scripts/test.sh
// starts one for the whole suite) or else starts a bed with the demo and its traffic for this
// test binary; stop must be called when the tests are done. It waits until the demo's profiles
// are queryable, so tests can rely on data being there.
func ForTests(ctx context.Context) (e Endpoints, stop func(), err error) {
	if e, ok := FromEnv(); ok {
		return e, func() {}, WaitForDemoData(ctx, e)
	}
	bed, err := Start(ctx, Options{Demo: true})
	if err != nil {
		return e, nil, err
	}
	trafficCtx, cancel := context.WithCancel(context.Background())
	// The pace of the suite's bed (cmd/hsi-testbed), so a test meets the same engine either way.
	go func() { _ = bed.Traffic(trafficCtx, 0, 500*time.Millisecond, io.Discard) }()
	stop = func() { cancel(); bed.Stop() }
	if err := WaitForDemoData(ctx, bed.Endpoints); err != nil {
		stop()
		return e, nil, err
	}
	return bed.Endpoints, stop, nil
}

// Traffic runs the demo's traffic generator against the bed: requests requests (0: until ctx
// ends), one every interval, every fourth one slow. Its output (trace ID, slow step, duration per
// line) goes to out.
func (b *Bed) Traffic(ctx context.Context, requests int, every time.Duration, out io.Writer) error {
	cmd := exec.CommandContext(ctx, filepath.Join(b.Dir, "hsi-demo"), "traffic", "--backend", b.DemoURL,
		"--engine", b.EngineURL, "--requests", fmt.Sprint(requests), "--every", every.String())
	cmd.Stdout, cmd.Stderr = out, out
	err := cmd.Run()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// DemoDataTimeout bounds the wait for the demo's first profiles (uploaded every 2 s) and traces.
const DemoDataTimeout = 90 * time.Second

// WaitForDemoData waits until Pyroscope has sampled the demo's hot functions, Jaeger knows its
// three services and Prometheus has scraped the simulated GPUs.
func WaitForDemoData(ctx context.Context, e Endpoints) error {
	ctx, cancel := context.WithTimeout(ctx, DemoDataTimeout)
	defer cancel()
	var last error
	for {
		if last = demoDataReady(ctx, e); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the demo's data did not show up within %s: %v", DemoDataTimeout, last)
		case <-time.After(time.Second):
		}
	}
}

func demoDataReady(ctx context.Context, e Endpoints) error {
	// The tests look for these functions; wait until each has been sampled at least once.
	for _, want := range []struct{ service, profileType, function string }{
		{"nemotron-backend", "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "main.dbQuery"},
		{"ai-enrichment", "memory:alloc_objects:count:space:bytes", "main.extractFeatures"},
	} {
		names, err := flameGraphNames(ctx, e, want.service, want.profileType)
		if err != nil {
			return fmt.Errorf("pyroscope: %w", err)
		}
		if !slices.Contains(names, want.function) {
			return fmt.Errorf("pyroscope has no %s samples of %s in %s yet", want.profileType, want.function, want.service)
		}
	}
	var services struct {
		Services []string `json:"services"`
	}
	if err := getJSON(ctx, e.JaegerURL+"/api/v3/services", &services); err != nil {
		return fmt.Errorf("jaeger: %w", err)
	}
	if len(services.Services) < 3 {
		return fmt.Errorf("jaeger knows services %v, want the demo's three", services.Services)
	}
	return gpuSimDataReady(ctx, e)
}

func flameGraphNames(ctx context.Context, e Endpoints, service, profileType string) ([]string, error) {
	now := time.Now()
	body, _ := json.Marshal(map[string]any{
		"profileTypeID": profileType,
		"labelSelector": fmt.Sprintf("{service_name=%q}", service),
		"start":         now.Add(-time.Hour).UnixMilli(), "end": now.UnixMilli(),
	})
	// Connect's JSON encoding: no need for generated code in a readiness probe.
	var merged struct {
		Flamegraph struct {
			Names []string `json:"names"`
		} `json:"flamegraph"`
	}
	err := postJSON(ctx, e.PyroscopeURL+"/querier.v1.QuerierService/SelectMergeStacktraces", body, &merged)
	return merged.Flamegraph.Names, err
}

func postJSON(ctx context.Context, url string, body []byte, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return do(req, dst)
}

func getJSON(ctx context.Context, url string, dst any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	return do(req, dst)
}

func do(req *http.Request, dst any) error {
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 8<<20))
	if err != nil {
		return err
	}
	if res.StatusCode != 200 {
		return fmt.Errorf("%s: HTTP %d: %s", req.URL.Path, res.StatusCode, strings.TrimSpace(string(b)))
	}
	return json.Unmarshal(b, dst)
}

// MainForTests is TestMain for packages that need the bed: it sets *e and runs the tests.
func MainForTests(m interface{ Run() int }, e *Endpoints) int {
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout+DemoDataTimeout)
	endpoints, stop, err := ForTests(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test bed:", err)
		return 1
	}
	defer stop()
	*e = endpoints
	return m.Run()
}

// PluginBuild asks MainWithPlugin for one build of the plugin binary, whose path it writes to
// *Path: CGO as the linux/amd64 release is built (with NVML), Race with the race detector.
type PluginBuild struct {
	CGO, Race bool
	Path      *string
}

// MainWithPlugin is MainForTests for the tests of the plugin binary: it first builds the plugin
// (pluginhost.Build), once per build asked for, into a temporary folder removed afterwards.
func MainWithPlugin(m interface{ Run() int }, e *Endpoints, builds ...PluginBuild) int {
	dir, err := os.MkdirTemp("", "hsi-plugin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for i, b := range builds {
		if *b.Path, err = pluginhost.Build(root, filepath.Join(dir, strconv.Itoa(i)), b.CGO, b.Race); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return MainForTests(m, e)
}

// WriteKernelTrace writes, in dir, the GPU kernel trace the test bed does not capture: a small
// PyTorch profiler (Kineto) trace named for the request traceID, as the seeds' services would
// write it (16-digit epoch-µs timestamps, as Kineto writes them), with one 20 µs gemm kernel on
// stream 7. It returns the file's path.
func WriteKernelTrace(dir, traceID string) (string, error) {
	const trace = `{"schemaVersion": 1, "traceEvents": [
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1763900000000000.000, "dur": 5.000, "args": {"correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1763900000000010.125, "dur": 20.000, "args": {"device": 0, "stream": 7, "correlation": 1}}
]}`
	path := filepath.Join(dir, "detect_"+traceID+".pt.trace.json")
	return path, os.WriteFile(path, []byte(trace), 0o644)
}

// WriteNsysKernel writes at path a minimal Nsight Systems SQLite export (nsys export --type
// sqlite: the StringIds and CUPTI_ACTIVITY_KIND_KERNEL tables) holding one 4 µs kernel named name
// on stream 7, for tests that must tell which export the plugin read.
func WriteNsysKernel(path, name string) error {
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, q := range []string{
		`CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)`,
		`CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER, correlationId INTEGER, demangledName INTEGER, shortName INTEGER)`,
		`INSERT INTO StringIds VALUES (1, ?)`,
		`INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 5000, 0, 7, 1, 1, 1)`,
	} {
		var args []any
		if strings.Contains(q, "?") {
			args = append(args, name)
		}
		if _, err := db.Exec(q, args...); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}
