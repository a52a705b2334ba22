//go:build linux && cgo

// Command hsi-nvml prints every gpuLocal view once, as text, from the same sampler the plugin
// uses (pkg/nvml): devices, processes, XID events for 2 s, then 5 s of sampled series and their
// classes. It exits 1 with the reason when NVML is unavailable (no driver, no permission).
//
//	CGO_ENABLED=1 GOOS=linux GOARCH=amd64 go build -o hsi-nvml ./cmd/hsi-nvml
package main

import (
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/nvml"
)

func main() {
	src := nvml.New(nvml.Options{Interval: 500 * time.Millisecond})
	code := run(src)
	src.Close()
	os.Exit(code)
}

func f(v *float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

func printNotices(ns notices.List) {
	for _, n := range ns {
		fmt.Printf("  %s: %s\n", n.Severity, n.Text)
	}
}

func run(src models.LocalGPUSource) int {
	st, err := src.Status()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hsi-nvml:", err)
		return 1
	}
	fmt.Printf("NVML: driver %s, NVML %s, %d GPUs\n\n", st.DriverVersion, st.NVMLVersion, st.DeviceCount)

	devs, ns, err := src.Devices()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hsi-nvml: devices:", err)
		return 1
	}
	fmt.Println("== devices")
	for _, d := range devs {
		fmt.Printf("GPU %d  %s  %s  pci %s  lost=%v\n", d.Index, d.Name, d.UUID, d.PCIBusID, d.Lost)
		gib := func(v *float64) string {
			if v == nil {
				return "-"
			}
			return fmt.Sprintf("%.1f GiB", *v/(1<<30))
		}
		fmt.Printf("  memory total %s used %s free %s | util %s %% mem util %s %%\n", gib(d.MemoryTotalBytes), gib(d.MemoryUsedBytes), gib(d.MemoryFreeBytes), f(d.GPUUtilPercent, "%.0f"), f(d.MemoryUtilPercent, "%.0f"))
		fmt.Printf("  PCIe TX %s B/s RX %s B/s gen %s x%s | SM %s/%s MHz mem %s/%s MHz\n", f(d.PCIeTxBytesPerSec, "%.0f"), f(d.PCIeRxBytesPerSec, "%.0f"), f(d.PCIeLinkGen, "%.0f"), f(d.PCIeLinkWidth, "%.0f"),
			f(d.SMClockMHz, "%.0f"), f(d.SMClockMaxMHz, "%.0f"), f(d.MemClockMHz, "%.0f"), f(d.MemClockMaxMHz, "%.0f"))
		mask := "-"
		if d.ClockEventReasons != nil {
			mask = fmt.Sprintf("0x%x", *d.ClockEventReasons)
		}
		fmt.Printf("  temp %s °C power %s/%s W | throttle %s (%s) | ECC corrected %s uncorrected %s\n", f(d.TemperatureC, "%.0f"), f(d.PowerW, "%.1f"), f(d.PowerLimitW, "%.0f"),
			mask, d.Throttle(), f(d.ECCCorrected, "%.0f"), f(d.ECCUncorrected, "%.0f"))
	}
	printNotices(ns)

	procs, ns, err := src.Processes()
	fmt.Println("\n== processes")
	if err != nil {
		fmt.Println("  error:", err)
	}
	tw := tabwriter.NewWriter(os.Stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tPID\tTYPE\tUSED\tNAME\tCOMMAND")
	for _, p := range procs {
		used := "-"
		if p.UsedBytes != nil {
			used = fmt.Sprintf("%.0f MiB", *p.UsedBytes/(1<<20))
		}
		cmd := p.Cmdline
		if len(cmd) > 100 {
			cmd = cmd[:100] + "…"
		}
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\t%s\t%s\n", p.GPU, p.PID, p.Type, used, p.Name, cmd)
	}
	tw.Flush()
	printNotices(ns)

	time.Sleep(2 * time.Second)
	xids, ns, _ := src.XIDs()
	fmt.Println("\n== XID events (2 s)")
	for _, x := range xids {
		fmt.Printf("  %s GPU %d XID %d: %s — %s\n", x.Time.Format(time.RFC3339), x.GPU, x.XID, x.Meaning, x.Action)
	}
	if len(xids) == 0 {
		fmt.Println("  none")
	}
	printNotices(ns)

	time.Sleep(5 * time.Second)
	series, ns, _ := src.Series()
	fmt.Println("\n== series (last samples) and classes")
	host, _ := os.Hostname()
	th := classify.DefaultThresholds()
	for _, s := range series {
		fmt.Printf("GPU %d %s: %d samples\n", s.Index, s.Name, len(s.Samples))
		gs := s.ClassifySeries(host)
		classes := classify.ClassesOf(gs, th)
		for i, d := range s.Samples {
			if len(s.Samples) > 12 && i < len(s.Samples)-12 {
				continue
			}
			fmt.Printf("  %s util %s%% mem %s%% temp %s power %s W SM %s MHz throttle [%s] → %s\n", d.Time.Format("15:04:05.0"), f(d.GPUUtilPercent, "%3.0f"), f(d.MemoryUtilPercent, "%3.0f"),
				f(d.TemperatureC, "%.0f"), f(d.PowerW, "%.0f"), f(d.SMClockMHz, "%.0f"), d.Throttle(), classes[i])
		}
		if len(gs.Samples) > 0 {
			ex := classify.Explain(gs, th, len(gs.Samples)-1)
			fmt.Printf("  latest: %s — %s\n", ex.Class, strings.Join(ex.Evidence, "; "))
		}
	}
	printNotices(ns)
	return 0
}
