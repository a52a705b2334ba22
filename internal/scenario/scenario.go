// Package scenario makes slow requests nobody here named: each scenario is one request through
// services with random names, slowed by one known cause by a random amount, as real services
// would record it (OpenTelemetry spans over OTLP, span profiles through pyroscope-go and
// otel-profiling-go, PyTorch profiler traces written by internal/kinetogen, a vLLM-style engine
// span). The verdict is tested on them (`hsi-demo scenario`, and the bed's scenario test): it must
// name the cause from the mechanism, never from the demo's words.
package scenario

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/gpusim"
)

// Kind is the cause a scenario injects.
type Kind string

// The kinds of slowness, one per cause the verdict recognises.
const (
	Queue            Kind = "queue"             // the request waits in a serving engine's queue (vLLM's attribute)
	CPU              Kind = "cpu"               // CPU in a function of a profiled service
	DownstreamOpaque Kind = "downstream-opaque" // a call to a service that sends no spans
	DownstreamQueued Kind = "downstream-queued" // a traced callee that starts handling the call late
	GPUMemoryBound   Kind = "gpu-memory-bound"  // waiting on a memory-bound GPU
	GPUThrottled     Kind = "gpu-throttled"     // waiting on a thermal- or power-throttled GPU
	HostSync         Kind = "host-sync"         // GPU idle while the host synchronises after each kernel
	LaunchBound      Kind = "launch-bound"      // GPU idle between tiny kernels the host launches back to back
	Copies           Kind = "copies"            // pageable copies holding the GPU
	HostWork         Kind = "host-work"         // GPU idle while the host works between kernels
	DispatchBound    Kind = "dispatch-bound"    // eager ops whose dispatch outlasts their one tiny kernel each
	SharedGPU        Kind = "shared-gpu"        // kernels queued behind another workload on the same GPU
	CPUThrottled     Kind = "cpu-throttled"     // CPU work in a container held at its CPU limit (CFS quota)
	KVPreempted      Kind = "kv-preempted"      // a vLLM-style engine preempts the request for KV-cache space mid-decode
	FailedRetry      Kind = "failed-retry"      // a first attempt fails with CUDA out-of-memory and is retried
)

// Kinds are every scenario, in the order the test runs them.
var Kinds = []Kind{Queue, CPU, DownstreamOpaque, DownstreamQueued, GPUMemoryBound, GPUThrottled, HostSync, LaunchBound, Copies, HostWork, FailedRetry,
	DispatchBound, SharedGPU, CPUThrottled, KVPreempted}

// WritesKernelTrace says whether the kind's GPU work comes as a kernel trace (the GPU-idle
// kinds): the plugin must be given the folder the scenario writes to.
func (k Kind) WritesKernelTrace() bool {
	switch k {
	case HostSync, LaunchBound, Copies, HostWork, DispatchBound, SharedGPU:
		return true
	}
	return false
}

// Spec is one scenario drawn from a seed: the services' and operations' names and the injected
// duration.
type Spec struct {
	Kind Kind
	Seed uint64
	// Caller receives the request (its root span); Culprit is where the time goes (for
	// DownstreamOpaque the callee, which sends no spans and is named by peer.service).
	Caller, Culprit     string
	Endpoint, Operation string // the caller's endpoint, the culprit's inner operation
	Injected            time.Duration
	// Namespace, Pod and Container are the culprit's Kubernetes names (its spans' k8s.*
	// resource attributes); Quota the CPU limit of a CPUThrottled culprit's container, in CPUs.
	Namespace, Pod, Container string
	Quota                     float64
	// AroundThrottle is the throttled seconds per CPU-second that cAdvisor shows for the culprit's
	// container in the kinds slowed by something else (mild: 0.05–0.4): the verdict must keep
	// their own first cause.
	AroundThrottle float64
	// SharedHost, SharedGPU and OtherPod are the GPU-idle kinds' culprit's GPU (a host of its
	// own, one of its GPUs) and the other workload's pod that dcgm-exporter maps that GPU to as
	// well: only SharedGPU's kernels queue behind it, the others keep their own cause.
	SharedHost string
	SharedGPU  int
	OtherPod   string
}

