package prometheus

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/dcgm"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// HELP texts as dcgm-exporter writes them from its counters CSV's third column.
const (
	percentHelp = "GPU utilization (in %)."
	ratioHelp   = "GPU utilization (ratio, 0.0-1.0)."
	neitherHelp = "GPU utilization."
)

func gaugeHelp(help string) []promv1.Metadata {
	return []promv1.Metadata{{Type: promv1.MetricTypeGauge, Help: help}}
}

func TestHelpTextsSayTheirUnit(t *testing.T) {
	for _, tc := range []struct {
		md   promv1.Metadata
		want string
	}{
		{promv1.Metadata{Help: percentHelp}, "percent"},
		{promv1.Metadata{Help: "Memory utilization (in %)."}, "percent"},
		{promv1.Metadata{Help: "GPU utilization, percentage 0-100"}, "percent"},
		{promv1.Metadata{Help: "Encoder utilization (0 to 100)"}, "percent"},
		{promv1.Metadata{Help: ratioHelp}, "ratio"},
		{promv1.Metadata{Help: "GPU utilization as a 0..1 ratio"}, "ratio"},
		{promv1.Metadata{Help: "Fraction of time a kernel ran (0 to 1)"}, "ratio"},
		{promv1.Metadata{Help: "GPU utilization", Unit: "ratio"}, "ratio"},
		{promv1.Metadata{Help: "GPU utilization", Unit: "percent"}, "percent"},
		{promv1.Metadata{Help: neitherHelp}, ""},
		{promv1.Metadata{Help: ""}, ""},
		// Both words: which one the values are in is not said.
		{promv1.Metadata{Help: "Utilization ratio; multiply by 100 for a percentage"}, ""},
		// "0-100" must not read as "0-1", nor "10-1" as one.
		{promv1.Metadata{Help: "Load 10-100"}, ""},
	} {
		if got := metadataUnit(tc.md); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.md, got, tc.want)
		}
	}
	if d := decideUnit(dcgm.PercentOrRatio, gaugeHelp(ratioHelp)); d != (unitDecision{scale: 100}) {
		t.Errorf("ratio: %+v", d)
	}
	if d := decideUnit(dcgm.PercentOrRatio, gaugeHelp(percentHelp)); d != (unitDecision{scale: 1}) {
		t.Errorf("percent: %+v", d)
	}
	// Two targets, one HELP text each: the same unit is fine, two units are not.
	if d := decideUnit(dcgm.PercentOrRatio, append(gaugeHelp(ratioHelp), gaugeHelp("GPU utilization, 0..1 ratio")...)); d.scale != 100 {
		t.Errorf("two ratio texts: %+v", d)
	}
	if d := decideUnit(dcgm.PercentOrRatio, append(gaugeHelp(ratioHelp), gaugeHelp(percentHelp)...)); !strings.Contains(d.skip, "disagree") {
		t.Errorf("a ratio and a percentage: %+v", d)
	}
	if d := decideUnit(dcgm.PercentOrRatio, nil); !strings.Contains(d.skip, "no metadata") {
		t.Errorf("no metadata: %+v", d)
	}
}

// dcgm-exporter 4.10's *_BYTES_PER_SECOND throughputs: the HELP text says bytes, KB or MB.
func TestThroughputHelpTextsSayTheirUnit(t *testing.T) {
	for _, tc := range []struct {
		help string
		unit string
		want float64 // 0: not read
	}{
		{"Total number of bytes transmitted through PCIe TX per second.", "", 1},
		{"PCIe TX throughput (in B/s).", "", 1},
		{"PCIe TX throughput (in KB/s).", "", 1024},
		{"PCIe receive rate, KiB per second", "", 1024},
		{"NVLink TX bandwidth in MB/s", "", 1 << 20},
		{"NVLink TX", "bytes", 1},
		{"PCIe TX throughput.", "", 0},
		{"PCIe TX in KB or MB per second", "", 0},
	} {
		d := decideUnit(dcgm.BytesPerSecond, []promv1.Metadata{{Type: "gauge", Help: tc.help, Unit: tc.unit}})
		if d.scale != tc.want || (tc.want == 0) != (d.skip != "") {
			t.Errorf("%q (unit %q): %+v, want scale %g", tc.help, tc.unit, d, tc.want)
		}
	}
}

