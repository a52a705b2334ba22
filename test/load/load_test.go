//go:build integration

package load

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/upstream"
)

const (
	// The short form, run by scripts/test.sh: a few hundred requests, a dashboard's worth at once.
	defaultRequests = 300
	defaultInflight = 24
	// callTimeout bounds one request: the bed answers in well under a second, so a request
	// still unanswered after this is a hang, reported with its panel rather than as a test timeout.
	callTimeout = 30 * time.Second
	// maxUpstreamShare: the bed is healthy, so upstream failures beyond this share of the requests
	// are the load breaking something (connections, timeouts), even though an upstream reports it.
	maxUpstreamShare = 0.02
	// settleTime is how long the process has to come back to its baseline after the load.
	settleTime = 30 * time.Second
	// keepAliveSlack: after the load the upstream clients keep up to MaxConcurrentRequests (16)
	// idle keep-alive connections to each of the three upstreams, each with a read and a write
	// goroutine, until IdleConnTimeout (90 s) closes them; the baseline has fewer. That is
	// expected pooling, not a leak.
	keepAliveSlack = 3 * upstream.MaxConcurrentRequests * 2
	// otherSlack: goroutines other than those connections must come back to the baseline; 2
	// allows for a gRPC stream or timer goroutine that is just ending when the dump is taken.
	otherSlack = 2
)

// heapTolerance is how far live heap (in use right after a GC) may stay above the baseline: a
// quarter for what the load legitimately keeps (pooled connections' buffers, grown gRPC and
// sync.Pool buffers, runtime structures sized for 24 goroutines at once) with a floor of 8 MiB;
// one retained answer of a flame-graph panel alone weighs about a megabyte, so a per-request
// leak over a few hundred requests is far beyond it.
// idleSample is how long the machine's busy CPU is sampled with no request, for the figures.
const idleSample = 5 * time.Second

func heapTolerance(baseline float64) float64 { return max(baseline/4, 8<<20) }

type outcome int

const (
	answered outcome = iota
	// warned: answered with exactly the warnings the same request gets alone (the warm-up): the
	// bed's data call for them (a heap profile cannot be matched to a request, the simulated
	// exporter has no ECC fields, a step raised to DCGM's interval). A warning the request does
	// not get alone is judged like an error.
	warned
	// noNVML: gpuLocal on a host without the NVIDIA driver (this machine): NVML says it is
	// unavailable, as designed. Counted on its own, neither an answer nor a failure.
	noNVML
	// byUpstream: an upstream failed, and the answer names it ("Pyroscope (http://...): ...").
	byUpstream
	// failed: anything else (gRPC error, unnamed error, warning, no frames): a plugin bug.
	failed
)

var outcomeNames = []string{"answered", "answered with their designed warnings", "NVML unavailable (no driver, expected)", "upstream failed", "failed"}

// upstreamNamed is how the plugin names a failing upstream in errors and notices (pkg/upstream).
var upstreamNamed = regexp.MustCompile(`\b(Pyroscope|Prometheus|Jaeger) \(https?://[^)\s]+\)`)

type result struct {
	call    *call
	latency time.Duration
	outcome outcome
	detail  string
	// newWarnings are the keys of the warnings that alone made the outcome failed: ones the
	// request did not get alone in the warm-up (a harder failure leaves this empty).
	newWarnings []string
}

