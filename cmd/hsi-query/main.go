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
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
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
	nvml := flag.Bool("nvml", false, "enable local GPUs through NVML (jsonData.nvmlEnabled) for gpuLocal queries")
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
	if *nvml {
		jsonData["nvmlEnabled"] = true
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
	if f.Meta != nil && f.Meta.PreferredVisualization == data.VisTypeFlameGraph {
		printFlameGraph(f, rows)
		return
	}
	table, err := f.StringTable(-1, rows)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(table)
}

// printFlameGraph prints the flame graph as an indented tree of its wide nodes (at least 2% of
// the total), then the functions with the most self time: what a person reads first.
func printFlameGraph(f *data.Frame, rows int) {
	level, _ := f.FieldByName("level")
	value, _ := f.FieldByName("value")
	self, _ := f.FieldByName("self")
	label, _ := f.FieldByName("label")
	if level == nil || value == nil || self == nil || label == nil {
		fmt.Println("flame graph frame without level/value/self/label fields")
		return
	}
	var names []string
	if label.Config != nil && label.Config.TypeConfig != nil && label.Config.TypeConfig.Enum != nil {
		names = label.Config.TypeConfig.Enum.Text
	}
	name := func(i int) string {
		if idx := int(label.At(i).(data.EnumItemIndex)); idx < len(names) {
			return names[idx]
		}
		return "?"
	}
	unit := ""
	if value.Config != nil {
		unit = value.Config.Unit
	}
	fmt.Printf("flame graph %q: %d nodes, unit %s\n", f.Name, f.Rows(), unit)
	if !frames.FlameGraphHasSamples(f) {
		fmt.Println("  (no samples in this range)")
		return
	}
	total := max(value.At(0).(int64), 1)
	pct := func(v int64) float64 { return 100 * float64(v) / float64(total) }
	printed := 0
	for i := range f.Rows() {
		v := value.At(i).(int64)
		if pct(v) < 2 || printed == rows {
			continue
		}
		printed++
		fmt.Printf("  %5.1f%%  %s%s\n", pct(v), strings.Repeat("  ", int(level.At(i).(int64))), name(i))
	}

	bySelf := map[string]int64{}
	for i := range f.Rows() {
		bySelf[name(i)] += self.At(i).(int64)
	}
	type entry struct {
		name string
		v    int64
	}
	var list []entry
	for k, v := range bySelf {
		list = append(list, entry{k, v})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v })
	fmt.Printf("most self %s (of %d):\n", unit, total)
	for i, e := range list {
		if i == 10 {
			break
		}
		fmt.Printf("  %5.1f%%  %s\n", pct(e.v), e.name)
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
