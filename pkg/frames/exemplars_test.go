package frames

import (
	"reflect"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// cpuType and fieldNames are in series_test.go.

var exLinks = ExemplarLinks{DatasourceUID: "hsi-uid", DatasourceName: "HSI", LabelSelector: `{service_name="api"}`, ProfileTypeID: cpuType}

func TestExemplarFrameHasGrafanasFieldsAndLabelColumns(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	series := []models.LabelPair{{Name: "service_name", Value: "api"}, {Name: "pod", Value: "series-pod"}}
	exemplars := []models.ProfileExemplar{
		{Timestamp: t0, ProfileID: "7c9e6679-7425-40de-944b-e07fc1f90ae7", SpanID: "00f067aa0ba902b7", Value: 3_000_000_000,
			Labels: []models.LabelPair{{Name: "pod", Value: "own-pod"}, {Name: "node", Value: "n1"}, {Name: "__private", Value: "x"}}},
		{Timestamp: t0 + 15000, ProfileID: "0f8fad5b-d9cb-469f-a165-70867728950e", Value: 1_500_000_000},
	}
	f := ExemplarFrame(series, exemplars, ProfileExemplars, "cores", 15e9, exLinks)

	if f.Name != "exemplar" || f.Meta == nil || f.Meta.DataTopic != data.DataTopicAnnotations {
		t.Fatalf("frame %q meta %+v", f.Name, f.Meta)
	}
	// Time, Value, Id, then every label name sorted: the series' and the exemplars' own, never
	// Pyroscope's private "__" ones.
	if got, want := fieldNames(f), []string{"Time", "Value", "Id", "node", "pod", "service_name"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
	if got := f.Fields[0].At(1).(time.Time); !got.Equal(time.UnixMilli(t0 + 15000)) {
		t.Errorf("second time %v", got)
	}
	value := f.Fields[1]
	if value.At(0).(float64) != 0.2 || value.At(1).(float64) != 0.1 {
		t.Errorf("values %v, %v: want the raw values divided by 15e9", value.At(0), value.At(1))
	}
	if value.Config.DisplayName != "Value" || value.Config.Unit != "cores" || !reflect.DeepEqual(value.Labels, data.Labels{"service_name": "api", "pod": "series-pod"}) {
		t.Errorf("value field config %+v labels %v", value.Config, value.Labels)
	}
	id := f.Fields[2]
	if id.At(0) != "7c9e6679-7425-40de-944b-e07fc1f90ae7" || id.Config.DisplayName != "Profile ID" {
		t.Errorf("Id %v shown as %q", id.At(0), id.Config.DisplayName)
	}
	// An exemplar's own label wins over the series'; one it lacks takes the series'.
	pod, node := f.Fields[4], f.Fields[3]
	if pod.At(0) != "own-pod" || pod.At(1) != "series-pod" || node.At(0) != "n1" || node.At(1) != "" {
		t.Errorf("pod %v/%v node %v/%v", pod.At(0), pod.At(1), node.At(0), node.At(1))
	}
}

func TestProfileExemplarsLinkToTheProfileAsGrafanaDoes(t *testing.T) {
	f := ExemplarFrame(nil, []models.ProfileExemplar{{ProfileID: "7c9e6679-7425-40de-944b-e07fc1f90ae7"}}, ProfileExemplars, "ns", 1, exLinks)
	links := f.Fields[2].Config.Links
	if len(links) != 1 || links[0].Title != "View profile" || links[0].Internal == nil {
		t.Fatalf("links %+v", links)
	}
	in := links[0].Internal
	want := map[string]any{
		"queryType": "profile", "labelSelector": `{service_name="api"}`, "profileTypeId": cpuType,
		"profileIdSelector": []string{"${__value.raw}"}, "groupBy": []string{},
		"heatmapType": "individual", "includeExemplars": false, "includeHeatmap": false,
	}
	if in.DatasourceUID != "hsi-uid" || in.DatasourceName != "HSI" || !reflect.DeepEqual(in.Query, want) {
		t.Errorf("internal link %+v", in)
	}
	// The link's query must read back as a profile query of that one profile.
	q, err := models.ParseProfileQuery(mustJSON(t, map[string]any{"queryType": "profile", "labelSelector": in.Query.(map[string]any)["labelSelector"],
		"profileTypeId": cpuType, "profileIdSelector": []string{"7c9e6679-7425-40de-944b-e07fc1f90ae7"}}))
	if err != nil || len(q.ProfileIDSelector) != 1 {
		t.Errorf("link query does not parse: %v", err)
	}

	if f := ExemplarFrame(nil, []models.ProfileExemplar{{ProfileID: "x"}}, ProfileExemplars, "ns", 1, ExemplarLinks{}); f.Fields[2].Config.Links != nil {
		t.Errorf("a link without this data source's UID: %+v", f.Fields[2].Config.Links)
	}
}

func TestSpanExemplarsShowTheSpanIDAndLinkToTheSpansProfile(t *testing.T) {
	f := ExemplarFrame(nil, []models.ProfileExemplar{{ProfileID: "7c9e6679-7425-40de-944b-e07fc1f90ae7", SpanID: "00f067aa0ba902b7"}}, SpanExemplars, "ns", 1, exLinks)
	id := f.Fields[2]
	if id.At(0) != "00f067aa0ba902b7" || id.Config.DisplayName != "Span ID" {
		t.Fatalf("Id %v shown as %q", id.At(0), id.Config.DisplayName)
	}
	l := id.Config.Links
	if len(l) != 1 || l[0].Internal == nil || !reflect.DeepEqual(l[0].Internal.Query.(map[string]any)["spanSelector"], []string{"${__value.raw}"}) ||
		l[0].Internal.Query.(map[string]any)["queryType"] != "profile" || l[0].Internal.Query.(map[string]any)["profileIdSelector"] != nil {
		t.Errorf("span link %+v", l)
	}
}

func TestSeriesExemplarsFollowTheirSeriesAndSitOnItsScale(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).UnixMilli()
	series := []models.ProfileSeries{
		{Labels: []models.LabelPair{{Name: "service_name", Value: "api"}}, Points: []models.ProfilePoint{
			{Timestamp: t0, Value: 30e9, Exemplars: []models.ProfileExemplar{{Timestamp: t0 + 1000, ProfileID: "a", Value: 30e9}}},
			{Timestamp: t0 + 15000, Value: 15e9},
		}},
		{Labels: []models.LabelPair{{Name: "service_name", Value: "db"}}, Points: []models.ProfilePoint{{Timestamp: t0, Value: 3e9}}},
		{Labels: []models.LabelPair{{Name: "service_name", Value: "web"}}, Points: []models.ProfilePoint{
			{Timestamp: t0, Value: 6e9, Exemplars: []models.ProfileExemplar{{Timestamp: t0, ProfileID: "b", Value: 6e9}, {Timestamp: t0 + 2000, ProfileID: "c", Value: 1}}},
		}},
	}
	out := ProfileSeriesFrames(series, cpuType, 15*time.Second, exLinks)
	var names []string
	for _, f := range out {
		names = append(names, f.Name)
	}
	if want := []string{"series", "exemplar", "series", "series", "exemplar"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("frames %v, want %v", names, want)
	}
	if out[1].Fields[2].At(0) != "a" || out[4].Rows() != 2 || out[4].Fields[1].Labels["service_name"] != "web" {
		t.Errorf("exemplar frames are not their series': %v, %d rows, labels %v", out[1].Fields[2].At(0), out[4].Rows(), out[4].Fields[1].Labels)
	}
}

// An exemplar of the same raw value as its point must be drawn at the point's height in the
// point's unit, whatever conversion SeriesFrames applies to the type.
func TestSeriesExemplarValuesGoThroughTheSeriesConversion(t *testing.T) {
	for _, tc := range []struct {
		profileType string
		step        time.Duration
	}{
		{cpuType, 15 * time.Second},
		{cpuType, 0},
		{"memory:alloc_objects:count:space:bytes", time.Minute},
		{"memory:alloc_space:bytes:space:bytes", 30 * time.Second},
		{"memory:inuse_space:bytes:space:bytes", time.Minute},
		{"block:delay:nanoseconds:contentions:count", 10 * time.Second},
	} {
		raw := 45e9
		series := []models.ProfileSeries{{Points: []models.ProfilePoint{{Timestamp: 1, Value: raw, Exemplars: []models.ProfileExemplar{{ProfileID: "p", Value: int64(raw)}}}}}}
		out := ProfileSeriesFrames(series, tc.profileType, tc.step, ExemplarLinks{})
		if len(out) != 2 {
			t.Fatalf("%s: %d frames", tc.profileType, len(out))
		}
		point, ex := out[0].Fields[1], out[1].Fields[1]
		if point.At(0) != ex.At(0) || point.Config.Unit != ex.Config.Unit {
			t.Errorf("%s step %v: point %v %s, exemplar %v %s", tc.profileType, tc.step, point.At(0), point.Config.Unit, ex.At(0), ex.Config.Unit)
		}
	}
}
