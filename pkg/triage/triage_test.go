package triage

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// fleet builds the evidence of a made-up fleet: GPUs with their health series on a step grid,
// kube-state-metrics terminations and failed traces, plus what was injected, to compare with.
type fleet struct {
	ev       *Evidence
	step     time.Duration
	injected []injected
}

// injected is one failure the scenario put in, as the triage should report it.
type injected struct {
	class     string
	at        time.Time
	host, gpu string
	pod       string
	traceIDs  []string
}

type fleetGPU struct {
	host, index, uuid, pod, namespace string
	values                            map[string][]float64
}

func newFleet(start time.Time, steps int, step time.Duration) *fleet {
	f := &fleet{step: step, ev: &Evidence{Start: start, End: start.Add(time.Duration(steps-1) * step), GPU: map[string]*models.GPUMetricResult{},
		Join: models.SpanMatch{HostAttribute: "host.name", GPUAttribute: "gpu.index"}}}
	for _, m := range GPUMetrics {
		f.ev.GPU[m] = &models.GPUMetricResult{Metric: models.GPUMetricInfo{Name: m}, Sources: []string{"DCGM_" + m}}
	}
	return f
}

func (f *fleet) steps() int { return int(f.ev.End.Sub(f.ev.Start)/f.step) + 1 }

func (f *fleet) at(i int) time.Time { return f.ev.Start.Add(time.Duration(i) * f.step) }

// addGPU adds a healthy GPU: no XID, no ECC, memory at fb percent.
func (f *fleet) addGPU(g *fleetGPU, fb float64) {
	n := f.steps()
	g.values = map[string][]float64{}
	for _, m := range GPUMetrics {
		g.values[m] = make([]float64, n)
	}
	for i := range n {
		g.values[MetricFramebufferUsed][i] = fb
	}
	_ = g
}

func (f *fleet) flush(gpus []*fleetGPU) {
	for _, g := range gpus {
		l := map[string]string{models.RoleHost: g.host, models.RoleGPU: g.index, models.RoleUUID: g.uuid, models.RoleDriver: "570.124.06"}
		if g.pod != "" {
			l[models.RolePod], l[models.RoleNamespace], l[models.RoleContainer] = g.pod, g.namespace, "server"
		}
		for _, m := range GPUMetrics {
			times := make([]time.Time, f.steps())
			for i := range times {
				times[i] = f.at(i)
			}
			f.ev.GPU[m].Series = append(f.ev.GPU[m].Series, models.GPUMetricSeries{Labels: l, Times: times, Values: g.values[m]})
		}
	}
}

// failedTrace is a request whose span on the GPU failed with the text, its root in another service.
func failedTrace(rng *rand.Rand, root, service, op string, g *fleetGPU, at time.Time, excType, msg string) *models.Trace {
	id := fmt.Sprintf("%032x", rng.Uint64())
	res := map[string]string{"host.name": g.host, "k8s.pod.name": g.pod, "k8s.namespace.name": g.namespace}
	rootSpan := models.Span{TraceID: id, SpanID: fmt.Sprintf("%016x", rng.Uint64()), Service: root, Operation: "POST /v1/" + root,
		Start: at.Add(-time.Second), Duration: 2 * time.Second, Status: models.StatusError, Resource: map[string]string{"host.name": "edge-1"}}
	server := models.Span{TraceID: id, SpanID: fmt.Sprintf("%016x", rng.Uint64()), ParentSpanID: rootSpan.SpanID, Service: service,
		Operation: "POST /infer", Start: at.Add(-900 * time.Millisecond), Duration: 950 * time.Millisecond, Status: models.StatusError, Resource: res}
	work := models.Span{TraceID: id, SpanID: fmt.Sprintf("%016x", rng.Uint64()), ParentSpanID: server.SpanID, Service: service,
		Operation: op, Start: at.Add(-800 * time.Millisecond), Duration: 800 * time.Millisecond, Status: models.StatusError, Resource: res,
		Attributes: map[string]string{"gpu.index": g.index, "gen_ai.request.model": "m-" + service}}
	if excType != "" {
		work.Events = []models.SpanEvent{{Name: models.ExceptionEvent, Time: at, Attributes: map[string]string{models.ExceptionType: excType, models.ExceptionMessage: msg}}}
	} else {
		work.StatusMessage = msg
	}
	return &models.Trace{TraceID: id, Spans: []models.Span{rootSpan, server, work}}
}

