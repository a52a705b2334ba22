//go:build integration

package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// gpuMetrics, the GPU resources and GPUFigures against the test bed's real Prometheus: the
// recorded fixtures (fixture-node-a: current exporter, Hostname, profiling metrics, PCIe in B/s;
// fixture-node-b: old exporter, hostname, pod_name, deprecated PCIe in KB/s; fixture-node-c: one
// GPU shared by two pods, its series copied per pod) over the two hours before the bed started,
// and the simulated exporter of gpu-node-1 since.

var fixtureHosts = []string{gpusim.FixtureHostA, gpusim.FixtureHostB, gpusim.FixtureHostC}

// fixtureWindow is the fixtures' window; a bed without it cannot run these tests.
func fixtureWindow(t *testing.T) (time.Time, time.Time) {
	t.Helper()
	if bed.FixtureStart.IsZero() || bed.FixtureEnd.Sub(bed.FixtureStart) != gpusim.FixtureHistory {
		t.Fatalf("the bed has no GPU fixtures (HSI_TESTBED_FIXTURE_START/END = %s..%s); start it with the demo", bed.FixtureStart, bed.FixtureEnd)
	}
	return bed.FixtureStart, bed.FixtureEnd
}

// fixtureQuery asks over the whole fixture window with a one-minute interval.
func fixtureQuery(t *testing.T, refID, model string) backend.DataQuery {
	start, end := fixtureWindow(t)
	return backend.DataQuery{RefID: refID, QueryType: models.QueryTypeGPUMetrics, JSON: json.RawMessage(model),
		Interval: time.Minute, TimeRange: backend.TimeRange{From: start, To: end}}
}

func gpuBedDatasource(t *testing.T, extra map[string]any) *Datasource {
	settings := map[string]any{"prometheusUrl": bed.PrometheusURL}
	for k, v := range extra {
		settings[k] = v
	}
	return newTestDatasource(t, settings, nil)
}

// frameKey is a series frame's host/gpu.
func frameKey(f *data.Frame) string {
	return f.Fields[1].Labels["host"] + "/" + f.Fields[1].Labels["gpu"]
}

// valueAt is the frame's value at the step nearest t.
func valueAt(t *testing.T, f *data.Frame, at time.Time) float64 {
	t.Helper()
	best, bestD := math.NaN(), time.Duration(math.MaxInt64)
	for i := 0; i < f.Rows(); i++ {
		ts := f.Fields[0].At(i).(time.Time)
		d := ts.Sub(at)
		if d < 0 {
			d = -d
		}
		if d < bestD {
			best, bestD = f.Fields[1].At(i).(float64), d
		}
	}
	if bestD > 2*time.Minute {
		t.Fatalf("%s: no point within 2 minutes of %s", frameKey(f), at.Format(time.TimeOnly))
	}
	return best
}

// midPhase is the middle of the fixture GPU's phase showing class.
func midPhase(t *testing.T, host string, gpu int, class string) time.Time {
	t.Helper()
	start, end := fixtureWindow(t)
	g, ok := gpusim.FixtureGPUFor(host, gpu)
	if !ok {
		t.Fatalf("no fixture GPU %s/%d", host, gpu)
	}
	for _, ph := range g.Phases(start, end) {
		if ph.Class == class {
			return ph.From.Add(ph.To.Sub(ph.From) / 2)
		}
	}
	t.Fatalf("%s/%d never shows %s", host, gpu, class)
	return time.Time{}
}

func near(got, want, tolerance float64) bool { return math.Abs(got-want) <= tolerance }

// unsharedFixtureGPUs are the fixture GPUs of hosts A and B, each exported once (host C's shared
// GPU comes once per pod; host D's failing GPUs are the triage's).
func unsharedFixtureGPUs() []gpusim.FixtureGPU {
	var out []gpusim.FixtureGPU
	for _, g := range gpusim.FixtureGPUs() {
		if len(g.SharedBy) == 0 && (g.Host == gpusim.FixtureHostA || g.Host == gpusim.FixtureHostB) {
			out = append(out, g)
		}
	}
	return out
}

// fixtureGPUsOf are the fixture GPUs of hosts.
func fixtureGPUsOf(hosts []string) []gpusim.FixtureGPU {
	var out []gpusim.FixtureGPU
	for _, g := range gpusim.FixtureGPUs() {
		if slices.Contains(hosts, g.Host) {
			out = append(out, g)
		}
	}
	return out
}