// A GPU of dcgm-exporter 4.10 writes PCIe only as DCGM_FI_PROF_PCIE_*_BYTES_PER_SECOND: the
// figures read it (in KB/s here, as its HELP text says), so PCIe-bound classification still
// sees its traffic.
func TestGPUFiguresReadTheRenamedPCIeThroughput(t *testing.T) {
	a0 := identity(nodeA0)
	f := &fakeDCGM{
		labelNames: mixedFleetLabels,
		stored: []fakeStream{
			stored("DCGM_FI_DEV_GPU_UTIL", a0, 30, 31),
			stored("DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND", a0, 20e6, 21e6),
			stored("DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND", a0, 1e6, 1e6),
		},
		metadata: map[string][]promv1.Metadata{
			"DCGM_FI_PROF_PCIE_TX_BYTES_PER_SECOND": gaugeHelp("PCIe TX throughput (in KB/s)."),
			"DCGM_FI_PROF_PCIE_RX_BYTES_PER_SECOND": gaugeHelp("PCIe RX throughput (in KB/s)."),
		},
	}
	c, _ := newFakeDCGM(t, f)
	series, _, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0.Add(30*time.Second), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 1 || series[0].Samples[0].Figures.PCIeTx != 20e6*1024 || series[0].Samples[1].Figures.PCIeRx != 1e6*1024 {
		t.Errorf("PCIe figures %+v: want the renamed series in bytes/s", series)
	}
}

// A fleet mixing dcgm-exporter 4.8 (DCGM_FI_DEV_GPU_UTIL in %) and 4.9
// (DCGM_FI_DEV_GPU_UTIL_RATIO, unit per its HELP text): each GPU's figure in percent.
func gpuUtilFleet(help []promv1.Metadata) *fakeDCGM {
	a0, b0 := identity(nodeA0), identity(nodeB0)
	f := &fakeDCGM{
		labelNames: mixedFleetLabels,
		stored: []fakeStream{
			stored("DCGM_FI_DEV_GPU_UTIL", a0, 95, 96),
			stored("DCGM_FI_DEV_GPU_UTIL_RATIO", b0, 0.4, 0.41),
		},
		metadata: map[string][]promv1.Metadata{"DCGM_FI_DEV_GPU_UTIL": gaugeHelp(percentHelp)},
	}
	if help != nil {
		f.metadata["DCGM_FI_DEV_GPU_UTIL_RATIO"] = help
	}
	return f
}

func TestGPUFiguresReadARatioAsAPercentageWhenItsHelpSaysRatio(t *testing.T) {
	f := gpuUtilFleet(gaugeHelp(ratioHelp))
	c, _ := newFakeDCGM(t, f)
	series, found, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0.Add(30*time.Second), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 {
		t.Fatalf("%d GPUs: %+v", len(series), series)
	}
	a, b := series[0], series[1]
	if got := []float64{a.Samples[0].Figures.GPUUtil, b.Samples[0].Figures.GPUUtil, b.Samples[1].Figures.GPUUtil}; !slices.Equal(got, []float64{95, 40, 41}) {
		t.Errorf("GPU utilisation %v: node-b's ratio × 100", got)
	}
	for _, text := range found.Texts() {
		if strings.Contains(text, "GPU_UTIL_RATIO") {
			t.Errorf("notice %q", text)
		}
	}
	// Only the ruled name's metadata is asked for.
	if reqs := f.requestsTo("/api/v1/metadata"); len(reqs) != 1 {
		t.Errorf("%d metadata requests, want 1", len(reqs))
	}
}

