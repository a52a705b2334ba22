package frames

import (
	"fmt"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
)

// Names of the kernels diff's frames.
const (
	KernelDiffFrameName         = "kernel diff"
	TemporalBreakdownDiffName   = "temporal breakdown diff"
	MaxKernelDiffRows           = 500
	kernelDiffChangeDescription = "the target's time per request less the baseline's"
)

// KernelDiff is the kernels query's diff view: the "kernel diff" table (per kernel name, the
// launches, time and mean of each side per request, the change in time per request in ns and in
// percent of the baseline's, the change of the mean, and which side alone ran it), biggest
// change first, at most MaxKernelDiffRows rows; and the "temporal breakdown diff" (each side's
// compute, communication, memcpy/memset, idle and span per request, and their shares of the
// span). The diff's notices (how the sides were normalised, little data, files that failed) go on
// the first frame.
func KernelDiff(d *gputrace.KernelDiff) data.Frames {
	ns := func(name, description string, v any) *data.Field {
		return data.NewField(name, nil, v).SetConfig(&data.FieldConfig{Unit: "ns", Description: description})
	}
	rows := d.Kernels
	if len(rows) > MaxKernelDiffRows {
		rows = rows[:MaxKernelDiffRows]
	}
	n := len(rows)
	names, onlyIn := make([]string, n), make([]string, n)
	countB, countT, totalB, totalT, change := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	meanB, meanT, changePct, meanChange := make([]*float64, n), make([]*float64, n), make([]*float64, n), make([]*float64, n)
	some := func(ok bool, v float64) *float64 {
		if !ok {
			return nil
		}
		return &v
	}
	for i, c := range rows {
		names[i], onlyIn[i] = c.Name, c.OnlyIn
		countB[i], countT[i] = round2(c.Baseline.CountPerRequest), round2(c.Target.CountPerRequest)
		totalB[i], totalT[i], change[i] = round2(c.Baseline.TotalPerRequest), round2(c.Target.TotalPerRequest), round2(c.Change)
		meanB[i] = some(c.Baseline.Count > 0, round2(c.Baseline.Mean))
		meanT[i] = some(c.Target.Count > 0, round2(c.Target.Mean))
		changePct[i] = some(c.HasPercent, round2(c.ChangePercent))
		meanChange[i] = some(c.HasMeanChange, round2(c.MeanChange))
	}
	kernels := data.NewFrame(KernelDiffFrameName,
		data.NewField("name", nil, names),
		data.NewField("count/request baseline", nil, countB).SetConfig(&data.FieldConfig{Description: "launches of the kernel per baseline request"}),
		data.NewField("count/request target", nil, countT).SetConfig(&data.FieldConfig{Description: "launches of the kernel per target request"}),
		ns("total/request baseline", "the kernel's time per baseline request", totalB),
		ns("total/request target", "the kernel's time per target request", totalT),
		ns("mean baseline", "the kernel's mean time per launch in the baseline; empty when it never ran there", meanB),
		ns("mean target", "the kernel's mean time per launch in the target; empty when it never ran there", meanT),
		ns("change", kernelDiffChangeDescription, change),
		data.NewField("change %", nil, changePct).SetConfig(&data.FieldConfig{Unit: "percent", Decimals: ptr(uint16(1)),
			Description: kernelDiffChangeDescription + ", in percent of the baseline's; empty when the baseline never ran it"}),
		ns("mean change", "the target's mean time per launch less the baseline's; empty unless both ran it", meanChange),
		data.NewField("only in", nil, onlyIn).SetConfig(&data.FieldConfig{Description: "baseline or target: the side that alone ran the kernel"}),
	)
	kernels.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	kernels.AppendNotices(Notices(d.Notices)...)
	if len(d.Kernels) > MaxKernelDiffRows {
		kernels.AppendNotices(Info(fmt.Sprintf("The %d kernels that changed most of %d are shown.", MaxKernelDiffRows, len(d.Kernels))))
	}

	bSpan, bCompute, bComm, bMem, bIdle := d.Baseline.TemporalPerRequest()
	tSpan, tCompute, tComm, tMem, tIdle := d.Target.TemporalPerRequest()
	parts := []struct {
		name string
		b, t float64
	}{{"compute", bCompute, tCompute}, {"communication", bComm, tComm}, {"memcpy/memset", bMem, tMem}, {"idle", bIdle, tIdle}, {"span", bSpan, tSpan}}
	m := len(parts)
	cat := make([]string, m)
	tb, tt, tc, sb, st := make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m), make([]float64, m)
	shareOf := func(v, span float64) float64 {
		if span == 0 {
			return 0
		}
		return round2(100 * v / span)
	}
	for i, p := range parts {
		cat[i], tb[i], tt[i], tc[i] = p.name, round2(p.b), round2(p.t), round2(p.t-p.b)
		sb[i], st[i] = shareOf(p.b, bSpan), shareOf(p.t, tSpan)
	}
	pct := func(name, description string, v []float64) *data.Field {
		return data.NewField(name, nil, v).SetConfig(&data.FieldConfig{Unit: "percent", Decimals: ptr(uint16(1)), Description: description})
	}
	temporal := data.NewFrame(TemporalBreakdownDiffName,
		data.NewField("category", nil, cat),
		ns("baseline/request", "the GPUs' time per baseline request (summed over GPUs)", tb),
		ns("target/request", "the GPUs' time per target request (summed over GPUs)", tt),
		ns("change", kernelDiffChangeDescription, tc),
		pct("baseline share", "of the baseline's span", sb),
		pct("target share", "of the target's span", st),
	)
	temporal.Meta = &data.FrameMeta{PreferredVisualization: data.VisTypeTable}
	return data.Frames{kernels, temporal}
}
