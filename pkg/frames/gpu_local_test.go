package frames

import (
	"fmt"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// The gpuLocal views render NVML's readings as they are: a value with its unit, an empty cell
// where NVML had none, the decoded throttle reasons beside the bitmask, one frame per GPU for
// the series; no GPU keeps the columns.
func TestGPULocalGolden(t *testing.T) {
	devs, procs, xids, series := localFixture()
	checkGolden(t, "gpu_local_devices", GPULocalDevices(devs))
	checkGolden(t, "gpu_local_processes", GPULocalProcesses(procs))
	checkGolden(t, "gpu_local_xid", GPULocalXIDs(xids))
	fs := GPULocalSeries(series)
	if len(fs) != len(series) {
		t.Fatalf("%d series frames for %d GPUs", len(fs), len(series))
	}
	for i, f := range fs {
		checkGolden(t, fmt.Sprintf("gpu_local_series_%d", i), f)
	}
	checkGolden(t, "gpu_local_devices_none", GPULocalDevices(nil))
	checkGolden(t, "gpu_local_processes_none", GPULocalProcesses(nil))
	checkGolden(t, "gpu_local_xid_none", GPULocalXIDs(nil))
	none := GPULocalSeries(nil)
	if len(none) != 1 {
		t.Fatalf("no GPU: %d series frames, want one empty frame", len(none))
	}
	checkGolden(t, "gpu_local_series_none", none[0])
}

// localFixture is two GPUs as pkg/nvml reports them: one busy with every reading, one lost
// with none, so both the values and the empty cells show in the goldens.
func localFixture() ([]models.GPUDevice, []models.GPUProcess, []models.XIDEvent, []models.GPUDeviceSeries) {
	p := func(v float64) *float64 { return &v }
	t0 := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	mask := uint64(0x4 | 0x40)
	busy := func(t time.Time, util float64) models.GPUDevice {
		return models.GPUDevice{Time: t, Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-1", PCIBusID: "00000000:19:00.0",
			MemoryTotalBytes: p(80e9), MemoryUsedBytes: p(60e9), MemoryFreeBytes: p(20e9), GPUUtilPercent: p(util), MemoryUtilPercent: p(25),
			PCIeTxBytesPerSec: p(1.5e9), PCIeRxBytesPerSec: p(2.5e9), PCIeLinkGen: p(5), PCIeLinkWidth: p(16),
			SMClockMHz: p(1755), SMClockMaxMHz: p(1980), MemClockMHz: p(2619), MemClockMaxMHz: p(2619),
			TemperatureC: p(70), PowerW: p(690), PowerLimitW: p(700), ECCCorrected: p(3), ECCUncorrected: p(0), ClockEventReasons: &mask}
	}
	lost := models.GPUDevice{Time: t0, Index: 1, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-2", PCIBusID: "00000000:3B:00.0", Lost: true}
	devs := []models.GPUDevice{busy(t0, 97), lost}
	procs := []models.GPUProcess{
		{GPU: 0, GPUUUID: "GPU-1", PID: 4242, Name: "python3", Cmdline: "python3 serve.py --model llama", Type: "compute", UsedBytes: p(50e9)},
		{GPU: 1, GPUUUID: "GPU-2", PID: 77, Name: "Xorg", Cmdline: "", Type: "graphics"},
	}
	m, a := classify.XIDMeaning(48)
	xids := []models.XIDEvent{{Time: t0.Add(3 * time.Second), GPU: 0, GPUUUID: "GPU-1", XID: 48, Meaning: m, Action: a}}
	s0 := models.GPUDeviceSeries{Index: 0, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-1"}
	for i := range 4 {
		s0.Samples = append(s0.Samples, busy(t0.Add(time.Duration(i)*time.Second), float64(90+i)))
	}
	s1 := models.GPUDeviceSeries{Index: 1, Name: "NVIDIA H100 80GB HBM3", UUID: "GPU-2", Samples: []models.GPUDevice{lost}}
	return devs, procs, xids, []models.GPUDeviceSeries{s0, s1}
}
