// Command hsi-query runs the plugin binary as Grafana does (gRPC, go-plugin handshake) and prints
// what Grafana would get back, readably: the health check, a query's frames as tables in their
// units and flame graphs as trees, a resource, or one request explained.
//
//	hsi-query [flags] health
//	hsi-query [flags] query '{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}"}'
//	hsi-query [flags] resource profile-types
//	hsi-query [flags] request TRACE_ID
//	hsi-query [flags] tail SERVICE OPERATION [PERCENTILE]
//
// --since-data SELECTOR starts the range where the Prometheus series SELECTOR begin, when that is
// later than now-since (a test bed started seconds ago), and says so in one line.
//
// Upstream URLs come from --env-file (written by hsi-testbed: Jaeger and Tempo both, Jaeger read
// unless --trace-store tempo) or the --pyroscope, --prometheus, --jaeger and --tempo flags;
// --json-data sets any other setting. It exits 1 when the answer is an error
// (a failed health check, a query answered with an error, a resource's HTTP error), so scripts can
// tell.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
)

// defaultWidth is the table width when COLUMNS does not say the terminal's.
const defaultWidth = 120

func main() {
	binary := flag.String("plugin", fmt.Sprintf("dist/gpx_hsi_profiling_%s_%s", runtime.GOOS, runtime.GOARCH), "plugin executable")
	envFile := flag.String("env-file", "", "test bed endpoints (KEY=VALUE lines from hsi-testbed)")
	pyro := flag.String("pyroscope", "", "Pyroscope URL")
	prom := flag.String("prometheus", "", "Prometheus URL")
	jaeger := flag.String("jaeger", "", "Jaeger query URL")
	tempo := flag.String("tempo", "", "Tempo URL (its query frontend or single binary)")
	traceStore := flag.String("trace-store", "", "which trace store the queries read when both are set: jaeger (default) or tempo (jsonData.traceStore)")
	jsonDataFlag := flag.String("json-data", "", `data source settings merged into jsonData last, e.g. '{"traceDirectories":["/tmp/traces"]}'`)
	since := flag.Duration("since", 15*time.Minute, "query time range: from now-since to now")
	sinceData := flag.String("since-data", "", `query: start the range at the first sample of these Prometheus series when later than now-since, e.g. 'DCGM_FI_DEV_GPU_UTIL{Hostname="gpu-node-1"}'`)
	sinceDataName := flag.String("since-data-name", "", "what --since-data's series are, in the line that says the range is shorter (default: the selector)")
	rows := flag.Int("rows", 20, "rows to print per frame (flame graphs: lines of the tree)")
	width := flag.Int("width", terminalWidth(), "characters per line: the terminal's ($COLUMNS), else 120")
	wait := flag.Duration("wait", time.Minute, "request: how long to wait for the profiles of the request's services")
	verbose := flag.Bool("v", false, "print the plugin's own log")
	nvml := flag.Bool("nvml", false, "enable local GPUs through NVML (jsonData.nvmlEnabled) for gpuLocal queries")
	maxTraces := flag.Int("max-traces", 0, "tail: how many tail requests to diagnose (default the plugin's, 20)")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: hsi-query [flags] health | query JSON | resource PATH | request TRACE_ID | tail SERVICE OPERATION [PERCENTILE]")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() < 1 {
		flag.Usage()
		os.Exit(2)
	}

	jsonData := map[string]any{}
	if *envFile != "" {
		env, err := readEnv(*envFile)
		if err != nil {
			fail(err)
		}
		jsonData["pyroscopeUrl"] = env["HSI_TESTBED_PYROSCOPE_URL"]
		jsonData["prometheusUrl"] = env["HSI_TESTBED_PROMETHEUS_URL"]
		jsonData["jaegerUrl"] = env["HSI_TESTBED_JAEGER_URL"]
		if env["HSI_TESTBED_TEMPO_URL"] != "" {
			jsonData["tempoUrl"] = env["HSI_TESTBED_TEMPO_URL"]
			jsonData["tempoTenant"] = env["HSI_TESTBED_TEMPO_TENANT"]
		}
	}
	for key, v := range map[string]string{"pyroscopeUrl": *pyro, "prometheusUrl": *prom, "jaegerUrl": *jaeger, "tempoUrl": *tempo, "traceStore": *traceStore} {
		if v != "" {
			jsonData[key] = v
		}
	}
	if *nvml {
		jsonData["nvmlEnabled"] = true
	}
	if err := mergeJSONData(jsonData, *jsonDataFlag); err != nil {
		fail(err)
	}
	var logOut *os.File
	if *verbose {
		logOut = os.Stderr
	}
	host, err := pluginhost.Start(*binary, pluginhost.DataSource{UID: "hsi", Name: "HSI Profiling", JSONData: jsonData}, logOut)
	if err != nil {
		fail(err)
	}
	stopPlugin = host.Stop
	defer host.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute+*wait)
	defer cancel()
	var start time.Time // set by --since-data: the range starts here rather than since ago
	ask := func(ctx context.Context, model map[string]any) ([]*data.Frame, error) {
		now := time.Now()
		from := now.Add(-*since)
		if !start.IsZero() {
			from = start
		}
		res, err := host.QueryData(ctx, pluginhost.Query{RefID: "A", JSON: model, From: from, To: now})
		if err != nil {
			return nil, err
		}
		r := res.Responses["A"]
		if r == nil {
			return nil, errors.New("the answer holds no response for the query")
		}
		fs, err := data.UnmarshalArrowFrames(r.Frames)
		if err != nil {
			return nil, err
		}
		if r.Error != "" {
			return fs, &answerError{source: r.ErrorSource, message: r.Error}
		}
		return fs, nil
	}

	failed := false
	switch flag.Arg(0) {
	case "health":
		res, err := host.CheckHealth(ctx)
		if err != nil {
			fail(err)
		}
		fmt.Printf("status:  %s\nmessage: %s\n", res.Status, res.Message)
		failed = res.Status != pluginv2.CheckHealthResponse_OK
	case "query":
		if flag.NArg() < 2 {
			fail(fmt.Errorf("query needs the query JSON as its argument"))
		}
		model := map[string]any{}
		if err := json.Unmarshal([]byte(flag.Arg(1)), &model); err != nil {
			fail(fmt.Errorf("query JSON: %w", err))
		}
		if *sinceData != "" {
			note, from, err := startAtData(ctx, jsonData, *sinceData, *sinceDataName, *since, model)
			if err != nil {
				fail(err)
			}
			if note != "" {
				fmt.Println(wrap("", note, *width, "  "))
			}
			start = from
		}
		fs, err := ask(ctx, model)
		var ae *answerError
		if err != nil && !errors.As(err, &ae) {
			fail(err)
		}
		if ae != nil {
			fmt.Println(wrap("", ae.Error(), *width, "  "))
			failed = true
		}
		for i, f := range fs {
			if i > 0 {
				fmt.Println()
			}
			printFrame(f, *rows, *width)
		}
	case "resource":
		if flag.NArg() < 2 {
			fail(fmt.Errorf("resource needs a path, e.g. profile-types"))
		}
		res, err := host.CallResource(ctx, flag.Arg(1))
		if err != nil {
			fail(err)
		}
		fmt.Printf("HTTP %d\n%s\n", res.Status, res.Body)
		failed = res.Status >= 400
	case "request":
		if flag.NArg() < 2 {
			fail(fmt.Errorf("request needs a trace ID"))
		}
		o := requestOptions{traceID: flag.Arg(1), wait: *wait, every: 3 * time.Second, rows: *rows, width: *width}
		if err := runRequest(ctx, os.Stdout, os.Stderr, ask, o); err != nil {
			fail(err)
		}
	case "tail":
		o, err := parseTailArgs(flag.Args()[1:])
		if err != nil {
			fail(err)
		}
		o.maxTraces, o.rows, o.width = *maxTraces, *rows, *width
		err = runTail(ctx, os.Stdout, ask, o)
		var ae *answerError
		if errors.As(err, &ae) {
			fmt.Println(wrap("", ae.Error(), *width, "  "))
			failed = true
		} else if err != nil {
			fail(err)
		}
	default:
		flag.Usage()
		os.Exit(2)
	}
	if failed {
		stopPlugin()
		os.Exit(1)
	}
}

