// Command hsi-query runs the plugin binary as Grafana does (gRPC, go-plugin handshake) and prints
// what Grafana would get back, readably: the health check, a query's frames, a resource.
//
//	hsi-query [flags] health
//	hsi-query [flags] query '{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}"}'
//	hsi-query [flags] resource profile-types
//
// Upstream URLs come from --env-file (written by hsi-testbed) or the --pyroscope, --prometheus
// and --jaeger flags.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
)

func main() {
	binary := flag.String("plugin", fmt.Sprintf("dist/gpx_hsi_profiling_%s_%s", runtime.GOOS, runtime.GOARCH), "plugin executable")
	envFile := flag.String("env-file", "", "test bed endpoints (KEY=VALUE lines from hsi-testbed)")
	pyro := flag.String("pyroscope", "", "Pyroscope URL")
	prom := flag.String("prometheus", "", "Prometheus URL")
	jaeger := flag.String("jaeger", "", "Jaeger query URL")
	since := flag.Duration("since", 15*time.Minute, "query time range: from now-since to now")
	rows := flag.Int("rows", 20, "rows to print per frame")
	verbose := flag.Bool("v", false, "print the plugin's own log")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: hsi-query [flags] health | query JSON | resource PATH")
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
	var logOut *os.File
	if *verbose {
		logOut = os.Stderr
	}
	host, err := pluginhost.Start(*binary, pluginhost.DataSource{UID: "hsi", Name: "HSI Profiling", JSONData: jsonData}, logOut)
	if err != nil {
		fail(err)
	}
	defer host.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	switch flag.Arg(0) {
	case "health":
		res, err := host.CheckHealth(ctx)
		if err != nil {
			fail(err)
		}
		fmt.Printf("status:  %s\nmessage: %s\n", res.Status, res.Message)
	case "query":
		if flag.NArg() < 2 {
			fail(fmt.Errorf("query needs the query JSON as its argument"))
		}
		model := map[string]any{}
		if err := json.Unmarshal([]byte(flag.Arg(1)), &model); err != nil {
			fail(fmt.Errorf("query JSON: %w", err))
		}
		now := time.Now()
		res, err := host.QueryData(ctx, pluginhost.Query{RefID: "A", JSON: model, From: now.Add(-*since), To: now})
		if err != nil {
			fail(err)
		}
		for refID, r := range res.Responses {
			fmt.Printf("== refId %s\n", refID)
			if r.Error != "" {
				fmt.Printf("error (%s): %s\n", r.ErrorSource, r.Error)
			}
			frames, err := data.UnmarshalArrowFrames(r.Frames)
			if err != nil {
				fail(err)
			}
			for _, f := range frames {
				printFrame(f, *rows)
			}
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
	default:
		flag.Usage()
		os.Exit(2)
	}
}

func printFrame(f *data.Frame, rows int) {
	if f.Meta != nil {
		for _, n := range f.Meta.Notices {
			fmt.Printf("notice (%s): %s\n", n.Severity, n.Text)
		}
	}
	table, err := f.StringTable(-1, rows)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(table)
	if f.Meta != nil && f.Meta.PreferredVisualization == data.VisTypeFlameGraph {
		printHottest(f, 10)
	}
}

// printHottest sums self time per function: what a person reads first in a flame graph.
func printHottest(f *data.Frame, n int) {
	selfField, _ := f.FieldByName("self")
	labelField, _ := f.FieldByName("label")
	valueField, _ := f.FieldByName("value")
	if selfField == nil || labelField == nil || valueField == nil || f.Rows() == 0 {
		return
	}
	var names []string
	if labelField.Config != nil && labelField.Config.TypeConfig != nil && labelField.Config.TypeConfig.Enum != nil {
		names = labelField.Config.TypeConfig.Enum.Text
	}
	self := map[string]int64{}
	for i := range f.Rows() {
		idx := int(labelField.At(i).(data.EnumItemIndex))
		if idx < len(names) {
			self[names[idx]] += selfField.At(i).(int64)
		}
	}
	type kv struct {
		name string
		v    int64
	}
	var list []kv
	for k, v := range self {
		list = append(list, kv{k, v})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v })
	total := valueField.At(0).(int64)
	unit := ""
	if valueField.Config != nil {
		unit = valueField.Config.Unit
	}
	fmt.Printf("hottest functions by self (total %d %s):\n", total, unit)
	for i, e := range list {
		if i == n {
			break
		}
		fmt.Printf("  %5.1f%%  %s\n", 100*float64(e.v)/float64(max(total, 1)), e.name)
	}
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

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hsi-query:", err)
	os.Exit(1)
}
