//go:build integration

package plugin

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"go.yaml.in/yaml/v3"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// The gpuClass query and the recording rules against the test bed's real Prometheus: the
// fixtures (fixture-node-a: current exporter with profiling metrics and the bitmask;
// fixture-node-b: old exporter, hostname, no bitmask, PCIe in KB/s; fixture-node-c: one shared
// GPU; fixture-node-d: H100s, one of them idle after its XID) and the live simulator.

const gcStep = 15 * time.Second // the fixtures' sample interval

// gcFixtureQuery asks for the fixture hosts over the fixture window at 15 s.
func gcFixtureQuery(t *testing.T, format string) backend.DataQuery {
	start, end := fixtureWindow(t)
	return backend.DataQuery{RefID: "A", QueryType: models.QueryTypeGPUClass,
		JSON:     json.RawMessage(`{"queryType":"gpuClass","hosts":["fixture-node-a","fixture-node-b","fixture-node-c","fixture-node-d"],"minStep":"15s","format":"` + format + `"}`),
		Interval: gcStep, TimeRange: backend.TimeRange{From: start, To: end}}
}

// gcTimeline indexes the timeline frame: host/gpu → Unix seconds → class.
func gcTimeline(t *testing.T, f *data.Frame) map[string]map[int64]classify.Class {
	t.Helper()
	if f.Name != frames.GPUClassTimelineFrameName {
		t.Fatalf("first frame %q, want the timeline", f.Name)
	}
	out := map[string]map[int64]classify.Class{}
	for _, fl := range f.Fields[1:] {
		key := fl.Labels["host"] + "/" + fl.Labels["gpu"]
		out[key] = map[int64]classify.Class{}
		for i := range f.Rows() {
			out[key][f.Fields[0].At(i).(time.Time).Unix()] = classify.Class(fl.At(i).(string))
		}
	}
	return out
}

// nearBoundary says whether t is within a step before or 5 min + a step after a phase change of
// the fixture GPU: Prometheus' look-back carries the last sample 5 min into a gap.
func nearBoundary(g gpusim.FixtureGPU, t, start, end time.Time) bool {
	for i, p := range g.Phases(start, end) {
		if i > 0 && !t.Before(p.From.Add(-gcStep)) && !t.After(p.From.Add(5*time.Minute+gcStep)) {
			return true
		}
	}
	return false
}

