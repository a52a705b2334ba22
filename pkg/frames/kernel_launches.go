package frames

import (
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// KernelLaunchFrames builds the frames of the kernels query's launches view for one analysed
// trace file, durations in ns:
//
//   - "kernel launches", as Nsight Systems' cuda_kern_exec_sum: per kernel name and launch call,
//     the launches, those with a queue time, and the average, median, minimum and maximum of
//     the total, API, queue and kernel time, ordered by the total time's average;
//   - "ranges on the GPU", as nvtx_gpu_proj_sum: per range name (NVTX, record_function), the
//     instances that launched GPU work, their CPU time, the GPU time projected from their work
//     (total, average, median, minimum, maximum) and their GPU operations.
//
// Each frame's name is prefixed by the file when file is set; the file's notices go on the
// first frame.
func KernelLaunchFrames(file string, r *gputrace.Result) []*data.Frame {
	prefix := ""
	if file != "" {
		prefix = file + ": "
	}
	ns := func(name, description string, v any) *data.Field {
		return data.NewField(name, nil, v).SetConfig(&data.FieldConfig{Unit: "ns", Description: description})
	}
	count := func(name, description string, v any) *data.Field {
		return data.NewField(name, nil, v).SetConfig(&data.FieldConfig{Description: description})
	}

	// Four columns (avg, median, min, max) per phase; a nullable phase's are empty where no
	// launch had it (the queue time of kernels that all started before their call returned).
	type column struct {
		avg, med     []*float64
		mins, maxs   []*int64
		name, detail string
		nullable     bool
	}
	phase := func(name, detail string, nullable bool) *column {
		return &column{name: name, detail: detail, nullable: nullable}
	}
	add := func(c *column, d gputrace.Durations, have bool) {
		if !have {
			c.avg, c.med, c.mins, c.maxs = append(c.avg, nil), append(c.med, nil), append(c.mins, nil), append(c.maxs, nil)
			return
		}
		c.avg, c.med, c.mins, c.maxs = append(c.avg, &d.Avg), append(c.med, &d.Median), append(c.mins, &d.Min), append(c.maxs, &d.Max)
	}
	fields := func(c *column) []*data.Field {
		if c.nullable {
			return []*data.Field{ns(c.name+" avg", c.detail, c.avg), ns(c.name+" median", c.detail, c.med),
				ns(c.name+" min", c.detail, c.mins), ns(c.name+" max", c.detail, c.maxs)}
		}
		return []*data.Field{ns(c.name+" avg", c.detail, values(c.avg)), ns(c.name+" median", c.detail, values(c.med)),
			ns(c.name+" min", c.detail, values(c.mins)), ns(c.name+" max", c.detail, values(c.maxs))}
	}

	n := len(r.Launches)
	kernels, apis := make([]string, n), make([]string, n)
	launches, queued := make([]int64, n), make([]int64, n)
	total := phase("total", "From the launch call's start to the later of its end and the kernel's end", false)
	api := phase("API", "The launch call's time on the host", false)
	queue := phase("queue", "Kernel start − launch call end, over the launches whose kernel started after its call returned", true)
	kernel := phase("kernel", "The kernel's time on the GPU", false)
	for i, l := range r.Launches {
		kernels[i], apis[i], launches[i], queued[i] = l.Kernel, l.API, l.Count, l.Queued
		add(total, l.TotalTime, true)
		add(api, l.APITime, true)
		add(queue, l.QueueTime, l.Queued > 0)
		add(kernel, l.KernelTime, true)
	}
	cols := []*data.Field{data.NewField("kernel", nil, kernels), data.NewField("launch call", nil, apis),
		count("launches", "Kernels joined to their launch call on the correlation ID", launches),
		count("queued", "Launches with a queue time (nsys's QCount): the others' kernels started before their call returned", queued)}
	for _, c := range []*column{total, api, queue, kernel} {
		cols = append(cols, fields(c)...)
	}
	launchFrame := data.NewFrame(prefix+"kernel launches", cols...)
	launchFrame.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	launchFrame.AppendNotices(Notices(r.Notices)...)

	m := len(r.Ranges)
	names, inst, cpu, ops := make([]string, m), make([]int64, m), make([]int64, m), make([]int64, m)
	gpuTotal := make([]int64, m)
	gpu := phase("GPU", "From the first GPU operation launched in the range to the end of the last, per instance", false)
	for i, g := range r.Ranges {
		names[i], inst[i], cpu[i], ops[i], gpuTotal[i] = g.Name, g.Instances, g.RangeTime, g.GPUOps, g.Projected.Total
		add(gpu, g.Projected, true)
	}
	rangeCols := []*data.Field{data.NewField("range", nil, names),
		count("instances", "Instances of the range that launched GPU work", inst),
		ns("CPU time", "The instances' own durations on the host, summed", cpu),
		ns("GPU time", "The instances' projected GPU durations, summed", gpuTotal)}
	rangeCols = append(rangeCols, fields(gpu)...)
	rangeCols = append(rangeCols, count("GPU ops", "Launch calls (correlation IDs) of the GPU operations, summed over the instances", ops))
	rangeFrame := data.NewFrame(prefix+"ranges on the GPU", rangeCols...)
	rangeFrame.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}

	return []*data.Frame{launchFrame, rangeFrame}
}

// values are the values of a column that has one in every row.
func values[T any](ps []*T) []T {
	out := make([]T, len(ps))
	for i, p := range ps {
		out[i] = *p
	}
	return out
}

// KernelLaunchTraces are the kernels query's frames in the launches view: each analysed file's
// two frames (named by the file when several matched), the files that could not be read as
// warnings; with no file analysed, the two frames empty, carrying the notices.
func KernelLaunchTraces(files []gputrace.Found, missed notices.List) data.Frames {
	return perTraceFile(files, missed, KernelLaunchFrames)
}
