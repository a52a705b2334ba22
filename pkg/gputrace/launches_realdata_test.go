package gputrace

import (
	"compress/gzip"
	"database/sql"
	"encoding/json"
	"math/big"
	"os"
	"sort"
	"testing"
)

// The per-launch figures of real traces, against the same figures computed another way: for the
// Nsight Systems export, cuda_kern_exec_sum's own query (nsys's reports/cuda_kern_exec_sum.py:
// its join, its API name without the "_v" version suffix, queue time only where ≥ 0) run on the
// export by SQLite; for the Kineto traces, from the JSON decoded apart from the reader, times
// as exact decimals.

// phases collects one row's launches, phase by phase, for the medians the SQL has not.
type phases struct {
	count, queued             int64
	api, queue, kernel, total []int64
}

func (p *phases) add(callStart, callEnd, kernelStart, kernelEnd int64) {
	p.count++
	p.api = append(p.api, callEnd-callStart)
	if kernelStart >= callEnd {
		p.queued++
		p.queue = append(p.queue, kernelStart-callEnd)
	}
	p.kernel = append(p.kernel, kernelEnd-kernelStart)
	p.total = append(p.total, max(callEnd, kernelEnd)-callStart)
}

// durationsOf summarises xs: sum, average as sum over count, median, min, max.
func durationsOf(xs []int64) Durations {
	if len(xs) == 0 {
		return Durations{}
	}
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	d := Durations{Min: s[0], Max: s[len(s)-1]}
	for _, x := range s {
		d.Total += x
	}
	d.Avg = float64(d.Total) / float64(len(s))
	if m := len(s) / 2; len(s)%2 == 1 {
		d.Median = float64(s[m])
	} else {
		d.Median = (float64(s[m-1]) + float64(s[m])) / 2
	}
	return d
}

func (p *phases) summary(kernel, api string) LaunchSummary {
	return LaunchSummary{Kernel: kernel, API: api, Count: p.count, Queued: p.queued,
		TotalTime: durationsOf(p.total), APITime: durationsOf(p.api), QueueTime: durationsOf(p.queue), KernelTime: durationsOf(p.kernel)}
}

func compareLaunches(t *testing.T, file string, got []LaunchSummary, want map[[2]string]*phases) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d per-launch rows, want %d", file, len(got), len(want))
	}
	var launches, unqueued int64
	for _, g := range got {
		p, ok := want[[2]string{g.Kernel, g.API}]
		if !ok {
			t.Errorf("%s: row %q by %q is not in the trace", file, g.Kernel, g.API)
			continue
		}
		if w := p.summary(g.Kernel, g.API); g != w {
			t.Errorf("%s: %q by %q:\n got %+v\nwant %+v", file, g.Kernel, g.API, g, w)
		}
		launches += g.Count
		unqueued += g.Count - g.Queued
	}
	t.Logf("%s: %d rows, %d launches, %d without queue time", file, len(got), launches, unqueued)
}