func TestRealGPUClassShowsEachFixtureGPUsClass(t *testing.T) {
	start, end := fixtureWindow(t)
	r := run(t, gpuBedDatasource(t, nil), gcFixtureQuery(t, "all")).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	timeline := gcTimeline(t, r.Frames[0])
	if len(timeline) != len(gpusim.FixtureGPUs()) {
		t.Errorf("timeline has %d GPUs, want the %d fixture GPUs", len(timeline), len(gpusim.FixtureGPUs()))
	}
	checked := 0
	for _, g := range gpusim.FixtureGPUs() {
		key := g.Host + "/" + strconv.Itoa(g.Index)
		steps, ok := timeline[key]
		if !ok {
			t.Errorf("no timeline for %s", key)
			continue
		}
		wrong := 0
		for sec, got := range steps {
			at := time.Unix(sec, 0)
			if nearBoundary(g, at, start, end) {
				continue
			}
			checked++
			if want := gpusim.FixtureClass(g.Host, g.Index, at, start, end); string(got) != want {
				if wrong++; wrong <= 3 {
					t.Errorf("%s at %s: %s, FixtureClass says %s", key, at.Format(time.TimeOnly), got, want)
				}
			}
		}
		if wrong > 3 {
			t.Errorf("%s: %d steps wrong in all", key, wrong)
		}
	}
	if checked < 11*400 {
		t.Errorf("only %d steps checked", checked)
	}

	sum := r.Frames[1]
	row := map[string]int{}
	gpuCol, _ := sum.FieldByName("GPU")
	for i := range sum.Rows() {
		row[gpuCol.At(i).(string)] = i
	}
	cell := func(gpu, field string) any {
		f, _ := sum.FieldByName(field)
		i, ok := row[gpu]
		if f == nil || !ok {
			t.Fatalf("summary lacks %s / %s", gpu, field)
		}
		return f.At(i)
	}
	for gpu, want := range map[string]struct{ class, evidence, action string }{
		"fixture-node-a/0": {"compute-bound", "(DCGM_FI_PROF_SM_ACTIVE 0.9", "quantization, pruning, smaller models"},
		"fixture-node-a/1": {"memory-bound", "(DCGM_FI_PROF_DRAM_ACTIVE 0.7", "pinned memory"},
		"fixture-node-a/2": {"pcie-bound", "of Gen4 x16 capacity 31.5 GB/s > pcieBoundLinkShare 60%", "reduce CPU-GPU transfers"},
		"fixture-node-a/3": {"thermal-throttled", "clock-event bitmask 0x40 has HW thermal slowdown (0x40)", "improve cooling"},
		"fixture-node-a/4": {"power-throttled", "has SW power cap (0x4)", "power limit"},
		"fixture-node-a/5": {"idle", "< idleBelowPct 50 (low utilisation)", "CUDA graphs"},
		"fixture-node-b/0": {"compute-bound", "fallback: no DCGM_FI_PROF_SM_ACTIVE or DCGM_FI_PROF_GR_ENGINE_ACTIVE, compute from DCGM_FI_DEV_GPU_UTIL", "pruning"},
		"fixture-node-b/1": {"memory-bound", "fallback: no DCGM_FI_PROF_DRAM_ACTIVE, memory bandwidth from DCGM_FI_DEV_MEM_COPY_UTIL", "memory pooling"},
		"fixture-node-b/2": {"thermal-throttled", "°C > thermalTempC 83 and SM clock", "improve cooling"},
		"fixture-node-b/3": {"balanced", "no class threshold crossed", "no single bottleneck"},
	} {
		if got := cell(gpu, "dominant class"); got != want.class {
			t.Errorf("%s: dominant %v, want %s", gpu, got, want.class)
		}
		if ev := cell(gpu, "evidence").(string); !strings.Contains(ev, want.evidence) {
			t.Errorf("%s: evidence %q lacks %q", gpu, ev, want.evidence)
		}
		// The fixture's temperature has noise (87–89 °C): the number itself is not asserted.
		if gpu == "fixture-node-b/2" && !strings.Contains(cell(gpu, "evidence").(string), "no clock-event bitmask (DCGM_FI_DEV_CLOCKS_EVENT_REASONS): temperature 8") {
			t.Errorf("%s: evidence %q does not name the missing bitmask and the temperature", gpu, cell(gpu, "evidence"))
		}
		if a := cell(gpu, "action").(string); !strings.Contains(a, want.action) {
			t.Errorf("%s: action %q lacks %q", gpu, a, want.action)
		}
	}
	// node-b gpu 2 keeps its 1590 MHz maximum from the first 10 minutes to the end (the day-long
	// clock window); node-b gpu 3's middle third is a gap.
	if ev := cell("fixture-node-b/2", "evidence").(string); !strings.Contains(ev, "observed max 1590 MHz (clockMaxWindow 1d)") {
		t.Errorf("node-b/2 evidence %q", ev)
	}
	if share := cell("fixture-node-b/3", "no data").(float64); share < 0.25 || share > 1.0/3 {
		t.Errorf("node-b/3 has no data %.3f of the time, want about a third less the 5 min look-back", share)
	}
	notices := noticeTexts(r.Frames[0])
	for _, want := range []string{"no clock-event bitmask (DCGM_FI_DEV_CLOCKS_EVENT_REASONS) for fixture-node-b/0, fixture-node-b/1, fixture-node-b/2, fixture-node-b/3",
		"dcgm-exporter collects every 30 s by default"} {
		if !strings.Contains(notices, want) {
			t.Errorf("notices lack %q:\n%s", want, notices)
		}
	}
}