// word is a random lower-case name, so no rule can key on the demo's names.
func word(rng *rand.Rand) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 4+rng.IntN(6))
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

// TestTriageFindsEachInjectedFailureOnRandomFleets builds fleets with random names, sizes, times
// and mixes of failures, and checks that the triage reports each injected failure once, with its
// class, time, GPU and pod, newest first, and nothing else.
func TestTriageFindsEachInjectedFailureOnRandomFleets(t *testing.T) {
	oomTexts := []struct{ typ, msg string }{
		{"torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.15 GiB of which 1.02 GiB is free."},
		{"torch.cuda.OutOfMemoryError", "CUDA out of memory. Tried to allocate 512.00 MiB"},
		{"", "RuntimeError: CUDA error: out of memory"},
		{"RuntimeError", "cudaErrorMemoryAllocation: out of memory"},
	}
	for seed := range uint64(40) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			step := time.Duration(15+rng.IntN(45)) * time.Second
			start := time.Unix(1_790_000_000+int64(rng.IntN(1e6)), 0).UTC().Truncate(step)
			f := newFleet(start, 60+rng.IntN(120), step)
			var gpus []*fleetGPU
			for h := range 1 + rng.IntN(3) {
				host := word(rng) + fmt.Sprint("-", h)
				for i := range 1 + rng.IntN(4) {
					g := &fleetGPU{host: host, index: fmt.Sprint(i), uuid: fmt.Sprintf("GPU-%08x", rng.Uint32()), pod: word(rng) + "-0", namespace: word(rng)}
					f.addGPU(g, float64(20+rng.IntN(60)))
					gpus = append(gpus, g)
				}
			}
			// Each GPU gets at most one hardware or memory failure, so the expectations stay one per class and GPU.
			for _, g := range gpus {
				i := 1 + rng.IntN(f.steps()-2)
				switch rng.IntN(7) {
				case 0: // XID
					code := []float64{13, 31, 43, 48, 63, 79, 94, 95}[rng.IntN(8)]
					for j := i; j < f.steps(); j++ {
						g.values[MetricXID][j] = code
					}
					f.injected = append(f.injected, injected{class: models.ClassXID, at: f.at(i), host: g.host, gpu: g.index, pod: g.pod})
				case 1: // double-bit ECC
					for j := i; j < f.steps(); j++ {
						g.values[MetricECCDBE][j] = float64(1 + (j-i)/10)
					}
					f.injected = append(f.injected, injected{class: models.ClassECC, at: f.at(i), host: g.host, gpu: g.index, pod: g.pod})
				case 2: // row-remap failure
					for j := i; j < f.steps(); j++ {
						g.values[MetricRemapFailure][j] = 1
					}
					f.injected = append(f.injected, injected{class: models.ClassRowRemap, at: f.at(i), host: g.host, gpu: g.index, pod: g.pod})
				case 3: // PCIe replays above 8 a minute, the rest below
					for j := range f.steps() {
						g.values[MetricPCIeReplay][j] = rng.Float64() * 0.1 // under 6 a minute
					}
					for j := i; j < min(i+5, f.steps()); j++ {
						g.values[MetricPCIeReplay][j] = 0.2 + rng.Float64() // 12 to 72 a minute
					}
					f.injected = append(f.injected, injected{class: models.ClassPCIeReplay, at: f.at(i), host: g.host, gpu: g.index, pod: g.pod})
				case 4: // memory full and the pod's container crashing
					for j := i - 1; j < f.steps(); j++ {
						g.values[MetricFramebufferUsed][j] = 91 + rng.Float64()*8
					}
					f.ev.Terminations = append(f.ev.Terminations, models.ContainerTermination{Namespace: g.namespace, Pod: g.pod, Container: "server",
						Reason: []string{"Error", "ContainerCannotRun", ""}[rng.IntN(3)], ExitCode: 1, At: f.at(i), Restarts: 1})
					f.injected = append(f.injected, injected{class: models.ClassMemoryEnvelope, at: f.at(i), host: g.host, gpu: g.index, pod: g.pod})
				case 5: // a container of the GPU's pod OOM-killed: host memory
					f.ev.Terminations = append(f.ev.Terminations, models.ContainerTermination{Namespace: g.namespace, Pod: g.pod, Container: word(rng),
						Node: g.host, Reason: ReasonOOMKilled, ExitCode: 137, At: f.at(i), Restarts: 1, MemoryLimit: 2 << 30})
					f.injected = append(f.injected, injected{class: models.ClassContainerOOM, at: f.at(i), host: g.host, gpu: g.index, pod: g.pod})
				}
			}
			// CUDA OOM requests on random GPUs whose memory is not full (a full one would add a memory-envelope failure).
			var full []string
			for _, in := range f.injected {
				if in.class == models.ClassMemoryEnvelope {
					full = append(full, in.host+"/"+in.gpu)
				}
			}
			for range rng.IntN(4) {
				g := gpus[rng.IntN(len(gpus))]
				if slices.Contains(full, g.host+"/"+g.index) {
					continue
				}
				svc, op, class := word(rng), "generate", models.ClassCUDAOOM
				if rng.IntN(3) == 0 {
					op, class = []string{"load_model", "from_pretrained", "engine.warmup"}[rng.IntN(3)], models.ClassCUDAOOMLoad
				}
				n := 1 + rng.IntN(3)
				in := injected{class: class, host: g.host, gpu: g.index, pod: g.pod}
				for k := range n {
					at := f.at(1 + rng.IntN(f.steps()-2)).Add(time.Duration(k) * time.Millisecond)
					o := oomTexts[rng.IntN(len(oomTexts))]
					tr := failedTrace(rng, word(rng), svc, op, g, at, o.typ, o.msg)
					f.ev.FailedTraces = append(f.ev.FailedTraces, tr)
					in.traceIDs = append(in.traceIDs, tr.TraceID)
					if at.After(in.at) {
						in.at = at
					}
				}
				f.injected = append(f.injected, in)
			}
			// A request that failed for another reason on a healthy GPU is no GPU incident.
			healthy := gpus[rng.IntN(len(gpus))]
			f.ev.FailedTraces = append(f.ev.FailedTraces, failedTrace(rng, word(rng), word(rng), "handle", healthy, f.at(f.steps()/2), "ValueError", "bad input"))
			f.flush(gpus)

			ans := Triage(f.ev, nil)
			var got []string
			for _, fl := range ans.Failures {
				got = append(got, fmt.Sprintf("%s %s %s/%s %s", fl.Class, fl.At.Format(time.TimeOnly), fl.Host, fl.GPU, fl.Pod))
			}
			var want []string
			for _, in := range f.injected {
				want = append(want, fmt.Sprintf("%s %s %s/%s %s", in.class, in.at.Format(time.TimeOnly), in.host, in.gpu, in.pod))
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatalf("failures:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(want, "\n      "))
			}
			for i := 1; i < len(ans.Failures); i++ {
				if ans.Failures[i].At.After(ans.Failures[i-1].At) {
					t.Errorf("failures not newest first: %s before %s", ans.Failures[i-1].At, ans.Failures[i].At)
				}
			}
			for _, fl := range ans.Failures {
				if fl.Runbook.FirstChecks == "" || fl.Runbook.Mitigation == "" || len(fl.Evidence) == 0 || fl.Title == "" {
					t.Errorf("%s without its runbook entry or evidence: %+v", fl.Class, fl)
				}
				if fl.Chain.Driver != "570.124.06" || fl.Chain.Node == "" || fl.Chain.GPU == "" {
					t.Errorf("%s: chain %q lacks the GPU, node or driver the series carry", fl.Class, fl.Chain)
				}
				if fl.Class == models.ClassCUDAOOM || fl.Class == models.ClassCUDAOOMLoad {
					matched := false
					for _, in := range f.injected {
						ids := slices.Clone(in.traceIDs)
						slices.Sort(ids)
						got := slices.Clone(fl.TraceIDs)
						slices.Sort(got)
						if in.class == fl.Class && in.host == fl.Host && in.gpu == fl.GPU && slices.Equal(ids, got) {
							matched = fl.Count == len(ids)
						}
					}
					if !matched {
						t.Errorf("%s on %s/%s: count %d, traces %v match no injected group of requests", fl.Class, fl.Host, fl.GPU, fl.Count, fl.TraceIDs)
					}
					if !strings.Contains(fl.Chain.String(), "model m-") {
						t.Errorf("CUDA OOM chain without the span's model: %s", fl.Chain)
					}
				}
			}
			// Requests: every CUDA OOM request, and not the one that failed for another reason.
			oomRequests := 0
			for _, in := range f.injected {
				if in.class == models.ClassCUDAOOM || in.class == models.ClassCUDAOOMLoad {
					oomRequests += len(in.traceIDs)
				}
			}
			listed := 0
			for _, r := range ans.Requests {
				if r.Class == models.ClassCUDAOOM || r.Class == models.ClassCUDAOOMLoad {
					listed++
					if math.IsNaN(r.FramebufferUsed) || r.GPU == "" {
						t.Errorf("request %s without its GPU's framebuffer: %+v", r.TraceID, r)
					}
				}
			}
			for i := 1; i < len(ans.Requests); i++ {
				if ans.Requests[i].At.After(ans.Requests[i-1].At) {
					t.Errorf("requests not newest first: %s before %s", ans.Requests[i-1].At, ans.Requests[i].At)
				}
			}
			for _, fl := range ans.Failures {
				for i := 1; i < len(fl.TraceIDs); i++ {
					if at(ans.Requests, fl.TraceIDs[i]).After(at(ans.Requests, fl.TraceIDs[i-1])) {
						t.Errorf("%s: traces not newest first: %v", fl.Class, fl.TraceIDs)
					}
				}
			}
			if listed != oomRequests {
				t.Errorf("%d CUDA OOM requests listed, want %d", listed, oomRequests)
			}
		})
	}
}