// NewSpec draws a scenario's names and duration from seed. Durations run from 300 ms to 1.1 s,
// long enough for a 100 Hz profiler to measure CPU within a few percent.
func NewSpec(kind Kind, seed uint64) Spec {
	rng := rand.New(rand.NewPCG(seed, uint64(len(kind))))
	s := Spec{Kind: kind, Seed: seed}
	s.Caller = serviceName(rng)
	for s.Culprit = serviceName(rng); s.Culprit == s.Caller; s.Culprit = serviceName(rng) {
	}
	s.Endpoint = "/" + word(rng) + "/" + word(rng)
	s.Operation = word(rng) + "." + word(rng)
	s.Injected = time.Duration(300+rng.IntN(800)) * time.Millisecond
	s.Namespace = word(rng)
	s.Pod = fmt.Sprintf("%s-%x-%s", s.Culprit, rng.Uint32()&0xfffffff, word(rng))
	s.Container = word(rng)
	// Under half a CPU: the span's one thread is throttled longer than it runs.
	s.Quota = float64(20+rng.IntN(26)) / 100
	s.AroundThrottle = float64(5+rng.IntN(36)) / 100
	s.SharedHost = "gpu-" + word(rng) + "-" + strconv.Itoa(rng.IntN(50))
	s.SharedGPU = rng.IntN(8)
	s.OtherPod = word(rng) + "-trainer-" + strconv.Itoa(rng.IntN(4))
	return s
}

var suffixes = []string{"", "-svc", "-api", "-worker", "-server", "-frontend", "-inference", "-gw"}

func serviceName(rng *rand.Rand) string {
	return word(rng) + suffixes[rng.IntN(len(suffixes))]
}

func word(rng *rand.Rand) string {
	const consonants, vowels = "bcdfghjklmnprstvwz", "aeiou"
	var b strings.Builder
	for range 2 + rng.IntN(3) {
		b.WriteByte(consonants[rng.IntN(len(consonants))])
		b.WriteByte(vowels[rng.IntN(len(vowels))])
	}
	return b.String()
}

// Result is what a run made: the request's trace ID and what the verdict should find.
type Result struct {
	Kind    Kind   `json:"kind"`
	TraceID string `json:"traceId"`
	// Service is the service the first cause must name; CauseKind the verdict's kind; Class the
	// GPU class its evidence must name (GPU kinds).
	Service   string `json:"service"`
	CauseKind string `json:"causeKind"`
	// Peer is what a downstream cause must name as waited on.
	Peer  string `json:"peer,omitempty"`
	Class string `json:"class,omitempty"`
	// InjectedMs is the time the first cause must explain, within 10 %.
	InjectedMs float64 `json:"injectedMs"`
	// Services are those whose spans the trace must hold before it is asked.
	Services []string `json:"services"`
	// ProfiledSpan is the span whose profile must be in Pyroscope before the answer is final
	// ("" when the culprit is not profiled).
	ProfiledSpan string `json:"profiledSpan,omitempty"`
	// KernelTrace is the file the scenario wrote ("" for other kinds).
	KernelTrace string `json:"kernelTrace,omitempty"`
	GPU         string `json:"gpu,omitempty"`
	// TitleHas is a phrase the first cause's title must contain (the other pod a shared GPU
	// serves); "" when none.
	TitleHas string `json:"titleHas,omitempty"`
}

// gpuWith is the GPU of the scenario host that shows class for at least margin on both sides of
// now, with the time to wait before it does (the simulator's GPUs run the seven classes three
// apart, so each class is on one of them at any time).
func gpuWith(classes []string, gpus int, now time.Time, margin time.Duration) (gpu int, wait time.Duration, class string) {
	for wait = 0; wait < gpusim.Live.Cycle(); wait += 5 * time.Second {
		at := now.Add(wait)
		for g := range gpus {
			c, from, to := gpusim.Live.Phase(g, at)
			for _, want := range classes {
				if c == want && at.Sub(from) >= margin && to.Sub(at) >= margin {
					return g, wait, c
				}
			}
		}
	}
	return 0, 0, ""
}

func (s Spec) String() string {
	return fmt.Sprintf("%s (seed %d): %s → %s, %s", s.Kind, s.Seed, s.Caller, s.Culprit, s.Injected)
}