// gcRulesFile reads the provisioned rule file as the rules Prometheus loads.
func gcRulesFile(t testing.TB) []classify.Rule {
	t.Helper()
	root, err := testbed.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(root, "provisioning/prometheus/rules/gpu-classification.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Groups []struct {
			Rules []struct {
				Record, Alert, Expr string
				Labels              map[string]string
			}
		}
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatalf("gpu-classification.yml: %v", err)
	}
	var rules []classify.Rule
	for _, g := range file.Groups {
		for _, r := range g.Rules {
			cr := classify.Rule{Record: r.Record, Alert: r.Alert, Expr: r.Expr}
			for k, v := range r.Labels {
				cr.Labels = append(cr.Labels, [2]string{k, v})
			}
			rules = append(rules, cr)
		}
	}
	return rules
}

// gcQueryRange runs a range query on the bed's Prometheus: host/gpu (either host label) → Unix
// seconds → value. A series per GPU is expected.
func gcQueryRange(t *testing.T, expr string, start, end time.Time, step time.Duration) map[string]map[int64]float64 {
	t.Helper()
	q := url.Values{"query": {expr}, "start": {strconv.FormatInt(start.Unix(), 10)}, "end": {strconv.FormatInt(end.Unix(), 10)},
		"step": {strconv.FormatFloat(step.Seconds(), 'f', -1, 64)}}
	res, err := http.PostForm(bed.PrometheusURL+"/api/v1/query_range", q)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Status, Error string
		Data          struct {
			Result []struct {
				Metric map[string]string
				Values [][2]any
			}
		}
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || body.Status != "success" {
		t.Fatalf("query_range %s: %v %s", expr, err, body.Error)
	}
	out := map[string]map[int64]float64{}
	for _, s := range body.Data.Result {
		host := s.Metric["Hostname"] + s.Metric["hostname"]
		key := host + "/" + s.Metric["gpu"]
		// A shared GPU's copies (one per pod, vgpu label) must agree at every step.
		_, dup := out[key]
		if dup && s.Metric["vgpu"] == "" {
			t.Fatalf("two series for %s in %s", key, expr)
		}
		if !dup {
			out[key] = map[int64]float64{}
		}
		for _, p := range s.Values {
			v, _ := strconv.ParseFloat(p[1].(string), 64)
			sec := int64(p[0].(float64))
			if old, seen := out[key][sec]; dup && (!seen || old != v) {
				t.Fatalf("%s's copies differ at %d: %v and %v (seen %v)", key, sec, old, v, seen)
			}
			out[key][sec] = v
		}
	}
	return out
}

