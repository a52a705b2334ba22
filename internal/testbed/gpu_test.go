//go:build integration

package testbed

import (
	"context"
	"math"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
)

// The bed's GPU series through Prometheus' API: the fixtures backfilled with promtool (both
// exporter flavours; fixture-node-d's simulated="true") and the simulator's live series.

type promSample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

func (s promSample) value(t *testing.T) float64 {
	t.Helper()
	str, _ := s.Value[1].(string)
	v, err := strconv.ParseFloat(str, 64)
	if err != nil {
		t.Fatalf("value %v: %v", s.Value, err)
	}
	return v
}

func instantQuery(t *testing.T, ctx context.Context, query string, at time.Time) []promSample {
	t.Helper()
	q := url.Values{"query": {query}}
	if !at.IsZero() {
		q.Set("time", strconv.FormatFloat(float64(at.UnixMilli())/1000, 'f', -1, 64))
	}
	var res struct {
		Data struct {
			Result []promSample `json:"result"`
		} `json:"data"`
	}
	if err := getJSON(ctx, bed.PrometheusURL+"/api/v1/query?"+q.Encode(), &res); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return res.Data.Result
}

func metricNames(ms []gpusim.Metric) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	sort.Strings(out)
	return out
}

func TestGPUFixturesInPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start, end := bed.FixtureStart, bed.FixtureEnd
	if start.IsZero() || end.Sub(start) != gpusim.FixtureHistory {
		t.Fatalf("fixture window %s..%s (HSI_TESTBED_FIXTURE_START/END)", start, end)
	}
	for _, g := range gpusim.FixtureGPUs() {
		hostLabel := g.Exporter.HostLabel()
		// DCGM series only: recording rules (provisioning/prometheus/rules) keep these labels.
		sel := `{__name__=~"DCGM_.*",job="dcgm",` + hostLabel + `="` + g.Host + `",gpu="` + strconv.Itoa(g.Index) + `"}`
		for _, ph := range g.Phases(start, end) {
			at := ph.From.Add(ph.To.Sub(ph.From) / 2)
			where := g.Host + " gpu " + strconv.Itoa(g.Index) + " at " + at.Format(time.TimeOnly)
			if got := gpusim.FixtureClass(g.Host, g.Index, at, start, end); got != ph.Class {
				t.Fatalf("%s: FixtureClass %s, phase %s", where, got, ph.Class)
			}
			res := instantQuery(t, ctx, sel, at)
			if ph.Class == gpusim.NoData {
				if len(res) != 0 {
					t.Errorf("%s: %d series in the gap", where, len(res))
				}
				continue
			}
			var names []string
			byName := map[string]float64{}
			for _, s := range res {
				name := s.Metric["__name__"]
				names = append(names, name)
				byName[name] = s.value(t)
				m := s.Metric
				if m["simulated"] != g.Labels["simulated"] || m["modelName"] != g.Model.Name || m["UUID"] != g.UUID || m["instance"] != g.Host+":9400" {
					t.Errorf("%s: labels %v", where, m)
				}
				if g.Exporter == gpusim.Current {
					// A shared GPU's copies carry the pod and vgpu of one of the pods sharing it.
					pods, pod := []string{g.Labels["pod"]}, m["pod"]
					if len(g.SharedBy) > 0 {
						pods, pod = nil, pod+"/"+m["vgpu"]
						for _, l := range g.SharedBy {
							pods = append(pods, l["pod"]+"/"+l["vgpu"])
						}
					}
					if m["Hostname"] != g.Host || m["hostname"] != "" || m["pod_name"] != "" || !slices.Contains(pods, pod) {
						t.Errorf("%s: current exporter's labels %v", where, m)
					}
				} else if m["hostname"] != g.Host || m["Hostname"] != "" || m["pod"] != "" || m["pod_name"] != g.Labels["pod_name"] || m["pod_namespace"] != "inference" {
					t.Errorf("%s: old exporter's labels %v", where, m)
				}
			}
			sort.Strings(names)
			// A shared GPU's series come once per pod sharing it.
			var want []string
			for _, n := range metricNames(g.Metrics()) {
				for range g.LabelSets() {
					want = append(want, n)
				}
			}
			if !slices.Equal(names, want) {
				t.Errorf("%s: series %v, want %v", where, names, want)
			}
			nominal := gpusim.Nominal(ph.Class, g.Model)
			if u := byName["DCGM_FI_DEV_GPU_UTIL"]; math.Abs(u-nominal.GPUUtil) > 13 {
				t.Errorf("%s: %s but GPU_UTIL %.0f (nominal %.0f)", where, ph.Class, u, nominal.GPUUtil)
			}
			if g.Exporter == gpusim.Current && byName["DCGM_FI_DEV_CLOCKS_EVENT_REASONS"] != nominal.ClockEvents {
				t.Errorf("%s: %s but clock events %v", where, ph.Class, byName["DCGM_FI_DEV_CLOCKS_EVENT_REASONS"])
			}
		}
	}

	// Whole-window figures: the gap's missing samples, T4 gpu 2's early clock maximum.
	window := "[" + strconv.Itoa(int(gpusim.FixtureHistory.Minutes())+1) + "m]"
	steps := int(gpusim.FixtureHistory/gpusim.FixtureStep) + 1
	for _, c := range []struct {
		query string
		want  float64
	}{
		{`count_over_time(DCGM_FI_DEV_GPU_UTIL{hostname="fixture-node-b",gpu="3"}` + window + `)`, float64(steps - steps/3)},
		{`count_over_time(DCGM_FI_DEV_GPU_UTIL{Hostname="fixture-node-a",gpu="0"}` + window + `)`, float64(steps)},
		{`max_over_time(DCGM_FI_DEV_SM_CLOCK{hostname="fixture-node-b",gpu="2"}` + window + `)`, 1590},
	} {
		res := instantQuery(t, ctx, c.query, end)
		switch {
		case c.want < 0 && len(res) != 0:
			t.Errorf("%s: %v, want nothing", c.query, res)
		case c.want >= 0 && (len(res) != 1 || res[0].value(t) != c.want):
			t.Errorf("%s: %v, want %v", c.query, res, c.want)
		}
	}
	// Which series exist over the window: the old exporter has no profiling series and no
	// bitmask, but the deprecated PCIe throughput.
	for match, want := range map[string]int{
		`{__name__=~"DCGM_FI_PROF_.*|DCGM_FI_DEV_CLOCKS_EVENT_REASONS",hostname="fixture-node-b"}`: 0,
		`{__name__=~"DCGM_FI_DEV_PCIE_.X_THROUGHPUT",hostname="fixture-node-b"}`:                   2 * 4,
		`{__name__=~"DCGM_FI_.*",hostname="fixture-node-b"}`:                                       len(gpusim.Old.Metrics()) * 4,
		`{__name__=~"DCGM_FI_.*",Hostname="fixture-node-a"}`:                                       len(gpusim.Current.Metrics()) * 7,
		`{__name__=~"DCGM_FI_.*",Hostname="fixture-node-d",simulated="true"}`:                      (len(gpusim.Current.Metrics()) + len(gpusim.ECCMetrics)) * 4,
		`{__name__=~"DCGM_FI_DEV_ECC_.*",Hostname=~"fixture-node-[abc]"}`:                          0,
		`{__name__=~"DCGM_FI_DEV_PCIE_.X_THROUGHPUT",Hostname="fixture-node-a"}`:                   0,
	} {
		q := url.Values{"match[]": {match}, "start": {strconv.FormatInt(start.Unix(), 10)}, "end": {strconv.FormatInt(end.Unix(), 10)}}
		var res struct {
			Data []map[string]string `json:"data"`
		}
		if err := getJSON(ctx, bed.PrometheusURL+"/api/v1/series?"+q.Encode(), &res); err != nil {
			t.Fatal(err)
		}
		if len(res.Data) != want {
			t.Errorf("%s: %d series over the window, want %d", match, len(res.Data), want)
		}
	}
}

func TestGPUSimulatorInPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sel := `{__name__=~"DCGM_.*",job="dcgm",Hostname="` + GPUSimHost + `"}`
	var res []promSample
	want := metricNames(gpusim.Current.Metrics())
	for {
		res = instantQuery(t, ctx, sel, time.Time{})
		if len(res) == len(want)*GPUSimCount {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %d series, want %d", sel, len(res), len(want)*GPUSimCount)
		case <-time.After(time.Second):
		}
	}
	now := time.Now()
	names := map[string][]string{}
	util := map[string]float64{}
	for _, s := range res {
		m := s.Metric
		names[m["gpu"]] = append(names[m["gpu"]], m["__name__"])
		if m["simulated"] != "true" || m["modelName"] != "NVIDIA A100-SXM4-80GB" || m["device"] != "nvidia"+m["gpu"] ||
			m["UUID"] == "" || m["pci_bus_id"] == "" || m["DCGM_FI_DRIVER_VERSION"] == "" || m["hostname"] != "" {
			t.Errorf("labels %v", m)
		}
		if m["__name__"] == "DCGM_FI_DEV_GPU_UTIL" {
			util[m["gpu"]] = s.value(t)
		}
	}
	for gpu := range GPUSimCount {
		g := strconv.Itoa(gpu)
		got := names[g]
		sort.Strings(got)
		if !slices.Equal(got, want) {
			t.Errorf("gpu %s: series %v, want %v", g, got, want)
		}
		// Well inside a slot of the schedule, the last scrape shows the slot's class.
		class, from, to := gpusim.Live.Phase(gpu, now)
		if now.Sub(from) > 5*time.Second && to.Sub(now) > 5*time.Second {
			if nominal := gpusim.Nominal(class, gpusim.A100SXM480GB).GPUUtil; math.Abs(util[g]-nominal) > 13 {
				t.Errorf("gpu %s is %s now, GPU_UTIL %.0f (nominal %.0f)", g, class, util[g], nominal)
			}
		}
	}
}