func TestTriageKeepsOnlyTheAskedClasses(t *testing.T) {
	f := newFleet(time.Unix(1_790_000_000, 0).UTC(), 20, 30*time.Second)
	g := &fleetGPU{host: "n1", index: "0", uuid: "GPU-1", pod: "p-0", namespace: "ns"}
	f.addGPU(g, 40)
	for j := 5; j < 20; j++ {
		g.values[MetricXID][j] = 79
		g.values[MetricRemapFailure][j] = 1
	}
	f.flush([]*fleetGPU{g})
	ans := Triage(f.ev, []string{models.ClassRowRemap})
	if len(ans.Failures) != 1 || ans.Failures[0].Class != models.ClassRowRemap {
		t.Fatalf("classes [rowRemap]: got %+v", ans.Failures)
	}
	all := Triage(f.ev, nil)
	if len(all.Failures) != 2 {
		t.Fatalf("all classes: got %d failures, want the XID and the row remap", len(all.Failures))
	}
	x := all.Failures[0]
	if x.Class != models.ClassXID && all.Failures[1].Class == models.ClassXID {
		x = all.Failures[1]
	}
	if !strings.Contains(x.Title, "XID 79") || !strings.Contains(x.Title, "fallen off the bus") {
		t.Errorf("XID 79's title says %q; want its code and meaning from the XID table", x.Title)
	}
}