// The provisioned rules, expanded into one query over the raw DCGM series (the bed's rules
// started evaluating after the fixtures' window), and the backend give the same class at every
// step of every fixture GPU, and the same trailing-hour shares. Both see the same samples: the
// fixtures are every 15 s on the 15 s grid and have no history before the window, so the clock
// maximum, the look-back and the bits are identical; no difference is tolerated.
func TestRealRecordingRulesAgreeWithTheBackendStepByStep(t *testing.T) {
	start, end := fixtureWindow(t)
	rules := gcRulesFile(t)
	code := classify.ExpandRecords(classify.RecordCode, rules)
	prom := gcQueryRange(t, code, start, end, gcStep)

	r := run(t, gpuBedDatasource(t, nil), gcFixtureQuery(t, "all")).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	backendClasses := gcTimeline(t, r.Frames[0])
	compared, mismatches := 0, 0
	for key, steps := range backendClasses {
		for sec, c := range steps {
			want := classify.NoData
			if v, ok := prom[key][sec]; ok {
				want = classify.ClassOfCode(int(v))
			}
			compared++
			if c != want {
				if mismatches++; mismatches <= 5 {
					t.Errorf("%s at %s: backend %s, rules %s", key, time.Unix(sec, 0).Format(time.TimeOnly), c, want)
				}
			}
		}
	}
	for key := range prom {
		if strings.HasPrefix(key, "fixture-node-") {
			if _, ok := backendClasses[key]; !ok {
				t.Errorf("the rules classify %s, the backend does not", key)
			}
		}
	}
	if mismatches > 0 || compared < 11*480 {
		t.Errorf("%d of %d steps differ", mismatches, compared)
	}
	t.Logf("classes agree at %d GPU steps", compared)

	// Shares: avg_over_time over the class's 0/1 series for the share window, the recorded
	// hsi:gpu_class_share:ratio1h as a subquery at the same 15 s.
	shares := map[string]*data.Frame{}
	for _, f := range r.Frames[2:] {
		shares[f.Fields[1].Labels["host"]+"/"+f.Fields[1].Labels["gpu"]+"/"+f.Fields[1].Labels["class"]] = f
	}
	th := classify.DefaultThresholds()
	shareCompared := 0
	for _, c := range classify.Classes {
		if c == classify.NoData {
			continue
		}
		expr := fmt.Sprintf("avg_over_time((%s == bool %d)[%s:%ds])", code, c.Code(), classify.PromDuration(th.ShareWindow), int(gcStep.Seconds()))
		got := gcQueryRange(t, expr, start, end, gcStep)
		for key, steps := range backendClasses {
			f := shares[key+"/"+string(c)]
			if f == nil {
				t.Fatalf("no share frame for %s %s", key, c)
			}
			for i := range f.Rows() {
				sec := f.Fields[0].At(i).(time.Time).Unix()
				if _, shown := steps[sec]; !shown {
					continue
				}
				b := f.Fields[1].At(i).(*float64)
				p, ok := got[key][sec]
				shareCompared++
				switch {
				case b == nil && ok, b != nil && !ok:
					t.Fatalf("%s %s at %s: backend %v, Prometheus present %v", key, c, time.Unix(sec, 0).Format(time.TimeOnly), b, ok)
				case b != nil && math.Abs(*b-p) > 1e-9:
					t.Fatalf("%s %s at %s: backend share %v, Prometheus %v", key, c, time.Unix(sec, 0).Format(time.TimeOnly), *b, p)
				}
			}
		}
	}
	t.Logf("shares agree at %d GPU-class steps", shareCompared)
}

// gcRulesLoaded waits until the bed's Prometheus evaluates the provisioned classification
// group as the file now reads. A bed started before the file existed, or before its last
// change, is told to reload its configuration (the bed runs Prometheus with
// --web.enable-lifecycle for this). Rules are compared by the series names their expressions
// read, which Prometheus' reformatting of the expressions keeps.
func gcRulesLoaded(t *testing.T) {
	t.Helper()
	want := map[string]bool{}
	for _, r := range gcRulesFile(t) {
		want[r.Record+r.Alert+" "+gcNames(r.Expr)] = true
	}
	loaded := func() (bool, string) {
		res, err := http.Get(bed.PrometheusURL + "/api/v1/rules")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var body struct {
			Data struct {
				Groups []struct {
					Name  string
					Rules []struct {
						Name, Query, Health, LastError string
					}
				}
			}
		}
		if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
			t.Fatal(err)
		}
		for _, g := range body.Data.Groups {
			if g.Name != "hsi-gpu-classification" {
				continue
			}
			got := map[string]bool{}
			for _, r := range g.Rules {
				if r.Health == "err" {
					return false, fmt.Sprintf("rule %s: %s", r.Name, r.LastError)
				}
				got[r.Name+" "+gcNames(r.Query)] = true
			}
			for k := range want {
				if !got[k] {
					return false, "the loaded group differs from the file at " + strings.Fields(k)[0]
				}
			}
			return true, ""
		}
		return false, "group hsi-gpu-classification not loaded"
	}
	ok, why := loaded()
	if ok {
		return
	}
	t.Logf("%s: asking Prometheus to reload its rule files", why)
	res, err := http.Post(bed.PrometheusURL+"/-/reload", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		if ok, why = loaded(); ok {
			return
		}
	}
	t.Fatalf("the bed's Prometheus does not evaluate the provisioned classification rules: %s", why)
}

