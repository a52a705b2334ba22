package frames

import (
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

var heatT0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

func TestHeatmapCellsIsTheSparseDataplaneFrameSortedWithoutEmptyCells(t *testing.T) {
	step := time.Minute
	f := HeatmapCells("h", data.Labels{"service": "b"}, []HeatmapCell{
		{XMax: heatT0.Add(2 * step), YMin: 0.1, YMax: 0.2, Count: 3},
		{XMax: heatT0.Add(step), YMin: 0.2, YMax: 0.4, Count: 1},
		{XMax: heatT0.Add(step), YMin: 0.1, YMax: 0.2, Count: 0}, // empty: left out
		{XMax: heatT0.Add(step), YMin: 0.05, YMax: 0.1, Count: 2},
	}, "s", step)
	if f.Meta == nil || f.Meta.Type != "heatmap-cells" {
		t.Fatalf("meta %+v: the heatmap panel picks frames by meta.type heatmap-cells", f.Meta)
	}
	names := []string{}
	for _, fl := range f.Fields {
		names = append(names, fl.Name)
	}
	if strings.Join(names, ",") != "xMax,yMin,yMax,count" {
		t.Fatalf("fields %v, want xMax,yMin,yMax,count (yMin and yMax mark the frame sparse)", names)
	}
	if f.Fields[3].Labels["service"] != "b" || f.Fields[1].Config.Unit != "s" || f.Fields[2].Config.Unit != "s" {
		t.Errorf("labels %v, units %q %q", f.Fields[3].Labels, f.Fields[1].Config.Unit, f.Fields[2].Config.Unit)
	}
	want := []struct {
		x     time.Time
		ymin  float64
		count int64
	}{{heatT0.Add(step), 0.05, 2}, {heatT0.Add(step), 0.2, 1}, {heatT0.Add(2 * step), 0.1, 3}}
	if f.Rows() != len(want) {
		t.Fatalf("%d rows, want %d", f.Rows(), len(want))
	}
	for i, w := range want {
		if x := f.Fields[0].At(i).(time.Time); !x.Equal(w.x) || f.Fields[1].At(i).(float64) != w.ymin || f.Fields[3].At(i).(int64) != w.count {
			t.Errorf("row %d: %v %v %v, want %v %v %v", i, x, f.Fields[1].At(i), f.Fields[3].At(i), w.x, w.ymin, w.count)
		}
	}
}

// The heatmap panel reads the bucket width from the first gap between xMax values: when the
// second bucket is empty, a zero-count row one step after the first keeps the width right.
func TestHeatmapCellsAddsACalibrationRowWhenTheSecondBucketIsEmpty(t *testing.T) {
	step := 15 * time.Second
	f := HeatmapCells("h", nil, []HeatmapCell{
		{XMax: heatT0, YMin: 0.1, YMax: 0.2, Count: 1},
		{XMax: heatT0.Add(10 * step), YMin: 0.1, YMax: 0.2, Count: 4},
	}, "s", step)
	if f.Rows() != 3 {
		t.Fatalf("%d rows, want the two cells and one calibration row", f.Rows())
	}
	if x := f.Fields[0].At(1).(time.Time); !x.Equal(heatT0.Add(step)) || f.Fields[3].At(1).(int64) != 0 {
		t.Errorf("row 1 = %v count %v, want a zero count at %v", x, f.Fields[3].At(1), heatT0.Add(step))
	}
	// Adjacent buckets need none.
	g := HeatmapCells("h", nil, []HeatmapCell{{XMax: heatT0, YMin: 1, YMax: 2, Count: 1}, {XMax: heatT0.Add(step), YMin: 1, YMax: 2, Count: 1}}, "s", step)
	if g.Rows() != 2 {
		t.Errorf("%d rows for two adjacent buckets, want 2", g.Rows())
	}
}

func TestSpanHeatmapExemplarsLinkToTheTraceTheRequestAndTheSpanProfile(t *testing.T) {
	slow := models.Span{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7", Service: "backend", Operation: "GET /api",
		Start: heatT0, Duration: 437 * time.Millisecond, Attributes: map[string]string{models.ProfileIDAttribute: "00f067aa0ba902b7"}}
	found := &correlate.OperationSpans{Service: "backend", Operation: "GET /api", Spans: []models.Span{slow}, Traces: 1, Limit: 500}
	h := correlate.BuildSpanHeatmap(found.Spans, time.Minute)
	out := SpanHeatmap(h, found, models.DefaultProfileTypeID, TraceLinks{TraceDatasourceUID: "jaeger", DatasourceUID: "hsi", DatasourceName: "HSI"})
	if len(out) != 2 {
		t.Fatalf("%d frames, want the heatmap and its exemplars", len(out))
	}
	ex := out[1]
	if ex.Name != "exemplar" || ex.Meta == nil || ex.Meta.DataTopic != data.DataTopicAnnotations {
		t.Fatalf("exemplar frame %q meta %+v: the heatmap panel looks for an annotations frame named exemplar", ex.Name, ex.Meta)
	}
	if v := ex.Fields[1].At(0).(float64); v != 0.437 || ex.Fields[1].Config.Unit != "s" {
		t.Errorf("value %v %q, want 0.437 s", v, ex.Fields[1].Config.Unit)
	}
	if x := ex.Fields[0].At(0).(time.Time); !x.Equal(heatT0.Add(437 * time.Millisecond)) {
		t.Errorf("time %v, want the span's end (where the heatmap counts it)", x)
	}
	links := map[string]data.DataLink{}
	for _, fl := range ex.Fields {
		if fl.Config == nil {
			continue
		}
		for _, l := range fl.Config.Links {
			links[fl.Name+"/"+l.Title] = l
		}
	}
	if l, ok := links["traceID/Open trace"]; !ok || l.Internal.DatasourceUID != "jaeger" || l.Internal.Query.(map[string]any)["query"] != "${__value.raw}" {
		t.Errorf("trace link %+v", l)
	}
	if l, ok := links["traceID/Request flame graph"]; !ok || l.Internal.Query.(map[string]any)["traceId"] != "${__value.raw}" {
		t.Errorf("request link %+v", l)
	}
	if l, ok := links["profileID/Span profile"]; !ok || l.Internal.DatasourceUID != "hsi" {
		t.Errorf("span profile link %+v (links %v)", l, links)
	} else if q := l.Internal.Query.(map[string]any); q["spanSelector"].([]any)[0] != "${__data.fields.profileID}" || !strings.Contains(q["labelSelector"].(string), "${__data.fields.service}") {
		t.Errorf("span profile query %v", q)
	}

	// Spans without a span profile get no link to an empty flame graph.
	delete(slow.Attributes, models.ProfileIDAttribute)
	found.Spans = []models.Span{slow}
	out = SpanHeatmap(correlate.BuildSpanHeatmap(found.Spans, time.Minute), found, models.DefaultProfileTypeID, TraceLinks{DatasourceUID: "hsi"})
	if _, ok := out[1].FieldByName("profileID"); ok != -1 {
		t.Error("a profileID field for spans that have no span profile")
	}
}