func TestXIDSetBeforeTheRangeSaysSo(t *testing.T) {
	f := newFleet(time.Unix(1_790_000_000, 0).UTC(), 10, time.Minute)
	g := &fleetGPU{host: "n1", index: "3", uuid: "GPU-3"}
	f.addGPU(g, 40)
	for j := range 10 {
		g.values[MetricXID][j] = 48
	}
	f.flush([]*fleetGPU{g})
	ans := Triage(f.ev, nil)
	if len(ans.Failures) != 1 {
		t.Fatalf("got %d failures, want the one XID (its copy in every step is one error)", len(ans.Failures))
	}
	if ev := strings.Join(ans.Failures[0].Evidence, " "); !strings.Contains(ev, "already when the range began") {
		t.Errorf("an XID set at the first reading must say it happened before the range: %s", ev)
	}
	if c := ans.Failures[0].Chain.String(); !strings.Contains(c, "missing: pod") {
		t.Errorf("a GPU without pod labels: the chain must say which signal adds the pod: %s", c)
	}
}

// A store that failed is a failed signal and a warning, a store without the series a missing
// signal and an info notice; the other classes still answer.
func TestTriageSaysWhichSignalsAreMissingOrFailed(t *testing.T) {
	f := newFleet(time.Unix(1_790_000_000, 0).UTC(), 10, time.Minute)
	g := &fleetGPU{host: "n1", index: "0", uuid: "GPU-0"}
	f.addGPU(g, 40)
	for j := 4; j < 10; j++ {
		g.values[MetricXID][j] = 79
	}
	f.flush([]*fleetGPU{g})
	f.ev.GPU[MetricECCDBE] = &models.GPUMetricResult{Metric: models.GPUMetricInfo{Name: MetricECCDBE}}
	f.ev.GPU[MetricECCDBE].Notices.Warn("no DCGM series of ecc_dbe (tried DCGM_FI_DEV_ECC_DBE_VOL_TOTAL)")
	f.ev.Kube = Read{Missing: true}
	f.ev.Traces = Read{Err: errors.New("jaeger: 503 storage backend unavailable")}
	ans := Triage(f.ev, nil)
	if len(ans.Failures) != 1 || ans.Failures[0].Class != models.ClassXID {
		t.Fatalf("the XID must still be found: %+v", ans.Failures)
	}
	status := map[string]string{}
	for _, s := range ans.Signals {
		status[s.Class+" "+s.Signal] = s.Status
	}
	for k, want := range map[string]string{
		"ecc ecc_dbe": SignalMissing,
		"containerOOM kube_pod_container_status_last_terminated_reason, kube_pod_container_status_restarts_total": SignalMissing,
		"cudaOOM failed spans in the trace store (error=true)":                                                    SignalFailed,
		"xid xid_errors": SignalPresent,
	} {
		if status[k] != want {
			t.Errorf("signal %q: %q, want %q (all: %v)", k, status[k], want, status)
		}
	}
	text := ""
	for _, n := range ans.Notices {
		text += n.Text + "\n"
	}
	for _, want := range []string{"could not be read", "503", "kube-state-metrics", "Uncorrectable (double-bit) ECC errors cannot be seen"} {
		if !strings.Contains(text, want) {
			t.Errorf("notices lack %q:\n%s", want, text)
		}
	}
}