func TestLoadDashboardsThroughOneProcess(t *testing.T) {
	requests := envInt(t, "HSI_LOAD_QUERIES", defaultRequests)
	inflight := envInt(t, "HSI_LOAD_INFLIGHT", defaultInflight)
	ctx := t.Context()
	if deadline, ok := t.Deadline(); ok { // end before go test's -timeout, with a message
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-10*time.Second))
		defer cancel()
	}

	traceDir := t.TempDir()
	log := &lockedWriter{}
	p, err := startPlugin(pluginhost.DataSource{UID: "hsi-load", Name: "HSI Profiling", JSONData: map[string]any{
		"pyroscopeUrl": bed.PyroscopeURL, "prometheusUrl": bed.PrometheusURL, "jaegerUrl": bed.JaegerURL,
		"traceDirectories": []string{traceDir}, "nvmlEnabled": true,
	}}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	defer func() {
		if t.Failed() {
			t.Logf("plugin log, last 8 KiB:\n%s", tail(log.String(), 8<<10))
		}
	}()

	traceID, spanID := slowRequest(t, p.Host)
	if _, err := testbed.WriteKernelTrace(traceDir, traceID); err != nil {
		t.Fatal(err)
	}
	calls := workload(t, traceID, spanID)
	checkCoverage(t, calls)

	// Warm-up: each request once, alone. Pools, caches and NVML's first try start here, so the
	// baseline is the process ready to serve, and a request that fails even alone says so.
	for _, c := range calls {
		r := p.do(ctx, c, true)
		// The bed's Pyroscope fails now and then on its own ("canceled: stream error") on a busy
		// machine: a request failed by an upstream is asked again, twice at most, and logged.
		for try := 1; r.outcome == byUpstream && try <= 2; try++ {
			t.Logf("warm-up: %s: an upstream failed on its own, asked again: %s", c.name, r.detail)
			r = p.do(ctx, c, true)
		}
		switch r.outcome {
		case failed, byUpstream:
			t.Errorf("warm-up: %s: %s", c.name, r.detail)
		case warned:
			t.Logf("designed warnings of %s: %s", c.name, r.detail)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	// The reference of the benchmark table (scripts/bench.sh): the same requests once more, one
	// at a time, warm, so that latency under load can be set beside latency alone.
	var alone []result
	// The machine's busy cores with no request (the bed's servers and the demo's traffic work on
	// their own), then while the requests run one at a time: running them at once can add at most
	// what is left.
	var idleBusy, aloneBusy busyCPU
	if os.Getenv("HSI_LOAD_FIGURES") != "" {
		idleBusy = startBusy()
		time.Sleep(idleSample)
		idleBusy.stop()
		aloneBusy = startBusy()
		for _, c := range calls {
			r := p.do(ctx, c, false)
			if r.outcome == failed && len(r.newWarnings) > 0 {
				// Alone, a warning it did not get in the warm-up is the data's (excuseDataWarnings):
				// it joins the designed ones.
				for _, k := range r.newWarnings {
					c.alone[k] = true
				}
				r.outcome = warned
				t.Logf("one at a time, a warning it did not get in the warm-up: %s: %s", c.name, r.detail)
			}
			if r.outcome == failed || r.outcome == byUpstream {
				t.Errorf("one at a time: %s: %s", c.name, r.detail)
			}
			alone = append(alone, r)
		}
		aloneBusy.stop()
	}
	base, err := p.snapshot(ctx, true)
	if err != nil {
		t.Fatal(err)
	}

	// The load: the workload repeated to `requests`, shuffled (reproducibly), `inflight` workers
	// that all send their first request at once, as a dashboard opening does.
	rng := rand.New(rand.NewPCG(8, 8))
	seq := make([]*call, requests)
	for i := range seq {
		seq[i] = calls[i%len(calls)]
	}
	rng.Shuffle(len(seq), func(i, j int) { seq[i], seq[j] = seq[j], seq[i] })
	results := make([]result, requests)
	jobs := make(chan int)
	gate := make(chan struct{})
	var now, peak atomic.Int64
	pk, stopSampling := p.samplePeaks(ctx, time.Second)
	// HSI_LOAD_CPU_PROFILE: the plugin's own CPU profile (the SDK's pprof) over the load's first
	// HSI_LOAD_CPU_SECONDS (default 8), to see where its CPU goes under load.
	cpuProfile := make(chan error, 1)
	if path := os.Getenv("HSI_LOAD_CPU_PROFILE"); path != "" {
		secs := envInt(t, "HSI_LOAD_CPU_SECONDS", 8)
		go func() {
			// The client's own timeout is for quick reads; this one takes secs.
			pctx, cancel := context.WithTimeout(ctx, time.Duration(secs+10)*time.Second)
			defer cancel()
			prof, err := p.getLong(pctx, fmt.Sprintf("profile?seconds=%d", secs))
			if err == nil {
				err = os.WriteFile(path, []byte(prof), 0o644)
			}
			cpuProfile <- err
		}()
	} else {
		cpuProfile <- nil
	}
	callsBefore, err := readUpstreamCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	loadBusy := startBusy()
	start := time.Now()
	var wg sync.WaitGroup
	for range inflight {
		wg.Go(func() {
			<-gate
			for i := range jobs {
				n := now.Add(1)
				for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
				}
				results[i] = p.do(ctx, seq[i], false)
				now.Add(-1)
			}
		})
	}
	close(gate)
	for i := range requests {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	wall := time.Since(start)
	loadBusy.stop()
	callsAfter, err := readUpstreamCalls(ctx)
	if err != nil {
		t.Fatal(err)
	}
	stopSampling()
	if err := <-cpuProfile; err != nil {
		t.Errorf("HSI_LOAD_CPU_PROFILE: %v", err)
	}
	end, err := p.snapshot(ctx, false)
	if err != nil {
		t.Fatal(err)
	}
	// HSI_LOAD_ALLOC_PROFILE: the plugin's allocations since it started (the SDK's pprof), most of
	// them the load's, to see which requests allocate.
	if path := os.Getenv("HSI_LOAD_ALLOC_PROFILE"); path != "" {
		prof, err := p.get(ctx, "allocs")
		if err == nil {
			err = os.WriteFile(path, []byte(prof), 0o644)
		}
		if err != nil {
			t.Errorf("HSI_LOAD_ALLOC_PROFILE: %v", err)
		}
	}

	if p.Exited() {
		t.Fatal("the plugin process exited under load")
	}
	// The race detector (go test -race builds the plugin with it) reports on the plugin's stderr,
	// which go-plugin forwards to its log; a recovered panic is logged there too.
	for _, bad := range []string{"WARNING: DATA RACE", "recovered from a panic"} {
		if all := log.String(); strings.Contains(all, bad) {
			i := strings.Index(all, bad)
			t.Errorf("the plugin logged %q under load:\n%s", bad, all[i:min(len(all), i+8<<10)])
		}
	}
	excuseDataWarnings(ctx, t, p, results)
	counts := make([]int, len(outcomeNames))
	var failures, upstreams []string
	for _, r := range results {
		counts[r.outcome]++
		switch r.outcome {
		case failed:
			failures = append(failures, r.call.name+": "+r.detail)
		case byUpstream:
			upstreams = append(upstreams, r.call.name+": "+r.detail)
		}
	}
	for _, f := range distinct(failures, 20) {
		t.Errorf("under load: %s", f)
	}
	for _, u := range distinct(upstreams, 20) {
		t.Logf("upstream failure under load: %s", u)
	}
	if share := float64(counts[byUpstream]) / float64(requests); share > maxUpstreamShare {
		t.Errorf("%d of %d requests (%.1f%%) failed in an upstream; the bed is healthy, more than %.0f%% means the load broke something",
			counts[byUpstream], requests, 100*share, 100*maxUpstreamShare)
	}
	if want := int64(min(inflight, requests)); peak.Load() < want {
		t.Errorf("only %d requests were in flight at once, want %d", peak.Load(), want)
	}
	if pk.err != nil {
		t.Errorf("sampling the plugin's metrics under load: %v", pk.err)
	}

	// Back to baseline: poll (each snapshot collects garbage first) until goroutines and live heap
	// are back, or settleTime has passed.
	var after snapshot
	back := false
	for deadline := time.Now().Add(settleTime); ; {
		if after, err = p.snapshot(ctx, true); err != nil {
			t.Fatal(err)
		}
		back = after.others() <= base.others()+otherSlack && after.goroutines <= base.goroutines+keepAliveSlack &&
			after.heapInuse <= base.heapInuse+heapTolerance(base.heapInuse)
		if back || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	settled := time.Since(start) - wall

	rep := report{requests: requests, inflight: inflight, peakInflight: int(peak.Load()), wall: wall,
		counts: counts, results: results, base: base, peak: pk, after: after, cpu: end.cpu - base.cpu, busy: loadBusy, idleBusy: idleBusy, aloneBusy: aloneBusy,
		calls: callsAfter.since(callsBefore)}
	t.Logf("\n%s", rep.text())
	if path := os.Getenv("HSI_LOAD_REPORT"); path != "" {
		if err := os.WriteFile(path, []byte(rep.markdown()), 0o644); err != nil {
			t.Errorf("HSI_LOAD_REPORT: %v", err)
		}
	}
	if path := os.Getenv("HSI_LOAD_FIGURES"); path != "" {
		if err := os.WriteFile(path, []byte(rep.figures(alone)), 0o644); err != nil {
			t.Errorf("HSI_LOAD_FIGURES: %v", err)
		}
	}
	if !back {
		t.Errorf("%.0f s after the load the process has not come back to its baseline: goroutines %.0f (baseline %.0f, allowed +%d), "+
			"%d of them not pooled upstream connections (baseline %d, allowed +%d); heap in use after GC %s (baseline %s, allowed +%s)",
			settled.Seconds(), after.goroutines, base.goroutines, keepAliveSlack, after.others(), base.others(), otherSlack,
			mib(after.heapInuse), mib(base.heapInuse), mib(heapTolerance(base.heapInuse)))
		t.Logf("goroutines after the load, by stack:\n%s", tail(after.dump, 16<<10))
	}
}

// excuseDataWarnings asks alone again, after the load, each request that failed under load only
// by warnings it did not get alone in the warm-up. The bed's data grows while the test runs
// (its traffic never stops, and each range ends now): a warning about the data, such as a trace
// search reaching its limit, can begin in the middle of the run. One the request now gets alone
// too is the data's, not the load's: those results count as answered with designed warnings.
func excuseDataWarnings(ctx context.Context, t *testing.T, p *plugin, results []result) {
	t.Helper()
	asked := map[*call]bool{}
	for i := range results {
		r := &results[i]
		if r.outcome != failed || len(r.newWarnings) == 0 {
			continue
		}
		if !asked[r.call] {
			asked[r.call] = true
			again := p.do(ctx, r.call, true) // learn: its warnings now join the designed ones
			t.Logf("after the load, asked alone again (a warning it did not get in the warm-up): %s: %s", r.call.name, again.detail)
		}
		if !slices.ContainsFunc(r.newWarnings, func(k string) bool { return !r.call.alone[k] }) {
			r.outcome = warned
		}
	}
}

// do sends one request, bounded by callTimeout, and judges its answer. In the warm-up (learn),
// the warnings that do not name an upstream are the request's designed ones.
func (p *plugin) do(ctx context.Context, c *call, learn bool) result {
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	start := time.Now()
	r := result{call: c}
	if c.resource != "" {
		res, err := p.CallResource(ctx, c.resource)
		r.latency = time.Since(start)
		r.outcome, r.detail = judgeResource(res, err)
		return r
	}
	res, err := p.QueryData(ctx, c.pluginQueries()...)
	r.latency = time.Since(start)
	r.outcome, r.detail, r.newWarnings = judgeQueries(c, res, err, learn)
	return r
}

func judgeResource(res *pluginhost.ResourceResponse, err error) (outcome, string) {
	switch {
	case err != nil:
		return failed, "gRPC: " + err.Error()
	case res.Status == http.StatusOK:
		return answered, ""
	case upstreamNamed.Match(res.Body):
		return byUpstream, fmt.Sprintf("HTTP %d %s", res.Status, res.Body)
	}
	return failed, fmt.Sprintf("HTTP %d %s", res.Status, tail(string(res.Body), 300))
}

// judgeQueries judges each query's answer; the request's outcome is the worst of them. An
// answer must have frames; a warning or error notice on them that the request does not get
// alone is judged like an error.
func judgeQueries(c *call, res *pluginv2.QueryDataResponse, err error, learn bool) (outcome, string, []string) {
	if err != nil {
		return failed, "gRPC: " + err.Error(), nil
	}
	worst := answered
	var details, newWarnings []string
	hard := false // failed for more than a warning not seen alone
	note := func(o outcome, refID, text string) {
		worst = max(worst, o)
		details = append(details, refID+": "+text)
	}
	for _, q := range c.queries {
		r, ok := res.Responses[q.refID]
		if !ok {
			note(failed, q.refID, "no response")
			continue
		}
		if r.Error != "" {
			o := judgeText(q, r.Error)
			hard = hard || o == failed
			note(o, q.refID, r.Error)
			continue
		}
		frames, err := data.UnmarshalArrowFrames(r.Frames)
		if err != nil || len(frames) == 0 {
			hard = true
			note(failed, q.refID, fmt.Sprintf("no frames (%v)", err))
			continue
		}
		var notices []data.Notice
		upstreamFailed := false // one of the query's notices names a failing upstream
		for _, f := range frames {
			if f.Meta == nil {
				continue
			}
			for _, n := range f.Meta.Notices {
				if n.Severity == data.NoticeSeverityWarning || n.Severity == data.NoticeSeverityError {
					notices = append(notices, n)
					upstreamFailed = upstreamFailed || upstreamNamed.MatchString(n.Text)
				}
			}
		}
		for _, n := range notices {
			key := q.refID + ": " + n.Severity.String() + ": " + digits.ReplaceAllString(n.Text, "#")
			o := judgeText(q, n.Text)
			switch {
			case learn && o == failed:
				c.alone[key] = true
				o = warned
			case c.alone[key]:
				o = warned
			case o == failed && upstreamFailed:
				// A designed warning reworded by the upstream's failure, e.g. the heap-profile
				// notice naming two services of three because the third's query failed.
				o = byUpstream
			case o == failed:
				newWarnings = append(newWarnings, key)
			}
			note(o, q.refID, n.Severity.String()+" notice: "+n.Text)
		}
	}
	if hard || worst != failed {
		newWarnings = nil
	}
	return worst, strings.Join(details, "; "), newWarnings
}

// digits: notices compare without their figures, which may differ between runs.
var digits = regexp.MustCompile(`[0-9]+`)

func judgeText(q target, text string) outcome {
	switch {
	case upstreamNamed.MatchString(text):
		return byUpstream
	case q.json["queryType"] == "gpuLocal" &&
		(strings.Contains(text, "NVML is unavailable") || strings.Contains(text, "NVML is not available on this build")):
		return noNVML
	}
	return failed
}

// checkCoverage fails when the workload misses a query type or variant: the dashboards changed.
func checkCoverage(t *testing.T, calls []*call) {
	t.Helper()
	have := map[string]bool{}
	for _, c := range calls {
		for _, q := range c.queries {
			have[kindOf(q.json)] = true
		}
		if c.resource != "" {
			have[c.kind] = true
		}
	}
	for _, k := range []string{"profile (labelSelector)", "profile (spanSelector)", "profile (traceId)", "profile (traceId, perService)",
		"metrics", "both", "diff", "trace", "slowRequests", "gpuMetrics", "gpuClass", "gpuLocal", "kernels", "triage",
		"resource variable", "resource services", "resource label-values", "resource traces"} {
		if !have[k] {
			t.Errorf("the workload has no %s request", k)
		}
	}
}

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s must be a positive whole number, got %q", name, v)
	}
	return n
}

// distinct lists the first n distinct messages, each with how often it occurred.
func distinct(msgs []string, n int) []string {
	seen := map[string]int{}
	var order []string
	for _, m := range msgs {
		if seen[m] == 0 {
			order = append(order, m)
		}
		seen[m]++
	}
	var out []string
	for _, m := range order[:min(n, len(order))] {
		out = append(out, fmt.Sprintf("%s (×%d)", m, seen[m]))
	}
	if len(order) > n {
		out = append(out, fmt.Sprintf("... and %d more distinct messages", len(order)-n))
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

// report is the run's figures, as a table for the test log and as Markdown.
type report struct {
	requests, inflight, peakInflight int
	wall                             time.Duration
	counts                           []int
	results                          []result
	base, after                      snapshot
	peak                             *peaks
	cpu                              float64 // the plugin's CPU seconds during the load
	// busy, idleBusy and aloneBusy: the machine's busy CPU (every process: the plugin, the bed's
	// servers, this test) during the load, with no request, and while the same requests ran one
	// at a time.
	busy, idleBusy, aloneBusy busyCPU
	// calls: what the bed's Prometheus and Pyroscope answered during the load.
	calls upstreamCalls
}

type row struct {
	kind                string
	n                   int
	p50, p90, p99, maxL time.Duration
}

// rows: latency percentiles (nearest rank) per request kind, sorted by name, then all requests.
func (r report) rows() []row {
	by := map[string][]time.Duration{}
	var all []time.Duration
	for _, res := range r.results {
		by[res.call.kind] = append(by[res.call.kind], res.latency)
		all = append(all, res.latency)
	}
	kinds := make([]string, 0, len(by))
	for k := range by {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var out []row
	for _, k := range append(kinds, "all requests") {
		l := by[k]
		if k == "all requests" {
			l = all
		}
		out = append(out, row{k, len(l), percentile(l, 0.50), percentile(l, 0.90), percentile(l, 0.99), l[len(l)-1]})
	}
	return out
}

// percentile is the nearest-rank percentile of the latencies (sorted in place).
func percentile(l []time.Duration, p float64) time.Duration {
	slices.Sort(l)
	return l[max(0, int(math.Ceil(p*float64(len(l))))-1)]
}

// figures writes the run's figures and their references as a go test benchmark line, which
// scripts/bench.sh reads like the Go benchmarks' own: latency under load beside the same
// requests one at a time, throughput beside one at a time, and the process after the load beside
// its baseline.
func (r report) figures(alone []result) string {
	var loaded, single []time.Duration
	var sum time.Duration
	for _, res := range r.results {
		loaded = append(loaded, res.latency)
	}
	for _, res := range alone {
		single = append(single, res.latency)
		sum += res.latency
	}
	if len(single) == 0 {
		return ""
	}
	msOf := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	return fmt.Sprintf("BenchmarkLoad\t1\t%.1f p50-ms\t%.1f alone-p50-ms\t%.1f p99-ms\t%.1f alone-p99-ms\t%.1f requests/s\t%.1f alone-requests/s\t%.2f plugin-cpu-s\t%.2f machine-cpu-s\t%.2f machine-busy-s\t%.2f bed-busy-cores\t%.2f free-cores\t%.2f alone-request-cores\t%.1f heap-after-MiB\t%.1f heap-base-MiB\t%d others-after\t%d others-base\n",
		msOf(percentile(loaded, 0.50)), msOf(percentile(single, 0.50)), msOf(percentile(loaded, 0.99)), msOf(percentile(single, 0.99)),
		float64(r.requests)/r.wall.Seconds(), float64(len(single))/sum.Seconds(),
		r.cpu, r.wall.Seconds()*float64(runtime.NumCPU()), r.busy.seconds(), r.idleBusy.cores(), float64(runtime.NumCPU())-r.idleBusy.cores(), r.aloneBusy.cores()-r.idleBusy.cores(),
		r.after.heapInuse/(1<<20), r.base.heapInuse/(1<<20), r.after.others(), r.base.others())
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64)
}

func (r report) summary() []string {
	var outcomes []string
	for i, n := range r.counts {
		if n > 0 {
			outcomes = append(outcomes, fmt.Sprintf("%d %s", n, outcomeNames[i]))
		}
	}
	build := "cgo"
	if raceBuild {
		build += ", -race"
	}
	return []string{
		fmt.Sprintf("%d requests, %d in flight (peak %d), in %.1f s (%.0f requests/s); %s.", r.requests, r.inflight, r.peakInflight,
			r.wall.Seconds(), float64(r.requests)/r.wall.Seconds(), strings.Join(outcomes, ", ")),
		fmt.Sprintf("Machine: %d cores, %s; %s; plugin binary built with %s.", runtime.NumCPU(), cpuModel(), runtime.Version(), build),
		"Upstream calls during the load, as the bed's servers count them (Jaeger keeps no such counter): " + r.calls.text() + ".",
	}
}

func (r report) text() string {
	var b strings.Builder
	for _, s := range r.summary() {
		b.WriteString(s + "\n")
	}
	fmt.Fprintf(&b, "%-32s %8s %9s %9s %9s %9s\n", "request (latency in ms)", "count", "p50", "p90", "p99", "max")
	for _, w := range r.rows() {
		fmt.Fprintf(&b, "%-32s %8d %9s %9s %9s %9s\n", w.kind, w.n, ms(w.p50), ms(w.p90), ms(w.p99), ms(w.maxL))
	}
	fmt.Fprintf(&b, "%-32s %14s %14s %14s\n", "plugin process", "baseline", "peak (load)", "after")
	for _, m := range r.process() {
		fmt.Fprintf(&b, "%-32s %14s %14s %14s\n", m[0], m[1], m[2], m[3])
	}
	return b.String()
}

func (r report) markdown() string {
	var b strings.Builder
	for _, s := range r.summary() {
		b.WriteString(s + "\n")
	}
	b.WriteString("\n| request | count | p50 ms | p90 ms | p99 ms | max ms |\n| --- | ---: | ---: | ---: | ---: | ---: |\n")
	for _, w := range r.rows() {
		kind := "`" + w.kind + "`"
		if w.kind == "all requests" {
			kind = "**all requests**"
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s |\n", kind, w.n, ms(w.p50), ms(w.p90), ms(w.p99), ms(w.maxL))
	}
	b.WriteString("\n| plugin process | baseline | peak under load | after |\n| --- | ---: | ---: | ---: |\n")
	for _, m := range r.process() {
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", m[0], m[1], m[2], m[3])
	}
	return b.String()
}

// process: goroutines and memory before, at the peak of and after the load (heap in use right
// after a GC for baseline and after; as sampled each second under load).
func (r report) process() [][4]string {
	r.peak.mu.Lock()
	defer r.peak.mu.Unlock()
	return [][4]string{
		{"goroutines", fmt.Sprint(r.base.goroutines), fmt.Sprint(r.peak.goroutines), fmt.Sprint(r.after.goroutines)},
		{"of which pooled upstream connections", fmt.Sprint(r.base.keepAlive), "", fmt.Sprint(r.after.keepAlive)},
		{"heap in use", mib(r.base.heapInuse), mib(r.peak.heapInuse), mib(r.after.heapInuse)},
		{"resident memory", mib(r.base.resident), mib(r.peak.resident), mib(r.after.resident)},
	}
}

func cpuModel() string {
	raw, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// busyCPU is the machine's busy CPU time over a stretch of wall time, from /proc/stat (Linux;
// zero elsewhere): what every process used, idle and I/O wait aside.
type busyCPU struct {
	from, to         time.Time
	busyAt, busyThen float64 // busy seconds since boot at from and at to
	stopped          bool
}

func startBusy() busyCPU { return busyCPU{from: time.Now(), busyAt: machineBusy()} }

func (b *busyCPU) stop() {
	if !b.stopped && !b.from.IsZero() {
		b.to, b.busyThen, b.stopped = time.Now(), machineBusy(), true
	}
}

func (b busyCPU) seconds() float64 { return b.busyThen - b.busyAt }

// cores is how many cores were busy on average.
func (b busyCPU) cores() float64 {
	if wall := b.to.Sub(b.from).Seconds(); wall > 0 {
		return b.seconds() / wall
	}
	return 0
}

// machineBusy is the busy seconds of every CPU since boot: /proc/stat's first line (user, nice,
// system, idle, iowait, irq, softirq, steal) less idle and iowait, in USER_HZ ticks (100 a
// second on every Linux ABI).
func machineBusy() float64 {
	raw, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(raw), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var busy float64
	for i, v := range f[1:9] {
		n, _ := strconv.ParseFloat(v, 64)
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return busy / 100
}
