package prometheus

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/common/model"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

// A fleet of two exporters: node-a current (Hostname, pod, profiling metrics, PCIe in B/s),
// node-b old (hostname, pod_name, deprecated PCIe in KB/s).
var (
	nodeA0 = map[string]string{"Hostname": "node-a", "gpu": "0", "UUID": "GPU-a0", "modelName": "NVIDIA A100-SXM4-80GB", "pod": "detector-0", "namespace": "inference"}
	nodeA1 = map[string]string{"Hostname": "node-a", "gpu": "1", "UUID": "GPU-a1", "modelName": "NVIDIA A100-SXM4-80GB"}
	nodeB0 = map[string]string{"hostname": "node-b", "gpu": "0", "UUID": "GPU-b0", "modelName": "Tesla T4", "pod_name": "enricher-0", "pod_namespace": "inference"}
	nodeB1 = map[string]string{"hostname": "node-b", "gpu": "10", "UUID": "GPU-b10", "modelName": "Tesla T4"}
)

var mixedFleetLabels = []string{"Hostname", "hostname", "gpu", "UUID", "modelName", "pod", "namespace", "pod_name", "pod_namespace", "container", "instance", "job", "pci_bus_id"}

var (
	t0   = time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)
	tEnd = t0.Add(2 * time.Minute)
)

