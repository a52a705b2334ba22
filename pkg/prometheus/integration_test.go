//go:build integration

package prometheus

import (
	"bytes"
	"context"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"
	"github.com/prometheus/common/model"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/dcgm"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// These tests run against the test bed's real Prometheus (run with -tags integration;
// scripts/test.sh does). pkg/plugin's integration tests run the queries built on GPUFigures.

var bed testbed.Endpoints

func TestMain(m *testing.M) { os.Exit(testbed.MainForTests(m, &bed)) }

// queryRecorder is a transport that keeps the expression of every range query it carries.
type queryRecorder struct {
	mu      sync.Mutex
	queries []string
}

func (r *queryRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/query_range") {
		q := req.URL.Query().Get("query")
		if req.Body != nil {
			body, err := io.ReadAll(req.Body)
			if err != nil {
				return nil, err
			}
			req.Body = io.NopCloser(bytes.NewReader(body))
			if form, err := url.ParseQuery(string(body)); err == nil && form.Get("query") != "" {
				q = form.Get("query")
			}
		}
		r.mu.Lock()
		r.queries = append(r.queries, q)
		r.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(req)
}

// bedFigures asks the bed's Prometheus for the figures with a series limit of limit, and
// returns them with the range queries sent.
func bedFigures(t *testing.T, limit int, start, end time.Time, step time.Duration) ([]classify.GPUSeries, []string, []string) {
	t.Helper()
	rec := &queryRecorder{}
	ac, err := api.NewClient(api.Config{Address: bed.PrometheusURL, RoundTripper: rec})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(bed.PrometheusURL, newQueryAPI(ac)).WithDCGM(models.DCGMSettings{MaxSeries: limit})
	series, noticeList, err := c.GPUFigures(context.Background(), models.GPUFilter{}, start, end, step)
	notices := noticeList.Texts()
	if err != nil {
		t.Fatal(err)
	}
	return series, notices, rec.queries
}

// Within the limit the figures are the sources' series as stored, each GPU's preferred source
// and its aggregation taken in Go; over it, PromQL's "or" and aggregation do that. Both must
// give the same value at every step of every figure: on the fixtures (a current and an old
// exporter, Hostname and hostname, pods, PCIe in bytes and in KB/s, a GPU silent for a third of
// the window) and on the live simulator at 1 s.
func TestRealGPUFiguresReadAsStoredAgreeWithPromQL(t *testing.T) {
	if bed.FixtureStart.IsZero() {
		t.Fatal("the test bed has no GPU fixtures (HSI_TESTBED_FIXTURE_START is empty)")
	}
	live := time.Now().Truncate(time.Second).Add(-10 * time.Second)
	for _, w := range []struct {
		name       string
		start, end time.Time
		step       time.Duration
	}{
		{"fixtures", bed.FixtureStart, bed.FixtureEnd, 15 * time.Second},
		{"live", live.Add(-5 * time.Minute), live, time.Second},
	} {
		t.Run(w.name, func(t *testing.T) {
			all, _, _ := bedFigures(t, 1000, w.start, w.end, w.step)
			n := len(all)
			if n < 2 {
				t.Fatalf("%d GPUs in the bed's Prometheus", n)
			}
			stored, notices, queries := bedFigures(t, n, w.start, w.end, w.step)
			if len(stored) != n || slices.ContainsFunc(notices, func(s string) bool { return strings.HasPrefix(s, "more than") }) {
				t.Fatalf("%d GPUs within a limit of %d: %d, notices %v", n, n, len(stored), notices)
			}
			for _, q := range queries {
				if strings.Contains(q, "topk") || strings.Contains(q, " by (") {
					t.Errorf("within the limit, Prometheus was asked to rank or aggregate: %s", q)
				}
			}
			ranked, _, queries := bedFigures(t, n-1, w.start, w.end, w.step)
			if len(ranked) != n-1 || !strings.Contains(queries[0], "topk(") {
				t.Fatalf("over the limit: %d GPUs, first query %s", len(ranked), queries[0])
			}
			compared := 0
			for i, r := range ranked {
				s := stored[i]
				if s.GPU != r.GPU || len(s.Samples) != len(r.Samples) {
					t.Fatalf("GPU %d: %v (%d steps) read as stored, %v (%d steps) ranked", i, s.GPU, len(s.Samples), r.GPU, len(r.Samples))
				}
				for k := range s.Samples {
					a, b := figureValues(s.Samples[k].Figures), figureValues(r.Samples[k].Figures)
					for j := range a {
						if a[j] != b[j] && !(math.IsNaN(a[j]) && math.IsNaN(b[j])) {
							t.Errorf("%s at %s, figure %d: %v read as stored, %v from PromQL", s.GPU, s.Samples[k].Time.Format(time.TimeOnly), j, a[j], b[j])
						}
						if !math.IsNaN(a[j]) {
							compared++
						}
					}
				}
			}
			if compared < 1000 {
				t.Errorf("only %d values compared", compared)
			}
			t.Logf("%d GPUs, %d values agree", n, compared)
		})
	}
}

func figureValues(f classify.Figures) []float64 {
	return []float64{f.GPUUtil, f.MemCopyUtil, f.SMActive, f.GrEngine, f.DRAMActive, f.Tensor, f.PCIeTx, f.PCIeRx, f.TempC, f.SMClockMHz, f.PowerW, f.ClockEvents}
}

// A GPU time-sliced between two pods, as dcgm-exporter's --kubernetes-virtual-gpus exports it:
// every series twice, once per pod, the same value. Read per GPU, per host or for the fleet, the
// GPU counts once: its power is its own reading, not twice it, with both pods known.
func TestRealSharedGPUCountsOnce(t *testing.T) {
	if bed.FixtureStart.IsZero() {
		t.Fatal("the test bed has no GPU fixtures (HSI_TESTBED_FIXTURE_START is empty)")
	}
	ac, err := api.NewClient(api.Config{Address: bed.PrometheusURL})
	if err != nil {
		t.Fatal(err)
	}
	prom := newQueryAPI(ac)
	c := newClient(bed.PrometheusURL, prom)
	at := bed.FixtureStart.Add(bed.FixtureEnd.Sub(bed.FixtureStart) / 2).Truncate(time.Minute)
	host := models.GPUFilter{Hosts: []string{"fixture-node-c"}}

	// What Prometheus holds at that time: two copies of one reading.
	v, _, _, err := prom.Query(context.Background(), `DCGM_FI_DEV_POWER_USAGE{job="dcgm",Hostname="fixture-node-c"}`, at)
	if err != nil {
		t.Fatal(err)
	}
	copies, ok := v.(model.Vector)
	if !ok || len(copies) != 2 || copies[0].Value != copies[1].Value || copies[0].Metric["pod"] == copies[1].Metric["pod"] {
		t.Fatalf("the shared fixture GPU's power series: %v", v)
	}
	power := float64(copies[0].Value)

	series, _, err := c.GPUFigures(context.Background(), host, at, at, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(series) != 1 || len(series[0].Pods) != 2 || len(series[0].Samples) == 0 {
		t.Fatalf("GPUFigures: %+v", series)
	}
	if got := series[0].Samples[len(series[0].Samples)-1].Figures.PowerW; got != power {
		t.Errorf("GPUFigures power %v W, the GPU reads %v W", got, power)
	}
	for _, agg := range []string{models.AggregationGPU, models.AggregationHost, models.AggregationFleet} {
		res, err := c.GPUMetric(context.Background(), "power", host, agg, at.Add(-time.Minute), at, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if agg == models.AggregationGPU {
			want = 2 // per GPU and pod: each pod's view of the GPU is its own row
		}
		if len(res.Series) != want {
			t.Fatalf("%s: %d series, want %d: %+v", agg, len(res.Series), want, res.Series)
		}
		for _, s := range res.Series {
			if got := s.Values[len(s.Values)-1]; got != power {
				t.Errorf("%s %v: power %v W, the GPU reads %v W (query %s)", agg, s.Labels, got, power, res.Query)
			}
		}
	}
}

// The bed's Prometheus scrapes the live GPU simulator, which writes dcgm-exporter's HELP and
// TYPE lines (internal/gpusim): its metadata API must give each HELP text back, and the unit
// rule must read it as dcgm-exporter's CSV means it. The percentage stays a percentage, a
// profiling ratio reads as a ratio, and a HELP text that names no unit leaves the name unread.
func TestRealMetadataGivesTheUnitOfTheExportersHelp(t *testing.T) {
	ac, err := api.NewClient(api.Config{Address: bed.PrometheusURL})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(bed.PrometheusURL, newQueryAPI(ac))
	for metric, want := range map[string]unitDecision{
		"DCGM_FI_DEV_GPU_UTIL":          {scale: 1},   // "GPU utilization (in %)."
		"DCGM_FI_DEV_MEM_COPY_UTIL":     {scale: 1},   // "Memory utilization (in %)."
		"DCGM_FI_PROF_GR_ENGINE_ACTIVE": {scale: 100}, // "Ratio of time the graphics engine is active."
	} {
		md, err := c.metadata(context.Background(), metric)
		if err != nil {
			t.Fatal(err)
		}
		if got := decideUnit(dcgm.PercentOrRatio, md); got != want {
			t.Errorf("%s: metadata %+v decided %+v, want %+v", metric, md, got, want)
		}
	}
	md, err := c.metadata(context.Background(), "DCGM_FI_DEV_XID_ERRORS")
	if err != nil {
		t.Fatal(err)
	}
	if got := decideUnit(dcgm.PercentOrRatio, md); !strings.Contains(got.skip, "says neither") {
		t.Errorf("DCGM_FI_DEV_XID_ERRORS (%+v): %+v, want not read", md, got)
	}
}

// Several GPU metrics asked together (a gpuMetrics panel of several metrics, the triage's GPU
// evidence) are one range query, a labelled union, when their points fit one query's budget, and
// each metric's answer is what it gets asked alone: the same series, labels, values, notices and
// its own query; per GPU, per host and for the fleet, on the fixtures' exporters (Hostname and
// hostname, pods, PCIe in bytes and in KB/s) and with a metric no exporter sends among them.
// Beyond the budget (the default 500 GPUs × 6 metrics × 481 steps) each is asked alone.
func TestRealGPUMetricsInOneQueryAnswerAsEachAlone(t *testing.T) {
	if bed.FixtureStart.IsZero() {
		t.Fatal("the test bed has no GPU fixtures (HSI_TESTBED_FIXTURE_START is empty)")
	}
	names := []string{"gpu_utilization", "pcie_tx", "power", "fb_used_percent", "ecc_dbe", "sm_clock"}
	for _, w := range []struct {
		name    string
		end     time.Time
		queries int
	}{{"an hour", bed.FixtureStart.Add(time.Hour), 1}, {"two hours", bed.FixtureEnd, len(names)}} {
		for _, aggregation := range []string{models.AggregationGPU, models.AggregationHost, models.AggregationFleet} {
			t.Run(w.name+" "+aggregation, func(t *testing.T) {
				rec := &queryRecorder{}
				ac, err := api.NewClient(api.Config{Address: bed.PrometheusURL, RoundTripper: rec})
				if err != nil {
					t.Fatal(err)
				}
				c := newClient(bed.PrometheusURL, newQueryAPI(ac))
				ctx := context.Background()
				together, errs := c.GPUMetrics(ctx, names, models.GPUFilter{}, aggregation, bed.FixtureStart, w.end, 15*time.Second)
				if len(rec.queries) != w.queries || (w.queries == 1) != strings.Contains(rec.queries[0], partLabel) {
					t.Fatalf("%d range queries for %d metrics, want %d: %v", len(rec.queries), len(names), w.queries, rec.queries)
				}
				compared := 0
				for i, name := range names {
					alone, err := c.GPUMetric(ctx, name, models.GPUFilter{}, aggregation, bed.FixtureStart, w.end, 15*time.Second)
					if err != nil || errs[i] != nil {
						t.Fatalf("%s: alone %v, together %v", name, err, errs[i])
					}
					got := together[i]
					if got.Query != alone.Query || got.Metric != alone.Metric || got.Step != alone.Step || !slices.Equal(got.Sources, alone.Sources) {
						t.Errorf("%s: together %q (%v), alone %q (%v)", name, got.Query, got.Sources, alone.Query, alone.Sources)
					}
					if !slices.Equal(got.Notices.Texts(), alone.Notices.Texts()) {
						t.Errorf("%s: notices together %v, alone %v", name, got.Notices.Texts(), alone.Notices.Texts())
					}
					if len(got.Series) != len(alone.Series) {
						t.Fatalf("%s: %d series together, %d alone", name, len(got.Series), len(alone.Series))
					}
					for k, s := range alone.Series {
						g := got.Series[k]
						if !maps.Equal(g.Labels, s.Labels) || !slices.Equal(g.Times, s.Times) {
							t.Fatalf("%s series %d: together %v (%d points), alone %v (%d points)", name, k, g.Labels, len(g.Times), s.Labels, len(s.Times))
						}
						for j := range s.Values {
							// Prometheus sums an aggregation's series in no fixed order: two runs of
							// the same query may differ in the last bits.
							close := math.Abs(g.Values[j]-s.Values[j]) <= 1e-9*math.Abs(s.Values[j])
							if !close && !(math.IsNaN(g.Values[j]) && math.IsNaN(s.Values[j])) {
								t.Errorf("%s series %v at %s: together %v, alone %v", name, s.Labels, s.Times[j].Format(time.TimeOnly), g.Values[j], s.Values[j])
							}
							compared++
						}
					}
				}
				if compared < 500 {
					t.Errorf("only %d values compared", compared)
				}
				t.Logf("%d metrics, %d values agree", len(names), compared)
			})
		}
	}
}