// gcNames lists the DCGM and recorded series an expression reads, sorted.
func gcNames(expr string) string {
	names := gcNameToken.FindAllString(expr, -1)
	slices.Sort(names)
	return strings.Join(slices.Compact(names), ",")
}

var gcNameToken = regexp.MustCompile(`(DCGM_FI_[A-Z0-9_]+|hsi:[a-z0-9_:]+)`)

// The recording rules run in the bed's Prometheus over the live simulator (scraped every
// second, the rules evaluated every second) and record the classes the backend computes from
// the same series. The simulator changes class every 2 minutes; the rules see a new sample up to
// an evaluation interval after the backend's step does, so steps within 3 s of a class change
// in either series are not compared.
func TestRealRecordingRulesRunLiveAndMatchTheBackend(t *testing.T) {
	gcRulesLoaded(t)
	var prom map[string]map[int64]float64
	var start, end time.Time
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(5 * time.Second) {
		end = time.Now().Truncate(time.Second).Add(-2 * time.Second)
		start = end.Add(-3 * time.Minute)
		prom = gcQueryRange(t, `hsi:gpu_class:code{Hostname="`+testbed.GPUSimHost+`"}`, start, end, time.Second)
		n := 0
		for _, s := range prom {
			n = max(n, len(s))
		}
		if n >= 60 || time.Now().After(deadline) {
			break
		}
	}
	// A small series limit keeps GPUFigures' point budget from raising the 1 s step.
	ds := gpuBedDatasource(t, map[string]any{"gpuMaxSeries": 8})
	q := backend.DataQuery{RefID: "A", QueryType: models.QueryTypeGPUClass,
		JSON:     json.RawMessage(`{"queryType":"gpuClass","hosts":["` + testbed.GPUSimHost + `"],"minStep":"1s","format":"timeline"}`),
		Interval: time.Second, TimeRange: backend.TimeRange{From: start, To: end}}
	r := run(t, ds, q).Responses["A"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	backendClasses := gcTimeline(t, r.Frames[0])
	if len(backendClasses) != testbed.GPUSimCount || len(prom) != testbed.GPUSimCount {
		t.Fatalf("backend GPUs %d, recorded GPUs %d, want %d", len(backendClasses), len(prom), testbed.GPUSimCount)
	}
	changeNear := func(series func(int64) (classify.Class, bool), sec int64) bool {
		c, _ := series(sec)
		for d := int64(-3); d <= 3; d++ {
			if other, ok := series(sec + d); ok && other != c {
				return true
			}
		}
		return false
	}
	compared := 0
	for key, steps := range backendClasses {
		recorded := func(sec int64) (classify.Class, bool) {
			v, ok := prom[key][sec]
			return classify.ClassOfCode(int(v)), ok
		}
		backendAt := func(sec int64) (classify.Class, bool) {
			c, ok := steps[sec]
			return c, ok
		}
		for sec, c := range steps {
			if _, ok := prom[key][sec]; !ok || changeNear(recorded, sec) || changeNear(backendAt, sec) {
				continue
			}
			compared++
			if got, _ := recorded(sec); got != c {
				t.Errorf("%s at %s: backend %s, recorded %s", key, time.Unix(sec, 0).Format(time.TimeOnly), c, got)
			}
		}
	}
	if compared < 100 {
		t.Errorf("only %d steps compared", compared)
	}
	t.Logf("live: %d steps agree", compared)
}

// --- Benchmark: 64 GPUs over 24 h at 15 s against a real Prometheus ---

// gcBenchGPUs is the benchmark's fleet: 6 hosts × 8 current-exporter A100s, 2 hosts × 8 old T4s.
func gcBenchGPUs() []gpusim.GPU {
	var out []gpusim.GPU
	for h := range 8 {
		host := fmt.Sprintf("bench-node-%02d", h)
		for i := range 8 {
			if h < 6 {
				out = append(out, gpusim.NewGPU(host, i, gpusim.A100SXM480GB, gpusim.Current, "550.127.05", nil))
			} else {
				out = append(out, gpusim.NewGPU(host, i, gpusim.TeslaT4, gpusim.Old, "470.82.01", nil))
			}
		}
	}
	return out
}

type gcMetric struct {
	name  string
	old   bool // sent by the old exporter instead of / as well as the current one
	cur   bool
	value func(r gpusim.Reading) float64
}

var gcBenchMetrics = []gcMetric{
	{"DCGM_FI_DEV_GPU_UTIL", true, true, func(r gpusim.Reading) float64 { return r.GPUUtil }},
	{"DCGM_FI_DEV_MEM_COPY_UTIL", true, true, func(r gpusim.Reading) float64 { return r.MemCopyUtil }},
	{"DCGM_FI_DEV_GPU_TEMP", true, true, func(r gpusim.Reading) float64 { return r.TempC }},
	{"DCGM_FI_DEV_SM_CLOCK", true, true, func(r gpusim.Reading) float64 { return r.SMClock }},
	{"DCGM_FI_DEV_POWER_USAGE", true, true, func(r gpusim.Reading) float64 { return r.PowerW }},
	{"DCGM_FI_DEV_PCIE_TX_THROUGHPUT", true, false, func(r gpusim.Reading) float64 { return math.Round(r.PCIeTx / 1024) }},
	{"DCGM_FI_DEV_PCIE_RX_THROUGHPUT", true, false, func(r gpusim.Reading) float64 { return math.Round(r.PCIeRx / 1024) }},
	{"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", false, true, func(r gpusim.Reading) float64 { return r.ClockEvents }},
	{"DCGM_FI_PROF_GR_ENGINE_ACTIVE", false, true, func(r gpusim.Reading) float64 { return r.GrEngine }},
	{"DCGM_FI_PROF_SM_ACTIVE", false, true, func(r gpusim.Reading) float64 { return r.SMActive }},
	{"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", false, true, func(r gpusim.Reading) float64 { return r.Tensor }},
	{"DCGM_FI_PROF_DRAM_ACTIVE", false, true, func(r gpusim.Reading) float64 { return r.DRAMActive }},
	{"DCGM_FI_PROF_PCIE_TX_BYTES", false, true, func(r gpusim.Reading) float64 { return r.PCIeTx }},
	{"DCGM_FI_PROF_PCIE_RX_BYTES", false, true, func(r gpusim.Reading) float64 { return r.PCIeRx }},
}

// gcWriteBenchData writes the fleet's series from start to end every step as OpenMetrics for
// promtool (each family once, each series' samples in time order); the current exporters'
// series begin at currentStart, as only the old exporters' clock history is ever read before
// it. Classes follow an hourly schedule, GPU i three hours ahead of GPU 0, through the seven
// classes.
func gcWriteBenchData(path string, gpus []gpusim.GPU, start, currentStart, end time.Time, step time.Duration) (int, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	sched := gpusim.Schedule{Slot: time.Hour, Classes: gpusim.Classes, GPUOffset: 3 * time.Hour}
	readings := make([][]gpusim.Reading, len(gpus))
	var times []time.Time
	for t := start; !t.After(end); t = t.Add(step) {
		times = append(times, t)
	}
	for gi, g := range gpus {
		readings[gi] = make([]gpusim.Reading, len(times))
		for k, t := range times {
			class := sched.ClassAt(gi, t)
			readings[gi][k] = gpusim.Noisy(gpusim.Nominal(class, g.Model), class, g.Host+"/"+strconv.Itoa(g.Index)+"/"+strconv.FormatInt(t.Unix(), 10))
		}
	}
	samples := 0
	var buf []byte
	for _, m := range gcBenchMetrics {
		fmt.Fprintf(w, "# TYPE %s gauge\n", m.name)
		for gi, g := range gpus {
			if g.Exporter == gpusim.Old && !m.old || g.Exporter == gpusim.Current && !m.cur {
				continue
			}
			prefix := fmt.Sprintf(`%s{gpu="%d",UUID="%s",modelName="%s",%s="%s",job="dcgm"} `, m.name, g.Index, g.UUID, g.Model.Name, g.Exporter.HostLabel(), g.Host)
			for k, t := range times {
				if g.Exporter == gpusim.Current && t.Before(currentStart) {
					continue
				}
				buf = append(buf[:0], prefix...)
				buf = strconv.AppendFloat(buf, m.value(readings[gi][k]), 'f', -1, 64)
				buf = append(buf, ' ')
				buf = strconv.AppendInt(buf, t.Unix(), 10)
				buf = append(buf, '\n')
				w.Write(buf)
				samples++
			}
		}
	}
	w.WriteString("# EOF\n")
	return samples, w.Flush()
}

// gcBenchPrometheus backfills the fleet's data into a fresh Prometheus of its own (not the
// bed's: 64 GPUs over 25 h would swamp it) and returns its URL.
func gcBenchPrometheus(b *testing.B, start, currentStart, end time.Time) string {
	b.Helper()
	for _, tool := range []string{"prometheus", "promtool"} {
		if _, err := exec.LookPath(tool); err != nil {
			b.Fatalf("%s is not on PATH: run testbed/install.sh first", tool)
		}
	}
	dir := b.TempDir()
	om := filepath.Join(dir, "fleet.om")
	began := time.Now()
	n, err := gcWriteBenchData(om, gcBenchGPUs(), start, currentStart, end, gcStep)
	if err != nil {
		b.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	if out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", om, data).CombinedOutput(); err != nil {
		b.Fatalf("promtool backfill: %v\n%s", err, out)
	}
	os.Remove(om)
	b.Logf("backfilled %d samples (%d GPUs, %s at %s) in %s", n, len(gcBenchGPUs()), end.Sub(start), gcStep, time.Since(began).Round(time.Second))

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cfg := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfg, []byte("global:\n  scrape_interval: 30s\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "prometheus.log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command("prometheus", "--config.file="+cfg, "--storage.tsdb.path="+data, "--web.listen-address="+addr,
		"--storage.tsdb.retention.time=30d")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logFile.Close()
	})
	u := "http://" + addr
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if res, err := http.Get(u + "/-/ready"); err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return u
			}
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "prometheus.log"))
			b.Fatalf("the benchmark's Prometheus did not become ready:\n%s", log)
		}
	}
}

