package frames

import (
	"cmp"
	"slices"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// HeatmapCell is one cell of a heatmap: a time bucket's right edge (the bucket covers
// (XMax-step, XMax]), a value bucket [YMin, YMax) and how many things fell in it.
type HeatmapCell struct {
	XMax       time.Time
	YMin, YMax float64
	Count      int64
}

// HeatmapCells builds a sparse heatmap-cells frame, Grafana's dataplane heatmap contract as its
// heatmap panel reads it and Grafana's Pyroscope data source writes it: fields xMax (time), yMin,
// yMax (in unit) and count (carrying the series' labels), meta.type "heatmap-cells"; having both
// yMin and yMax is what marks the frame sparse. Empty cells are left out.
//
// The panel does not read the bucket width from xMin (or the interval) but from the first gap
// between xMax values, so when the second time bucket holds nothing a zero-count row is put
// there, as Grafana's Pyroscope data source does; otherwise two sparse columns far apart would
// be drawn as one wide bucket.
func HeatmapCells(name string, labels data.Labels, cells []HeatmapCell, unit string, step time.Duration) *data.Frame {
	kept := make([]HeatmapCell, 0, len(cells))
	for _, c := range cells {
		if c.Count > 0 {
			kept = append(kept, c)
		}
	}
	slices.SortStableFunc(kept, func(a, b HeatmapCell) int {
		return cmp.Or(a.XMax.Compare(b.XMax), cmp.Compare(a.YMin, b.YMin))
	})
	if len(kept) > 0 && step > 0 {
		first := kept[0]
		next := first.XMax.Add(step)
		at := slices.IndexFunc(kept, func(c HeatmapCell) bool { return !c.XMax.Equal(first.XMax) })
		if at < 0 || !kept[at].XMax.Equal(next) {
			if at < 0 {
				at = len(kept)
			}
			kept = slices.Insert(kept, at, HeatmapCell{XMax: next, YMin: first.YMin, YMax: first.YMax})
		}
	}
	n := len(kept)
	xs, ymins, ymaxs, counts := make([]time.Time, n), make([]float64, n), make([]float64, n), make([]int64, n)
	for i, c := range kept {
		xs[i], ymins[i], ymaxs[i], counts[i] = c.XMax.UTC(), c.YMin, c.YMax, c.Count
	}
	f := data.NewFrame(name,
		data.NewField("xMax", nil, xs).SetConfig(&data.FieldConfig{Interval: float64(step.Milliseconds())}),
		data.NewField("yMin", nil, ymins).SetConfig(&data.FieldConfig{Unit: unit}),
		data.NewField("yMax", nil, ymaxs).SetConfig(&data.FieldConfig{Unit: unit}),
		data.NewField("count", labels, counts),
	)
	f.Meta = &data.FrameMeta{Type: FrameTypeHeatmapCells}
	return f
}

// FrameTypeHeatmapCells is the dataplane's heatmap-cells frame type (DataFrameType.HeatmapCells in
// @grafana/data); the SDK has no constant for it.
const FrameTypeHeatmapCells data.FrameType = "heatmap-cells"

// ExemplarFrameName is the name Grafana's heatmap and time series panels look for among a
// response's annotation frames to draw exemplars.
const ExemplarFrameName = "exemplar"
