package diagnose

import (
	"cmp"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
)

// gpuWaitCause is the cause of one mechanism of a span's GPU idle time: the mechanism named, its
// figures from the kernel traces, and that mechanism's remedy alone.
func gpuWaitCause(ans *correlate.TraceAnswer, p BreakdownPart, row *correlate.SpanRow, op string) Cause {
	c := Cause{Kind: p.Kind, Service: p.Service, SpanID: p.SpanID, Explains: p.Duration}
	if row != nil {
		c.Start, c.End = row.Span.Start, row.Span.Start.Add(row.Span.Duration)
	}
	var m gputrace.IdleMechanisms
	if row != nil && row.GPUIdle != nil {
		m = *row.GPUIdle
	}
	f := kernelFigures(ans.KernelTraces)
	d := p.Duration.Round(time.Microsecond)
	switch p.Kind {
	case PartSharedGPU:
		c = sharedGPUCause(c, p, row, m, f, op)
	case PartHostSync:
		c.Title = "GPU waited on host synchronisation in " + p.Service + op
		c.Evidence = []string{fmt.Sprintf("%s in %d GPU idle gap(s) that began while the host was blocked in a synchronising call (%s)", d, m.SyncGaps, p.Source)}
		if f.syncCalls > 0 {
			c.Evidence = append(c.Evidence, fmt.Sprintf("kernel trace: %d blocking call(s) (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, blocking cudaMemcpy: what .item(), .cpu() and print(tensor) do) took %s",
				f.syncCalls, time.Duration(f.syncTime).Round(time.Microsecond)))
		}
		c.Action = "the host waits for the GPU to finish, then the GPU waits for the host: drop .item(), .cpu() and explicit synchronize from the loop, keep results on the GPU, and copy with non_blocking=True, waiting on a CUDA event only where the value is needed"
	case PartLaunch:
		c.Title = "GPU waited on kernel launches in " + p.Service + op
		c.Evidence = []string{fmt.Sprintf("%s in %d GPU idle gap(s) while the host was launching, or between work already launched (%s)", d, m.LaunchGaps, p.Source)}
		if m.DispatchGaps > 0 && 2*m.DispatchGaps >= m.LaunchGaps {
			// Eager ops: the host's time per kernel is the op's dispatch, not only its launch call.
			c.Title = "GPU waited on op dispatch and kernel launches in " + p.Service + op
			c.Evidence[0] = fmt.Sprintf("%s in %d GPU idle gap(s) while the host was launching or dispatching ops (%s)", d, m.LaunchGaps, p.Source)
			c.Evidence = append(c.Evidence, fmt.Sprintf("kernel trace: %d of these gaps each end in the launch of the next kernel from inside the op the host was dispatching, %s a gap on average: one op's dispatch per kernel",
				m.DispatchGaps, (time.Duration(m.Launch)/time.Duration(max(m.LaunchGaps, 1))).Round(100*time.Nanosecond)))
		}
		if f.kernels > 0 {
			ev := fmt.Sprintf("kernel trace: %d kernels, %.0f%% of them shorter than the call that launched them; median launch call %s",
				f.kernels, 100*f.shorter, time.Duration(f.callMedian).Round(100*time.Nanosecond))
			if f.active > 0 {
				ev += fmt.Sprintf("; %.0f kernels per second of GPU activity", float64(f.kernels)/time.Duration(f.active).Seconds())
			}
			c.Evidence = append(c.Evidence, ev)
		}
		c.Action = "per-kernel launch and dispatch overhead: the GPU runs each kernel faster than the host issues it; capture the forward pass in a CUDA graph (torch.compile(mode=\"reduce-overhead\")), fuse small kernels (torch.compile), or give each kernel more work (larger batches)"
	case PartCopies:
		c.Title = "copies held the GPU in " + p.Service + op
		c.Evidence = []string{fmt.Sprintf("%s of copies with no kernel running (%s)", d, p.Source)}
		if f.copies > 0 {
			ev := fmt.Sprintf("kernel trace: %d copies of %s", f.copies, bytesText(f.copyBytes))
			if f.pageable > 0 {
				ev += fmt.Sprintf(", %d of them from or to pageable host memory (staged through a pinned buffer, and synchronous)", f.pageable)
			}
			c.Evidence = append(c.Evidence, ev)
		}
		c.Action = "the GPU waits for data: pin the host buffers (pin_memory=True), copy with non_blocking=True on a side stream so copies overlap compute, and keep tensors on the GPU between steps"
	case PartHostWork:
		c.Title = "host work between kernels in " + p.Service + op
		c.Evidence = []string{fmt.Sprintf("%s in %d GPU idle gap(s) while the host neither launched nor synchronised (%s)", d, m.HostWorkGaps, p.Source)}
		if row != nil && row.CPU != nil {
			ev := fmt.Sprintf("span profile: %s of CPU in %s", time.Duration(*row.CPU).Round(time.Millisecond), p.Service)
			if row.HotFunction != "" {
				ev += ", hot function " + row.HotFunction
				if row.OwnFunction != "" && row.OwnFunction != row.HotFunction {
					ev += " (in own code " + row.OwnFunction + ")"
				}
			}
			c.Evidence = append(c.Evidence, ev)
			c.ProfileID, c.HotFunction = row.ProfileID, row.HotFunction
		} else {
			c.Caveat = "no span profile of " + p.Service + ": whether the host was on the CPU (pre- or post-processing, Python) or waiting (I/O, a lock) between kernels is not known"
		}
		c.Action = "the GPU waits while the host does other work between launches (pre- or post-processing, Python between steps): move that work off the critical path (prepare the next batch while the GPU runs, in another thread or process), or onto the GPU"
	}
	return c
}

