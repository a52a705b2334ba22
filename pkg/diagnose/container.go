package diagnose

import (
	"fmt"
	"math"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// CauseThrottled is a profiled span's off-CPU time its container's CPU limit (CFS quota)
// throttled.
const CauseThrottled = PartThrottled

// throttledCause names the container whose CPU limit held the span off the CPU, with cAdvisor's
// figures over the window read and the span's own CPU, and the one remedy.
func throttledCause(c Cause, p BreakdownPart, row *correlate.SpanRow, op string) Cause {
	c.Kind = CauseThrottled
	ctr := "its container"
	var f models.ContainerCPU
	if row != nil && row.Container != nil {
		f = *row.Container
		ctr = containerName(f)
	}
	c.Title = "CPU throttled by " + ctr + "'s limit in " + p.Service + op
	window := f.End.Sub(f.Start).Round(time.Second)
	c.Evidence = []string{fmt.Sprintf("%s of the span's time off the CPU was throttling (%s)", p.Duration.Round(time.Millisecond), p.Source)}
	if per := f.ThrottledPerCPUSecond(); !math.IsNaN(per) {
		c.Evidence = append(c.Evidence, fmt.Sprintf("cAdvisor over the %s around it: %s's threads waited %.2f s throttled per CPU-second used (%.1f s throttled, %.1f s of CPU)",
			window, ctr, per, f.ThrottledSeconds, f.UsageSeconds))
	}
	if !math.IsNaN(f.Periods) && f.Periods > 0 && !math.IsNaN(f.ThrottledPeriods) {
		c.Evidence = append(c.Evidence, fmt.Sprintf("throttled in %.0f of %.0f CFS periods (%.0f%%; %s ÷ %s)",
			f.ThrottledPeriods, f.Periods, 100*f.ThrottledPeriods/f.Periods, models.CadvisorThrottledPeriods, models.CadvisorPeriods))
	}
	if !math.IsNaN(f.QuotaCPUs) && f.QuotaCPUs > 0 {
		c.Evidence = append(c.Evidence, fmt.Sprintf("CPU limit %.2f CPUs (%s ÷ %s)", f.QuotaCPUs, models.CadvisorQuota, models.CadvisorPeriod))
	}
	if row != nil && row.CPU != nil {
		c.Evidence = append(c.Evidence, fmt.Sprintf("span profile: %s of CPU in the span", time.Duration(*row.CPU).Round(time.Millisecond)))
		c.ProfileID = row.ProfileID
	}
	if f.Start.IsZero() || window > 2*time.Minute {
		c.Caveat = "cAdvisor's counters are read over a window much longer than the span: the throttling is the container's average there"
	} else {
		c.Caveat = fmt.Sprintf("cAdvisor's counters are scraped every 10–30 s, so the throttling is the container's average over the %s around the span, not this span's own", window)
	}
	c.Action = "the container runs into its CPU limit: raise or remove the limit (resources.limits.cpu) and set requests to match, or run fewer threads than the quota allows (GOMAXPROCS, OMP_NUM_THREADS, torch.set_num_threads at the limit)"
	return c
}

// containerName names a container as cAdvisor does: namespace/pod/container.
func containerName(f models.ContainerCPU) string {
	s := f.Pod
	if f.Namespace != "" {
		s = f.Namespace + "/" + s
	}
	if f.Container != "" {
		s += "/" + f.Container
	}
	return s
}

// throttleCaveat says, on a waiting cause, what would tell whether its container's CPU limit
// held it: cAdvisor's series, joined by the span's pod.
func throttleCaveat(row *correlate.SpanRow) string {
	if row == nil || row.CPU == nil {
		return ""
	}
	if row.Container != nil {
		if !row.Container.Throttled() {
			return ""
		}
		return fmt.Sprintf("%s was throttled, but cAdvisor's %s or %s is missing, so how much of this wait it explains is not known",
			containerName(*row.Container), models.CadvisorThrottledSeconds, models.CadvisorUsageSeconds)
	}
	return fmt.Sprintf("whether a CPU limit throttled %s is not known: no cAdvisor series (%s, %s) for its pod (the spans' %s, else their host)",
		row.Span.Service, models.CadvisorThrottledSeconds, models.CadvisorUsageSeconds, correlate.PodAttribute)
}
