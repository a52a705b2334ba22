package frames

import (
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// SeriesFrameName is the name of each frame of a metrics query, as Grafana's Pyroscope data
// source names them (seriesToDataFrames in pkg/tsdb/grafana-pyroscope-datasource/query.go).
const SeriesFrameName = "series"

// SeriesKind says how a profile type's values over time are shown.
type SeriesKind struct {
	// Cumulative types count something per profiling period (CPU time, allocations, samples,
	// contentions): a step's sum only means something relative to the step, so each value is
	// divided by the step and becomes a rate. Instantaneous types (heap in use, goroutines) are a
	// level at a moment and are shown as they are.
	Cumulative bool
	// CPU is CPU time in nanoseconds: its rate is further divided by 1e9, giving cores in use.
	CPU bool
	// Unit is the Grafana unit of the shown values.
	Unit string
}

// instantaneousSampleTypes are the sample types (second part of a profile type ID) that are a
// level, not a count per period: Go's and Java's heap in use and the goroutine count. Every other
// sample type is cumulative: a profiler sends the CPU time, allocations, samples, contentions or
// delays of each period, which is what Pyroscope's own Go, Java, Python, Ruby and eBPF profilers
// do. Grafana's registry (profile-metrics.json) agrees on every listed type except two it marks
// "instant" although they count per period: process_cpu:samples:count:cpu:nanoseconds and
// *:lock_count:count:*; here they are rates like their siblings.
var instantaneousSampleTypes = map[string]bool{
	"inuse_objects": true,
	"inuse_space":   true,
	"goroutine":     true,
	"goroutines":    true,
}

// KindOf classifies a profile type ID (name:sample_type:sample_unit:period_type:period_unit).
//
// Rate units follow Grafana's Pyroscope data source: CPU nanoseconds → "cores", bytes → "binBps",
// count → "ops"; other nanosecond types (wall, block and mutex delay, lock time) become
// nanoseconds per second and keep "ns", as there; any other unit is kept.
func KindOf(profileTypeID string) SeriesKind {
	parts := strings.Split(profileTypeID, ":")
	sampleType, sampleUnit := "", ""
	if len(parts) >= 3 {
		sampleType, sampleUnit = parts[1], parts[2]
	}
	unit := ProfileUnit(profileTypeID)
	if sampleType == "" || instantaneousSampleTypes[sampleType] || strings.HasPrefix(sampleType, "inuse_") {
		return SeriesKind{Unit: unit}
	}
	k := SeriesKind{Cumulative: true}
	switch {
	case sampleUnit == "nanoseconds" && sampleType == "cpu":
		k.CPU, k.Unit = true, "cores"
	case unit == "bytes":
		k.Unit = "binBps"
	case unit == "short":
		k.Unit = "ops"
	default:
		k.Unit = unit
	}
	return k
}

// SeriesFrames builds one frame per series, as Grafana's Pyroscope data source does: named
// "series", a "time" field and a float64 value field named after the sample type carrying the
// series' labels, with meta.preferredVisualisationType "graph". Cumulative types are divided by
// the step (see KindOf), and their frames say so with meta.custom.rateCalculated = true. No
// series gives no frames, as there. Series are separate frames because their points need not
// share timestamps.
func SeriesFrames(series []models.ProfileSeries, profileTypeID string, step time.Duration) []*data.Frame {
	kind := KindOf(profileTypeID)
	// A zero step would divide by zero; the plugin never asks for one, so values stay raw.
	rate := kind.Cumulative && step > 0
	unit := kind.Unit
	if kind.Cumulative && !rate {
		unit = ProfileUnit(profileTypeID)
	}
	divisor := 1.0
	if rate {
		divisor = step.Seconds()
		if kind.CPU {
			divisor *= 1e9
		}
	}

	frames := make([]*data.Frame, 0, len(series))
	for _, s := range series {
		labels := data.Labels{}
		for _, l := range s.Labels {
			labels[l.Name] = l.Value
		}
		times := make([]time.Time, 0, len(s.Points))
		values := make([]float64, 0, len(s.Points))
		for _, p := range s.Points {
			times = append(times, time.UnixMilli(p.Timestamp).UTC())
			values = append(values, p.Value/divisor)
		}
		meta := &data.FrameMeta{PreferredVisualization: data.VisTypeGraph}
		if rate {
			meta.Custom = map[string]any{"rateCalculated": true}
		}
		frame := data.NewFrame(SeriesFrameName,
			data.NewField("time", nil, times),
			data.NewField(models.SampleType(profileTypeID), labels, values).SetConfig(&data.FieldConfig{Unit: unit}),
		)
		frame.Meta = meta
		frames = append(frames, frame)
	}
	return frames
}
