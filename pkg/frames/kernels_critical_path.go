package frames

import (
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// CriticalPathFrames are the "critical path" table (time and share of the path by HTA's
// bound_by) and the "critical path segments" table (its longest parts) of one trace file; the
// verdict line is an info notice on the first. Both are empty when the trace has no path.
func CriticalPathFrames(file string, cp *gputrace.CriticalPath) []*data.Frame {
	prefix := ""
	if file != "" {
		prefix = file + ": "
	}
	ns := func(name string, v any) *data.Field {
		return data.NewField(name, nil, v).SetConfig(&data.FieldConfig{Unit: "ns"})
	}
	var bound []string
	var dur []int64
	var share []float64
	var what, where, sb []string
	var sdur, sstart []int64
	if cp != nil {
		for _, p := range cp.Composition {
			bound, dur, share = append(bound, p.BoundBy), append(dur, p.Time), append(share, p.Share)
		}
		for _, s := range cp.Segments {
			what, where, sb = append(what, s.What), append(where, s.Where), append(sb, s.BoundBy)
			sdur, sstart = append(sdur, s.Time), append(sstart, s.Start)
		}
	}
	path := data.NewFrame(prefix+"critical path", data.NewField("bound_by", nil, orEmpty(bound)),
		ns("duration", orEmpty(dur)), data.NewField("share", nil, orEmpty(share)).SetConfig(&data.FieldConfig{Unit: "percent"}))
	path.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	if cp != nil {
		path.AppendNotices(Info(cp.VerdictLine))
	}
	segs := data.NewFrame(prefix+"critical path segments", data.NewField("what", nil, orEmpty(what)),
		data.NewField("where", nil, orEmpty(where)), data.NewField("bound_by", nil, orEmpty(sb)),
		ns("duration", orEmpty(sdur)), ns("start", orEmpty(sstart)))
	segs.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return []*data.Frame{path, segs}
}

func orEmpty[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// KernelCriticalPaths answers a kernels query with view "criticalPath": each file's critical
// path frames, the file's notices on its first.
func KernelCriticalPaths(files []gputrace.Found, missed notices.List) data.Frames {
	return perTraceFile(files, missed, func(name string, r *gputrace.Result) []*data.Frame {
		fs := CriticalPathFrames(name, r.CriticalPath)
		fs[0].AppendNotices(Notices(r.Notices)...)
		return fs
	})
}
