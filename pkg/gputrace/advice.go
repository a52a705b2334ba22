package gputrace

import (
	"fmt"
	"time"
)

// Thresholds of the seeds' advice tables. They are deliberately coarse: advice names a place
// to look, with the figures, not a verdict.
const (
	adviceIdleShare    = 20.0 // % of the GPU span idle
	adviceLongGap      = 1e6  // ns: one gap of 1 ms on a stream
	adviceSmallKernels = 100  // kernels before "small frequent" can apply
	adviceShortShare   = 0.5  // share of kernels shorter than their launch
	adviceSmallMedian  = 10e3 // ns: median kernel duration
	adviceMemcpyShare  = 10.0 // % of the span busy copying
	adviceSyncShare    = 10.0 // % of the span spent in synchronising calls
)

func advise(r *Result) []Advice {
	var out []Advice
	t := r.Temporal
	var longest, hostWait, idle int64
	for _, s := range r.Idle {
		longest = max(longest, s.LongestGap)
		hostWait += s.HostWait
		idle += s.Idle
	}
	if t.Span > 0 && (t.Percent(t.Idle) >= adviceIdleShare || longest >= adviceLongGap) {
		hw := 0.0
		if idle > 0 {
			hw = 100 * float64(hostWait) / float64(idle)
		}
		out = append(out, Advice{
			Pattern: "long CUDA kernel gaps",
			Remedy:  "CPU-GPU sync stalls: look for host work or synchronisation between launches",
			Evidence: fmt.Sprintf("GPU idle %.1f%% of %s; longest gap on a stream %s; host wait %.1f%% of stream idle time",
				t.Percent(t.Idle), spanText(r), dur(longest), hw),
		})
	}
	var instances int64
	var weighted float64
	for _, k := range r.Kernels {
		instances += k.Instances
		weighted += k.Median * float64(k.Instances)
	}
	if instances >= adviceSmallKernels {
		typical := weighted / float64(instances)
		if r.Launch.Joined > 0 && r.Launch.ShorterThanLaunch >= adviceShortShare || typical < adviceSmallMedian {
			out = append(out, Advice{
				Pattern: "small frequent kernels",
				Remedy:  "fuse or batch them, use CUDA graphs",
				Evidence: fmt.Sprintf("%d kernels; %.0f%% shorter than their launch call; typical median %s; median launch delay %s",
					instances, 100*r.Launch.ShorterThanLaunch, dur(int64(typical)), dur(int64(r.Launch.DelayMedian))),
			})
		}
	}
	var copyBusy, pageable, copies int64
	for _, m := range r.Memcpy {
		if m.Direction == "Memset" {
			continue
		}
		copyBusy += m.Busy
		pageable += m.Pageable
		copies += m.Count
	}
	if t.Span > 0 && t.Percent(copyBusy) >= adviceMemcpyShare {
		out = append(out, Advice{
			Pattern: "cudaMemcpy significant",
			Remedy:  "pin host memory, overlap copies with compute on separate streams",
			Evidence: fmt.Sprintf("copies busy %.1f%% of the GPU span (%s over %d copies, %d from pageable memory)",
				t.Percent(copyBusy), dur(copyBusy), copies, pageable),
		})
	}
	// The host's blocking calls against the traced time: the GPUs' span, or the host calls'
	// window when longer (one sync around a short kernel outlasts the GPU's span).
	base, of := t.Span, "the GPU span"
	if r.HostWindow > base {
		base, of = r.HostWindow, "the host's traced calls"
	}
	if base > 0 && r.Sync.Calls > 0 && 100*float64(r.Sync.Time)/float64(base) >= adviceSyncShare {
		calls := "synchronising calls"
		if r.Sync.Calls == 1 {
			calls = "synchronising call"
		}
		out = append(out, Advice{
			Pattern: "cuda synchronize bars",
			Remedy:  "remove synchronisations (.item(), .cpu(), explicit synchronize) from the hot path",
			Evidence: fmt.Sprintf("%d %s took %s, %.1f%% of %s (%s)", r.Sync.Calls, calls, dur(r.Sync.Time),
				100*float64(r.Sync.Time)/float64(base), of, dur(base)),
		})
	}
	return out
}

func dur(ns int64) string { return time.Duration(ns).String() }

// spanText is the span the shares are of: with several GPUs, their spans summed.
func spanText(r *Result) string {
	if n := len(r.TemporalByDevice); n > 1 {
		return fmt.Sprintf("%s (the spans of %d GPUs summed)", dur(r.Temporal.Span), n)
	}
	return dur(r.Temporal.Span)
}
