package gpusim

import (
	"bytes"
	"errors"
	"io"
	"math"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
)

func TestClassNamesArePkgClassifys(t *testing.T) {
	want := map[string]classify.Class{
		ComputeBound: classify.ComputeBound, MemoryBound: classify.MemoryBound, PCIeBound: classify.PCIeBound,
		ThermalThrottled: classify.ThermalThrottled, PowerThrottled: classify.PowerThrottled, Idle: classify.Idle,
		Balanced: classify.Balanced, NoData: classify.NoData,
	}
	for ours, theirs := range want {
		if ours != string(theirs) {
			t.Errorf("class %q here, %q in pkg/classify", ours, theirs)
		}
	}
	for _, c := range classify.Classes {
		if c != classify.NoData && !slices.Contains(Classes, string(c)) {
			t.Errorf("pkg/classify's class %q is never simulated", c)
		}
	}
}

// figures are one GPU's series at one moment, by series name.
type figures map[string]float64

// checkClass asserts that the figures show class and only class by the seeds' rules (GPU.md §2),
// with the signals each exporter flavour has.
func checkClass(t *testing.T, where, class string, f figures, m Model, e Exporter) {
	t.Helper()
	fail := func(why string) { t.Errorf("%s: %s: %s; figures %v", where, class, why, f) }
	util, memCopy, temp, clock, power := f["DCGM_FI_DEV_GPU_UTIL"], f["DCGM_FI_DEV_MEM_COPY_UTIL"], f["DCGM_FI_DEV_GPU_TEMP"], f["DCGM_FI_DEV_SM_CLOCK"], f["DCGM_FI_DEV_POWER_USAGE"]
	var tx, rx, bits float64
	if e == Old {
		tx, rx = f["DCGM_FI_DEV_PCIE_TX_THROUGHPUT"]*1024, f["DCGM_FI_DEV_PCIE_RX_THROUGHPUT"]*1024
	} else {
		tx, rx, bits = f["DCGM_FI_PROF_PCIE_TX_BYTES"], f["DCGM_FI_PROF_PCIE_RX_BYTES"], f["DCGM_FI_DEV_CLOCKS_EVENT_REASONS"]
	}
	sm, dram := f["DCGM_FI_PROF_SM_ACTIVE"], f["DCGM_FI_PROF_DRAM_ACTIVE"]/0.8 // DRAM_ACTIVE's practical peak is ~0.8
	pcie := math.Max(tx, rx) / m.PCIeBytesPerSec
	throttleBits := int(bits) & (ClockEventSWPowerCap | ClockEventSWThermal | ClockEventHWThermal | ClockEventHWPowerBrake)
	thermal := temp > 83
	if class != ThermalThrottled && thermal {
		fail("hotter than 83 °C")
	}
	if class != ThermalThrottled && class != PowerThrottled && throttleBits != 0 {
		fail("throttle bits set")
	}
	if class != PCIeBound && pcie > 0.2 {
		fail("PCIe busy")
	}
	if fb := f["DCGM_FI_DEV_FB_FREE"] + f["DCGM_FI_DEV_FB_USED"] + f["DCGM_FI_DEV_FB_RESERVED"]; fb != m.FBTotalMiB {
		fail("framebuffer free+used+reserved is not the total")
	}
	switch class {
	case ComputeBound:
		if util <= 80 || memCopy >= 60 || (e == Current && (sm < 0.9 || dram >= 0.6)) {
			fail("not util > 80 % (SM_ACTIVE >= 0.9) with memory < 60 %")
		}
	case MemoryBound:
		if util >= 50 || memCopy <= 70 || (e == Current && (dram <= 0.9 || sm >= 0.7)) {
			fail("not util < 50 % with memory > 70 % (DRAM_ACTIVE > 90 % of 0.8)")
		}
	case PCIeBound:
		if util >= 50 || memCopy >= 50 || pcie < 0.75 {
			fail("not util ~30 %, memory ~20 %, PCIe near the link's capacity")
		}
	case ThermalThrottled:
		if !thermal || clock >= m.MaxSMClock-100 || (e == Current && int(bits)&ClockEventHWThermal == 0) {
			fail("not > 83 °C with the SM clock below its maximum (and bit 0x40)")
		}
		if util >= 80 || util <= 50 {
			fail("utilisation would read as another class")
		}
	case PowerThrottled:
		if power > m.PowerLimitW || power < 0.98*m.PowerLimitW || int(bits)&ClockEventSWPowerCap == 0 {
			fail("not at the power limit with bit 0x4")
		}
		if util >= 80 || util <= 50 {
			fail("utilisation would read as another class")
		}
	case Idle:
		if util > 5 || (e == Current && sm > 0.05) {
			fail("not idle")
		}
	case Balanced:
		if util <= 50 || util >= 80 || memCopy >= 60 || memCopy <= 20 || clock != m.MaxSMClock {
			fail("not balanced")
		}
	default:
		fail("unknown class")
	}
}

