package gputrace

import (
	"bytes"
	"compress/gzip"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/kinetogen"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/activity"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace/kineto"
)

// countKinds counts a timeline's activities by kind.
func countKinds(t *Timeline) map[activity.Kind]int64 {
	n := map[activity.Kind]int64{}
	for _, a := range t.Activities {
		n[a.Kind]++
	}
	return n
}

// checkTree checks what holds for any timeline: activities in time order, parents on the same
// service holding their children and able to, launch calls of the same correlation on the host.
func checkTree(t *testing.T, tl *Timeline) TimelineTree {
	t.Helper()
	tr := tl.Tree()
	for i, a := range tl.Activities {
		if i > 0 && a.Start < tl.Activities[i-1].Start {
			t.Fatalf("activity %d starts before the one before it", i)
		}
		if p := tr.Parent[i]; p >= 0 {
			pa := tl.Activities[p]
			if tr.Service[p] != tr.Service[i] || pa.Start > a.Start || pa.End < a.End || !canHold(pa.Kind) || int(p) >= i {
				t.Fatalf("activity %d %+v has parent %d %+v", i, a, p, pa)
			}
		}
		if l := tr.Launch[i]; l >= 0 {
			la := tl.Activities[l]
			if !launched(a.Kind) || la.Correlation != a.Correlation || !ServiceOf(la).Host {
				t.Fatalf("activity %d %+v launched by %d %+v", i, a, l, la)
			}
		}
	}
	return tr
}