// A failed request without a CUDA OOM on a GPU that had an XID before it belongs to that XID.
func TestRequestsAfterAnXIDBelongToIt(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	f := newFleet(time.Unix(1_790_000_000, 0).UTC(), 20, 30*time.Second)
	g := &fleetGPU{host: "n1", index: "1", uuid: "GPU-1", pod: "p-1", namespace: "ns"}
	f.addGPU(g, 40)
	for j := 8; j < 20; j++ {
		g.values[MetricXID][j] = 79
	}
	f.flush([]*fleetGPU{g})
	before := failedTrace(rng, "gw", "llm", "decode", g, f.at(5), "RuntimeError", "CUDA error: an illegal memory access was encountered")
	after := failedTrace(rng, "gw", "llm", "decode", g, f.at(10), "RuntimeError", "CUDA error: unspecified launch failure")
	f.ev.FailedTraces = []*models.Trace{before, after}
	ans := Triage(f.ev, nil)
	if len(ans.Requests) != 1 || ans.Requests[0].TraceID != after.TraceID || ans.Requests[0].Class != models.ClassXID {
		t.Fatalf("requests: %+v; want only the one after the XID, as an XID request", ans.Requests)
	}
	if len(ans.Failures) != 1 || !slices.Equal(ans.Failures[0].TraceIDs, []string{after.TraceID}) {
		t.Fatalf("the XID's failure must link its request: %+v", ans.Failures)
	}
}