func TestLiveScheduleShowsEveryClassOnEveryGPU(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if Live.Cycle() != 14*time.Minute {
		t.Fatalf("cycle %s", Live.Cycle())
	}
	for gpu := range 4 {
		seen := map[string]bool{}
		for dt := time.Duration(0); dt < Live.Cycle(); dt += 30 * time.Second {
			at := t0.Add(dt)
			class, from, to := Live.Phase(gpu, at)
			seen[class] = true
			if at.Before(from) || !at.Before(to) || to.Sub(from) != Live.Slot {
				t.Fatalf("gpu %d at %s: phase [%s, %s)", gpu, at, from, to)
			}
			if Live.ClassAt(gpu, at.Add(Live.Cycle())) != class {
				t.Fatalf("gpu %d: schedule does not repeat after a cycle", gpu)
			}
			if gpu == 1 && class == Live.ClassAt(0, at) {
				t.Errorf("GPUs 0 and 1 both %s at %s", class, at)
			}
		}
		if len(seen) != len(Classes) {
			t.Errorf("gpu %d shows %v in a cycle, want all of %v", gpu, seen, Classes)
		}
	}
	// Before the epoch too (floor division).
	if c := Live.ClassAt(0, time.Unix(-1, 0)); c != Classes[len(Classes)-1] {
		t.Errorf("class just before the epoch %q", c)
	}
}

// parseText parses one scrape with Prometheus' own text parser.
func parseText(t *testing.T, text []byte) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		t.Fatalf("the text parser refuses the scrape: %v\n%s", err, text)
	}
	return fams
}

// wantHelp is dcgm-exporter's HELP text and TYPE per series (etc/default-counters.csv,
// etc/dcp-metrics-included.csv).
var wantHelp = map[string][2]string{
	"DCGM_FI_DEV_SM_CLOCK":                    {"SM clock frequency (in MHz).", "gauge"},
	"DCGM_FI_DEV_MEM_CLOCK":                   {"Memory clock frequency (in MHz).", "gauge"},
	"DCGM_FI_DEV_MEMORY_TEMP":                 {"Memory temperature (in C).", "gauge"},
	"DCGM_FI_DEV_GPU_TEMP":                    {"GPU temperature (in C).", "gauge"},
	"DCGM_FI_DEV_POWER_USAGE":                 {"Power draw (in W).", "gauge"},
	"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION":    {"Total energy consumption since boot (in mJ).", "counter"},
	"DCGM_FI_DEV_PCIE_REPLAY_COUNTER":         {"Total number of PCIe retries.", "counter"},
	"DCGM_FI_DEV_GPU_UTIL":                    {"GPU utilization (in %).", "gauge"},
	"DCGM_FI_DEV_MEM_COPY_UTIL":               {"Memory utilization (in %).", "gauge"},
	"DCGM_FI_DEV_XID_ERRORS":                  {"Value of the last XID error encountered.", "gauge"},
	"DCGM_FI_DEV_FB_FREE":                     {"Framebuffer memory free (in MiB).", "gauge"},
	"DCGM_FI_DEV_FB_USED":                     {"Framebuffer memory used (in MiB).", "gauge"},
	"DCGM_FI_DEV_FB_RESERVED":                 {"Framebuffer memory reserved (in MiB).", "gauge"},
	"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": {"Number of remapped rows for uncorrectable errors.", "counter"},
	"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS":   {"Number of remapped rows for correctable errors.", "counter"},
	"DCGM_FI_DEV_ROW_REMAP_FAILURE":           {"whether remapping of rows has failed.", "gauge"},
	"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL":           {"Total number of single-bit volatile ECC errors.", "counter"},
	"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL":           {"Total number of double-bit volatile ECC errors.", "counter"},
	"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL":           {"Total number of single-bit persistent ECC errors.", "counter"},
	"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL":           {"Total number of double-bit persistent ECC errors.", "counter"},
	"DCGM_FI_DEV_CLOCKS_EVENT_REASONS":        {"Current clock event reasons.", "gauge"},
	"DCGM_FI_PROF_GR_ENGINE_ACTIVE":           {"Ratio of time the graphics engine is active.", "gauge"},
	"DCGM_FI_PROF_SM_ACTIVE":                  {"The ratio of cycles an SM has at least 1 warp assigned.", "gauge"},
	"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE":         {"Ratio of cycles the tensor (HMMA) pipe is active.", "gauge"},
	"DCGM_FI_PROF_DRAM_ACTIVE":                {"Ratio of cycles the device memory interface is active sending or receiving data.", "gauge"},
	"DCGM_FI_PROF_PCIE_TX_BYTES":              {"The rate of data transmitted over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", "gauge"},
	"DCGM_FI_PROF_PCIE_RX_BYTES":              {"The rate of data received over the PCIe bus - including both protocol headers and data payloads - in bytes per second.", "gauge"},
	"DCGM_FI_DEV_PCIE_TX_THROUGHPUT":          {"Total number of bytes transmitted through PCIe TX (in KB) via NVML.", "counter"},
	"DCGM_FI_DEV_PCIE_RX_THROUGHPUT":          {"Total number of bytes received through PCIe RX (in KB) via NVML.", "counter"},
}

