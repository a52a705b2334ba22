package diagnose

import (
	"fmt"
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
		if f.kernels > 0 {
			ev := fmt.Sprintf("kernel trace: %d kernels, %.0f%% of them shorter than the call that launched them; median launch call %s",
				f.kernels, 100*f.shorter, time.Duration(f.callMedian).Round(100*time.Nanosecond))
			if f.active > 0 {
				ev += fmt.Sprintf("; %.0f kernels per second of GPU activity", float64(f.kernels)/time.Duration(f.active).Seconds())
			}
			c.Evidence = append(c.Evidence, ev)
		}
		c.Action = "the GPU runs kernels faster than the host launches them: capture the loop in a CUDA graph (torch.compile(mode=\"reduce-overhead\")), fuse small kernels, or give each kernel more work (larger batches)"
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
		c.Action = "the GPU waits while the host does other work between launches: move that work off the critical path (prepare the next batch while the GPU runs, in another thread or process), or onto the GPU"
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
}

func kernelFigures(results []*gputrace.Result) kernelTraceFigures {
	var f kernelTraceFigures
	var shorter, median float64
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