// CloverLeaf's export, one process, thread and GPU (so nsys's split by PID, TID and device
// changes nothing): cuda_kern_exec_sum's query on the export itself.
func TestCloverLeafKernelLaunchesAreCudaKernExecSum(t *testing.T) {
	r := analyzeReal(t, "cloverleaf-nsys.sqlite")
	db, err := sql.Open("sqlite", "file:"+realdata(t, "cloverleaf-nsys.sqlite")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var procs, threads, devices int
	if err := db.QueryRow(`SELECT COUNT(DISTINCT k.globalPid), COUNT(DISTINCT r.globalTid), COUNT(DISTINCT k.deviceId)
	  FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON k.correlationId = r.correlationId`).Scan(&procs, &threads, &devices); err != nil {
		t.Fatal(err)
	}
	if procs != 1 || threads != 1 || devices != 1 {
		t.Fatalf("%d processes, %d threads, %d GPUs launch kernels: nsys's rows would split", procs, threads, devices)
	}
	// cuda_kern_exec_sum.py's runkern, launch by launch.
	rows, err := db.Query(`
	  SELECT r.start, r.end, k.start, k.end,
	    CASE substr(rname.value, -6, 2) WHEN '_v' THEN substr(rname.value, 1, length(rname.value)-6) ELSE rname.value END,
	    kname.value
	  FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
	  JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r
	    ON k.correlationId == r.correlationId AND k.globalPid == (r.globalTid & 0xFFFFFFFFFF000000)
	  LEFT JOIN StringIds AS rname ON r.nameId == rname.id
	  JOIN StringIds AS kname ON k.demangledName == kname.id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	want := map[[2]string]*phases{}
	for rows.Next() {
		var cs, ce, ks, ke int64
		var api, kernel string
		if err := rows.Scan(&cs, &ce, &ks, &ke, &api, &kernel); err != nil {
			t.Fatal(err)
		}
		key := [2]string{kernel, api}
		if want[key] == nil {
			want[key] = &phases{}
		}
		want[key].add(cs, ce, ks, ke)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	// nsys's own aggregates for the same rows: counts, QCount, sums, minima and maxima.
	agg, err := db.Query(`
	  WITH runkern AS (
	    SELECT r.end - r.start AS ApiDur, iif(k.start - r.end >= 0, k.start - r.end, NULL) AS QueDur,
	      k.end - k.start AS KernDur, max(r.end, k.end) - r.start AS totalDur,
	      CASE substr(rname.value, -6, 2) WHEN '_v' THEN substr(rname.value, 1, length(rname.value)-6) ELSE rname.value END AS apiName,
	      kname.value AS kernName
	    FROM CUPTI_ACTIVITY_KIND_KERNEL AS k
	    JOIN CUPTI_ACTIVITY_KIND_RUNTIME AS r
	      ON k.correlationId == r.correlationId AND k.globalPid == (r.globalTid & 0xFFFFFFFFFF000000)
	    LEFT JOIN StringIds AS rname ON r.nameId == rname.id
	    JOIN StringIds AS kname ON k.demangledName == kname.id)
	  SELECT kernName, apiName, count(*), count(QueDur),
	    sum(totalDur), min(totalDur), max(totalDur), sum(ApiDur), min(ApiDur), max(ApiDur),
	    COALESCE(sum(QueDur), 0), COALESCE(min(QueDur), 0), COALESCE(max(QueDur), 0), sum(KernDur), min(KernDur), max(KernDur)
	  FROM runkern GROUP BY apiName, kernName ORDER BY avg(totalDur) DESC`)
	if err != nil {
		t.Fatal(err)
	}
	defer agg.Close()
	i := 0
	for ; agg.Next(); i++ {
		var s LaunchSummary
		if err := agg.Scan(&s.Kernel, &s.API, &s.Count, &s.Queued,
			&s.TotalTime.Total, &s.TotalTime.Min, &s.TotalTime.Max, &s.APITime.Total, &s.APITime.Min, &s.APITime.Max,
			&s.QueueTime.Total, &s.QueueTime.Min, &s.QueueTime.Max, &s.KernelTime.Total, &s.KernelTime.Min, &s.KernelTime.Max); err != nil {
			t.Fatal(err)
		}
		if i >= len(r.Launches) {
			t.Fatalf("nsys has more rows than %d", len(r.Launches))
		}
		// Row by row in nsys's order (by the total time's average).
		g := r.Launches[i]
		g.TotalTime.Avg, g.TotalTime.Median, g.APITime.Avg, g.APITime.Median = 0, 0, 0, 0
		g.QueueTime.Avg, g.QueueTime.Median, g.KernelTime.Avg, g.KernelTime.Median = 0, 0, 0, 0
		if g != s {
			t.Errorf("row %d:\n got %+v\nnsys %+v", i, g, s)
		}
	}
	if i != len(r.Launches) {
		t.Errorf("nsys has %d rows, %d here", i, len(r.Launches))
	}
	compareLaunches(t, "cloverleaf-nsys.sqlite", r.Launches, want)
	if len(r.Ranges) != 0 {
		t.Errorf("ranges %+v: the export has no NVTX", r.Ranges)
	}
}

// kinetoEvent is a trace event as the JSON has it, times exact.
type kinetoEvent struct {
	Ph, Cat, Name string
	Tid           any
	Ts, Dur       json.Number
	Args          struct{ Correlation json.Number }
}

// readKineto decodes a Kineto trace whole, apart from the streaming reader.
func readKineto(t *testing.T, name string) []kinetoEvent {
	t.Helper()
	f, err := os.Open(realdata(t, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(zr)
	dec.UseNumber()
	var trace struct{ TraceEvents []kinetoEvent }
	if err := dec.Decode(&trace); err != nil {
		t.Fatal(err)
	}
	return trace.TraceEvents
}

// nsOf is an event's start and end in ns, from the decimal µs.
func nsOf(t *testing.T, e kinetoEvent) (int64, int64) {
	t.Helper()
	ns := func(n json.Number) *big.Rat {
		v, ok := new(big.Rat).SetString(string(n))
		if !ok {
			t.Fatalf("%q is not a number", n)
		}
		v.Mul(v, big.NewRat(1000, 1))
		if !v.IsInt() {
			t.Fatalf("%s ns is not whole", v)
		}
		return v
	}
	start := ns(e.Ts)
	return start.Num().Int64(), new(big.Rat).Add(start, ns(e.Dur)).Num().Int64()
}

type hostCallOf struct {
	start, end int64
	name       string
	tid        string
}

func kinetoCalls(t *testing.T, evs []kinetoEvent) map[string]hostCallOf {
	calls := map[string]hostCallOf{}
	for _, e := range evs {
		switch e.Cat {
		case "cuda_runtime", "Runtime", "cuda_driver":
			if e.Ph == "X" && e.Args.Correlation != "" {
				s, end := nsOf(t, e)
				calls[string(e.Args.Correlation)] = hostCallOf{s, end, e.Name, jsonText(e.Tid)}
			}
		}
	}
	return calls
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	s := string(b)
	if len(s) > 1 && s[0] == '"' {
		s = s[1 : len(s)-1]
	}
	return s
}

// ResNet-50's 8,772 kernels, each joined to its cudaLaunchKernel.
func TestResNet50KernelLaunches(t *testing.T) {
	const file = "resnet50_worker0.pt.trace.json.gz"
	r := analyzeReal(t, file)
	var launches int64
	for _, l := range r.Launches {
		launches += l.Count
	}
	if launches != 8772 {
		t.Errorf("%d launches: the sample has 8772 kernels, each with its launch call", launches)
	}
	evs := readKineto(t, file)
	compareLaunchesOfKineto(t, file, r, evs, kinetoCalls(t, evs))
}

// AlexNet's record_function ranges ("[param|...]", user_annotation, all on one thread) projected
// onto the GPU work launched inside them, computed instance by instance the way nvtx_gpu_proj_trace
// does: each GPU operation whose call lies within the range on its thread, earliest start to
// latest end, distinct correlations; then per name.
func TestAlexNetRangesProjectOntoTheGPU(t *testing.T) {
	const file = "alexnet_benchmark.json.gz"
	r := analyzeReal(t, file)
	evs := readKineto(t, file)
	calls := kinetoCalls(t, evs)
	type op struct {
		start, end int64
		call       hostCallOf
		corr       string
	}
	var ops []op
	for _, e := range evs {
		switch e.Cat {
		case "kernel", "gpu_memcpy", "gpu_memset":
			if c, ok := calls[string(e.Args.Correlation)]; ok && e.Ph == "X" {
				s, end := nsOf(t, e)
				ops = append(ops, op{s, end, c, string(e.Args.Correlation)})
			}
		}
	}
	byName := map[string]*struct {
		n, rangeTime, ops int64
		durs              []int64
	}{}
	for _, e := range evs {
		if e.Ph != "X" || e.Cat != "user_annotation" {
			continue
		}
		rs, re := nsOf(t, e)
		first, last := int64(-1), int64(-1)
		corrs := map[string]bool{}
		for _, o := range ops {
			if o.call.tid == jsonText(e.Tid) && rs <= o.call.start && o.call.end <= re {
				if first < 0 || o.start < first {
					first = o.start
				}
				last = max(last, o.end)
				corrs[o.corr] = true
			}
		}
		if len(corrs) == 0 {
			continue
		}
		g := byName[e.Name]
		if g == nil {
			g = &struct {
				n, rangeTime, ops int64
				durs              []int64
			}{}
			byName[e.Name] = g
		}
		g.n++
		g.rangeTime += re - rs
		g.ops += int64(len(corrs))
		g.durs = append(g.durs, last-first)
	}
	if len(byName) == 0 {
		t.Fatal("no range of the trace launched GPU work")
	}
	if len(r.Ranges) != len(byName) {
		t.Errorf("%d ranges, want %d: %+v", len(r.Ranges), len(byName), r.Ranges)
	}
	for _, g := range r.Ranges {
		w := byName[g.Name]
		if w == nil {
			t.Errorf("range %q launched nothing", g.Name)
			continue
		}
		want := RangeProjection{Name: g.Name, Instances: w.n, RangeTime: w.rangeTime, Projected: durationsOf(w.durs), GPUOps: w.ops}
		if g != want {
			t.Errorf("%q:\n got %+v\nwant %+v", g.Name, g, want)
		}
		t.Logf("%q: %d instances, CPU %d ns, GPU %d ns, %d GPU ops", g.Name, g.Instances, g.RangeTime, g.Projected.Total, g.GPUOps)
	}
	compareLaunchesOfKineto(t, file, r, evs, calls)
}

// compareLaunchesOfKineto checks a Kineto trace's per-launch rows from its decoded events.
func compareLaunchesOfKineto(t *testing.T, file string, r *Result, evs []kinetoEvent, calls map[string]hostCallOf) {
	t.Helper()
	want := map[[2]string]*phases{}
	for _, e := range evs {
		if e.Ph != "X" || e.Cat != "Kernel" && e.Cat != "kernel" {
			continue
		}
		c, ok := calls[string(e.Args.Correlation)]
		if !ok {
			continue
		}
		ks, ke := nsOf(t, e)
		key := [2]string{e.Name, c.name}
		if want[key] == nil {
			want[key] = &phases{}
		}
		want[key].add(c.start, c.end, ks, ke)
	}
	compareLaunches(t, file, r.Launches, want)
}