// A line of dcgm-exporter 4.x: labels in its template's order, the rest sorted, ints with %d
// and doubles with %f.
var liveLine = regexp.MustCompile(`^(DCGM_FI_[A-Z_]+)\{gpu="(\d)",UUID="GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",pci_bus_id="00000000:[0-9A-F]{2}:00\.0",device="nvidia(\d)",modelName="NVIDIA A100-SXM4-80GB",Hostname="gpu-node-1",DCGM_FI_DRIVER_VERSION="570\.124\.06",simulated="true"\} (-?\d+(\.\d{6})?)$`)

func TestSimulatorWritesDCGMExporterText(t *testing.T) {
	sim := NewSimulator("gpu-node-1", 2)
	at := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC)
	sim.Now = func() time.Time { return at }
	srv := httptest.NewServer(sim)
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("HTTP %d, Content-Type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}

	fams := parseText(t, body)
	want := Current.Metrics()
	if len(fams) != len(want) {
		t.Errorf("%d series families, want %d", len(fams), len(want))
	}
	byGPU := map[string]figures{"0": {}, "1": {}}
	for _, m := range want {
		fam := fams[m.Name]
		if fam == nil {
			t.Errorf("no %s", m.Name)
			continue
		}
		if h := wantHelp[m.Name]; fam.GetHelp() != h[0] || strings.ToLower(fam.GetType().String()) != h[1] {
			t.Errorf("%s: HELP %q TYPE %s, want %q %s", m.Name, fam.GetHelp(), fam.GetType(), h[0], h[1])
		}
		if len(fam.Metric) != 2 {
			t.Errorf("%s: %d series, want one per GPU", m.Name, len(fam.Metric))
		}
		for _, s := range fam.Metric {
			ls := map[string]string{}
			var names []string
			for _, l := range s.Label {
				ls[l.GetName()] = l.GetValue()
				names = append(names, l.GetName())
			}
			if !slices.Equal(names, []string{"gpu", "UUID", "pci_bus_id", "device", "modelName", "Hostname", "DCGM_FI_DRIVER_VERSION", "simulated"}) {
				t.Errorf("%s: labels %v", m.Name, names)
			}
			if ls["simulated"] != "true" || ls["Hostname"] != "gpu-node-1" || ls["device"] != "nvidia"+ls["gpu"] {
				t.Errorf("%s: labels %v", m.Name, ls)
			}
			v := s.GetGauge().GetValue()
			if m.Type == "counter" {
				v = s.GetCounter().GetValue()
			}
			byGPU[ls["gpu"]][m.Name] = v
		}
	}
	for gpu, f := range byGPU {
		class := Live.ClassAt(int([]byte(gpu)[0]-'0'), at)
		checkClass(t, "gpu "+gpu, class, f, A100SXM480GB, Current)
	}

	// The lines themselves, as the exporter writes them.
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if len(lines) != len(want)*(2+2) {
		t.Errorf("%d lines, want %d", len(lines), len(want)*4)
	}
	for i, line := range lines {
		switch i % 4 {
		case 0:
			if !strings.HasPrefix(line, "# HELP DCGM_FI_") {
				t.Errorf("line %d: %q, want HELP", i+1, line)
			}
		case 1:
			if !strings.HasPrefix(line, "# TYPE DCGM_FI_") {
				t.Errorf("line %d: %q, want TYPE", i+1, line)
			}
		default:
			m := liveLine.FindStringSubmatch(line)
			if m == nil || m[2] != m[3] {
				t.Errorf("line %d not as dcgm-exporter writes it: %q", i+1, line)
				continue
			}
			double := strings.HasPrefix(m[1], "DCGM_FI_PROF_") && !strings.Contains(m[1], "PCIE") || m[1] == "DCGM_FI_DEV_POWER_USAGE"
			if double != (m[5] != "") {
				t.Errorf("line %d: value %s, want %s", i+1, m[4], map[bool]string{true: "%f", false: "%d"}[double])
			}
		}
	}
	for _, path := range []string{"/health", "/nope"} {
		res, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if want := map[string]int{"/health": 200, "/nope": 404}[path]; res.StatusCode != want {
			t.Errorf("%s: HTTP %d", path, res.StatusCode)
		}
	}
}