// kernelTraceFigures are the request's kernel traces' figures a GPU-idle cause quotes.
type kernelTraceFigures struct {
	syncCalls, syncTime         int64
	kernels                     int64 // launched kernels joined to their launch call
	shorter                     float64
	callMedian                  float64
	active                      int64 // the GPUs' active time, summed
	copies, copyBytes, pageable int64
	// delayMedian and delayP95 are the launches' launch-to-start delays (kernel start − launch
	// call end), weighted by kernels over several files.
	delayMedian, delayP95 float64
}

func kernelFigures(results []*gputrace.Result) kernelTraceFigures {
	var f kernelTraceFigures
	var shorter, median, delay, p95 float64
	for _, r := range results {
		if r == nil {
			continue
		}
		f.syncCalls += r.Sync.Calls
		f.syncTime += r.Sync.Time
		f.active += r.Temporal.Span
		if r.Launch.Joined > 0 {
			shorter += r.Launch.ShorterThanLaunch * float64(r.Launch.Joined)
			median += r.Launch.CallMedian * float64(r.Launch.Joined)
			delay += r.Launch.DelayMedian * float64(r.Launch.Joined)
			p95 += r.Launch.DelayP95 * float64(r.Launch.Joined)
			f.kernels += r.Launch.Joined
		}
		for _, m := range r.Memcpy {
			if m.Direction == "Memset" {
				continue
			}
			f.copies += m.Count
			f.copyBytes += m.Bytes
			f.pageable += m.Pageable
		}
	}
	if f.kernels > 0 {
		// Over several files, the kernels' weighted median of medians: a summary, said as "median".
		f.shorter, f.callMedian = shorter/float64(f.kernels), median/float64(f.kernels)
		f.delayMedian, f.delayP95 = delay/float64(f.kernels), p95/float64(f.kernels)
	}
	return f
}

func bytesText(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	case b >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%d B", b)
}

