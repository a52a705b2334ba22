package triage

import (
	"fmt"
	"strings"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// signals says, for each class, which signals it read and what would add a missing one: a class
// whose signal is missing says so rather than reporting no failure.
func signals(ev *Evidence, gpus []*gpu, requests []request) []Signal {
	var out []Signal
	add := func(class, signal, status, detail string) {
		out = append(out, Signal{Class: class, Signal: signal, Status: status, Detail: detail})
	}
	kube := func(class, what string) {
		switch {
		case ev.Kube.Err != nil:
			add(class, what, SignalFailed, ev.Kube.Err.Error())
		case ev.Kube.Missing:
			add(class, what, SignalMissing, "Prometheus holds no kube-state-metrics series in the range: run kube-state-metrics and scrape it (honor_labels: true), so container kills and restarts can be told apart")
		default:
			add(class, what, SignalPresent, ev.Kube.Detail)
		}
	}
	kube(models.ClassContainerOOM, "kube_pod_container_status_last_terminated_reason, kube_pod_container_status_restarts_total")

	traces := "failed spans in the trace store (error=true)"
	for _, class := range []string{models.ClassCUDAOOM, models.ClassCUDAOOMLoad} {
		switch {
		case ev.Traces.Err != nil:
			add(class, traces, SignalFailed, ev.Traces.Err.Error())
		case ev.Traces.Missing:
			add(class, traces, SignalMissing, ev.Traces.Detail)
		default:
			add(class, traces, SignalPresent, ev.Traces.Detail)
		}
	}
	if ev.Traces.Err == nil && !ev.Traces.Missing && len(requests) > 0 {
		withException := 0
		for _, r := range requests {
			if r.source == "the span's exception event" {
				withException++
			}
		}
		status, detail := SignalPresent, fmt.Sprintf("%d of %d failed requests recorded an exception event", withException, len(requests))
		if withException == 0 {
			status = SignalMissing
			detail = fmt.Sprintf("none of the %d failed requests recorded an exception event: only status messages can tell a CUDA OOM apart; record exceptions on spans (OpenTelemetry's record_exception / RecordError)", len(requests))
		}
		add(models.ClassCUDAOOM, "exception events on failed spans", status, detail)
	}

	for _, m := range []struct{ class, metric string }{
		{models.ClassXID, MetricXID}, {models.ClassECC, MetricECCDBE}, {models.ClassECC, MetricRemappedUncorr},
		{models.ClassRowRemap, MetricRemapFailure}, {models.ClassPCIeReplay, MetricPCIeReplay},
		{models.ClassMemoryEnvelope, MetricFramebufferUsed},
	} {
		gpuSignal(ev, m.class, m.metric, add)
	}
	kube(models.ClassMemoryEnvelope, "kube_pod_container_status_restarts_total (restarts while the GPU is full)")

	// The chain's GPU-side links.
	if ev.GPUErr == nil && len(gpus) > 0 {
		pods, drivers := 0, 0
		for _, g := range gpus {
			if len(g.pods) > 0 {
				pods++
			}
			if g.driver != "" {
				drivers++
			}
		}
		status := SignalPresent
		if pods == 0 {
			status = SignalMissing
		}
		add("mapping", "pod labels on DCGM series", status, fmt.Sprintf("%d of %d GPUs name their pod; without them a GPU failure cannot be tied to a pod (run dcgm-exporter with its Kubernetes mapping)", pods, len(gpus)))
		if pods > 0 {
			var sharedGPUs []string
			for _, g := range gpus {
				if len(g.pods) > 1 {
					sharedGPUs = append(sharedGPUs, fmt.Sprintf("%s (%s)", g.name(), g.podNames()))
				}
			}
			detail := fmt.Sprintf("none of the %d GPUs is mapped to more than one pod", len(gpus))
			if len(sharedGPUs) > 0 {
				detail = fmt.Sprintf("%d of %d GPUs are mapped to more than one pod (time-slicing, MPS or pods sharing a device): %s", len(sharedGPUs), len(gpus), strings.Join(sharedGPUs, "; "))
			}
			add("mapping", "GPUs shared by more than one pod", SignalPresent, detail)
		}
		status = SignalPresent
		if drivers == 0 {
			status = SignalMissing
		}
		add("mapping", "driver version label", status, fmt.Sprintf("%d of %d GPUs carry DCGM_FI_DRIVER_VERSION", drivers, len(gpus)))
	}
	return out
}

// gpuSignal reports one DCGM metric: read (with the names it came from), not exported (with
// the names tried), or failed.
func gpuSignal(ev *Evidence, class, metric string, add func(class, signal, status, detail string)) {
	if ev.GPUErr != nil {
		add(class, metric, SignalFailed, ev.GPUErr.Error())
		return
	}
	r := ev.GPU[metric]
	switch {
	case ev.GPUFailed[metric] != nil:
		add(class, metric, SignalFailed, ev.GPUFailed[metric].Error())
	case r == nil:
		add(class, metric, SignalFailed, "not asked")
	case len(r.Sources) == 0:
		var why []string
		for _, n := range r.Notices {
			why = append(why, n.Text)
		}
		add(class, metric, SignalMissing, strings.Join(why, "; "))
	default:
		add(class, metric, SignalPresent, fmt.Sprintf("%s: %d series", strings.Join(r.Sources, ", "), len(r.Series)))
	}
}
