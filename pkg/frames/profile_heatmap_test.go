package frames

import (
	"reflect"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

type cell struct {
	x          int64
	yMin, yMax float64
	count      int64
}

func cellsOf(f *data.Frame) []cell {
	var out []cell
	for i := range f.Rows() {
		out = append(out, cell{f.Fields[0].At(i).(time.Time).UnixMilli(), f.Fields[1].At(i).(float64), f.Fields[2].At(i).(float64), f.Fields[3].At(i).(int64)})
	}
	return out
}

func TestProfileHeatmapFramesAreGrafanasHeatmapCells(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	step := time.Minute
	series := []models.HeatmapSeries{{
		Labels: []models.LabelPair{{Name: "service_name", Value: "api"}, {Name: "pod", Value: "a"}},
		Slots: []models.HeatmapSlot{
			{Timestamp: t0, YMin: []float64{0, 1e9, 2e9}, Counts: []int64{2, 0, 1},
				Exemplars: []models.ProfileExemplar{{Timestamp: t0 - 1000, ProfileID: "p1", Value: 2_500_000_000}}},
			{Timestamp: t0 + 60000, YMin: []float64{0, 1e9, 2e9}, Counts: []int64{0, 3, 0}},
		},
	}, {
		Slots: []models.HeatmapSlot{{Timestamp: t0, YMin: []float64{5e8}, Counts: []int64{1}}},
	}}
	out := ProfileHeatmapFrames(series, cpuType, step, ProfileExemplars, exLinks)
	if len(out) != 3 {
		t.Fatalf("%d frames, want heatmap, exemplar, heatmap", len(out))
	}
	heat := out[0]
	if heat.Name != "heatmap{pod=a,service_name=api}" || heat.Meta.Type != "heatmap-cells" {
		t.Errorf("frame %q type %q", heat.Name, heat.Meta.Type)
	}
	if got := fieldNames(heat); !reflect.DeepEqual(got, []string{"xMax", "yMin", "yMax", "count"}) {
		t.Errorf("fields %v", got)
	}
	if heat.Fields[1].Config.Unit != "ns" || heat.Fields[2].Config.Unit != "ns" || !reflect.DeepEqual(heat.Fields[3].Labels, data.Labels{"service_name": "api", "pod": "a"}) {
		t.Errorf("units %q %q, count labels %v", heat.Fields[1].Config.Unit, heat.Fields[2].Config.Unit, heat.Fields[3].Labels)
	}
	// A bucket ends where the next starts; the last is as wide as the one before; empty buckets
	// are left out.
	want := []cell{{t0, 0, 1e9, 2}, {t0, 2e9, 3e9, 1}, {t0 + 60000, 1e9, 2e9, 3}}
	if got := cellsOf(heat); !reflect.DeepEqual(got, want) {
		t.Errorf("cells %v, want %v", got, want)
	}

	ex := out[1]
	if ex.Name != "exemplar" || ex.Fields[2].At(0) != "p1" || ex.Fields[1].At(0).(float64) != 2.5e9 || ex.Fields[1].Config.Unit != "ns" {
		t.Errorf("exemplar frame %q: %v %v %q", ex.Name, ex.Fields[2].At(0), ex.Fields[1].At(0), ex.Fields[1].Config.Unit)
	}
	if !reflect.DeepEqual(ex.Meta.Custom, map[string]any{"datasourceUID": "hsi-uid"}) || len(ex.Fields[2].Config.Links) != 1 {
		t.Errorf("exemplar meta %+v links %+v", ex.Meta, ex.Fields[2].Config.Links)
	}

	// A lone bucket ends at twice its start; one slot alone gets the zero-count row one step on
	// that tells the panel the slot's width.
	lone := out[2]
	if lone.Name != "heatmap" {
		t.Errorf("unlabelled series named %q", lone.Name)
	}
	if got, want := cellsOf(lone), []cell{{t0, 5e8, 1e9, 1}, {t0 + 60000, 5e8, 1e9, 0}}; !reflect.DeepEqual(got, want) {
		t.Errorf("lone bucket cells %v, want %v", got, want)
	}
}

func TestSpanHeatmapExemplarsNameTheSpan(t *testing.T) {
	series := []models.HeatmapSeries{{Slots: []models.HeatmapSlot{{Timestamp: 60000, YMin: []float64{0, 10}, Counts: []int64{1, 0},
		Exemplars: []models.ProfileExemplar{{Timestamp: 1000, ProfileID: "p", SpanID: "00f067aa0ba902b7", Value: 7}}}}}}
	out := ProfileHeatmapFrames(series, "memory:alloc_space:bytes:space:bytes", 30*time.Second, SpanExemplars, ExemplarLinks{})
	if len(out) != 2 || out[1].Fields[2].At(0) != "00f067aa0ba902b7" || out[1].Fields[2].Config.DisplayName != "Span ID" {
		t.Fatalf("frames %v", out)
	}
	if out[0].Fields[1].Config.Unit != "bytes" || out[1].Meta.Custom != nil {
		t.Errorf("unit %q, custom %v without a UID", out[0].Fields[1].Config.Unit, out[1].Meta.Custom)
	}
}
