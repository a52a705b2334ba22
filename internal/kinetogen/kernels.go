package kinetogen

import "io"

// KernelRun is a kernel name launched Count times, each launch running Dur ns.
type KernelRun struct {
	Name  string
	Count int
	Dur   int64
}

// KernelGap is the GPU's idle time between two kernels WriteKernels writes, in ns.
const KernelGap = 2_000

// WriteKernels writes a trace whose figures are known by construction, for the kernel summary and
// the kernel diff: each run's launches in turn, one kernel after the other on stream 7, each
// launched by its own cudaLaunchKernel (4 µs, ending 1 µs before the kernel starts) and
// KernelGap after the previous kernel's end. So a name's kernel time is Count × Dur exactly,
// the GPU's span is the kernels' time plus KernelGap between each two, its compute time the
// kernels' and its idle time the gaps'.
func WriteKernels(w io.Writer, traceName string, runs []KernelRun) error {
	k := NewWriter(w, EpochBase, nil)
	var at int64 = 10_000
	corr := 0
	for _, r := range runs {
		for range r.Count {
			corr++
			k.Runtime("cudaLaunchKernel", at-5_000, at-1_000, corr)
			k.Kernel(r.Name, 7, at, at+r.Dur, corr)
			at += r.Dur + KernelGap
		}
	}
	return k.Close(traceName, at)
}
