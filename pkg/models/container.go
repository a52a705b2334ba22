package models

import (
	"fmt"
	"math"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// ContainerRateWindow is the shortest window a container's CPU counters are read over: cAdvisor
// is scraped through the kubelet every 10–30 s, so an increase needs about a minute to hold two
// scrapes.
const ContainerRateWindow = time.Minute

// ContainerQuery asks for one Kubernetes container's CPU figures over a window: the pod of a
// span (its k8s.pod.name resource attribute, else its host name, which is the pod's in
// Kubernetes) and, when the span names it, its container.
type ContainerQuery struct {
	Namespace, Pod string
	Container      string // "" = the pod's containers, the most throttled one answers
	// Service is the span's service: with no container named, a container of that name (as
	// Kubernetes deployments often name it) answers before the most throttled one.
	Service    string
	Start, End time.Time
}

// Validate says what is wrong with the query.
func (q ContainerQuery) Validate() error {
	if q.Pod == "" {
		return fmt.Errorf("no pod to read the CPU throttling of")
	}
	if q.Start.IsZero() || q.End.IsZero() || q.End.Before(q.Start) {
		return fmt.Errorf("the container figures' window %s – %s is not a time range", q.Start.Format(time.RFC3339), q.End.Format(time.RFC3339))
	}
	return nil
}

// Window is the window figures are read over: the query's, widened around its middle to at least
// least.
func (q ContainerQuery) Window(least time.Duration) (start, end time.Time) {
	return EngineQuery{Start: q.Start, End: q.End}.Window(least)
}

// ContainerCPU is what cAdvisor's series said of a container's CPU over a window: its CFS
// periods and throttled periods, the time its threads spent throttled and running, and its CPU
// limit. Figures Prometheus holds no series of are NaN and named in Missing.
type ContainerCPU struct {
	// Namespace, Pod and Container are as the series name them: with no container asked, the
	// container that was throttled most.
	Namespace, Pod, Container string
	// Periods and ThrottledPeriods are the increase of container_cpu_cfs_periods_total and
	// container_cpu_cfs_throttled_periods_total over the window.
	Periods, ThrottledPeriods float64
	// ThrottledSeconds is the increase of container_cpu_cfs_throttled_seconds_total: the time
	// its runnable threads waited for the next period, summed over the CPUs they were on.
	ThrottledSeconds float64
	// UsageSeconds is the increase of container_cpu_usage_seconds_total: CPU time used.
	UsageSeconds float64
	// QuotaCPUs is the CPU limit, container_spec_cpu_quota / container_spec_cpu_period.
	QuotaCPUs  float64
	Start, End time.Time
	// Queries are the PromQL sent (evidence: the user can paste them); Missing the metrics
	// Prometheus holds no series of for the container in the window.
	Queries []string
	Missing []string
}

// Throttled says whether the container was throttled at all in the window.
func (c ContainerCPU) Throttled() bool { return c.ThrottledPeriods > 0 || c.ThrottledSeconds > 0 }

// ThrottledPerCPUSecond is how long its threads waited throttled for every second of CPU they
// got (throttled seconds ÷ usage seconds): a runnable thread of the container spent that much
// off the CPU per second on it. NaN when either figure is missing or no CPU was used.
func (c ContainerCPU) ThrottledPerCPUSecond() float64 {
	if math.IsNaN(c.ThrottledSeconds) || math.IsNaN(c.UsageSeconds) || c.UsageSeconds <= 0 {
		return math.NaN()
	}
	return c.ThrottledSeconds / c.UsageSeconds
}

// cAdvisor's CPU series (through the kubelet's /metrics/cadvisor), the names every Kubernetes
// cluster's Prometheus holds.
const (
	CadvisorPeriods          = "container_cpu_cfs_periods_total"
	CadvisorThrottledPeriods = "container_cpu_cfs_throttled_periods_total"
	CadvisorThrottledSeconds = "container_cpu_cfs_throttled_seconds_total"
	CadvisorUsageSeconds     = "container_cpu_usage_seconds_total"
	CadvisorQuota            = "container_spec_cpu_quota"
	CadvisorPeriod           = "container_spec_cpu_period"
)

// KubeAnswer is the container terminations of a range, how they were read, and whether
// Prometheus holds kube-state-metrics at all.
type KubeAnswer struct {
	Terminations []ContainerTermination
	// Missing: Prometheus holds no restart series in the range (no kube-state-metrics).
	Missing bool
	Step    time.Duration
	Notices notices.List
}