func TestGPUFiguresReadAPercentageAsItIsWhenItsHelpSaysPercent(t *testing.T) {
	f := gpuUtilFleet(gaugeHelp(percentHelp))
	f.stored[1] = stored("DCGM_FI_DEV_GPU_UTIL_RATIO", identity(nodeB0), 40, 41) // DCGM 4.6's field 203 under its new name
	c, _ := newFakeDCGM(t, f)
	series, _, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0.Add(30*time.Second), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 2 || series[1].Samples[0].Figures.GPUUtil != 40 || series[1].Samples[1].Figures.GPUUtil != 41 {
		t.Errorf("node-b's percentage must be read as it is: %+v", series)
	}
}

// A HELP text that says neither unit (or no metadata, or metadata that cannot be read): the
// name is not read, and a notice says which and why; the classic name still answers.
func TestARuledSeriesOfUnknownUnitIsNotRead(t *testing.T) {
	for name, f := range map[string]*fakeDCGM{
		"neither":  gpuUtilFleet(gaugeHelp(neitherHelp)),
		"none":     gpuUtilFleet(nil),
		"disagree": gpuUtilFleet(append(gaugeHelp(ratioHelp), gaugeHelp(percentHelp)...)),
		"failed": func() *fakeDCGM {
			f := gpuUtilFleet(gaugeHelp(ratioHelp))
			f.status, f.failPath = 404, "/api/v1/metadata"
			return f
		}(),
	} {
		t.Run(name, func(t *testing.T) {
			c, _ := newFakeDCGM(t, f)
			series, found, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0.Add(30*time.Second), 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if len(series) == 0 || series[0].Samples[0].Figures.GPUUtil != 95 {
				t.Fatalf("node-a's classic percentage must still answer: %+v", series)
			}
			if len(series) == 2 && !math.IsNaN(series[1].Samples[0].Figures.GPUUtil) {
				t.Errorf("node-b's series of unknown unit was read: %v", series[1].Samples[0].Figures.GPUUtil)
			}
			var notice string
			for _, text := range found.Texts() {
				if strings.Contains(text, "DCGM_FI_DEV_GPU_UTIL_RATIO is not read") {
					notice = text
				}
			}
			if notice == "" || !strings.HasPrefix(notice, "GPU utilisation (gpu_utilization): ") {
				t.Fatalf("no notice naming the metric and why: %v", found.Texts())
			}
			if name == "neither" && !strings.Contains(notice, `its HELP text "GPU utilization." says neither a percentage nor a 0..1 ratio`) {
				t.Errorf("notice %q", notice)
			}
			for _, r := range f.requestsTo("/api/v1/query_range") {
				if strings.Contains(r.Query, "DCGM_FI_DEV_GPU_UTIL_RATIO") {
					t.Errorf("a query read the series of unknown unit: %s", r.Query)
				}
			}
		})
	}
}

