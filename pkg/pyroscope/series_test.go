package pyroscope

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// fakeQuerier and newFakeClient are in labels_test.go.

func TestSeriesSendsTheQueryAndConvertsTheReply(t *testing.T) {
	f := &fakeQuerier{series: []*typesv1.Series{{
		Labels: []*typesv1.LabelPair{{Name: "service_name", Value: "ai-detector"}},
		Points: []*typesv1.Point{{Timestamp: 1000, Value: 1.5}, {Timestamp: 16000, Value: 2}},
	}}}
	c, _ := newFakeClient(t, f)
	series, err := c.Series(context.Background(), models.SeriesQuery{
		ProfileTypeID: models.DefaultProfileTypeID, LabelSelector: `{service_name="ai-detector"}`,
		Start: from, End: to, Step: 1500 * time.Millisecond, GroupBy: []string{"service_name"}, Limit: 5,
		Aggregation: models.AggregationAverage,
	})
	if err != nil {
		t.Fatal(err)
	}
	r := f.series1
	if r.ProfileTypeID != models.DefaultProfileTypeID || r.LabelSelector != `{service_name="ai-detector"}` ||
		r.Start != from.UnixMilli() || r.End != to.UnixMilli() || r.Step != 1.5 ||
		!slices.Equal(r.GroupBy, []string{"service_name"}) || r.GetLimit() != 5 ||
		r.GetAggregation() != typesv1.TimeSeriesAggregationType_TIME_SERIES_AGGREGATION_TYPE_AVERAGE {
		t.Errorf("request = %+v", r)
	}
	want := []models.ProfileSeries{{Labels: []models.LabelPair{{Name: "service_name", Value: "ai-detector"}}, Points: []models.ProfilePoint{{Timestamp: 1000, Value: 1.5}, {Timestamp: 16000, Value: 2}}}}
	if len(series) != 1 || !slices.Equal(series[0].Labels, want[0].Labels) || !reflect.DeepEqual(series[0].Points, want[0].Points) {
		t.Errorf("series = %+v, want %+v", series, want)
	}

	if _, err := c.Series(context.Background(), models.SeriesQuery{ProfileTypeID: models.DefaultProfileTypeID, Step: time.Second}); err != nil {
		t.Fatal(err)
	}
	if f.series1.Limit != nil || f.series1.Aggregation != nil {
		t.Errorf("limit %v aggregation %v, want both unset (all series, Pyroscope's sum)", f.series1.Limit, f.series1.Aggregation)
	}
}

func TestSeriesRejectsAnUnknownAggregationWithoutCallingPyroscope(t *testing.T) {
	f := &fakeQuerier{}
	c, _ := newFakeClient(t, f)
	_, err := c.Series(context.Background(), models.SeriesQuery{ProfileTypeID: models.DefaultProfileTypeID, Step: time.Second, Aggregation: "max"})
	if err == nil || !strings.Contains(err.Error(), `series aggregation must be "sum" or "average", got "max"`) || strings.Contains(err.Error(), "Pyroscope (") {
		t.Errorf("error = %v", err)
	}
	if f.requests != 0 {
		t.Errorf("Pyroscope was called %d times", f.requests)
	}
}
