package frames

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// AnnotationsFrameName is the name of the frame of Pyroscope's ingestion annotations.
const AnnotationsFrameName = "annotations"

// The annotation keys Pyroscope's distributors write and Grafana's Pyroscope data source shows;
// others are left out, as there.
const (
	AnnotationThrottled = "pyroscope.ingest.throttled"
	AnnotationSampled   = "pyroscope.ingest.sampled"
)

// AnnotationsFrame turns the annotations on the series' points into Grafana's annotation frame,
// as its Pyroscope data source does (annotation.CreateAnnotationFrame): named "annotations",
// meta.dataTopic "annotations", fields time, timeEnd, text, isRegion and color (empty: the
// panel's default). Throttling reads "Ingestion limit (<limit>/<period>) reached" from the
// point to the limit's reset time, a region once the reset has passed (now); sampling reads
// "<n>% of profiles for this service have been dropped by sampling rules" at the point. An
// annotation equal to the one before it (same limit and reset time, same usage group and share)
// extends that one instead of adding a row. Nil when no point has an annotation.
//
// An annotation whose value does not read is left out and described in skipped; Grafana's
// data source fails the whole query instead, which would hide the series for one bad note.
func AnnotationsFrame(series []models.ProfileSeries, now time.Time) (frame *data.Frame, skipped []string) {
	var rows annotationRows
	seen := false
	for _, s := range series {
		for _, p := range s.Points {
			for _, a := range p.Annotations {
				seen = true
				row, err := annotationRow(a, p.Timestamp, now)
				switch {
				case err != nil:
					skipped = append(skipped, fmt.Sprintf("%s at %s: %v", a.Key, time.UnixMilli(p.Timestamp).UTC().Format(time.RFC3339), err))
				case row != nil:
					rows.add(row)
				}
			}
		}
	}
	if !seen {
		return nil, skipped
	}
	frame = data.NewFrame(AnnotationsFrameName,
		data.NewField("time", nil, nonNil(rows.times)),
		data.NewField("timeEnd", nil, nonNil(rows.timeEnds)),
		data.NewField("text", nil, nonNil(rows.texts)),
		data.NewField("isRegion", nil, nonNil(rows.regions)),
		data.NewField("color", nil, make([]string, len(rows.times))),
	)
	frame.Meta = &data.FrameMeta{DataTopic: data.DataTopicAnnotations}
	return frame, skipped
}

// annotation is one Pyroscope annotation as Grafana shows it.
type annotation struct {
	id         string // equal ids in a row are one annotation
	text       string
	start, end int64 // Unix ms
	region     bool
}

type annotationRows struct {
	ids      []string
	times    []time.Time
	timeEnds []time.Time
	texts    []string
	regions  []bool
}

// add appends a, or extends the last row to a's end where a repeats it: Pyroscope notes the
// same throttling on every profile until the limit resets.
func (r *annotationRows) add(a *annotation) {
	if last := len(r.ids) - 1; last >= 0 && r.ids[last] == a.id {
		r.timeEnds[last] = time.UnixMilli(a.end).UTC()
		return
	}
	r.ids = append(r.ids, a.id)
	r.times = append(r.times, time.UnixMilli(a.start).UTC())
	r.timeEnds = append(r.timeEnds, time.UnixMilli(a.end).UTC())
	r.texts = append(r.texts, a.text)
	r.regions = append(r.regions, a.region)
}

// annotationRow reads one annotation of the point at ts; nil for keys not shown and for sampling
// that drops nothing.
func annotationRow(a models.ProfileAnnotation, ts int64, now time.Time) (*annotation, error) {
	switch a.Key {
	case AnnotationThrottled:
		var v struct {
			Body struct {
				PeriodType     string  `json:"periodType"`
				PeriodLimitMb  float64 `json:"periodLimitMb"`
				LimitResetTime int64   `json:"limitResetTime"` // Unix seconds
			} `json:"body"`
		}
		if err := json.Unmarshal([]byte(a.Value), &v); err != nil {
			return nil, fmt.Errorf("not the JSON Pyroscope writes: %v", err)
		}
		b := v.Body
		if b.PeriodLimitMb < 0 || math.IsNaN(b.PeriodLimitMb) || b.PeriodLimitMb > 1<<43 {
			return nil, fmt.Errorf("periodLimitMb %v is not a size", b.PeriodLimitMb)
		}
		limit := iecBytes(uint64(b.PeriodLimitMb * 1024 * 1024))
		return &annotation{
			id:     fmt.Sprintf("%s-%s-%d", b.PeriodType, limit, b.LimitResetTime),
			text:   fmt.Sprintf("Ingestion limit (%s/%s) reached", limit, b.PeriodType),
			start:  ts,
			end:    b.LimitResetTime * 1000,
			region: b.LimitResetTime < now.Unix(),
		}, nil
	case AnnotationSampled:
		var v struct {
			Body struct {
				Source *struct {
					UsageGroup  string  `json:"usageGroup"`
					Probability float64 `json:"probability"`
				} `json:"source"`
			} `json:"body"`
		}
		if err := json.Unmarshal([]byte(a.Value), &v); err != nil {
			return nil, fmt.Errorf("not the JSON Pyroscope writes: %v", err)
		}
		src := v.Body.Source
		if src == nil {
			return nil, errors.New("no body.source")
		}
		if src.Probability == 1 {
			return nil, nil // every profile kept: nothing to say
		}
		dropped := (1 - src.Probability) * 100
		return &annotation{
			id:     fmt.Sprintf("%s-%.0f", src.UsageGroup, dropped),
			text:   fmt.Sprintf("%.2f%% of profiles for this service have been dropped by sampling rules", dropped),
			start:  ts,
			end:    ts,
			region: true,
		}, nil
	}
	return nil, nil
}

// iecBytes writes a size in IEC units as go-humanize's IBytes does (which Grafana's data source
// uses): "512 B", "4.0 MiB", "100 MiB"; two significant digits at least, no decimals from 10 up.
func iecBytes(n uint64) string {
	if n < 10 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	e := math.Floor(math.Log(float64(n)) / math.Log(1024))
	val := float64(n) / math.Pow(1024, e)
	digits := 0
	if val < 10 {
		digits = 1
	}
	rounding := math.Pow10(digits)
	val = math.Floor(val*rounding+0.5) / rounding
	if val >= 10 {
		digits = 0 // rounding carried into a second digit: 9.96 → "10", not "10.0"
	}
	return fmt.Sprintf("%.*f %s", digits, val, units[int(e)])
}