// Scope: hosts, pods and namespaces drop the requests and terminations outside them.
func TestTriageScope(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	f := newFleet(time.Unix(1_790_000_000, 0).UTC(), 20, 30*time.Second)
	a := &fleetGPU{host: "a", index: "0", uuid: "GPU-a", pod: "pa", namespace: "ns1"}
	b := &fleetGPU{host: "b", index: "0", uuid: "GPU-b", pod: "pb", namespace: "ns2"}
	f.addGPU(a, 40)
	f.addGPU(b, 40)
	f.flush([]*fleetGPU{a, b})
	f.ev.FailedTraces = []*models.Trace{
		failedTrace(rng, "gw", "s", "gen", a, f.at(3), "torch.OutOfMemoryError", "CUDA out of memory"),
		failedTrace(rng, "gw", "s", "gen", b, f.at(4), "torch.OutOfMemoryError", "CUDA out of memory"),
	}
	f.ev.Terminations = []models.ContainerTermination{
		{Namespace: "ns1", Pod: "pa", Container: "tok", Node: "a", Reason: ReasonOOMKilled, At: f.at(5), Restarts: 1},
		{Namespace: "ns2", Pod: "pb", Container: "tok", Node: "b", Reason: ReasonOOMKilled, At: f.at(6), Restarts: 1},
	}
	for _, scope := range []models.GPUFilter{{Hosts: []string{"a"}}, {Namespaces: []string{"ns1"}}, {Pods: []string{"pa"}}, {GPUs: []string{"GPU-a"}}} {
		f.ev.Scope = scope
		ans := Triage(f.ev, nil)
		for _, fl := range ans.Failures {
			if fl.Host != "a" {
				t.Errorf("scope %+v: a failure on host %s: %+v", scope, fl.Host, fl)
			}
		}
		if len(ans.Failures) != 2 {
			t.Errorf("scope %+v: %d failures, want host a's CUDA OOM and OOM kill", scope, len(ans.Failures))
		}
	}
}

// at is the time of the listed request with this trace ID.
func at(rs []Request, traceID string) time.Time {
	for _, r := range rs {
		if r.TraceID == traceID {
			return r.At
		}
	}
	return time.Time{}
}

// A caller's span that names a load ("POST /v1/models/load" in the gateway) does not make the
// model server's OOM one at load; the server's own load span does.
func TestOOMAtLoadIsTheFailingServicesOwn(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	f := newFleet(time.Unix(1_790_000_000, 0).UTC(), 20, 30*time.Second)
	g := &fleetGPU{host: "n1", index: "0", uuid: "GPU-0", pod: "p-0", namespace: "ns"}
	f.addGPU(g, 40)
	f.flush([]*fleetGPU{g})
	serving := failedTrace(rng, "gw", "llm", "generate", g, f.at(5), "torch.OutOfMemoryError", "CUDA out of memory")
	serving.Spans[0].Operation = "POST /v1/models/load"
	loading := failedTrace(rng, "gw", "llm", "from_pretrained", g, f.at(6), "torch.OutOfMemoryError", "CUDA out of memory")
	f.ev.FailedTraces = []*models.Trace{serving, loading}
	got := map[string]string{}
	for _, r := range Triage(f.ev, nil).Requests {
		got[r.TraceID] = r.Class
	}
	if got[serving.TraceID] != models.ClassCUDAOOM || got[loading.TraceID] != models.ClassCUDAOOMLoad {
		t.Errorf("classes %v: want the gateway's load call to stay a serving OOM and the server's own load an OOM at load", got)
	}
}

