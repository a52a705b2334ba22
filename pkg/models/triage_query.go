package models

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"
)

// The views of a triage query.
const (
	// TriageFailures is one row per failure, newest first (the default).
	TriageFailures = "failures"
	// TriageRequests is one row per failed request (trace) of the range.
	TriageRequests = "requests"
	// TriageSignals says, per class, which signals were read and what adds a missing one.
	TriageSignals = "signals"
)

// TriageViews lists the views in the order messages name them.
var TriageViews = []string{TriageFailures, TriageRequests, TriageSignals}

// Failure classes of the triage, after runbook 002's table ("classify the OOM before fixing it")
// and its GPU health signals. The names are the query's `classes` values.
const (
	// ClassContainerOOM: the kubelet killed a container for its memory limit (host memory).
	ClassContainerOOM = "containerOOM"
	// ClassCUDAOOM: a request's span failed with a CUDA allocation error while serving.
	ClassCUDAOOM = "cudaOOM"
	// ClassCUDAOOMLoad: the same while loading a model.
	ClassCUDAOOMLoad = "cudaOOMLoad"
	// ClassXID: the driver reported an XID error on a GPU.
	ClassXID = "xid"
	// ClassECC: uncorrectable (double-bit) ECC errors on a GPU.
	ClassECC = "ecc"
	// ClassRowRemap: a row-remap failure, or uncorrectable remapped rows, on a GPU.
	ClassRowRemap = "rowRemap"
	// ClassPCIeReplay: PCIe replays rising on a GPU's link.
	ClassPCIeReplay = "pcieReplay"
	// ClassMemoryEnvelope: a GPU near its framebuffer limit while allocations fail or its pods restart.
	ClassMemoryEnvelope = "memoryEnvelope"
)

// TriageClasses lists the classes in the order messages name them.
var TriageClasses = []string{ClassContainerOOM, ClassCUDAOOM, ClassCUDAOOMLoad, ClassXID, ClassECC, ClassRowRemap, ClassPCIeReplay, ClassMemoryEnvelope}

// MaxTriageServices bounds the services a triage searches for failed requests, one search each.
const MaxTriageServices = 50

// TriageQuery is the query of the triage type: the GPU fleet's failures of the time range.
//
//	{"queryType":"triage","view":"failures","hosts":["gpu-node-1"],"namespaces":["inference"],
//	 "services":[],"classes":[]}
//
// The GPU filter scopes every class: the DCGM series by their labels, the kube-state-metrics
// series by pod and namespace, failed requests by their spans' host and pod attributes.
type TriageQuery struct {
	GPUFilter
	// View is failures (default), requests or signals.
	View string `json:"view"`
	// Services are the trace services searched for failed requests; empty: every service.
	Services []string `json:"services"`
	// Classes keeps only these classes (TriageClasses); empty: all.
	Classes []string `json:"classes"`
}

// Wants reports whether the query asks for class c.
func (q *TriageQuery) Wants(c string) bool {
	return len(q.Classes) == 0 || slices.Contains(q.Classes, c)
}

// ParseTriageQuery decodes and validates a triage query, filling defaults.
func ParseTriageQuery(raw json.RawMessage) (*TriageQuery, error) {
	f, err := ParseGPUFilter(raw)
	if err != nil {
		return nil, err
	}
	var rest struct {
		View     string   `json:"view"`
		Services []string `json:"services"`
		Classes  []string `json:"classes"`
	}
	if err := Decode(raw, &rest); err != nil {
		return nil, err
	}
	q := &TriageQuery{GPUFilter: *f, View: strings.TrimSpace(rest.View)}
	switch q.View {
	case "":
		q.View = TriageFailures
	case TriageFailures, TriageRequests, TriageSignals:
	default:
		return nil, fmt.Errorf("field \"view\" must be one of %s, got %q", strings.Join(TriageViews, ", "), truncate(q.View, 40))
	}
	if q.Services, err = normalizeValues("services", rest.Services); err != nil {
		return nil, err
	}
	if len(q.Services) > int(triageServicesBound.Max) {
		return nil, fmt.Errorf("field \"services\" lists %d services; the most is %d (each is one trace search)", len(q.Services), triageServicesBound.Max)
	}
	for i, c := range rest.Classes {
		c = strings.TrimSpace(c)
		if !slices.Contains(TriageClasses, c) {
			return nil, fmt.Errorf("field \"classes\" item %d: unknown class %q; valid classes are %s", i+1, truncate(c, 40), strings.Join(TriageClasses, ", "))
		}
		if !slices.Contains(q.Classes, c) {
			q.Classes = append(q.Classes, c)
		}
	}
	return q, nil
}

// ContainerTermination is one termination of a Kubernetes container that kube-state-metrics
// recorded: the kubelet restarted it At (the step where its restart count rose), and the reason
// of its last termination then ("OOMKilled", "Error", ...).
type ContainerTermination struct {
	Namespace, Pod, Container string
	// Node is the pod's node (kube_pod_info), "" when unknown.
	Node string
	// Reason is kube_pod_container_status_last_terminated_reason's reason; "" when not exported.
	Reason string
	// ExitCode is the last termination's exit code (-1: unknown).
	ExitCode int
	// At is when the restart count rose; Restarts by how much in that step.
	At       time.Time
	Restarts int
	// MemoryLimit is the container's memory limit in bytes (0: none or unknown).
	MemoryLimit float64
	// Query is the PromQL that found it, for the evidence.
	Query string
}