// sharedGPUCause is the time the request's work sat queued on its GPU while the GPU ran other
// work: named after the other pods when dcgm-exporter maps the GPU to them, with the GPU's own
// utilisation when DCGM has it.
func sharedGPUCause(c Cause, p BreakdownPart, row *correlate.SpanRow, m gputrace.IdleMechanisms, f kernelTraceFigures, op string) Cause {
	d := p.Duration.Round(time.Microsecond)
	c.Title = "GPU busy with work outside this request in " + p.Service + op
	c.Evidence = []string{fmt.Sprintf("%s in %d GPU idle gap(s) with the next kernel already launched and waiting, longer than the %s a free GPU takes to start queued work (%s)",
		d, m.QueuedGaps, time.Duration(gputrace.QueueLatency), p.Source)}
	if f.kernels > 0 {
		c.Evidence = append(c.Evidence, fmt.Sprintf("kernel trace: launch-to-start delay median %s, p95 %s over %d kernels, with none of the request's own kernels or copies running and no synchronising call to wait for",
			time.Duration(f.delayMedian).Round(time.Microsecond), time.Duration(f.delayP95).Round(time.Microsecond), f.kernels))
	}
	var tenants []string
	if row != nil && row.Tenants != nil {
		tenants = row.Tenants.Names()
		c.Title = fmt.Sprintf("GPU shared with %s in %s%s", strings.Join(tenants, ", "), p.Service, op)
		own := "the span names no process.pid, so its own process is among them"
		if row.Tenants.ForeignPID != 0 {
			own = fmt.Sprintf("the span's process.pid %d is not among them (a container's own PID namespace), so its own process is too", row.Tenants.ForeignPID)
		}
		if row.Tenants.OwnPID != 0 {
			own = fmt.Sprintf("besides %s's own pid %d", p.Service, row.Tenants.OwnPID)
		} else {
			c.Title = fmt.Sprintf("GPU shared by %d processes (%s) in %s%s", len(tenants), strings.Join(tenants, ", "), p.Service, op)
		}
		if pr := row.Tenants.Processes; len(pr) > 0 {
			c.Host, c.GPU = row.Tenants.Host, strconv.Itoa(pr[0].GPU)
		}
		c.Evidence = append(c.Evidence, fmt.Sprintf("NVML on %s lists %s on the span's GPU (%s; listed when this query ran, not over the span's window)",
			row.Tenants.Host, strings.Join(tenantDetails(row.Tenants), ", "), own))
	}
	if row != nil && row.GPU != nil {
		g := row.GPU
		if len(g.SharedWith) > 0 {
			names := make([]string, 0, len(g.SharedWith))
			for _, pod := range g.SharedWith {
				names = append(names, pod.String())
			}
			c.Title = fmt.Sprintf("GPU shared with %s in %s%s", strings.Join(names, ", "), p.Service, op)
			c.Evidence = append(c.Evidence, fmt.Sprintf("dcgm-exporter maps the GPU to %s besides %s's own pod over the span's window (DCGM, Prometheus)", strings.Join(names, ", "), p.Service))
		}
		if !math.IsNaN(g.Util) {
			c.Evidence = append(c.Evidence, fmt.Sprintf("DCGM: GPU utilisation %.0f%% on average over %d reading(s) around the span: the device was busy", g.Util, g.Samples))
		}
		if len(g.GPUs) > 0 {
			c.Host, c.GPU = g.GPUs[0].Host, cmp.Or(g.GPUs[0].Index, g.GPUs[0].UUID)
		}
		if len(g.SharedWith) == 0 && len(tenants) == 0 {
			c.Caveat = "dcgm-exporter names no other pod on this GPU (its Kubernetes mapping, or --kubernetes-virtual-gpus for time-sliced GPUs, names them); nvidia-smi or the gpuLocal query on the host lists the processes using it"
		}
	} else if len(tenants) == 0 {
		c.Caveat = "no DCGM series joined this span's GPU: with dcgm-exporter's Kubernetes mapping the other pods on it would be named; nvidia-smi or the gpuLocal query on the host lists the processes using it"
	}
	if len(tenants) > 0 && (row.GPU == nil || len(row.GPU.SharedWith) == 0) {
		c.Caveat = "NVML lists the GPU's processes as they are when the query runs: a batch job that has since ended is not among them, and one started since is"
	}
	c.Action = "another workload runs on this GPU (time-slicing, MPS, or two pods on one device): give the service a dedicated GPU or a MIG slice, cap the other tenants (MPS's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE), or schedule the batch job on other nodes"
	return c
}

// tenantDetails is each NVML process with its GPU and memory: "python (pid 4242, GPU 0, 8.1 GiB
// of its memory)".
func tenantDetails(t *correlate.LocalTenants) []string {
	out := make([]string, 0, len(t.Processes))
	for _, p := range t.Processes {
		d := fmt.Sprintf("pid %d, GPU %d", p.PID, p.GPU)
		if p.UsedBytes != nil {
			d += ", " + bytesText(int64(*p.UsedBytes)) + " of its memory"
		}
		if p.Name != "" {
			d = p.Name + " (" + d + ")"
		} else {
			d = "a process (" + d + ")"
		}
		out = append(out, d)
	}
	return out
}