// The scenarios' traces hold what kinetogen says it wrote: every kernel, copy and launch call,
// each kernel joined to its launch, the calls and kernels under the request's annotations.
func TestTimelineOfScenariosHoldsTheirActivities(t *testing.T) {
	const traceID, spanID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	start := time.Date(2025, 6, 1, 12, 0, 0, 123_456_789, time.UTC)
	for _, m := range kinetogen.Mechanisms {
		t.Run(string(m), func(t *testing.T) {
			var buf bytes.Buffer
			truth, err := kinetogen.Write(&buf, kinetogen.Scenario{Mechanism: m, TraceID: traceID, SpanID: spanID, Seed: 2, Start: start, Duration: 5 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			c := NewCollector(Limits{Timeline: true, MaxTimelineActivities: 1_000_000})
			if err := kineto.Read(&buf, c); err != nil {
				t.Fatal(err)
			}
			r := c.Result(AnalysisOptions{})
			tl := r.Timeline
			if tl == nil || tl.Dropped != 0 {
				t.Fatalf("timeline %+v", tl)
			}
			n := countKinds(tl)
			if n[activity.KindKernel] != truth.Kernels || n[activity.KindMemcpy]+n[activity.KindMemset] != truth.Transfers {
				t.Errorf("%d kernels, %d copies and memsets; truth %d, %d", n[activity.KindKernel], n[activity.KindMemcpy]+n[activity.KindMemset], truth.Kernels, truth.Transfers)
			}
			if n[activity.KindAnnotation] != 1 || n[activity.KindGPUAnnotation] != 1 {
				t.Errorf("annotations %d on the host, %d on the GPU; want one each", n[activity.KindAnnotation], n[activity.KindGPUAnnotation])
			}
			if tl.Epoch != 0 || tl.Activities[0].Start != start.UnixNano() {
				t.Errorf("first activity at %d, epoch %d: want the annotation at %d exactly", tl.Activities[0].Start, tl.Epoch, start.UnixNano())
			}
			tr := checkTree(t, tl)
			var launches, joined, underAnnotation, underGPUAnnotation int64
			for i, a := range tl.Activities {
				switch {
				case a.Kind == activity.KindKernel || a.Kind == activity.KindMemcpy || a.Kind == activity.KindMemset:
					if tr.Launch[i] >= 0 {
						joined++
					}
					if p := tr.Parent[i]; p >= 0 && tl.Activities[p].Kind == activity.KindGPUAnnotation {
						underGPUAnnotation++
					}
				case a.Kind == activity.KindRuntime:
					if p := tr.Parent[i]; p >= 0 && tl.Activities[p].Kind == activity.KindAnnotation {
						underAnnotation++
					}
					if isLaunchCall(a.Name) || strings.HasPrefix(a.Name, "cudaMemcpy") || strings.HasPrefix(a.Name, "cudaMemset") {
						launches++
					}
				}
			}
			if joined != truth.Kernels+truth.Transfers || launches != truth.Launches {
				t.Errorf("%d GPU activities joined to %d launch calls; truth %d activities, %d launches", joined, launches, truth.Kernels+truth.Transfers, truth.Launches)
			}
			if underGPUAnnotation != truth.Kernels+truth.Transfers {
				t.Errorf("%d GPU activities under the GPU annotation, want all %d", underGPUAnnotation, truth.Kernels+truth.Transfers)
			}
			if underAnnotation != n[activity.KindRuntime] {
				t.Errorf("%d of %d runtime calls under the request's annotation", underAnnotation, n[activity.KindRuntime])
			}
			if len(tr.Services) != 2 && len(tr.Services) != 3 { // the thread, stream 7, the device's own sync records
				t.Errorf("services %+v", tr.Services)
			}
			if tl.Processes[1234] != "python3.10" {
				t.Errorf("process names %v", tl.Processes)
			}
		})
	}
}

// The cap keeps the earliest activities, whatever order the file gives them in, and says how
// many it left out, naming itself.
func TestTimelineCapKeepsTheEarliest(t *testing.T) {
	var buf bytes.Buffer
	if _, err := kinetogen.Write(&buf, kinetogen.Scenario{Mechanism: kinetogen.MechLaunch, TraceID: fixtureTraceID, Seed: 1, Duration: 2 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	all := NewCollector(Limits{Timeline: true, MaxTimelineActivities: 1_000_000})
	if err := kineto.Read(bytes.NewReader(data), all); err != nil {
		t.Fatal(err)
	}
	full := all.Result(AnalysisOptions{}).Timeline
	const limit = 50
	capped := NewCollector(Limits{Timeline: true, MaxTimelineActivities: limit})
	if err := kineto.Read(bytes.NewReader(data), capped); err != nil {
		t.Fatal(err)
	}
	r := capped.Result(AnalysisOptions{})
	tl := r.Timeline
	if len(tl.Activities) != limit || tl.Dropped != int64(len(full.Activities)-limit) || tl.Cap != limit {
		t.Fatalf("kept %d, dropped %d of %d", len(tl.Activities), tl.Dropped, len(full.Activities))
	}
	for i, a := range tl.Activities {
		if a.Start != full.Activities[i].Start {
			t.Fatalf("activity %d starts at %d, the %dth earliest at %d", i, a.Start, i, full.Activities[i].Start)
		}
	}
	if tl.Complete() > full.Activities[limit].Start {
		t.Errorf("complete up to %d, but the first left out starts at %d", tl.Complete(), full.Activities[limit].Start)
	}
	want := fmt.Sprintf("the timeline holds the first %d activities in time order (its cap of %d activities per file)", limit, limit)
	if !hasNotice(r, want) || !hasNotice(r, fmt.Sprintf("%d later ones were left out", tl.Dropped)) {
		t.Errorf("notices %q", r.Notices)
	}
	// Without Limits.Timeline nothing is kept, and the analyses are the same.
	plain := NewCollector(Limits{})
	if err := kineto.Read(bytes.NewReader(data), plain); err != nil {
		t.Fatal(err)
	}
	if p := plain.Result(AnalysisOptions{}); p.Timeline != nil || p.Temporal != r.Temporal || len(p.Kernels) != len(r.Kernels) {
		t.Errorf("the timeline changed the analyses: %+v vs %+v", p.Temporal, r.Temporal)
	}
}

// Annotations hold the host calls within them on their thread, runtime calls the driver calls
// they make; kernels and sync records hold nothing, and an activity on another thread or stream
// is never a child.
func TestTimelineNesting(t *testing.T) {
	c := NewCollector(Limits{Timeline: true})
	add := func(a activity.Activity) { c.Add(a) }
	add(activity.Activity{Kind: activity.KindAnnotation, Name: "step", Start: 0, End: 100, Process: 1, Thread: 1})
	add(activity.Activity{Kind: activity.KindRuntime, Name: "cudaLaunchKernel", Start: 10, End: 20, Correlation: 5, Process: 1, Thread: 1})
	add(activity.Activity{Kind: activity.KindDriver, Name: "cuLaunchKernel", Start: 12, End: 18, Correlation: 6, Process: 1, Thread: 1})
	add(activity.Activity{Kind: activity.KindRuntime, Name: "cudaLaunchKernel", Start: 30, End: 40, Correlation: 7, Process: 1, Thread: 2})
	add(activity.Activity{Kind: activity.KindRuntime, Name: "cudaStreamSynchronize", Start: 90, End: 120, Correlation: 8, Process: 1, Thread: 1})
	add(activity.Activity{Kind: activity.KindGPUAnnotation, Name: "step", Start: 15, End: 60, Device: 0, Stream: 7})
	add(activity.Activity{Kind: activity.KindKernel, Name: "k", Start: 20, End: 30, Correlation: 5, Device: 0, Stream: 7})
	add(activity.Activity{Kind: activity.KindKernel, Name: "k2", Start: 41, End: 70, Correlation: 7, Device: 0, Stream: 7})
	add(activity.Activity{Kind: activity.KindSync, Name: "Stream Sync", Start: 91, End: 119, Correlation: 8, Device: 0, Stream: 7})
	add(activity.Activity{Kind: activity.KindKernel, Name: "k3", Start: 92, End: 95, Device: 0, Stream: 7})
	tl := c.Result(AnalysisOptions{}).Timeline
	tr := checkTree(t, tl)
	index := map[string]int{}
	for i, a := range tl.Activities {
		index[fmt.Sprintf("%s@%d", a.Name, a.Start)] = i
	}
	parent := func(name string) string {
		p := tr.Parent[index[name]]
		if p < 0 {
			return ""
		}
		a := tl.Activities[p]
		return fmt.Sprintf("%s@%d", a.Name, a.Start)
	}
	launch := func(name string) string {
		l := tr.Launch[index[name]]
		if l < 0 {
			return ""
		}
		a := tl.Activities[l]
		return fmt.Sprintf("%s@%d", a.Name, a.Start)
	}
	for name, want := range map[string]string{
		"cudaLaunchKernel@10": "step@0", "cuLaunchKernel@12": "cudaLaunchKernel@10", "cudaLaunchKernel@30": "",
		"cudaStreamSynchronize@90": "", "k@20": "step@15", "k2@41": "", "Stream Sync@91": "", "k3@92": "",
	} {
		if got := parent(name); got != want {
			t.Errorf("parent of %s: %q, want %q", name, got, want)
		}
	}
	for name, want := range map[string]string{"k@20": "cudaLaunchKernel@10", "k2@41": "cudaLaunchKernel@30", "Stream Sync@91": "cudaStreamSynchronize@90", "k3@92": ""} {
		if got := launch(name); got != want {
			t.Errorf("launch of %s: %q, want %q", name, got, want)
		}
	}
	if len(tr.Services) != 3 {
		t.Errorf("services %+v: want two threads and a stream", tr.Services)
	}
}

// realChromeCounts counts a Chrome trace's complete events by category, as the file has them.
func realChromeCounts(t *testing.T, path string) map[string]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		TraceEvents []struct {
			Ph  string `json:"ph"`
			Cat string `json:"cat"`
		} `json:"traceEvents"`
	}
	if err := json.NewDecoder(zr).Decode(&doc); err != nil {
		t.Fatal(err)
	}
	n := map[string]int64{}
	for _, e := range doc.TraceEvents {
		if e.Ph == "X" {
			n[e.Cat]++
		}
	}
	return n
}

func realTimeline(t *testing.T, name string, l Limits) *Result {
	t.Helper()
	l.Timeline = true
	r, err := analyzeFileWith(realdata(t, name), l)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The ResNet-50 sample (old category names, string tids) holds 21,019 kernels, copies, memsets
// and runtime calls: all of them with a cap above it, each kernel joined to its launch; the
// default cap keeps the first 10,000 and says so.
func TestTimelineOfResNet50(t *testing.T) {
	want := realChromeCounts(t, realdata(t, "resnet50_worker0.pt.trace.json.gz"))
	r := realTimeline(t, "resnet50_worker0.pt.trace.json.gz", Limits{MaxTimelineActivities: 100_000})
	tl := r.Timeline
	n := countKinds(tl)
	got := map[string]int64{"Kernel": n[activity.KindKernel], "Memcpy": n[activity.KindMemcpy], "Memset": n[activity.KindMemset], "Runtime": n[activity.KindRuntime]}
	for cat, c := range got {
		if c != want[cat] {
			t.Errorf("%d %s activities, the file has %d", c, cat, want[cat])
		}
	}
	if want["Kernel"] != 8772 || len(tl.Activities) != 21_019 || tl.Dropped != 0 {
		t.Errorf("%d activities (%d dropped), file counts %v", len(tl.Activities), tl.Dropped, want)
	}
	tr := checkTree(t, tl)
	var kernels, joined int64
	for i, a := range tl.Activities {
		if a.Kind == activity.KindKernel {
			kernels++
			if tr.Launch[i] >= 0 {
				joined++
			}
		}
	}
	if joined != kernels || joined != r.Launch.Joined {
		t.Errorf("%d of %d kernels joined to a launch call; the launch statistics join %d", joined, kernels, r.Launch.Joined)
	}
	var threads []string
	for _, s := range tr.Services {
		if s.Host {
			threads = append(threads, fmt.Sprintf("%s %d", tl.Processes[s.Process], s.Thread))
		}
	}
	if strings.Join(threads, ",") != "python 25738,python 25772" { // two threads of the one process
		t.Errorf("host threads %v", threads)
	}

	d := realTimeline(t, "resnet50_worker0.pt.trace.json.gz", Limits{})
	if len(d.Timeline.Activities) != DefaultMaxTimelineActivities || d.Timeline.Dropped != 21_019-DefaultMaxTimelineActivities ||
		!hasNotice(d, "its cap of 10000 activities per file") {
		t.Errorf("default cap: %d kept, %d dropped, notices %q", len(d.Timeline.Activities), d.Timeline.Dropped, d.Notices)
	}
}

// The CloverLeaf export: every kernel, copy and runtime call of its tables, on the one thread of
// cuda-cloverleaf, at the session's wall-clock time, each kernel joined to its launch.
func TestTimelineOfCloverLeafNsys(t *testing.T) {
	path := realdata(t, "cloverleaf-nsys.sqlite")
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(table string) int64 {
		var n int64
		if err := db.QueryRow("SELECT count(*) FROM " + table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	r := realTimeline(t, "cloverleaf-nsys.sqlite", Limits{})
	tl := r.Timeline
	n := countKinds(tl)
	if n[activity.KindKernel] != count("CUPTI_ACTIVITY_KIND_KERNEL") || n[activity.KindMemcpy] != count("CUPTI_ACTIVITY_KIND_MEMCPY") ||
		n[activity.KindRuntime] != count("CUPTI_ACTIVITY_KIND_RUNTIME") || tl.Dropped != 0 {
		t.Errorf("counts %v, dropped %d", n, tl.Dropped)
	}
	if n[activity.KindKernel] != 1312 || n[activity.KindMemcpy] != 279 || n[activity.KindRuntime] != 3048 {
		t.Errorf("counts %v: want pipit's 1312 kernels and 279 copies, and 3048 runtime calls", n)
	}
	if tl.Epoch != 1_696_392_839_587_175_550 {
		t.Errorf("epoch %d: want the session's start", tl.Epoch)
	}
	tr := checkTree(t, tl)
	var joined int64
	for i, a := range tl.Activities {
		if a.Kind == activity.KindKernel && tr.Launch[i] >= 0 {
			joined++
			if a.Grid == [3]int32{} || a.Block == [3]int32{} {
				t.Fatalf("kernel %+v has no launch geometry", a)
			}
		}
	}
	if joined != n[activity.KindKernel] || joined != r.Launch.Joined {
		t.Errorf("%d of %d kernels joined to their launch; the launch statistics join %d", joined, n[activity.KindKernel], r.Launch.Joined)
	}
	var hosts []string
	for _, s := range tr.Services {
		if s.Host {
			hosts = append(hosts, fmt.Sprintf("%s %d/%d", tl.Processes[s.Process], s.Process, s.Thread))
		}
	}
	if strings.Join(hosts, ",") != "cuda-cloverleaf 1701896/1701896" {
		t.Errorf("host threads %v", hosts)
	}
}
