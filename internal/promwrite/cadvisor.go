package promwrite

import (
	"time"
)

// CFSPeriod is the kernel's default CFS period (cpu.cfs_period_us 100000): a container's quota
// is a share of it.
const CFSPeriod = 100 * time.Millisecond

// Container names a Kubernetes container as the kubelet's cAdvisor labels it.
type Container struct {
	Namespace, Pod, Container string
}

// CadvisorCPU are cAdvisor's CPU series of a container that ran at its CPU limit of quota CPUs
// from from to to: every CFS period throttled (none when throttledPerCPU is 0), its CPU usage quota CPU-seconds a second, its
// runnable threads throttled throttledPerCPU seconds for every CPU-second they got. Labels and
// names are the kubelet's (/metrics/cadvisor; container_cpu_usage_seconds_total with
// cpu="total"), plus simulated="true". The counters start at fixed values at from: write the
// whole range in one call (a series' samples must arrive in time order).
func CadvisorCPU(c Container, quota, throttledPerCPU float64, from, to time.Time, step time.Duration) []Series {
	labels := func(metric string, extra ...string) map[string]string {
		l := map[string]string{"__name__": metric, "namespace": c.Namespace, "pod": c.Pod, "container": c.Container,
			"job": "kubelet", "metrics_path": "/metrics/cadvisor", "simulated": "true"}
		for i := 0; i+1 < len(extra); i += 2 {
			l[extra[i]] = extra[i+1]
		}
		return l
	}
	since := func(t time.Time) float64 { return t.Sub(from).Seconds() }
	periodsPerSecond := float64(time.Second / CFSPeriod)
	throttledPerSecond := periodsPerSecond // at the limit: every period throttled
	if throttledPerCPU <= 0 {
		throttledPerSecond = 0
	}
	return []Series{
		{Labels: labels("container_cpu_cfs_periods_total"), Samples: Every(from, to, step, func(t time.Time) float64 { return 1000 + periodsPerSecond*since(t) })},
		{Labels: labels("container_cpu_cfs_throttled_periods_total"), Samples: Every(from, to, step, func(t time.Time) float64 { return 800 + throttledPerSecond*since(t) })},
		{Labels: labels("container_cpu_usage_seconds_total", "cpu", "total"), Samples: Every(from, to, step, func(t time.Time) float64 { return 50 + quota*since(t) })},
		{Labels: labels("container_cpu_cfs_throttled_seconds_total"), Samples: Every(from, to, step, func(t time.Time) float64 { return 20 + quota*throttledPerCPU*since(t) })},
		{Labels: labels("container_spec_cpu_quota"), Samples: Every(from, to, step, func(time.Time) float64 { return quota * float64(CFSPeriod/time.Microsecond) })},
		{Labels: labels("container_spec_cpu_period"), Samples: Every(from, to, step, func(time.Time) float64 { return float64(CFSPeriod / time.Microsecond) })},
	}
}

// VLLMEngine are a vLLM engine's series for one model from from to to, as its /metrics writes
// them (docs.vllm.ai design/metrics): its KV cache usage (kvUsage), the requests running and
// waiting, and vllm:num_preemptions_total, which rises by preempted over [preemptFrom,
// preemptTo] (evenly, per sample). Labels model_name and engine, plus simulated="true".
func VLLMEngine(model string, kvUsage float64, preempted int, preemptFrom, preemptTo, from, to time.Time, step time.Duration) []Series {
	labels := func(metric string) map[string]string {
		return map[string]string{"__name__": metric, "model_name": model, "engine": "0", "job": "vllm", "simulated": "true"}
	}
	preemptions := func(t time.Time) float64 {
		switch {
		case t.Before(preemptFrom):
			return 7
		case !t.Before(preemptTo):
			return 7 + float64(preempted)
		}
		return 7 + float64(preempted)*t.Sub(preemptFrom).Seconds()/preemptTo.Sub(preemptFrom).Seconds()
	}
	return []Series{
		{Labels: labels("vllm:kv_cache_usage_perc"), Samples: Every(from, to, step, func(time.Time) float64 { return kvUsage })},
		{Labels: labels("vllm:num_requests_running"), Samples: Every(from, to, step, func(time.Time) float64 { return 24 })},
		{Labels: labels("vllm:num_requests_waiting"), Samples: Every(from, to, step, func(time.Time) float64 { return 3 })},
		{Labels: labels("vllm:num_preemptions_total"), Samples: Every(from, to, step, preemptions)},
	}
}
