package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/nvml"
)

// nvmlOffMessage answers gpuLocal queries while jsonData.nvmlEnabled is off.
const nvmlOffMessage = "local GPUs (NVML) are off for this data source: turn on \"Local GPUs (NVML)\" in its settings (jsonData.nvmlEnabled: true); it reads the GPUs of the host Grafana runs on and needs the NVIDIA driver there"

// localGPUs explains why the gpuLocal query cannot run, or returns the instance's sampler.
func (d *Datasource) localGPUs() (nvml.Source, error) {
	if d.settings.NVMLErr != nil {
		return nil, backend.DownstreamError(d.settings.NVMLErr)
	}
	if !d.settings.NVMLEnabled || d.nvml == nil {
		return nil, backend.DownstreamError(errors.New(nvmlOffMessage))
	}
	return d.nvml, nil
}

// queryGPULocal answers the gpuLocal query from the instance's NVML sampler (pkg/nvml), which
// starts on the first such query and is shared by all of them.
func (d *Datasource) queryGPULocal(_ context.Context, q backend.DataQuery) backend.DataResponse {
	gq, err := models.ParseGPULocalQuery(q.JSON)
	if err != nil {
		return badQuery(models.QueryTypeGPULocal, err)
	}
	src, err := d.localGPUs()
	if err != nil {
		return errorResponse(err)
	}
	return answerGPULocal(src, gq, d.settings.Classify)
}

// answerGPULocal builds a view's frames; NVML being unavailable is the query's error.
func answerGPULocal(src nvml.Source, gq *models.GPULocalQuery, cs models.ClassifySettings) backend.DataResponse {
	var (
		f       []*data.Frame
		notices []string
		err     error
	)
	switch gq.View {
	case models.GPULocalDevices:
		var devs []nvml.Device
		if devs, notices, err = src.Devices(); err == nil {
			f = []*data.Frame{localDevicesFrame(devs)}
		}
	case models.GPULocalProcesses:
		var procs []nvml.Process
		if procs, notices, err = src.Processes(); err == nil {
			f = []*data.Frame{localProcessesFrame(procs)}
		}
	case models.GPULocalXID:
		var xids []nvml.XIDEvent
		if xids, notices, err = src.XIDs(); err == nil {
			f = []*data.Frame{localXIDFrame(xids)}
		}
	case models.GPULocalSeries:
		var series []nvml.DeviceSeries
		if series, notices, err = src.Series(); err == nil {
			f = localSeriesFrames(series)
		}
	case models.GPULocalClass:
		var series []nvml.DeviceSeries
		if series, notices, err = src.Series(); err == nil {
			var more []string
			f, more = localClassFrames(series, cs, src.Interval())
			notices = append(more, notices...)
		}
	}
	if err != nil {
		return errorResponse(backend.DownstreamError(err))
	}
	for _, n := range notices {
		f[0].AppendNotices(frames.Warning(n))
	}
	return withFrames(f...)
}

func unitField(name, unit string, v []*float64) *data.Field {
	f := data.NewField(name, nil, v)
	if unit != "" {
		f.Config = &data.FieldConfig{Unit: unit}
	}
	return f
}

func localDevicesFrame(devs []nvml.Device) *data.Frame {
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

func localProcessesFrame(procs []nvml.Process) *data.Frame {
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

func localXIDFrame(xids []nvml.XIDEvent) *data.Frame {
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

// localSeriesFrames is one wide time-series frame per GPU.
func localSeriesFrames(series []nvml.DeviceSeries) []*data.Frame {
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

// localClassFrames classifies the sampler's series with the gpuClass engine (classifyGPUs) and
// renders its timeline and summary frames.
func localClassFrames(series []nvml.DeviceSeries, cs models.ClassifySettings, interval time.Duration) ([]*data.Frame, []string) {
	th := cs.Thresholds
	if th.Validate() != nil {
		th = classify.DefaultThresholds()
	}
	host, _ := os.Hostname()
	gs := make([]classify.GPUSeries, 0, len(series))
	var from time.Time
	for _, s := range series {
		g := s.ClassifySeries(host)
		if len(g.Samples) > 0 && (from.IsZero() || g.Samples[0].Time.Before(from)) {
			from = g.Samples[0].Time
		}
		gs = append(gs, g)
	}
	results := classifyGPUs(gs, nil, th, from)
	notices := []string{fmt.Sprintf("classes of the sampler's last samples (every %s, up to %d per GPU): NVML has no profiling metrics, so compute is GPU utilisation and memory is memory-controller utilisation (the %s/%s fallbacks)",
		interval, nvml.DefaultCapacity, classify.MetricGPUUtil, classify.MetricMemCopyUtil)}
	return []*data.Frame{frames.GPUClassTimeline(results), frames.GPUClassSummary(results)}, notices
}