func TestSimulatorFollowsTheScheduleThroughACycle(t *testing.T) {
	sim := NewSimulator("gpu-node-1", 2)
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	seen := map[string]int{}
	var lastEnergy [2]float64
	for dt := time.Duration(0); dt <= 2*Live.Cycle(); dt += 7 * time.Second {
		at := t0.Add(dt)
		var buf bytes.Buffer
		if err := sim.WriteMetrics(&buf, at); err != nil {
			t.Fatal(err)
		}
		fams := parseText(t, buf.Bytes())
		for _, gpu := range []int{0, 1} {
			f := figures{}
			for name, fam := range fams {
				s := fam.Metric[gpu]
				f[name] = s.GetGauge().GetValue() + s.GetCounter().GetValue()
			}
			class := Live.ClassAt(gpu, at)
			seen[class]++
			checkClass(t, at.Format(time.TimeOnly)+" gpu "+string(rune('0'+gpu)), class, f, A100SXM480GB, Current)
			e := f["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
			if dt > 0 {
				// The counter grows by about power × 7 s.
				if d := e - lastEnergy[gpu]; d <= 0 || d > A100SXM480GB.PowerLimitW*7000*1.01 {
					t.Errorf("%s gpu %d: energy grew by %.0f mJ in 7 s", at, gpu, d)
				}
			}
			lastEnergy[gpu] = e
		}
	}
	if len(seen) != len(Classes) {
		t.Errorf("classes seen %v", seen)
	}
	// Deterministic: the same moment gives the same scrape.
	var a, b bytes.Buffer
	_ = sim.WriteMetrics(&a, t0)
	_ = NewSimulator("gpu-node-1", 2).WriteMetrics(&b, t0)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two simulators differ at the same moment")
	}
}

// fixtureSeries reads a fixture file with Prometheus' OpenMetrics parser (the one promtool's
// backfill uses) into samples by host, GPU and time.
type fixtureKey struct {
	host string
	gpu  string
	ts   int64
}