// startAtData is where the range of --since-data starts, and the line that says why, if it is
// not since ago. The plugin steps a GPU query by its minStep, dcgm-exporter's 30 s by default.
func startAtData(ctx context.Context, jsonData map[string]any, selector, name string, since time.Duration, model map[string]any) (string, time.Time, error) {
	prom, _ := jsonData["prometheusUrl"].(string)
	if prom == "" {
		return "", time.Time{}, errors.New("--since-data needs Prometheus' URL (--env-file or --prometheus)")
	}
	step := 30 * time.Second
	if s, ok := model["minStep"].(string); ok {
		if d, err := time.ParseDuration(s); err == nil && d > step {
			step = d
		}
	}
	now := time.Now()
	first, err := earliestSample(ctx, prom, selector, now, since)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("--since-data: %w", err)
	}
	from, clipped := dataRange(now, first, since, step)
	if !clipped {
		return "", time.Time{}, nil
	}
	if name == "" {
		name = "the series " + selector
	}
	return dataRangeNote(name, now, first, from, since), from, nil
}

// mergeJSONData sets the keys of a JSON object in jsonData, over what is there.
func mergeJSONData(jsonData map[string]any, raw string) error {
	if strings.TrimSpace(raw) == "" {
		return nil
	}
	extra := map[string]any{}
	if err := json.Unmarshal([]byte(raw), &extra); err != nil {
		return fmt.Errorf("--json-data must be a JSON object: %w", err)
	}
	for k, v := range extra {
		jsonData[k] = v
	}
	return nil
}

// terminalWidth is $COLUMNS when set (scripts/query.sh exports the terminal's), else 120.
func terminalWidth() int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n >= 40 {
		return n
	}
	return defaultWidth
}

// printFrame writes a frame's notices, then the frame: flame graphs as trees, the others as
// tables.
func printFrame(f *data.Frame, rows, width int) {
	if f.Meta != nil {
		for _, n := range f.Meta.Notices {
			fmt.Println(wrap(fmt.Sprintf("notice (%s): ", n.Severity), n.Text, width, "  "))
		}
	}
	if f.Meta != nil && f.Meta.PreferredVisualization == data.VisTypeFlameGraph {
		printFlameGraph(os.Stdout, f, rows, width)
		return
	}
	printFrameTable(os.Stdout, f, rows, width, nil)
}

func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w (is the test bed running? scripts/run.sh starts it)", err)
	}
	defer f.Close()
	out := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(s.Text(), "="); ok {
			out[k] = v
		}
	}
	return out, s.Err()
}

// stopPlugin ends the plugin process before an early exit (deferred calls do not run then).
var stopPlugin = func() {}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hsi-query:", err)
	stopPlugin()
	os.Exit(1)
}