// A GPU whose series name two pods (time-slicing, or two pods on one device) is said to be
// shared: a CUDA OOM of one pod names the other, whose memory fills the same framebuffer; a
// hardware failure names both; the signals list the shared GPUs and no other.
func TestTriageNamesTheOtherPodsOfASharedGPU(t *testing.T) {
	for seed := range uint64(10) {
		rng := rand.New(rand.NewPCG(seed, 31))
		step := 30 * time.Second
		f := newFleet(time.Unix(1_790_000_000+int64(rng.IntN(1e6)), 0).UTC().Truncate(step), 40, step)
		host := word(rng) + "-node"
		own := &fleetGPU{host: host, index: "0", uuid: fmt.Sprintf("GPU-%08x", rng.Uint32()), pod: word(rng) + "-0", namespace: word(rng)}
		f.addGPU(own, 50)
		other := *own
		other.pod, other.namespace = word(rng)+"-trainer-0", word(rng)
		alone := &fleetGPU{host: host, index: "1", uuid: fmt.Sprintf("GPU-%08x", rng.Uint32()), pod: word(rng) + "-1", namespace: own.namespace}
		f.addGPU(alone, 50)
		xidAt := 20 + rng.IntN(10)
		for j := xidAt; j < f.steps(); j++ {
			own.values[MetricXID][j] = 79
		}
		other.values = own.values
		f.ev.FailedTraces = append(f.ev.FailedTraces, failedTrace(rng, word(rng), word(rng), "generate", own, f.at(5), "torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 2.00 GiB"))
		f.flush([]*fleetGPU{own, &other, alone})

		ans := Triage(f.ev, nil)
		otherName := other.namespace + "/" + other.pod
		var sawOOM, sawXID bool
		for _, fl := range ans.Failures {
			switch fl.Class {
			case models.ClassCUDAOOM:
				sawOOM = true
				if !slices.Equal(fl.SharedWith, []string{otherName}) || !strings.Contains(strings.Join(fl.Evidence, "; "), "shared with "+otherName) {
					t.Errorf("seed %d: CUDA OOM of %s: shared with %v, evidence %q; want %s named", seed, own.pod, fl.SharedWith, fl.Evidence, otherName)
				}
			case models.ClassXID:
				sawXID = true
				if len(fl.SharedWith) != 2 || fl.Pod != "" || !strings.Contains(strings.Join(fl.Evidence, "; "), "serves 2 pods") {
					t.Errorf("seed %d: XID on the shared GPU: pod %q, shared with %v, evidence %q; want both pods", seed, fl.Pod, fl.SharedWith, fl.Evidence)
				}
			}
		}
		if !sawOOM || !sawXID {
			t.Fatalf("seed %d: failures %+v: want the CUDA OOM and the XID", seed, ans.Failures)
		}
		found := false
		for _, s := range ans.Signals {
			if s.Signal == "GPUs shared by more than one pod" {
				found = true
				if !strings.Contains(s.Detail, "1 of 2 GPUs") || !strings.Contains(s.Detail, otherName) || strings.Contains(s.Detail, alone.pod) {
					t.Errorf("seed %d: sharing signal %q: want GPU 0 with %s alone", seed, s.Detail, otherName)
				}
			}
		}
		if !found {
			t.Errorf("seed %d: no sharing signal in %+v", seed, ans.Signals)
		}
	}
}
