package frames

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func throttled(periodType string, limitMb float64, reset int64) models.ProfileAnnotation {
	v := `{"body":{"periodType":"` + periodType + `","periodLimitMb":` + strings.TrimSpace(jsonNumber(limitMb)) + `,"limitResetTime":` + jsonNumber(float64(reset)) + `,"samplingPeriodSec":60,"samplingRequests":1,"usageGroup":""}}`
	return models.ProfileAnnotation{Key: "pyroscope.ingest.throttled", Value: v}
}

func sampled(group string, p float64) models.ProfileAnnotation {
	return models.ProfileAnnotation{Key: "pyroscope.ingest.sampled", Value: `{"body":{"source":{"usageGroup":"` + group + `","probability":` + jsonNumber(p) + `}}}`}
}

func jsonNumber(f float64) string { b, _ := json.Marshal(f); return string(b) }

func TestAnnotationsFrameReadsThrottlingAndSamplingAsGrafanaDoes(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	t0 := now.Add(-time.Hour).UnixMilli()
	reset := now.Add(-30 * time.Minute).Unix() // passed: a region
	future := now.Add(time.Hour).Unix()        // not yet: a point
	series := []models.ProfileSeries{
		{Points: []models.ProfilePoint{
			{Timestamp: t0, Annotations: []models.ProfileAnnotation{throttled("day", 4, reset)}},
			// The same throttling noted again: extends the first to this one's end.
			{Timestamp: t0 + 15000, Annotations: []models.ProfileAnnotation{throttled("day", 4, reset)}},
			{Timestamp: t0 + 30000, Annotations: []models.ProfileAnnotation{sampled("ingest", 0.25), {Key: "pyroscope.other", Value: "{}"}}},
		}},
		{Points: []models.ProfilePoint{
			{Timestamp: t0 + 45000, Annotations: []models.ProfileAnnotation{throttled("hour", 100, future), sampled("ingest", 1)}},
		}},
	}
	f, skipped := AnnotationsFrame(series, now)
	if len(skipped) != 0 {
		t.Fatalf("skipped %v", skipped)
	}
	if f.Name != "annotations" || f.Meta.DataTopic != "annotations" {
		t.Fatalf("frame %q meta %+v", f.Name, f.Meta)
	}
	if got := strings.Join(fieldNames(f), ","); got != "time,timeEnd,text,isRegion,color" {
		t.Fatalf("fields %s", got)
	}
	want := []struct {
		start, end int64
		text       string
		region     bool
	}{
		{t0, reset * 1000, "Ingestion limit (4.0 MiB/day) reached", true},
		{t0 + 30000, t0 + 30000, "75.00% of profiles for this service have been dropped by sampling rules", true},
		{t0 + 45000, future * 1000, "Ingestion limit (100 MiB/hour) reached", false},
	}
	if f.Rows() != len(want) {
		t.Fatalf("%d rows, want %d", f.Rows(), len(want))
	}
	for i, w := range want {
		start, end := f.Fields[0].At(i).(time.Time), f.Fields[1].At(i).(time.Time)
		if start.UnixMilli() != w.start || end.UnixMilli() != w.end || f.Fields[2].At(i) != w.text || f.Fields[3].At(i) != w.region || f.Fields[4].At(i) != "" {
			t.Errorf("row %d: %v %v %q %v %q; want %+v", i, start, end, f.Fields[2].At(i), f.Fields[3].At(i), f.Fields[4].At(i), w)
		}
	}
}

func TestAMalformedAnnotationIsSkippedAndNamed(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	series := []models.ProfileSeries{{Points: []models.ProfilePoint{
		{Timestamp: t0.UnixMilli(), Annotations: []models.ProfileAnnotation{{Key: "pyroscope.ingest.throttled", Value: "not json"}}},
		{Timestamp: t0.UnixMilli() + 15000, Annotations: []models.ProfileAnnotation{{Key: "pyroscope.ingest.sampled", Value: `{"body":{}}`}, sampled("g", 0.5)}},
	}}}
	f, skipped := AnnotationsFrame(series, t0)
	if f == nil || f.Rows() != 1 || f.Fields[2].At(0) != "50.00% of profiles for this service have been dropped by sampling rules" {
		t.Fatalf("the readable annotation is not kept: %v", f)
	}
	if len(skipped) != 2 || !strings.HasPrefix(skipped[0], "pyroscope.ingest.throttled at 2025-03-01T12:00:00Z: ") || !strings.Contains(skipped[1], "no body.source") {
		t.Errorf("skipped %q", skipped)
	}
}

func TestNoAnnotationsNoFrame(t *testing.T) {
	f, skipped := AnnotationsFrame([]models.ProfileSeries{{Points: []models.ProfilePoint{{Timestamp: 1, Value: 2}}}}, time.Now())
	if f != nil || skipped != nil {
		t.Errorf("%v %v", f, skipped)
	}
	// Annotations that show nothing (every profile kept, keys not shown) still make the (empty)
	// frame, as Grafana's data source makes it.
	f, _ = AnnotationsFrame([]models.ProfileSeries{{Points: []models.ProfilePoint{{Timestamp: 1, Annotations: []models.ProfileAnnotation{sampled("g", 1)}}}}}, time.Now())
	if f == nil || f.Rows() != 0 {
		t.Errorf("%v", f)
	}
}

func TestIECBytesWritesSizesAsGoHumanize(t *testing.T) {
	for n, want := range map[uint64]string{
		0: "0 B", 9: "9 B", 10: "10 B", 1023: "1023 B", 1536: "1.5 KiB",
		4 << 20: "4.0 MiB", 100 << 20: "100 MiB", 10<<20 + 512<<10: "11 MiB",
		// 9.96 MiB rounds to 10: no decimal then.
		9<<20 + 983<<10: "10 MiB", 3 << 30: "3.0 GiB",
	} {
		if got := iecBytes(n); got != want {
			t.Errorf("iecBytes(%d) = %q, want %q", n, got, want)
		}
	}
}
