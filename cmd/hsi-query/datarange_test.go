package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestDataRangeStartsAtTheFirstStepWithData(t *testing.T) {
	now := time.Date(2025, 11, 26, 23, 10, 45, 0, time.UTC)
	at := func(hms string) time.Time {
		d, err := time.Parse(time.TimeOnly, hms)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(2025, 11, 26, d.Hour(), d.Minute(), d.Second(), 0, time.UTC)
	}
	const since, step = 15 * time.Minute, 30 * time.Second
	for _, c := range []struct {
		name        string
		first, want time.Time
		clipped     bool
	}{
		{"no samples: the range as asked", time.Time{}, now.Add(-since), false},
		{"data older than the range", at("22:40:00"), now.Add(-since), false},
		{"data since exactly the range's start", now.Add(-since), now.Add(-since), false},
		// The live simulator scraped for 40 s: its first step, not the one before its first
		// sample (which would read as no data).
		{"40 s of data", at("23:10:05"), at("23:10:30"), true},
		{"first sample on a step", at("23:10:00"), at("23:10:00"), true},
		{"younger than a step", at("23:10:35"), at("23:10:35"), true},
		{"3 minutes of data", at("23:07:41"), at("23:08:00"), true},
	} {
		from, clipped := dataRange(now, c.first, since, step)
		if !from.Equal(c.want) || clipped != c.clipped {
			t.Errorf("%s: from %s clipped %v, want %s %v", c.name, from.Format(time.TimeOnly), clipped, c.want.Format(time.TimeOnly), c.clipped)
		}
	}
}

func TestDataRangeNote(t *testing.T) {
	now := time.Date(2025, 11, 26, 23, 10, 45, 0, time.Local)
	got := dataRangeNote("the simulated GPUs", now, now.Add(-40200*time.Millisecond), now.Add(-15*time.Second), 15*time.Minute)
	want := "the simulated GPUs have data for the last 40s only: asked from 23:10:30 (the first step with data) to now, not over the last 15m0s"
	if got != want {
		t.Errorf("note\n%s\nwant\n%s", got, want)
	}
}

func TestEarliestSampleReadsTheOldestOfAllSeries(t *testing.T) {
	var query, at string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		query, at = r.URL.Query().Get("query"), r.URL.Query().Get("time")
		w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[
			{"metric":{"gpu":"0"},"values":[[1764198630.5,"10"],[1764198645,"11"]]},
			{"metric":{"gpu":"1"},"values":[[1764198615.25,"3"]]},
			{"metric":{"gpu":"2"},"values":[]}]}}`))
	}))
	defer srv.Close()
	now := time.UnixMilli(1764198645123)
	first, err := earliestSample(context.Background(), srv.URL, `up{job="dcgm"}`, now, 15*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.UnixMilli(1764198615250); !first.Equal(want) {
		t.Errorf("first %s, want %s", first, want)
	}
	if query != `up{job="dcgm"}[900s]` || at != "1764198645.123" {
		t.Errorf("asked %q at %s", query, at)
	}

	srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`))
	})
	if _, err := earliestSample(context.Background(), srv.URL, `up{`, now, time.Minute); err == nil || err.Error() != "Prometheus at "+srv.URL+": parse error" {
		t.Errorf("bad selector: %v", err)
	}
}
