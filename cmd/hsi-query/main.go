// Command hsi-query runs the plugin binary as Grafana does (gRPC, go-plugin handshake) and prints
// what Grafana would get back, readably: the health check, a query's frames as tables in their
// units and flame graphs as trees, a resource, or one request explained.
//
//	hsi-query [flags] health
//	hsi-query [flags] query '{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}"}'
//	hsi-query [flags] resource profile-types
//	hsi-query [flags] request TRACE_ID
//
// Upstream URLs come from --env-file (written by hsi-testbed) or the --pyroscope, --prometheus
// and --jaeger flags; --json-data sets any other setting. It exits 1 when the answer is an error
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
	jsonDataFlag := flag.String("json-data", "", `data source settings merged into jsonData last, e.g. '{"traceDirectories":["/tmp/traces"]}'`)
	since := flag.Duration("since", 15*time.Minute, "query time range: from now-since to now")
	rows := flag.Int("rows", 20, "rows to print per frame (flame graphs: lines of the tree)")
	width := flag.Int("width", terminalWidth(), "characters per line: the terminal's ($COLUMNS), else 120")
	wait := flag.Duration("wait", time.Minute, "request: how long to wait for the profiles of the request's services")
	verbose := flag.Bool("v", false, "print the plugin's own log")
	nvml := flag.Bool("nvml", false, "enable local GPUs through NVML (jsonData.nvmlEnabled) for gpuLocal queries")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: hsi-query [flags] health | query JSON | resource PATH | request TRACE_ID")
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
	}
	for key, v := range map[string]string{"pyroscopeUrl": *pyro, "prometheusUrl": *prom, "jaegerUrl": *jaeger} {
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
	ask := func(ctx context.Context, model map[string]any) ([]*data.Frame, error) {
		now := time.Now()
		res, err := host.QueryData(ctx, pluginhost.Query{RefID: "A", JSON: model, From: now.Add(-*since), To: now})
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
	default:
		flag.Usage()
		os.Exit(2)
	}
	if failed {
		stopPlugin()
		os.Exit(1)
	}
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
