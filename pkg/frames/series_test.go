package frames

import (
	"math"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/experimental"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

const (
	cpuType     = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	allocType   = "memory:alloc_objects:count:space:bytes"
	allocSpace  = "memory:alloc_space:bytes:space:bytes"
	inuseType   = "memory:inuse_space:bytes:space:bytes"
	t0          = int64(1_700_000_000_000) // Unix ms of the first point
	fifteenSecs = 15 * time.Second
)

// checkGoldenSeries compares all frames of one answer with testdata/<name>.golden.
func checkGoldenSeries(t *testing.T, name string, frames []*data.Frame) {
	t.Helper()
	dr := &backend.DataResponse{Frames: frames}
	if err := experimental.CheckGoldenDataResponse("testdata/"+name+".golden", dr, updateGolden); err != nil {
		t.Error(err)
	}
}

// Two services' CPU over three 15 s steps: 15e9 ns in 15 s is one core.
var cpuByService = []models.ProfileSeries{
	{
		Labels: []models.LabelPair{{Name: "service_name", Value: "ai-detector"}},
		Points: []models.ProfilePoint{{Timestamp: t0, Value: 15e9}, {Timestamp: t0 + 15000, Value: 7.5e9}, {Timestamp: t0 + 30000, Value: 30e9}},
	},
	{
		Labels: []models.LabelPair{{Name: "service_name", Value: "nemotron-backend"}},
		Points: []models.ProfilePoint{{Timestamp: t0 + 15000, Value: 1.5e9}},
	},
}

func TestSeriesFramesTurnCPUNanosecondsIntoCores(t *testing.T) {
	frames := SeriesFrames(cpuByService, cpuType, fifteenSecs)
	if len(frames) != 2 {
		t.Fatalf("frames = %d, want one per series (2)", len(frames))
	}
	f := frames[0]
	if f.Name != "series" || len(f.Fields) != 2 || f.Fields[0].Name != "time" || f.Fields[1].Name != "cpu" {
		t.Fatalf("frame %q fields %v", f.Name, fieldNames(f))
	}
	if f.Fields[1].Type() != data.FieldTypeFloat64 || f.Fields[0].Type() != data.FieldTypeTime {
		t.Errorf("field types %v %v", f.Fields[0].Type(), f.Fields[1].Type())
	}
	wantValues(t, f, 1, 0.5, 2)
	if got := f.Fields[0].At(1).(time.Time); !got.Equal(time.UnixMilli(t0 + 15000)) {
		t.Errorf("second time = %v", got)
	}
	if f.Fields[1].Config.Unit != "cores" {
		t.Errorf("unit = %q, want cores", f.Fields[1].Config.Unit)
	}
	if f.Fields[1].Labels["service_name"] != "ai-detector" || frames[1].Fields[1].Labels["service_name"] != "nemotron-backend" {
		t.Errorf("labels %v, %v", f.Fields[1].Labels, frames[1].Fields[1].Labels)
	}
	if f.Meta.PreferredVisualization != data.VisTypeGraph || f.Meta.Custom.(map[string]any)["rateCalculated"] != true {
		t.Errorf("meta = %+v", f.Meta)
	}
	wantValues(t, frames[1], 0.1)
	checkGoldenSeries(t, "series_cpu_by_service", frames)
}

func TestSeriesFramesDivideByTheStepActuallyUsed(t *testing.T) {
	// The same 60e9 ns is 4 cores over 15 s and 1 core over 60 s.
	one := []models.ProfileSeries{{Points: []models.ProfilePoint{{Timestamp: t0, Value: 60e9}}}}
	wantValues(t, SeriesFrames(one, cpuType, 15*time.Second)[0], 4)
	wantValues(t, SeriesFrames(one, cpuType, time.Minute)[0], 1)
}

func TestSeriesFramesGiveAllocationsPerSecond(t *testing.T) {
	series := []models.ProfileSeries{{
		Labels: []models.LabelPair{{Name: "service_name", Value: "ai-enrichment"}, {Name: "span_name", Value: "enrich"}},
		Points: []models.ProfilePoint{{Timestamp: t0, Value: 6000}, {Timestamp: t0 + 60000, Value: 0}},
	}}
	frames := SeriesFrames(series, allocType, time.Minute)
	f := frames[0]
	if f.Fields[1].Name != "alloc_objects" || f.Fields[1].Config.Unit != "ops" {
		t.Errorf("field %q unit %q, want alloc_objects in ops", f.Fields[1].Name, f.Fields[1].Config.Unit)
	}
	wantValues(t, f, 100, 0)
	if len(f.Fields[1].Labels) != 2 || f.Fields[1].Labels["span_name"] != "enrich" {
		t.Errorf("labels = %v", f.Fields[1].Labels)
	}
	checkGoldenSeries(t, "series_alloc_objects", frames)

	space := SeriesFrames(series, allocSpace, time.Minute)[0]
	if space.Fields[1].Name != "alloc_space" || space.Fields[1].Config.Unit != "binBps" {
		t.Errorf("alloc_space field %q unit %q, want binBps", space.Fields[1].Name, space.Fields[1].Config.Unit)
	}
	wantValues(t, space, 100, 0)
}

func TestSeriesFramesLeaveInstantaneousTypesAsTheyAre(t *testing.T) {
	series := []models.ProfileSeries{{Points: []models.ProfilePoint{{Timestamp: t0, Value: 52428800}, {Timestamp: t0 + 15000, Value: 41943040}}}}
	frames := SeriesFrames(series, inuseType, fifteenSecs)
	f := frames[0]
	if f.Fields[1].Name != "inuse_space" || f.Fields[1].Config.Unit != "bytes" {
		t.Errorf("field %q unit %q, want inuse_space in bytes", f.Fields[1].Name, f.Fields[1].Config.Unit)
	}
	wantValues(t, f, 52428800, 41943040)
	if f.Meta.Custom != nil {
		t.Errorf("an instantaneous type must not claim a rate: meta.custom = %v", f.Meta.Custom)
	}
	if len(f.Fields[1].Labels) != 0 {
		t.Errorf("a series without groupBy has no labels, got %v", f.Fields[1].Labels)
	}
	checkGoldenSeries(t, "series_inuse_space", frames)
}

func TestSeriesFramesOfNoSeriesAreNoFrames(t *testing.T) {
	if frames := SeriesFrames(nil, cpuType, fifteenSecs); len(frames) != 0 {
		t.Errorf("frames = %d, want 0 as Grafana's Pyroscope data source", len(frames))
	}
	empty := SeriesFrames([]models.ProfileSeries{{}}, cpuType, fifteenSecs)
	if len(empty) != 1 || empty[0].Rows() != 0 || empty[0].Fields[1].Config.Unit != "cores" {
		t.Errorf("a series with no points: %+v", empty)
	}
}

func TestSeriesFramesNeverDivideByAZeroStep(t *testing.T) {
	one := []models.ProfileSeries{{Points: []models.ProfilePoint{{Timestamp: t0, Value: 60e9}}}}
	f := SeriesFrames(one, cpuType, 0)[0]
	wantValues(t, f, 60e9)
	if f.Fields[1].Config.Unit != "ns" || f.Meta.Custom != nil {
		t.Errorf("raw values must keep the raw unit and claim no rate: unit %q custom %v", f.Fields[1].Config.Unit, f.Meta.Custom)
	}
}

func TestKindOfClassifiesTheProfileTypes(t *testing.T) {
	cases := []struct {
		id               string
		cumulative, cpu  bool
		unit, sampleType string
	}{
		{cpuType, true, true, "cores", "cpu"},
		{"process_cpu:samples:count:cpu:nanoseconds", true, false, "ops", "samples"},
		{"process_cpu:cpu_samples:count:cpu:nanoseconds", true, false, "ops", "cpu_samples"},
		{allocType, true, false, "ops", "alloc_objects"},
		{allocSpace, true, false, "binBps", "alloc_space"},
		{"memory:inuse_objects:count:space:bytes", false, false, "short", "inuse_objects"},
		{inuseType, false, false, "bytes", "inuse_space"},
		{"goroutine:goroutine:count:goroutine:count", false, false, "short", "goroutine"},
		{"goroutines:goroutine:count:goroutine:count", false, false, "short", "goroutine"},
		{"mutex:contentions:count:contentions:count", true, false, "ops", "contentions"},
		{"mutex:delay:nanoseconds:contentions:count", true, false, "ns", "delay"},
		{"block:delay:nanoseconds:contentions:count", true, false, "ns", "delay"},
		{"wall:wall:nanoseconds:wall:nanoseconds", true, false, "ns", "wall"},
		{"process_cpu:lock_count:count:cpu:nanoseconds", true, false, "ops", "lock_count"},
		{"custom:widgets:widgets:x:y", true, false, "widgets", "widgets"},
		{"broken", false, false, "short", "value"},
	}
	for _, c := range cases {
		k := KindOf(c.id)
		if k.Cumulative != c.cumulative || k.CPU != c.cpu || k.Unit != c.unit {
			t.Errorf("%s: %+v, want cumulative %v cpu %v unit %q", c.id, k, c.cumulative, c.cpu, c.unit)
		}
		if got := models.SampleType(c.id); got != c.sampleType {
			t.Errorf("%s: sample type %q, want %q", c.id, got, c.sampleType)
		}
	}
}

func wantValues(t *testing.T, f *data.Frame, want ...float64) {
	t.Helper()
	if f.Rows() != len(want) {
		t.Fatalf("rows = %d, want %d", f.Rows(), len(want))
	}
	for i, w := range want {
		if got := f.Fields[1].At(i).(float64); math.Abs(got-w) > 1e-9*math.Max(1, math.Abs(w)) {
			t.Errorf("value %d = %v, want %v", i, got, w)
		}
	}
}

func fieldNames(f *data.Frame) []string {
	var names []string
	for _, fl := range f.Fields {
		names = append(names, fl.Name)
	}
	return names
}