func points(values ...float64) [][2]any {
	out := make([][2]any, len(values))
	for i, v := range values {
		out[i] = [2]any{float64(t0.Add(time.Duration(i) * 30 * time.Second).Unix()), formatFloat(v)}
	}
	return out
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func TestGPUMetricNamesRolesAcrossOldAndNewExporters(t *testing.T) {
	f := &fakeDCGM{
		metricNames: []string{"DCGM_FI_DEV_GPU_UTIL"},
		labelNames:  mixedFleetLabels,
		rangeAnswer: func(metrics []string, _ string) []fakeStream {
			return []fakeStream{
				{Metric: nodeB1, Values: points(5, 6)},
				{Metric: nodeB0, Values: points(40, 41)},
				{Metric: nodeA1, Values: points(2)},
				{Metric: nodeA0, Values: points(95, 96, 97)},
			}
		},
	}
	c, _ := newFakeDCGM(t, f)
	res, err := c.GPUMetric(context.Background(), "gpu_utilization", models.GPUFilter{}, "", t0, tEnd, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Metric.Name != "gpu_utilization" || res.Metric.Unit != "percent" || res.Aggregation != models.AggregationGPU || res.Step != 30*time.Second {
		t.Errorf("result %+v", res)
	}
	if len(res.Notices.Texts()) != 0 {
		t.Errorf("notices %v", res.Notices.Texts())
	}
	var got []map[string]string
	for _, s := range res.Series {
		got = append(got, s.Labels)
	}
	want := []map[string]string{
		{"host": "node-a", "gpu": "0", "uuid": "GPU-a0", "model": "NVIDIA A100-SXM4-80GB", "pod": "detector-0", "namespace": "inference"},
		{"host": "node-a", "gpu": "1", "uuid": "GPU-a1", "model": "NVIDIA A100-SXM4-80GB"},
		{"host": "node-b", "gpu": "0", "uuid": "GPU-b0", "model": "Tesla T4", "pod": "enricher-0", "namespace": "inference"},
		{"host": "node-b", "gpu": "10", "uuid": "GPU-b10", "model": "Tesla T4"},
	}
	if !slices.EqualFunc(got, want, func(a, b map[string]string) bool { return mapsEqual(a, b) }) {
		t.Errorf("series labels\n%v\nwant\n%v", got, want)
	}
	if s := res.Series[0]; !slices.Equal(s.Values, []float64{95, 96, 97}) || !s.Times[1].Equal(t0.Add(30*time.Second)) {
		t.Errorf("node-a/0 points %v %v", s.Times, s.Values)
	}

	ranges := f.requestsTo("/api/v1/query_range")
	if len(ranges) != 1 || ranges[0].Step != "30" {
		t.Fatalf("range requests %+v", ranges)
	}
	e := reparse(t, ranges[0].Query)
	wantGrouping := "avg by (Hostname, hostname, gpu, UUID, modelName, pod, pod_name, namespace, pod_namespace, container) ("
	if !strings.HasPrefix(e.String(), wantGrouping) {
		t.Errorf("query %s\ndoes not group by every alias present (%s)", e, wantGrouping)
	}
	// Detection asked for label names among the catalogue's metrics only.
	labelReqs := f.requestsTo("/api/v1/labels")
	if len(labelReqs) != 1 || len(labelReqs[0].Matches) != 1 || !strings.HasPrefix(labelReqs[0].Matches[0], `{__name__=~"DCGM_FI_DEV_BOARD_POWER_WATTS|`) {
		t.Errorf("label name requests %+v", labelReqs)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestGPUMetricFilterCoversEveryHostAlias(t *testing.T) {
	f := &fakeDCGM{metricNames: []string{"DCGM_FI_DEV_GPU_UTIL"}, labelNames: mixedFleetLabels}
	c, _ := newFakeDCGM(t, f)
	_, err := c.GPUMetric(context.Background(), "gpu_utilization", models.GPUFilter{Hosts: []string{"node-b"}, GPUs: []string{"0"}}, models.AggregationHost, t0, tEnd, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	q := f.requestsTo("/api/v1/query_range")[0].Query
	want := `avg by (Hostname, hostname) (max by (Hostname, hostname, gpu, UUID, modelName) (DCGM_FI_DEV_GPU_UTIL{Hostname="node-b",gpu="0"} or DCGM_FI_DEV_GPU_UTIL{gpu="0",hostname="node-b"})) and on (Hostname, hostname) topk(501, group by (Hostname, hostname) (last_over_time(DCGM_FI_DEV_GPU_UTIL{Hostname="node-b",gpu="0"}[7m] @ end()) or last_over_time(DCGM_FI_DEV_GPU_UTIL{gpu="0",hostname="node-b"}[7m] @ end())))`
	if q != want {
		t.Errorf("got  %s\nwant %s", q, want)
	}
}

func TestGPUMetricPrefersBytesAndConvertsDeprecatedKBs(t *testing.T) {
	f := &fakeDCGM{
		metricNames: []string{"DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT"},
		labelNames:  []string{"Hostname", "gpu"},
	}
	c, _ := newFakeDCGM(t, f)
	res, err := c.GPUMetric(context.Background(), "pcie_tx", models.GPUFilter{}, models.AggregationFleet, t0, tEnd, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Sources, []string{"DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT"}) {
		t.Errorf("sources %v", res.Sources)
	}
	// Each GPU once (max by its identity), then summed: a shared GPU's copies per pod count once.
	if !strings.HasPrefix(res.Query, `sum(max by (Hostname, gpu) (DCGM_FI_PROF_PCIE_TX_BYTES or (DCGM_FI_DEV_PCIE_TX_THROUGHPUT * 1024))) and on () topk(501,`) {
		t.Errorf("query %s", res.Query)
	}
}

func TestGPUMetricNotExportedIsANoticeNamingTheDCGMNamesTried(t *testing.T) {
	f := &fakeDCGM{metricNames: []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED"}, labelNames: []string{"hostname", "gpu"}}
	c, _ := newFakeDCGM(t, f)
	for name, tried := range map[string]string{
		"sm_active":       "DCGM_FI_PROF_SM_ACTIVE or DCGM_FI_PROF_SM_UTIL_RATIO",
		"fb_used_percent": "computed from fb_used and fb_free,: Prometheus has no series of DCGM_FI_DEV_FB_USED or DCGM_FI_DEV_FB_USED_BYTES or DCGM_FI_DEV_FB_FREE or DCGM_FI_DEV_FB_FREE_BYTES",
	} {
		res, err := c.GPUMetric(context.Background(), name, models.GPUFilter{}, "", t0, tEnd, time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res.Series) != 0 || res.Query != "" || len(res.Notices.Texts()) != 1 || !strings.Contains(res.Notices.Texts()[0], tried) ||
			!strings.Contains(res.Notices.Texts()[0], "jsonData.dcgmMetricNames") {
			t.Errorf("%s: %+v", name, res)
		}
	}
	if n := len(f.requestsTo("/api/v1/query_range")); n != 0 {
		t.Errorf("%d range queries for metrics Prometheus does not hold", n)
	}
}

func TestGPUMetricCutsAtTheSeriesLimitWithANotice(t *testing.T) {
	f := &fakeDCGM{
		metricNames: []string{"DCGM_FI_DEV_POWER_USAGE"},
		labelNames:  []string{"Hostname", "gpu"},
		rangeAnswer: func([]string, string) []fakeStream {
			return []fakeStream{{Metric: nodeA1, Values: points(1)}, {Metric: nodeA0, Values: points(1)}, {Metric: map[string]string{"Hostname": "node-c", "gpu": "0"}, Values: points(1)}}
		},
	}
	c, _ := newFakeDCGM(t, f)
	c = c.WithDCGM(models.DCGMSettings{MaxSeries: 2})
	res, err := c.GPUMetric(context.Background(), "power", models.GPUFilter{}, "", t0, tEnd, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Series) != 2 || res.Series[1].Labels["gpu"] != "1" || len(res.Notices.Texts()) != 1 ||
		res.Notices.Texts()[0] != "more than 2 series match; showing 2. Narrow the filter or raise jsonData.gpuMaxSeries" {
		t.Errorf("series %v notices %v", res.Series, res.Notices.Texts())
	}
	if !strings.Contains(res.Query, "topk(3, group by (Hostname, gpu)") {
		t.Errorf("the query does not bound the series it returns: %s", res.Query)
	}
}

func TestGPUMetricUsesTheSettingsNames(t *testing.T) {
	f := &fakeDCGM{metricNames: []string{"nvidia_gpu_util"}, labelNames: []string{"gpu"}} // "node" is not listed: fixed names are used anyway
	c, _ := newFakeDCGM(t, f)
	c = c.WithDCGM(models.DCGMSettings{MetricNames: map[string]string{"gpu_utilization": "nvidia_gpu_util"}, LabelNames: map[string]string{"host": "node"}})
	res, err := c.GPUMetric(context.Background(), "gpu_utilization", models.GPUFilter{Hosts: []string{"n1"}}, "", t0, tEnd, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Query, `avg by (node, gpu) (max by (node, gpu) (nvidia_gpu_util{node="n1"})) and on (node, gpu)`) {
		t.Errorf("query %s", res.Query)
	}
	if m := f.requestsTo("/api/v1/labels")[0].Matches[0]; !strings.Contains(m, "nvidia_gpu_util") || strings.Contains(m, "|DCGM_FI_DEV_GPU_UTIL|") {
		t.Errorf("detection selector %s", m)
	}
}

func TestGPUMetricSaysWhenARoleLabelIsMissing(t *testing.T) {
	f := &fakeDCGM{metricNames: []string{"DCGM_FI_DEV_GPU_UTIL"}, labelNames: []string{"Hostname", "gpu"}}
	c, _ := newFakeDCGM(t, f)
	res, err := c.GPUMetric(context.Background(), "gpu_utilization", models.GPUFilter{Pods: []string{"p"}}, "", t0, tEnd, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Notices.Texts()) != 2 || !strings.Contains(res.Notices.Texts()[0], "no DCGM series carry a pod label (tried exported_pod, pod, pod_name), so the pods filter matches nothing") ||
		res.Notices.Texts()[1] != "GPU utilisation (gpu_utilization): no GPU matching the filter has series of DCGM_FI_DEV_GPU_UTIL in this range" {
		t.Errorf("notices %v", res.Notices.Texts())
	}
	// The filter still applies (and selects nothing) rather than being dropped.
	if !strings.Contains(res.Query, `pod="p"`) {
		t.Errorf("query %s", res.Query)
	}
}

func TestGPULabelDetectionIsCachedForAMinute(t *testing.T) {
	f := &fakeDCGM{metricNames: []string{"DCGM_FI_DEV_GPU_UTIL"}, labelNames: []string{"Hostname", "gpu"}}
	c, _ := newFakeDCGM(t, f)
	now := time.Now()
	c.cache.now = func() time.Time { return now }
	ctx := context.Background()
	for range 3 {
		if _, err := c.WithDCGM(models.DCGMSettings{}).GPUMetric(ctx, "gpu_utilization", models.GPUFilter{}, "", t0, tEnd.Add(10*time.Second), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.requestsTo("/api/v1/labels")); n != 1 {
		t.Errorf("%d label-name requests within a minute, want 1 (the copies share the cache)", n)
	}
	now = now.Add(61 * time.Second)
	if _, err := c.GPUMetric(ctx, "gpu_utilization", models.GPUFilter{}, "", t0, tEnd.Add(10*time.Second), time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := len(f.requestsTo("/api/v1/labels")); n != 2 {
		t.Errorf("%d label-name requests after a minute, want 2", n)
	}
}

func TestGPUMetricErrorsNamePrometheusAndItsURL(t *testing.T) {
	f := &fakeDCGM{status: 503}
	c, srv := newFakeDCGM(t, f)
	_, err := c.GPUMetric(context.Background(), "gpu_utilization", models.GPUFilter{}, "", t0, tEnd, time.Minute)
	if err == nil || !strings.Contains(err.Error(), "Prometheus ("+srv.URL+")") || !backend.IsDownstreamError(err) {
		t.Fatalf("error %v", err)
	}
	var ue *upstream.Error
	if !errors.As(err, &ue) {
		t.Errorf("error %T is not an upstream.Error", err)
	}
	if _, err := c.GPUMetric(context.Background(), "gpu_util", models.GPUFilter{}, "", t0, tEnd, time.Minute); err == nil ||
		!strings.Contains(err.Error(), `unknown GPU metric "gpu_util"; valid metrics are gpu_utilization`) || !backend.IsDownstreamError(err) {
		t.Errorf("unknown metric: %v", err)
	}
	if _, err := c.GPUMetric(context.Background(), "power", models.GPUFilter{}, "node", t0, tEnd, time.Minute); err == nil || !strings.Contains(err.Error(), `aggregation must be "gpu", "host" or "fleet", got "node"`) {
		t.Errorf("unknown aggregation: %v", err)
	}
}

func TestGPUMetricPassesPrometheusWarningsOn(t *testing.T) {
	f := &fakeDCGM{metricNames: []string{"DCGM_FI_DEV_GPU_UTIL"}, labelNames: []string{"Hostname"}, warnings: []string{"partial response"}}
	c, _ := newFakeDCGM(t, f)
	res, err := c.GPUMetric(context.Background(), "gpu_utilization", models.GPUFilter{}, "", t0, tEnd, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Notices.Texts(), "Prometheus warns: partial response") {
		t.Errorf("notices %v", res.Notices.Texts())
	}
}

func TestPlanGPUWindowBoundsTheStep(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 7, 0, time.UTC)
	w, err := planGPUWindow(start, start.Add(10*time.Minute), 15*time.Second, 501, maxPointsPerQuery)
	if err != nil {
		t.Fatal(err)
	}
	if w.step != 15*time.Second || !w.start.Equal(start.Add(-7*time.Second)) || !w.end.Equal(start.Add(10*time.Minute-7*time.Second)) || len(w.notes) != 0 {
		t.Errorf("short range: %+v", w)
	}
	// 30 days at 1 s: Prometheus allows 11,000 points (236 s), the point budget 501 series ×
	// 1,000,000 points (1299 s).
	w, _ = planGPUWindow(start, start.Add(30*24*time.Hour), time.Second, 501, maxPointsPerQuery)
	if w.step != 1299*time.Second || len(w.notes) != 1 || !strings.Contains(w.notes[0].Text, "step raised from 1s to 21m39s") {
		t.Errorf("long range: step %s notes %v", w.step, w.notes)
	}
	w, _ = planGPUWindow(start, start.Add(30*24*time.Hour), time.Second, 1, maxPointsPerQuery)
	if w.step != 236*time.Second || len(w.notes) != 0 {
		t.Errorf("long range, one series: step %s notes %v", w.step, w.notes)
	}
	if int(w.end.Sub(w.start)/w.step) > MaxPointsPerSeries {
		t.Errorf("%d points", int(w.end.Sub(w.start)/w.step))
	}
	w, _ = planGPUWindow(start, start.Add(time.Minute), 0, 1, maxPointsPerQuery)
	if w.step != time.Second {
		t.Errorf("zero step became %s", w.step)
	}
	if _, err := planGPUWindow(start, start.Add(-time.Second), time.Second, 1, 1); err == nil || !backend.IsDownstreamError(err) {
		t.Errorf("reversed range: %v", err)
	}
}

func TestGPULabelValuesUnitesAliasesAndSortsIndexesAsNumbers(t *testing.T) {
	f := &fakeDCGM{
		metricNames: []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_PCIE_TX_THROUGHPUT"},
		labelNames:  mixedFleetLabels,
		labelValues: map[string][]string{"Hostname": {"node-a", "node-c"}, "hostname": {"node-b", "node-a"}, "gpu": {"10", "2", "0"}},
	}
	c, _ := newFakeDCGM(t, f)
	hosts, err := c.GPULabelValues(context.Background(), models.RoleHost, models.GPUFilter{}, t0, tEnd)
	if err != nil || !slices.Equal(hosts, []string{"node-a", "node-b", "node-c"}) {
		t.Errorf("hosts %v %v", hosts, err)
	}
	gpus, err := c.GPULabelValues(context.Background(), models.RoleGPU, models.GPUFilter{Hosts: []string{"node-b"}}, t0, tEnd)
	if err != nil || !slices.Equal(gpus, []string{"0", "2", "10"}) {
		t.Errorf("gpus %v %v", gpus, err)
	}
	reqs := f.requestsTo("/api/v1/label/gpu/values")
	if len(reqs) != 1 {
		t.Fatalf("gpu label requests %+v", reqs)
	}
	wantMatches := []string{
		`{Hostname="node-b",__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_PCIE_TX_THROUGHPUT"}`,
		`{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_PCIE_TX_THROUGHPUT",hostname="node-b"}`,
	}
	if !slices.Equal(reqs[0].Matches, wantMatches) {
		t.Errorf("match[] %v\nwant %v", reqs[0].Matches, wantMatches)
	}
	pods, err := c.GPULabelValues(context.Background(), models.RoleMIG, models.GPUFilter{}, t0, tEnd)
	if err != nil || pods == nil || len(pods) != 0 {
		t.Errorf("a role no series carries: %v %v", pods, err)
	}
	if _, err := c.GPULabelValues(context.Background(), "node", models.GPUFilter{}, t0, tEnd); err == nil || !strings.Contains(err.Error(), `unknown GPU label role "node"`) {
		t.Errorf("unknown role: %v", err)
	}
}

// Moved from pkg/plugin's unit tests, whose GPU store is now in memory: each MIG instance of one
// GPU is a series of its own, labelled with its instance and profile and the parent's UUID and
// index.
func TestGPUMetricSplitsEachMIGInstance(t *testing.T) {
	f := &fakeDCGM{
		stored: []fakeStream{
			stored("DCGM_FI_PROF_GR_ENGINE_ACTIVE", migSlices[0], 0.95),
			stored("DCGM_FI_PROF_GR_ENGINE_ACTIVE", migSlices[1], 0.01),
		},
	}
	f.rangeAnswer = func(read []string, _ string) []fakeStream {
		var out []fakeStream
		for _, s := range f.stored {
			if s.Metric[model.MetricNameLabel] == read[0] {
				out = append(out, fakeStream{Metric: identity(s.Metric), Values: s.Values})
			}
		}
		return out
	}
	c, _ := newFakeDCGM(t, f)
	res, err := c.GPUMetric(context.Background(), "gr_engine_active", models.GPUFilter{}, "", t0, t0.Add(30*time.Second), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, s := range res.Series {
		if s.Labels["uuid"] != migSlices[0]["UUID"] || s.Labels["gpu"] != "0" || s.Labels["host"] != "gpu-node-1" || len(s.Values) == 0 {
			t.Errorf("series labels %v, values %v", s.Labels, s.Values)
			continue
		}
		got["mig="+s.Labels["mig"]+" mig_profile="+s.Labels["mig_profile"]] = s.Values[0]
	}
	want := map[string]float64{"mig=1 mig_profile=3g.20gb": 0.95, "mig=2 mig_profile=1g.5gb": 0.01}
	if !maps.Equal(got, want) {
		t.Errorf("series %v, want %v; notices %v", got, want, res.Notices.Texts())
	}
}

// dcgm-exporter 4.9 alone: its clocks in Hz are scaled to MHz, its energy counter in J needs no
// factor.
func TestGPUMetricConvertsExporter49BaseUnits(t *testing.T) {
	f := &fakeDCGM{
		metricNames: []string{"DCGM_FI_DEV_SM_CLOCK_HERTZ", "DCGM_FI_DEV_MEMORY_CLOCK_HERTZ", "DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL"},
		labelNames:  []string{"hostname", "gpu"},
	}
	c, _ := newFakeDCGM(t, f)
	for name, want := range map[string]string{
		"sm_clock":     `avg(max by (hostname, gpu) (DCGM_FI_DEV_SM_CLOCK_HERTZ * 0.000001)) and on () topk(501,`,
		"mem_clock":    `avg(max by (hostname, gpu) (DCGM_FI_DEV_MEMORY_CLOCK_HERTZ * 0.000001)) and on () topk(501,`,
		"energy":       `sum(max by (hostname, gpu) (DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL)) and on () topk(501,`,
		"energy_power": `sum(max by (hostname, gpu) (rate(DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL[2m]))) and on () topk(501,`,
	} {
		res, err := c.GPUMetric(context.Background(), name, models.GPUFilter{}, models.AggregationFleet, t0, tEnd, time.Minute)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.HasPrefix(res.Query, want) || len(res.Sources) != 1 {
			t.Errorf("%s: query %s, sources %v", name, res.Query, res.Sources)
		}
	}
}

// Metrics asked together whose union Prometheus refuses for what it asks (too many samples at
// once) are asked again one by one: each metric gets the answer it gets alone, and a metric the
// catalogue lacks is its own error, the others answered. A union that fails because Prometheus
// is unavailable is that failure for every metric, not asked again metric by metric.

func TestGPUMetricsAskEachAloneWhenTheirUnionFails(t *testing.T) {
	f := &fakeDCGM{
		status:      http.StatusUnprocessableEntity,
		failType:    "execution",
		failMsg:     "query processing would load too many samples into memory in query execution",
		failQuery:   func(q string) bool { return strings.Contains(q, partLabel) },
		metricNames: []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"},
		labelNames:  mixedFleetLabels,
		rangeAnswer: func(metrics []string, _ string) []fakeStream {
			v := 40.0
			if slices.Contains(metrics, "DCGM_FI_DEV_POWER_USAGE") {
				v = 300
			}
			return []fakeStream{{Metric: nodeA0, Values: points(v, v+1)}}
		},
	}
	c, _ := newFakeDCGM(t, f)
	names := []string{"gpu_utilization", "no_such_metric", "power"}
	results, errs := c.GPUMetrics(context.Background(), names, models.GPUFilter{}, "", t0, tEnd, 30*time.Second)
	if errs[0] != nil || errs[2] != nil || errs[1] == nil || !strings.Contains(errs[1].Error(), "unknown GPU metric") {
		t.Fatalf("errors %v", errs)
	}
	ranges := f.requestsTo("/api/v1/query_range")
	if len(ranges) != 3 || !strings.Contains(ranges[0].Query, partLabel) {
		t.Fatalf("range queries %d, want the union then each of its 2 metrics alone", len(ranges))
	}
	for i, want := range map[int]float64{0: 40, 2: 300} {
		res := results[i]
		if res == nil || len(res.Series) != 1 || res.Series[0].Values[0] != want || res.Series[0].Labels["host"] != "node-a" ||
			strings.Contains(res.Query, partLabel) || res.Metric.Name != names[i] {
			t.Errorf("%s: %+v", names[i], res)
		}
	}

	f.status, f.failType, f.failMsg, f.failQuery = http.StatusServiceUnavailable, "", "", nil
	before := len(f.requestsTo("/api/v1/query_range"))
	_, errs = c.GPUMetrics(context.Background(), []string{"gpu_utilization", "power"}, models.GPUFilter{}, "", t0, tEnd, 30*time.Second)
	if errs[0] == nil || errs[1] == nil || !strings.Contains(errs[0].Error(), "unavailable") {
		t.Errorf("Prometheus unavailable: errors %v", errs)
	}
	if n := len(f.requestsTo("/api/v1/query_range")) - before; n != 1 {
		t.Errorf("Prometheus unavailable: %d range queries, want the union only", n)
	}
}

// Metrics asked together are one range query, each answering its own series and naming its own
// query (the real Prometheus: TestRealGPUMetricsInOneQueryAnswerAsEachAlone).
func TestGPUMetricsAreOneQuery(t *testing.T) {
	f := &fakeDCGM{
		metricNames: []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"},
		labelNames:  mixedFleetLabels,
		rangeAnswer: func(metrics []string, _ string) []fakeStream {
			if slices.Contains(metrics, "DCGM_FI_DEV_POWER_USAGE") {
				return []fakeStream{{Metric: nodeA0, Values: points(300)}, {Metric: nodeB0, Values: points(70)}}
			}
			return []fakeStream{{Metric: nodeA0, Values: points(40, 41)}}
		},
	}
	c, _ := newFakeDCGM(t, f)
	results, errs := c.GPUMetrics(context.Background(), []string{"gpu_utilization", "power"}, models.GPUFilter{}, "", t0, tEnd, 30*time.Second)
	if errs[0] != nil || errs[1] != nil {
		t.Fatal(errs)
	}
	if r := f.requestsTo("/api/v1/query_range"); len(r) != 1 {
		t.Fatalf("%d range queries, want 1", len(r))
	}
	util, power := results[0], results[1]
	if len(util.Series) != 1 || util.Series[0].Values[1] != 41 || !strings.Contains(util.Query, "GPU_UTIL") || strings.Contains(util.Query, "POWER") ||
		len(power.Series) != 2 || power.Series[0].Values[0] != 300 || power.Series[1].Labels["host"] != "node-b" || strings.Contains(power.Query, partLabel) {
		t.Errorf("utilisation %+v\npower %+v", util, power)
	}
}
