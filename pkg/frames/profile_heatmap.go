package frames

import (
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// ProfileHeatmapFrameName names a heatmap frame of series without labels; a series with labels is
// "heatmap{name=value,...}", labels sorted, as Grafana's Pyroscope data source names them.
const ProfileHeatmapFrameName = "heatmap"

// ProfileHeatmapFrames turns Pyroscope's SelectHeatmap answer into one heatmap-cells frame per
// series (HeatmapCells), each followed by the frame of its exemplars when it has any, as Grafana's
// Pyroscope data source answers includeHeatmap (heatmap.CreateHeatmapFrame). Values are the
// individual profiles' (or spans') totals in the profile type's unit, not rates. The exemplar
// frames carry this data source's UID in meta.custom.datasourceUID, as Grafana's do.
func ProfileHeatmapFrames(series []models.HeatmapSeries, profileTypeID string, step time.Duration, kind ExemplarKind, links ExemplarLinks) []*data.Frame {
	unit := ProfileUnit(profileTypeID)
	out := make([]*data.Frame, 0, 2*len(series))
	for _, s := range series {
		var exemplars []models.ProfileExemplar
		for _, sl := range s.Slots {
			exemplars = append(exemplars, sl.Exemplars...)
		}
		out = append(out, HeatmapCells(heatmapName(s.Labels), labelsOf(s.Labels), heatmapCells(s.Slots), unit, step))
		if len(exemplars) > 0 {
			f := ExemplarFrame(s.Labels, exemplars, kind, unit, 1, links)
			if links.DatasourceUID != "" {
				f.Meta.Custom = map[string]any{"datasourceUID": links.DatasourceUID}
			}
			out = append(out, f)
		}
	}
	return out
}

// heatmapCells are the slots' buckets as cells. Pyroscope sends each bucket's lower bound only:
// a bucket ends where the next starts; the last is as wide as the one before it, and a lone
// bucket ends at twice its start, as Grafana's data source reads them.
func heatmapCells(slots []models.HeatmapSlot) []HeatmapCell {
	var cells []HeatmapCell
	for _, sl := range slots {
		x := time.UnixMilli(sl.Timestamp)
		for j := range min(len(sl.YMin), len(sl.Counts)) {
			if sl.Counts[j] == 0 {
				continue
			}
			var yMax float64
			switch {
			case j+1 < len(sl.YMin):
				yMax = sl.YMin[j+1]
			case j > 0:
				yMax = sl.YMin[j] + (sl.YMin[j] - sl.YMin[j-1])
			default:
				yMax = sl.YMin[j] * 2
			}
			cells = append(cells, HeatmapCell{XMax: x, YMin: sl.YMin[j], YMax: yMax, Count: sl.Counts[j]})
		}
	}
	return cells
}

// heatmapName is "heatmap", or "heatmap{a=1,b=2}" with the series' labels sorted by name.
func heatmapName(labels []models.LabelPair) string {
	if len(labels) == 0 {
		return ProfileHeatmapFrameName
	}
	sorted := slices.SortedFunc(slices.Values(labels), func(a, b models.LabelPair) int { return strings.Compare(a.Name, b.Name) })
	pairs := make([]string, len(sorted))
	for i, l := range sorted {
		pairs[i] = l.Name + "=" + l.Value
	}
	return ProfileHeatmapFrameName + "{" + strings.Join(pairs, ",") + "}"
}