func parseFixtures(t *testing.T, data []byte) (samples map[fixtureKey]figures, labelSets map[string]labels.Labels, help map[string][2]string) {
	t.Helper()
	samples, labelSets, help = map[fixtureKey]figures{}, map[string]labels.Labels{}, map[string][2]string{}
	p := textparse.NewOpenMetricsParser(data, labels.NewSymbolTable())
	var fam string
	for {
		e, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("the OpenMetrics parser refuses the fixtures: %v", err)
		}
		switch e {
		case textparse.EntryHelp:
			name, text := p.Help()
			fam = string(name)
			if _, dup := help[fam]; dup {
				t.Fatalf("family %s described twice", fam)
			}
			help[fam] = [2]string{string(text), ""}
		case textparse.EntryType:
			name, typ := p.Type()
			h := help[string(name)]
			h[1] = string(typ)
			help[string(name)] = h
		case textparse.EntrySeries:
			_, ts, v := p.Series()
			var ls labels.Labels
			p.Labels(&ls)
			name := ls.Get("__name__")
			if name != fam {
				t.Fatalf("series %s outside its family %s", name, fam)
			}
			if ts == nil {
				t.Fatalf("sample without timestamp: %s", ls)
			}
			host := ls.Get("Hostname") + ls.Get("hostname")
			k := fixtureKey{host, ls.Get("gpu"), *ts}
			if samples[k] == nil {
				samples[k] = figures{}
			}
			samples[k][name] = v
			labelSets[name+"/"+host+"/"+ls.Get("gpu")] = ls
		}
	}
	return samples, labelSets, help
}

func TestFixtures(t *testing.T) {
	end := time.Unix(1_780_000_000, 0)
	start := end.Add(-FixtureHistory)
	var buf bytes.Buffer
	if err := WriteFixtures(&buf, start, end, FixtureStep); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	if !bytes.HasSuffix(data, []byte("\n# EOF\n")) {
		t.Fatal("fixtures do not end in # EOF")
	}
	var again bytes.Buffer
	_ = WriteFixtures(&again, start, end, FixtureStep)
	if !bytes.Equal(data, again.Bytes()) {
		t.Fatal("fixtures differ between two runs")
	}
	samples, labelSets, help := parseFixtures(t, data)
	for name, h := range help {
		if wantHelp[name] != h {
			t.Errorf("%s: HELP/TYPE %q, want %q", name, h, wantHelp[name])
		}
	}

	steps := int(FixtureHistory/FixtureStep) + 1
	for _, g := range FixtureGPUs() {
		gpu := string(rune('0' + g.Index))
		where := g.Host + " gpu " + gpu
		// Label sets: the exporter's own; simulated="true" on host D only.
		for _, m := range fixtureMetrics {
			ls, ok := labelSets[m.Name+"/"+g.Host+"/"+gpu]
			has := slices.ContainsFunc(g.Metrics(), func(x Metric) bool { return x.Name == m.Name })
			if ok != has {
				t.Errorf("%s: %s present %v, want %v", where, m.Name, ok, has)
			}
			if !ok {
				continue
			}
			if ls.Get("simulated") != map[bool]string{true: "true"}[g.Host == FixtureHostD] || ls.Get("job") != "dcgm" || ls.Get("instance") != g.Host+":9400" || ls.Get("modelName") != g.Model.Name {
				t.Errorf("%s: labels %s", where, ls)
			}
			if g.Exporter == Current {
				if !ls.Has("Hostname") || ls.Has("hostname") || ls.Has("pod_name") || (g.Index != 5 && ls.Get("namespace") != "inference") {
					t.Errorf("%s: current exporter's labels wrong: %s", where, ls)
				}
			} else if !ls.Has("hostname") || ls.Has("Hostname") || ls.Has("pod") || ls.Get("pod_namespace") != "inference" || ls.Get("pod_name") == "" {
				t.Errorf("%s: old exporter's labels wrong: %s", where, ls)
			}
		}
		// Every sample shows FixtureClass's class; gaps have no samples.
		n, maxClock := 0, 0.0
		classes := map[string]int{}
		for k := range steps {
			at := start.Add(time.Duration(k) * FixtureStep)
			f := samples[fixtureKey{g.Host, gpu, at.UnixMilli()}]
			class := FixtureClass(g.Host, g.Index, at, start, end)
			classes[class]++
			if class == NoData {
				if f != nil {
					t.Errorf("%s: samples at %s, in its gap", where, at)
				}
				continue
			}
			n++
			if len(f) != len(g.Metrics()) {
				t.Errorf("%s at %s: %d series, want %d", where, at, len(f), len(g.Metrics()))
				continue
			}
			checkClass(t, where+" at "+at.Format(time.TimeOnly), class, f, g.Model, g.Exporter)
			if g.Host == FixtureHostB && g.Index == 2 {
				if f["DCGM_FI_DEV_SM_CLOCK"] > maxClock {
					maxClock = f["DCGM_FI_DEV_SM_CLOCK"]
				}
				if class == ThermalThrottled && f["DCGM_FI_DEV_SM_CLOCK"] > 950 {
					t.Errorf("%s: throttled at %.0f MHz", where, f["DCGM_FI_DEV_SM_CLOCK"])
				}
			}
		}
		if g.Host == FixtureHostB && g.Index == 2 && maxClock != 1590 {
			t.Errorf("%s: observed SM clock maximum %.0f, want 1590", where, maxClock)
		}
		// The phases are the documented ones.
		var want map[string]int
		switch {
		case g.Host == FixtureHostA && g.Index == 6:
			want = map[string]int{Balanced: 160, ComputeBound: 160, Idle: 161}
		case g.Host == FixtureHostB && g.Index == 2:
			want = map[string]int{Balanced: 40, ThermalThrottled: 441}
		case g.Host == FixtureHostB && g.Index == 3:
			want = map[string]int{Balanced: 321, NoData: 160}
		case g.Host == FixtureHostD && g.Index == 0:
			want = map[string]int{Balanced: 360, Idle: 121} // the XID at 90 min of 120
		default:
			want = map[string]int{g.phases[0].class: steps}
		}
		if !maps(classes, want) {
			t.Errorf("%s: samples per class %v, want %v", where, classes, want)
		}
		if n == 0 {
			t.Errorf("%s: no samples", where)
		}
	}
	// Host A's GPUs 0..5 show the six classes one each.
	for i, c := range []string{ComputeBound, MemoryBound, PCIeBound, ThermalThrottled, PowerThrottled, Idle} {
		if got := FixtureClass(FixtureHostA, i, start.Add(time.Hour), start, end); got != c {
			t.Errorf("%s gpu %d: %s, want %s", FixtureHostA, i, got, c)
		}
	}
}