// timedFigures measures the time spent fetching figures (Prometheus' answer, its transfer and
// decoding), so the benchmark can report the plugin's own time apart from it, and records the
// step grid of each answer, so the reference reads the same ranges at the same steps.
type timedFigures struct {
	src   correlate.GPUFigures
	mu    sync.Mutex
	d     time.Duration
	grids []gcGrid
}

// gcGrid is the step grid of one GPUFigures answer: the range and step it read.
type gcGrid struct {
	start, end time.Time
	step       time.Duration
}

func (t *timedFigures) GPUFigures(ctx context.Context, f models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, notices.List, error) {
	began := time.Now()
	s, n, err := t.src.GPUFigures(ctx, f, start, end, step)
	t.mu.Lock()
	t.d += time.Since(began)
	if len(s) > 0 && len(s[0].Samples) > 1 {
		smp := s[0].Samples
		t.grids = append(t.grids, gcGrid{start: smp[0].Time, end: smp[len(smp)-1].Time, step: smp[1].Time.Sub(smp[0].Time)})
	}
	t.mu.Unlock()
	return s, n, err
}

// gcRawFetch is the time Prometheus takes to return the figures' raw series over the grids
// GPUFigures read (the range with its share window at 15 s, then the old GPUs' clock history at
// its coarser step), one plain selector per metric, four at a time as GPUFigures asks them: the
// floor under any client's fetch.
func gcRawFetch(b *testing.B, promURL string, grids []gcGrid) time.Duration {
	began := time.Now()
	for _, g := range grids {
		sem := make(chan struct{}, 4)
		var wg sync.WaitGroup
		for _, m := range gcBenchMetrics {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				q := url.Values{"query": {m.name}, "start": {strconv.FormatInt(g.start.Unix(), 10)}, "end": {strconv.FormatInt(g.end.Unix(), 10)},
					"step": {strconv.FormatFloat(g.step.Seconds(), 'f', -1, 64)}}
				res, err := http.PostForm(promURL+"/api/v1/query_range", q)
				if err != nil {
					b.Error(err)
					return
				}
				defer res.Body.Close()
				var body struct{ Status string }
				if err := json.NewDecoder(res.Body).Decode(&body); err != nil || body.Status != "success" {
					b.Errorf("raw query %s: %v %s", m.name, err, body.Status)
				}
			})
		}
		wg.Wait()
	}
	return time.Since(began)
}