func TestRealGPUMetricsNormaliseOldAndNewExporters(t *testing.T) {
	ds := gpuBedDatasource(t, nil)
	r := run(t, ds, fixtureQuery(t, "A", `{"queryType":"gpuMetrics","metrics":["gpu_utilization"],"hosts":["fixture-node-a","fixture-node-b"]}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	byGPU := map[string]*data.Frame{}
	var keys []string
	for _, f := range r.Frames {
		keys = append(keys, frameKey(f))
		byGPU[frameKey(f)] = f
		if f.Name != "gpu_utilization" || f.Fields[1].Config.Unit != "percent" {
			t.Errorf("%s: frame %q unit %q", frameKey(f), f.Name, f.Fields[1].Config.Unit)
		}
		for name := range f.Fields[1].Labels {
			// The roles, and what describes a GPU: its MIG profile, its driver.
			if !slices.Contains(models.GPURoles, name) && name != models.RoleMIGProfile && name != models.RoleDriver {
				t.Errorf("%s: label %q is not a role name", frameKey(f), name)
			}
		}
		// Both exporters label every series with the driver (DCGM_FI_DRIVER_VERSION).
		if f.Fields[1].Labels[models.RoleDriver] == "" {
			t.Errorf("%s: no driver label in %v", frameKey(f), f.Fields[1].Labels)
		}
	}
	// Hosts A and B: one series per GPU (the shared GPU of host C has one per pod).
	var want []string
	for _, g := range unsharedFixtureGPUs() {
		want = append(want, g.Host+"/"+strconv.Itoa(g.Index))
	}
	if !slices.Equal(keys, want) {
		t.Fatalf("series %v, want the fixture GPUs in host then index order %v", keys, want)
	}
	for _, g := range unsharedFixtureGPUs() {
		f := byGPU[g.Host+"/"+strconv.Itoa(g.Index)]
		l := f.Fields[1].Labels
		if l["uuid"] != g.UUID || l["model"] != g.Model.Name {
			t.Errorf("%s/%d labels %v", g.Host, g.Index, l)
		}
		// Kubernetes labels: pod/namespace on the current exporter, pod_name/pod_namespace on the old.
		wantPod := g.Labels["pod"] + g.Labels["pod_name"]
		if l["pod"] != wantPod || (wantPod != "" && l["namespace"] != "inference") {
			t.Errorf("%s/%d pod labels %v, want pod %q", g.Host, g.Index, l, wantPod)
		}
		for _, ph := range g.Phases(fixtureWindow(t)) {
			if ph.Class == gpusim.NoData {
				continue
			}
			at := ph.From.Add(ph.To.Sub(ph.From) / 2)
			nominal := gpusim.Nominal(ph.Class, g.Model).GPUUtil
			if v := valueAt(t, f, at); !near(v, nominal, 13) {
				t.Errorf("%s/%d at %s (%s): utilisation %.1f, nominal %.0f", g.Host, g.Index, at.Format(time.TimeOnly), ph.Class, v, nominal)
			}
		}
	}
	// fixture-node-b/3 sends nothing in the middle third: no points there, not zeros.
	gap := byGPU[gpusim.FixtureHostB+"/3"]
	mid := midPhase(t, gpusim.FixtureHostB, 3, gpusim.NoData)
	for i := 0; i < gap.Rows(); i++ {
		if ts := gap.Fields[0].At(i).(time.Time); ts.Sub(mid).Abs() < 10*time.Minute {
			t.Fatalf("a point at %s inside the gap", ts.Format(time.TimeOnly))
		}
	}
	if got := byGPU[gpusim.FixtureHostB+"/0"].Fields[1].Config.DisplayNameFromDS; got != "GPU utilisation fixture-node-b/0 (inference/ai-detector-0)" {
		t.Errorf("display name %q", got)
	}
}

func TestRealGPUMetricsConvertDeprecatedPCIeKBs(t *testing.T) {
	ds := gpuBedDatasource(t, nil)
	r := run(t, ds, fixtureQuery(t, "A", `{"queryType":"gpuMetrics","metrics":["pcie_tx"],"hosts":["fixture-node-a","fixture-node-b"],"gpus":["0","2"]}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	byGPU := map[string]*data.Frame{}
	for _, f := range r.Frames {
		byGPU[frameKey(f)] = f
		if f.Fields[1].Config.Unit != "Bps" {
			t.Errorf("unit %q", f.Fields[1].Config.Unit)
		}
	}
	if len(byGPU) != 4 {
		t.Fatalf("series %v", r.Frames)
	}
	if q := r.Frames[0].Meta.ExecutedQueryString; !strings.Contains(q, "DCGM_FI_PROF_PCIE_TX_BYTES") || !strings.Contains(q, "DCGM_FI_DEV_PCIE_TX_THROUGHPUT{") || !strings.Contains(q, ") * 1024") {
		t.Errorf("query %s", q)
	}
	// Each point is a fixture sample (steps of a minute fall on the fixtures' 15 s samples), so
	// the value must be exactly what the exporter recorded: B/s from fixture-node-a, the KB/s
	// figure × 1024 from fixture-node-b.
	cases := []struct {
		host  string
		gpu   int
		class string
		kbs   bool
	}{
		{gpusim.FixtureHostA, 2, gpusim.PCIeBound, false},
		{gpusim.FixtureHostA, 0, gpusim.ComputeBound, false},
		{gpusim.FixtureHostB, 0, gpusim.ComputeBound, true},
		{gpusim.FixtureHostB, 2, gpusim.ThermalThrottled, true},
	}
	for _, c := range cases {
		f := byGPU[c.host+"/"+strconv.Itoa(c.gpu)]
		at, got := pointNear(t, f, midPhase(t, c.host, c.gpu, c.class))
		want := fixtureReading(t, c.host, c.gpu, at).PCIeTx
		if c.kbs {
			want = math.Round(want/1024) * 1024
		}
		if got != want {
			t.Errorf("%s/%d (%s) at %s: %.0f B/s, the exporter recorded %.0f B/s (a missing or wrong × 1024?)",
				c.host, c.gpu, c.class, at.Format(time.TimeOnly), got, want)
		}
	}
}

// pointNear is the frame's point nearest at: its time and value.
func pointNear(t *testing.T, f *data.Frame, at time.Time) (time.Time, float64) {
	t.Helper()
	best := -1
	for i := 0; i < f.Rows(); i++ {
		if best < 0 || f.Fields[0].At(i).(time.Time).Sub(at).Abs() < f.Fields[0].At(best).(time.Time).Sub(at).Abs() {
			best = i
		}
	}
	if best < 0 {
		t.Fatalf("%s: no points", frameKey(f))
	}
	return f.Fields[0].At(best).(time.Time), f.Fields[1].At(best).(float64)
}

// fixtureReading is what the fixtures recorded for a GPU at a sample time, as
// gpusim.WriteFixtures computes it.
func fixtureReading(t *testing.T, host string, gpu int, at time.Time) gpusim.Reading {
	t.Helper()
	start, end := fixtureWindow(t)
	g, ok := gpusim.FixtureGPUFor(host, gpu)
	if !ok || at.Sub(start)%gpusim.FixtureStep != 0 {
		t.Fatalf("%s/%d at %s is no fixture sample", host, gpu, at)
	}
	class := gpusim.FixtureClass(host, gpu, at, start, end)
	return gpusim.Noisy(gpusim.Nominal(class, g.Model), class, host+"/"+strconv.Itoa(gpu)+"/"+strconv.FormatInt(at.UnixMilli(), 10))
}

func TestRealGPUMetricsAggregatePerHostAndFleet(t *testing.T) {
	ds := gpuBedDatasource(t, nil)
	res := run(t, ds,
		fixtureQuery(t, "host", `{"queryType":"gpuMetrics","metrics":["power","energy_power"],"aggregation":"host","hosts":["fixture-node-a","fixture-node-b","fixture-node-c"]}`),
		fixtureQuery(t, "fleet", `{"queryType":"gpuMetrics","metrics":["temperature"],"aggregation":"fleet","hosts":["fixture-node-a","fixture-node-b"]}`),
	)
	host := res.Responses["host"]
	if host.Error != nil {
		t.Fatal(host.Error)
	}
	// power and energy_power per host: 6 frames; the energy counter's rate agrees with the
	// sampled power (both W), which proves the mJ → J scale and the rate.
	series := map[string]*data.Frame{}
	for _, f := range host.Frames {
		if len(f.Fields[1].Labels) != 1 {
			t.Errorf("host series labels %v", f.Fields[1].Labels)
		}
		series[f.Name+" "+f.Fields[1].Labels["host"]] = f
	}
	start, end := fixtureWindow(t)
	at := start.Add(end.Sub(start) / 2)
	for _, h := range fixtureHosts {
		p, e := series["power "+h], series["energy_power "+h]
		if p == nil || e == nil {
			t.Fatalf("series %v", series)
		}
		pv, ev := valueAt(t, p, at), valueAt(t, e, at)
		if pv <= 0 || !near(ev, pv, 0.1*pv) {
			t.Errorf("%s: power %.1f W, from the energy counter %.1f W", h, pv, ev)
		}
		if got := p.Fields[1].Config.DisplayNameFromDS; got != "Power draw "+h {
			t.Errorf("display name %q", got)
		}
	}
	if a := valueAt(t, series["power "+gpusim.FixtureHostA], at); a < 7*gpusim.A100SXM480GB.IdlePowerW || a > 7*gpusim.A100SXM480GB.PowerLimitW {
		t.Errorf("fixture-node-a's 7 A100s draw %.0f W in total", a)
	}
	// fixture-node-c's one A100, exported once per pod sharing it, counts once: within one
	// A100's power range (twice its compute-bound draw is above its limit).
	if c := valueAt(t, series["power "+gpusim.FixtureHostC], at); c < gpusim.A100SXM480GB.IdlePowerW || c > gpusim.A100SXM480GB.PowerLimitW {
		t.Errorf("fixture-node-c's shared A100 draws %.0f W", c)
	}
	fleet := res.Responses["fleet"]
	if fleet.Error != nil || len(fleet.Frames) != 1 || len(fleet.Frames[0].Fields[1].Labels) != 0 ||
		fleet.Frames[0].Fields[1].Config.DisplayNameFromDS != "GPU temperature, all GPUs" {
		t.Fatalf("fleet %v %v", fleet.Error, fleet.Frames)
	}
	// The fleet's temperature is its hottest GPU: the thermal-throttled ones at about 88 °C.
	if v := valueAt(t, fleet.Frames[0], at); !near(v, 88, 2) {
		t.Errorf("hottest GPU %.0f °C", v)
	}
}

func TestRealGPUMetricsComputeFramebufferPercent(t *testing.T) {
	ds := gpuBedDatasource(t, nil)
	r := run(t, ds, fixtureQuery(t, "A", `{"queryType":"gpuMetrics","metrics":["fb_used_percent"],"hosts":["fixture-node-a"],"gpus":["1"]}`)).Responses["A"]
	if r.Error != nil || len(r.Frames) != 1 {
		t.Fatalf("%v %v", r.Error, r.Frames)
	}
	// Memory-bound: 87 % of (total − reserved) used, so used / (used + free) is 0.87.
	at := midPhase(t, gpusim.FixtureHostA, 1, gpusim.MemoryBound)
	if v := valueAt(t, r.Frames[0], at); !near(v, 87, 1) {
		t.Errorf("framebuffer used %.2f %%", v)
	}
}

func TestRealGPUMetricsSayWhatTheOldExporterLacks(t *testing.T) {
	ds := gpuBedDatasource(t, nil)
	r := run(t, ds, fixtureQuery(t, "A", `{"queryType":"gpuMetrics","metrics":["sm_active","gpu_utilization","nvlink_tx"],"hosts":["fixture-node-b"]}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	var util int
	var notices []string
	for _, f := range r.Frames {
		if f.Name == "gpu_utilization" {
			util++
		}
		if f.Meta != nil {
			for _, n := range f.Meta.Notices {
				notices = append(notices, n.Text)
			}
		}
	}
	if util != 4 {
		t.Errorf("%d utilisation series for fixture-node-b's 4 T4s", util)
	}
	joined := strings.Join(notices, "\n")
	for _, want := range []string{
		// Fleet-wide the profiling metrics exist (fixture-node-a), but not on this host.
		"SM active (sm_active): no GPU matching the filter has series of DCGM_FI_PROF_SM_ACTIVE in this range",
		// No exporter of the bed sends NVLink figures.
		"NVLink transmit (nvlink_tx): Prometheus has no series of DCGM_FI_PROF_NVLINK_TX_BYTES or DCGM_FI_PROF_NVLINK_TX_BYTES_PER_SECOND in this range",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("notices lack %q:\n%s", want, joined)
		}
	}
}

func TestRealGPUMetricsSeriesLimit(t *testing.T) {
	ds := gpuBedDatasource(t, map[string]any{"gpuMaxSeries": 3})
	r := run(t, ds, fixtureQuery(t, "A", `{"queryType":"gpuMetrics","metrics":["temperature"],"hosts":["fixture-node-a","fixture-node-b"]}`)).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	if len(r.Frames) != 3 || len(r.Frames[0].Meta.Notices) != 1 ||
		r.Frames[0].Meta.Notices[0].Text != "more than 3 series match; showing 3. Narrow the filter or raise jsonData.gpuMaxSeries" {
		t.Errorf("%d frames, notices %v", len(r.Frames), r.Frames[0].Meta.Notices)
	}
}

func TestRealGPUMetricsHostileValuesSelectNothing(t *testing.T) {
	ds := gpuBedDatasource(t, nil)
	for _, host := range []string{`fixture-node-a"} or vector(1) #`, `.*`, `fixture-node-a|fixture-node-b`} {
		raw, _ := json.Marshal(map[string]any{"queryType": "gpuMetrics", "metrics": []string{"gpu_utilization"}, "hosts": []string{host}})
		r := run(t, ds, fixtureQuery(t, "A", string(raw))).Responses["A"]
		if r.Error != nil {
			t.Fatalf("%q: %v", host, r.Error)
		}
		if len(r.Frames) != 1 || r.Frames[0].Rows() != 0 {
			t.Errorf("host %q selected %d frames, the first with %d rows", host, len(r.Frames), r.Frames[0].Rows())
		}
	}
}

func TestRealGPUMetricsOfTheLiveSimulator(t *testing.T) {
	ds := gpuBedDatasource(t, nil)
	model := `{"queryType":"gpuMetrics","metrics":["sm_clock","clock_events"],"hosts":["gpu-node-1"],"gpuSelector":"{simulated=\"true\"}"}`
	// The simulator is scraped every few seconds from the bed's start; give it time to show up.
	deadline := time.Now().Add(45 * time.Second)
	for {
		now := time.Now()
		q := backend.DataQuery{RefID: "A", QueryType: models.QueryTypeGPUMetrics, JSON: json.RawMessage(model),
			Interval: 15 * time.Second, TimeRange: backend.TimeRange{From: now.Add(-5 * time.Minute), To: now}}
		r := run(t, ds, q).Responses["A"]
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		clocks := 0
		for _, f := range r.Frames {
			if f.Name == "sm_clock" && f.Rows() > 0 {
				clocks++
				l := f.Fields[1].Labels
				if l["host"] != "gpu-node-1" || f.Fields[1].Config.Unit != "rotmhz" {
					t.Errorf("labels %v unit %q", l, f.Fields[1].Config.Unit)
				}
			}
			if f.Name == "clock_events" && f.Fields[1].Config.Unit != "hex0x" {
				t.Errorf("clock_events unit %q", f.Fields[1].Config.Unit)
			}
		}
		if clocks == 2 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d simulated GPUs answered, want 2", clocks)
		}
		time.Sleep(3 * time.Second)
	}
}

func TestRealGPULabelValuesResource(t *testing.T) {
	ds := gpuBedDatasource(t, nil)
	start, end := fixtureWindow(t)
	window := url.Values{"from": {fmt.Sprint(start.UnixMilli())}, "to": {fmt.Sprint(end.UnixMilli())}}
	get := func(params url.Values) []string {
		t.Helper()
		for k, v := range window {
			params[k] = v
		}
		code, body := getGPUResource(t, ds, "/gpu-label-values", params)
		if code != 200 {
			t.Fatalf("%v: HTTP %d %s", params, code, body)
		}
		return decodeStrings(t, body)
	}
	if hosts := get(url.Values{"role": {"host"}}); !slices.Contains(hosts, gpusim.FixtureHostA) || !slices.Contains(hosts, gpusim.FixtureHostB) {
		t.Errorf("hosts %v: Hostname and hostname values together", hosts)
	}
	if gpus := get(url.Values{"role": {"gpu"}, "hosts": {gpusim.FixtureHostA}}); !slices.Equal(gpus, []string{"0", "1", "2", "3", "4", "5", "6"}) {
		t.Errorf("fixture-node-a's GPUs %v", gpus)
	}
	want := []string{"ai-detector-0", "ai-detector-1", "ai-enrichment-0", "nemotron-backend-0"}
	if pods := get(url.Values{"role": {"pod"}, "hosts": {gpusim.FixtureHostB}}); !slices.Equal(pods, want) {
		t.Errorf("fixture-node-b's pods (pod_name) %v, want %v", pods, want)
	}
	if gpuModels := get(url.Values{"role": {"model"}, "hosts": {gpusim.FixtureHostA, gpusim.FixtureHostB}}); !slices.Equal(gpuModels, []string{gpusim.A100SXM480GB.Name, gpusim.TeslaT4.Name}) {
		t.Errorf("models %v", gpuModels)
	}
	code, body := getGPUResource(t, ds, "/gpu-metrics", nil)
	if code != 200 || !strings.Contains(body, `"name":"gpu_utilization"`) {
		t.Errorf("gpu-metrics: HTTP %d %.200s", code, body)
	}
}

func TestRealGPUFiguresForClassification(t *testing.T) {
	ds := gpuBedDatasource(t, nil)
	prom, err := ds.src.GPUs.Get()
	if err != nil {
		t.Fatal(err)
	}
	start, end := fixtureWindow(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	series, notices, err := prom.GPUFigures(ctx, models.GPUFilter{Hosts: fixtureHosts}, start, end, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(notices) != 0 {
		t.Errorf("every figure is exported by fixture-node-a, yet notices %v", notices)
	}
	if len(series) != len(fixtureGPUsOf(fixtureHosts)) {
		t.Fatalf("%d GPUs, want the %d of %v", len(series), len(fixtureGPUsOf(fixtureHosts)), fixtureHosts)
	}
	steps := int(end.Sub(start)/time.Minute) + 1
	byGPU := map[string]classify.GPUSeries{}
	for _, s := range series {
		byGPU[s.GPU.Host+"/"+s.GPU.Index] = s
		if len(s.Samples) < steps-1 || len(s.Samples) > steps+1 {
			t.Errorf("%s/%s: %d samples over %d steps", s.GPU.Host, s.GPU.Index, len(s.Samples), steps)
		}
		if s.GPU.UUID == "" || s.GPU.Model == "" {
			t.Errorf("GPU %+v", s.GPU)
		}
	}
	figuresAt := func(host string, gpu int, class string) classify.Figures {
		t.Helper()
		at := midPhase(t, host, gpu, class)
		s := byGPU[host+"/"+strconv.Itoa(gpu)]
		for _, smp := range s.Samples {
			if smp.Time.Sub(at).Abs() <= 30*time.Second {
				return smp.Figures
			}
		}
		t.Fatalf("%s/%d: no sample near %s", host, gpu, at)
		return classify.Figures{}
	}
	a := gpusim.A100SXM480GB
	compute := figuresAt(gpusim.FixtureHostA, 0, gpusim.ComputeBound)
	if !near(compute.SMActive, 0.92, 0.02) || !near(compute.DRAMActive, 0.25, 0.03) || !near(compute.GPUUtil, 95, 3) || compute.ClockEvents != 0 {
		t.Errorf("fixture-node-a/0 compute-bound: %+v", compute)
	}
	thermal := figuresAt(gpusim.FixtureHostA, 3, gpusim.ThermalThrottled)
	if thermal.ClockEvents != gpusim.ClockEventHWThermal || !near(thermal.SMClockMHz, a.ThermalSMClock, 20) || !near(thermal.TempC, 88, 2) {
		t.Errorf("fixture-node-a/3 thermal: %+v", thermal)
	}
	pcie := figuresAt(gpusim.FixtureHostA, 2, gpusim.PCIeBound)
	if !near(pcie.PCIeTx, 0.8*a.PCIeBytesPerSec, 0.03*a.PCIeBytesPerSec) || !near(pcie.PCIeRx, 0.8*a.PCIeBytesPerSec, 0.03*a.PCIeBytesPerSec) {
		t.Errorf("fixture-node-a/2 PCIe: %+v", pcie)
	}
	old := figuresAt(gpusim.FixtureHostB, 1, gpusim.MemoryBound)
	if !near(old.MemCopyUtil, 85, 3) || !math.IsNaN(old.SMActive) || !math.IsNaN(old.DRAMActive) || !math.IsNaN(old.ClockEvents) ||
		!near(old.PCIeTx, gpusim.Nominal(gpusim.MemoryBound, gpusim.TeslaT4).PCIeTx, 0.03*gpusim.TeslaT4.PCIeBytesPerSec) {
		t.Errorf("fixture-node-b/1 (old exporter): %+v", old)
	}
	// The gap of fixture-node-b/3 is NaN, not zero.
	if gap := figuresAt(gpusim.FixtureHostB, 3, gpusim.NoData); !math.IsNaN(gap.GPUUtil) || !math.IsNaN(gap.TempC) {
		t.Errorf("fixture-node-b/3 in its gap: %+v", gap)
	}
}
