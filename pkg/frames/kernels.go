package frames

import (
	"strconv"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
)

// KernelFrames builds the frames of a kernels query for one analysed trace file: kernel
// summary (as `nsys stats --report cuda_gpu_kern_sum`, ordered by total), temporal breakdown
// (per GPU and for the file), stream idle, launch statistics, memcpy and advice. Each frame's
// name is prefixed by the file when file is set; the file's notices go on the summary frame.
func KernelFrames(file string, r *gputrace.Result) []*data.Frame {
	prefix := ""
	if file != "" {
		prefix = file + ": "
	}
	ns := func(name string, v any) *data.Field {
		return data.NewField(name, nil, v).SetConfig(&data.FieldConfig{Unit: "ns"})
	}
	pct := func(name string, v any) *data.Field {
		return data.NewField(name, nil, v).SetConfig(&data.FieldConfig{Unit: "percent"})
	}

	n := len(r.Kernels)
	names, pcts := make([]string, n), make([]float64, n)
	totals, inst, mins, maxs := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	avgs, meds, stds := make([]float64, n), make([]float64, n), make([]float64, n)
	for i, k := range r.Kernels {
		names[i], pcts[i], totals[i], inst[i] = k.Name, k.TimePercent, k.Total, k.Instances
		avgs[i], meds[i], mins[i], maxs[i], stds[i] = k.Avg, k.Median, k.Min, k.Max, k.StdDev
	}
	summary := data.NewFrame(prefix+"kernel summary",
		data.NewField("name", nil, names), pct("time %", pcts), ns("total", totals),
		data.NewField("instances", nil, inst), ns("avg", avgs), ns("median", meds),
		ns("min", mins), ns("max", maxs), ns("std dev", stds))
	summary.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	summary.AppendNotices(Notices(r.Notices)...)

	// Four rows per GPU, then four for the file ("all": the GPUs' figures summed, shares of
	// their summed spans), so a panel filtering on device reads the same rows in every file.
	var devs, cat []string
	var tv []int64
	var tp []float64
	breakdown := func(device string, t gputrace.TemporalBreakdown) {
		for _, p := range []struct {
			name string
			v    int64
		}{{"compute", t.Compute}, {"communication", t.Communication}, {"memcpy/memset", t.Memory}, {"idle", t.Idle}} {
			devs, cat, tv, tp = append(devs, device), append(cat, p.name), append(tv, p.v), append(tp, t.Percent(p.v))
		}
	}
	for _, t := range r.TemporalByDevice {
		breakdown(strconv.Itoa(int(t.Device)), t)
	}
	breakdown("all", r.Temporal)
	temporal := data.NewFrame(prefix+"temporal breakdown", data.NewField("device", nil, devs),
		data.NewField("category", nil, cat), ns("time", tv), pct("share", tp))

	m := len(r.Idle)
	dev, stream := make([]int32, m), make([]int32, m)
	busy, idle, hw, kw, oth, gaps, longest, ovl := make([]int64, m), make([]int64, m), make([]int64, m), make([]int64, m), make([]int64, m), make([]int64, m), make([]int64, m), make([]int64, m)
	for i, s := range r.Idle {
		dev[i], stream[i], busy[i], idle[i] = s.Device, s.Stream, s.Busy, s.Idle
		hw[i], kw[i], oth[i], gaps[i], longest[i], ovl[i] = s.HostWait, s.KernelWait, s.Other, s.Gaps, s.LongestGap, s.Overlaps
	}
	streamIdle := data.NewFrame(prefix+"stream idle",
		data.NewField("device", nil, dev), data.NewField("stream", nil, stream), ns("busy", busy), ns("idle", idle),
		ns("host wait", hw), ns("kernel wait", kw), ns("other", oth), data.NewField("gaps", nil, gaps),
		ns("longest gap", longest), data.NewField("overlaps", nil, ovl))

	l := r.Launch
	launch := data.NewFrame(prefix+"launch statistics",
		data.NewField("kernels", nil, []int64{l.Kernels}), data.NewField("joined to launch", nil, []int64{l.Joined}),
		ns("delay avg", []float64{l.DelayAvg}), ns("delay median", []float64{l.DelayMedian}), ns("delay p95", []float64{l.DelayP95}),
		ns("delay max", []int64{l.DelayMax}), pct("shorter than launch", []float64{100 * l.ShorterThanLaunch}),
		data.NewField("sync calls", nil, []int64{r.Sync.Calls}), ns("sync time", []int64{r.Sync.Time}))

	c := len(r.Memcpy)
	dir, cnt, by, mb, bw, pg := make([]string, c), make([]int64, c), make([]int64, c), make([]int64, c), make([]float64, c), make([]int64, c)
	for i, v := range r.Memcpy {
		dir[i], cnt[i], by[i], mb[i], bw[i], pg[i] = v.Direction, v.Count, v.Bytes, v.Busy, v.BandwidthGBps, v.Pageable
	}
	memcpy := data.NewFrame(prefix+"memcpy",
		data.NewField("direction", nil, dir), data.NewField("count", nil, cnt),
		data.NewField("bytes", nil, by).SetConfig(&data.FieldConfig{Unit: "bytes"}), ns("busy", mb),
		data.NewField("bandwidth", nil, bw).SetConfig(&data.FieldConfig{Unit: "GBs"}), data.NewField("pageable", nil, pg))

	a := len(r.Advice)
	pat, rem, ev := make([]string, a), make([]string, a), make([]string, a)
	for i, v := range r.Advice {
		pat[i], rem[i], ev[i] = v.Pattern, v.Remedy, v.Evidence
	}
	advice := data.NewFrame(prefix+"advice", data.NewField("pattern", nil, pat), data.NewField("remedy", nil, rem), data.NewField("evidence", nil, ev))

	return []*data.Frame{summary, temporal, streamIdle, launch, memcpy, advice}
}
