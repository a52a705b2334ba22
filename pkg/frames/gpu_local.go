package frames

import (
	"fmt"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// unitField is a nullable number column with its Grafana unit ("" for none).
func unitField(name, unit string, v []*float64) *data.Field {
	f := data.NewField(name, nil, v)
	if unit != "" {
		f.Config = &data.FieldConfig{Unit: unit}
	}
	return f
}

// GPULocalDevices is the gpuLocal devices view: one row per GPU of the host, an empty cell
// where NVML has no reading.
func GPULocalDevices(devs []models.GPUDevice) *data.Frame {
	n := len(devs)
	idx, lost := make([]int64, n), make([]bool, n)
	name, uuid, bus, throttle := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	cols := make([][]*float64, 19)
	for i := range cols {
		cols[i] = make([]*float64, n)
	}
	for i, d := range devs {
		idx[i], name[i], uuid[i], bus[i], lost[i], throttle[i] = int64(d.Index), d.Name, d.UUID, d.PCIBusID, d.Lost, d.Throttle()
		for j, v := range []*float64{d.MemoryTotalBytes, d.MemoryUsedBytes, d.MemoryFreeBytes, d.GPUUtilPercent, d.MemoryUtilPercent,
			d.PCIeTxBytesPerSec, d.PCIeRxBytesPerSec, d.PCIeLinkGen, d.PCIeLinkWidth, d.SMClockMHz, d.SMClockMaxMHz,
			d.MemClockMHz, d.MemClockMaxMHz, d.TemperatureC, d.PowerW, d.PowerLimitW, d.ECCCorrected, d.ECCUncorrected, nil} {
			cols[j][i] = v
		}
		if d.ClockEventReasons != nil {
			v := float64(*d.ClockEventReasons)
			cols[18][i] = &v
		}
	}
	f := data.NewFrame("devices",
		data.NewField("gpu", nil, idx), data.NewField("name", nil, name), data.NewField("uuid", nil, uuid), data.NewField("pci bus", nil, bus),
		unitField("memory total", "bytes", cols[0]), unitField("memory used", "bytes", cols[1]), unitField("memory free", "bytes", cols[2]),
		unitField("utilisation", "percent", cols[3]), unitField("memory utilisation", "percent", cols[4]),
		unitField("PCIe TX", "Bps", cols[5]), unitField("PCIe RX", "Bps", cols[6]),
		unitField("PCIe link generation", "", cols[7]), unitField("PCIe link width", "", cols[8]),
		unitField("SM clock", "rotmhz", cols[9]), unitField("SM clock max", "rotmhz", cols[10]),
		unitField("memory clock", "rotmhz", cols[11]), unitField("memory clock max", "rotmhz", cols[12]),
		unitField("temperature", "celsius", cols[13]), unitField("power", "watt", cols[14]), unitField("power limit", "watt", cols[15]),
		data.NewField("throttle reasons", nil, throttle), unitField("throttle bitmask", "hex", cols[18]),
		unitField("ECC corrected (volatile)", "", cols[16]), unitField("ECC uncorrected (volatile)", "", cols[17]),
		data.NewField("lost", nil, lost),
	)
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}

// GPULocalProcesses is the gpuLocal processes view: one row per process on a GPU.
func GPULocalProcesses(procs []models.GPUProcess) *data.Frame {
	n := len(procs)
	gpu, pid := make([]int64, n), make([]int64, n)
	uuid, name, cmd, typ := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	used := make([]*float64, n)
	for i, p := range procs {
		gpu[i], pid[i], uuid[i], name[i], cmd[i], typ[i], used[i] = int64(p.GPU), int64(p.PID), p.GPUUUID, p.Name, p.Cmdline, p.Type, p.UsedBytes
	}
	f := data.NewFrame("processes", data.NewField("gpu", nil, gpu), data.NewField("gpu uuid", nil, uuid), data.NewField("pid", nil, pid),
		data.NewField("process", nil, name), data.NewField("command line", nil, cmd), data.NewField("type", nil, typ),
		unitField("used GPU memory", "bytes", used))
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}

// GPULocalXIDs is the gpuLocal xid view: one row per XID error with its meaning and action.
func GPULocalXIDs(xids []models.XIDEvent) *data.Frame {
	n := len(xids)
	ts, gpu, xid := make([]time.Time, n), make([]int64, n), make([]int64, n)
	uuid, meaning, action := make([]string, n), make([]string, n), make([]string, n)
	for i, x := range xids {
		ts[i], gpu[i], xid[i], uuid[i], meaning[i], action[i] = x.Time, int64(x.GPU), int64(x.XID), x.GPUUUID, x.Meaning, x.Action
	}
	f := data.NewFrame("xid", data.NewField("time", nil, ts), data.NewField("gpu", nil, gpu), data.NewField("gpu uuid", nil, uuid),
		data.NewField("xid", nil, xid), data.NewField("meaning", nil, meaning), data.NewField("action", nil, action))
	f.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return f
}

// GPULocalSeries is the gpuLocal series view: one wide time-series frame per GPU, and one
// empty frame when there is no GPU so that panels keep their time column.
func GPULocalSeries(series []models.GPUDeviceSeries) []*data.Frame {
	out := make([]*data.Frame, 0, len(series))
	for _, s := range series {
		n := len(s.Samples)
		ts := make([]time.Time, n)
		cols := make([][]*float64, 7)
		for i := range cols {
			cols[i] = make([]*float64, n)
		}
		for i, d := range s.Samples {
			ts[i] = d.Time
			for j, v := range []*float64{d.GPUUtilPercent, d.MemoryUtilPercent, d.TemperatureC, d.PowerW, d.SMClockMHz, d.PCIeTxBytesPerSec, d.PCIeRxBytesPerSec} {
				cols[j][i] = v
			}
		}
		labels := data.Labels{"gpu": fmt.Sprint(s.Index), "UUID": s.UUID, "modelName": s.Name}
		field := func(name, unit string, v []*float64) *data.Field {
			f := unitField(name, unit, v)
			f.Labels = labels
			return f
		}
		f := data.NewFrame(fmt.Sprintf("GPU %d %s", s.Index, s.Name), data.NewField("time", nil, ts),
			field("utilisation", "percent", cols[0]), field("memory utilisation", "percent", cols[1]),
			field("temperature", "celsius", cols[2]), field("power", "watt", cols[3]), field("SM clock", "rotmhz", cols[4]),
			field("PCIe TX", "Bps", cols[5]), field("PCIe RX", "Bps", cols[6]))
		f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesWide, TypeVersion: data.FrameTypeVersion{0, 1}}
		out = append(out, f)
	}
	if len(out) == 0 {
		f := data.NewFrame("series", data.NewField("time", nil, []time.Time{}))
		f.Meta = &data.FrameMeta{Type: data.FrameTypeTimeSeriesWide, TypeVersion: data.FrameTypeVersion{0, 1}}
		out = append(out, f)
	}
	return out
}