func TestGPUMetricScalesARatioByItsHelpText(t *testing.T) {
	for help, want := range map[string]string{
		ratioHelp:   `(DCGM_FI_DEV_GPU_UTIL_RATIO * 100)`,
		percentHelp: `DCGM_FI_DEV_GPU_UTIL_RATIO))`,
	} {
		f := gpuUtilFleet(gaugeHelp(help))
		c, _ := newFakeDCGM(t, f)
		res, err := c.GPUMetric(context.Background(), "gpu_utilization", models.GPUFilter{}, "", t0, tEnd, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Query, `) (DCGM_FI_DEV_GPU_UTIL or `+want) ||
			!slices.Equal(res.Sources, []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_GPU_UTIL_RATIO"}) {
			t.Errorf("%s: query %s, sources %v", help, res.Query, res.Sources)
		}
		if strings.Contains(help, "%") && strings.Contains(res.Query, "* 100") {
			t.Errorf("a percentage scaled: %s", res.Query)
		}
	}
	f := gpuUtilFleet(gaugeHelp(neitherHelp))
	c, _ := newFakeDCGM(t, f)
	res, err := c.GPUMetric(context.Background(), "gpu_utilization", models.GPUFilter{}, "", t0, tEnd, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Query, "GPU_UTIL_RATIO") || !slices.Equal(res.Sources, []string{"DCGM_FI_DEV_GPU_UTIL"}) ||
		!res.Notices.Has(`GPU utilisation (gpu_utilization): DCGM_FI_DEV_GPU_UTIL_RATIO is not read: its HELP text "GPU utilization." says neither a percentage nor a 0..1 ratio, and exporter versions write this name in either. Name the unit in the HELP text (the exporter's counters CSV, third column), or map the entry to a series of known unit in jsonData.dcgmMetricNames`) {
		t.Errorf("unknown unit: query %s, sources %v, notices %v", res.Query, res.Sources, res.Notices.Texts())
	}
	// A metric without a ruled source asks for no metadata.
	before := len(f.requestsTo("/api/v1/metadata"))
	if _, err := c.GPUMetric(context.Background(), "temperature", models.GPUFilter{}, "", t0, tEnd, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := len(f.requestsTo("/api/v1/metadata")); n != before {
		t.Errorf("%d metadata requests for the temperature", n-before)
	}
}

// Where a GPU exports both names, the classic one is read: the ratio is never added to it.
func TestTheClassicNameWinsOverItsRatioSpelling(t *testing.T) {
	a0 := identity(nodeA0)
	f := &fakeDCGM{
		labelNames: mixedFleetLabels,
		stored: []fakeStream{
			stored("DCGM_FI_DEV_GPU_UTIL", a0, 95, 96),
			stored("DCGM_FI_DEV_GPU_UTIL_RATIO", a0, 0.5, 0.5),
		},
		metadata: map[string][]promv1.Metadata{"DCGM_FI_DEV_GPU_UTIL_RATIO": gaugeHelp(ratioHelp)},
	}
	c, _ := newFakeDCGM(t, f)
	series, _, err := c.GPUFigures(context.Background(), models.GPUFilter{}, t0, t0.Add(30*time.Second), 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 1 || series[0].Samples[0].Figures.GPUUtil != 95 || series[0].Samples[1].Figures.GPUUtil != 96 {
		t.Errorf("%+v: the classic percentage, not the ratio", series)
	}
}

func TestMetadataIsCachedForAMinute(t *testing.T) {
	f := gpuUtilFleet(gaugeHelp(ratioHelp))
	c, _ := newFakeDCGM(t, f)
	now := time.Now()
	c.meta.now = func() time.Time { return now }
	ctx := context.Background()
	for range 3 {
		if _, err := c.WithDCGM(models.DCGMSettings{}).GPUMetric(ctx, "gpu_utilization", models.GPUFilter{}, "", t0, tEnd, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.requestsTo("/api/v1/metadata")); n != 1 {
		t.Errorf("%d metadata requests within a minute, want 1 (the copies share the cache)", n)
	}
	now = now.Add(61 * time.Second)
	if _, err := c.GPUMetric(ctx, "gpu_utilization", models.GPUFilter{}, "", t0, tEnd, time.Minute); err != nil {
		t.Fatal(err)
	}
	if n := len(f.requestsTo("/api/v1/metadata")); n != 2 {
		t.Errorf("%d metadata requests after a minute, want 2", n)
	}
}

// An override naming the ratio spelling is read like that source: its HELP text decides.
func TestAnOverrideNamingTheRatioSpellingKeepsItsRule(t *testing.T) {
	cat := NewCatalogue(models.DCGMSettings{MetricNames: map[string]string{"gpu_utilization": "DCGM_FI_DEV_GPU_UTIL_RATIO"}})
	m, _ := cat.Lookup("gpu_utilization")
	if len(m.Sources) != 1 || m.Sources[0].UnitFromHelp != dcgm.PercentOrRatio {
		t.Errorf("sources %+v", m.Sources)
	}
}