// BenchmarkRealGPUClass64GPUs24h runs the gpuClass query for 64 GPUs (48 with the bitmask, 16
// old T4s that need the clock history) over 24 h at 15 s against a real Prometheus, and reports
// the plugin's own time (classification, frames, Arrow encoding as the SDK sends them) and the
// time the figures took to arrive through GPUFigures, each beside the time Prometheus takes to
// answer plain selectors for the same series over the same grids, measured right after each
// iteration's fetch.
func BenchmarkRealGPUClass64GPUs24h(b *testing.B) {
	end := time.Now().Truncate(time.Hour)
	from := end.Add(-24 * time.Hour)
	// The share window before the range, and the old T4s' clock history before that.
	url := gcBenchPrometheus(b, from.Add(-24*time.Hour), from.Add(-time.Hour), end)
	ds := newTestDatasource(b, map[string]any{"prometheusUrl": url, "gpuMaxSeries": 64}, nil)
	prom, err := ds.src.GPUs.Get()
	if err != nil {
		b.Fatal(err)
	}
	model := `{"queryType":"gpuClass","minStep":"15s"}`
	gq, err := models.ParseGPUClassQuery(json.RawMessage(model))
	if err != nil {
		b.Fatal(err)
	}
	q := backend.DataQuery{RefID: "A", QueryType: models.QueryTypeGPUClass, JSON: json.RawMessage(model), Interval: gcStep,
		TimeRange: backend.TimeRange{From: from, To: end}}
	var fetch, total, raw time.Duration
	var steps int
	b.ResetTimer()
	for b.Loop() {
		src := &timedFigures{src: prom}
		began := time.Now()
		r := answerGPUClass(context.Background(), src, q, gq, ds.settings.Classify)
		if r.Error != nil {
			b.Fatal(r.Error)
		}
		if _, err := data.Frames(r.Frames).MarshalArrow(); err != nil {
			b.Fatal(err)
		}
		total += time.Since(began)
		fetch += src.d
		tl := r.Frames[0]
		if len(tl.Fields) != 65 || tl.Rows() != 5761 {
			b.Fatalf("timeline has %d GPUs × %d steps, want 64 × 5761; notices:\n%s", len(tl.Fields)-1, tl.Rows(), noticeTexts(tl))
		}
		steps = (len(tl.Fields) - 1) * tl.Rows()
		if len(src.grids) != 2 || src.grids[0].step != gcStep {
			b.Fatalf("GPUFigures answered on %+v, want the range at %s, then the clock history", src.grids, gcStep)
		}
		b.StopTimer()
		raw += gcRawFetch(b, url, src.grids)
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	own := total - fetch
	b.ReportMetric(raw.Seconds()*1000/n, "raw-prom-ms")
	b.ReportMetric(own.Seconds()/raw.Seconds(), "own/raw-prom")
	b.ReportMetric(fetch.Seconds()*1000/n, "fetch-ms/op")
	b.ReportMetric(fetch.Seconds()/raw.Seconds(), "fetch/raw-prom")
	b.ReportMetric(own.Seconds()*1000/n, "own-ms/op")
	b.ReportMetric(own.Seconds()/fetch.Seconds(), "own/fetch")
	b.ReportMetric(float64(steps)*n/own.Seconds(), "gpu-steps/s-own")
}