func maps(a, b map[string]int) bool {
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

func TestFixtureClass(t *testing.T) {
	start := time.Unix(1_780_000_000, 0)
	end := start.Add(2 * time.Hour)
	for _, c := range []struct {
		host string
		gpu  int
		at   time.Time
		want string
	}{
		{FixtureHostA, 6, start, Balanced},
		{FixtureHostA, 6, start.Add(40*time.Minute - time.Nanosecond), Balanced},
		{FixtureHostA, 6, start.Add(40 * time.Minute), ComputeBound},
		{FixtureHostA, 6, start.Add(80 * time.Minute), Idle},
		{FixtureHostA, 6, end, Idle},
		{FixtureHostA, 6, end.Add(time.Second), NoData},
		{FixtureHostA, 0, start.Add(-time.Second), NoData},
		{FixtureHostA, 7, start.Add(time.Hour), NoData},
		{"gpu-node-1", 0, start.Add(time.Hour), NoData},
		{FixtureHostB, 2, start.Add(9 * time.Minute), Balanced},
		{FixtureHostB, 2, start.Add(10 * time.Minute), ThermalThrottled},
		{FixtureHostB, 3, start.Add(39 * time.Minute), Balanced},
		{FixtureHostB, 3, start.Add(time.Hour), NoData},
		{FixtureHostB, 3, start.Add(80 * time.Minute), Balanced},
	} {
		if got := FixtureClass(c.host, c.gpu, c.at, start, end); got != c.want {
			t.Errorf("%s gpu %d at +%s: %s, want %s", c.host, c.gpu, c.at.Sub(start), got, c.want)
		}
	}
	g, _ := FixtureGPUFor(FixtureHostA, 6)
	ph := g.Phases(start, end)
	if len(ph) != 3 || ph[1].Class != ComputeBound || !ph[1].From.Equal(start.Add(40*time.Minute)) || !ph[2].To.Equal(end) {
		t.Errorf("phases %+v", ph)
	}
	if err := WriteFixtures(io.Discard, end, start, time.Second); err == nil {
		t.Error("a window ending before it starts is accepted")
	}
}
