package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// dataRange is where a query over the last since should start when the series it asks about
// began at first: now-since, unless first is later, and then the first step (a multiple of
// step, as the plugin aligns its steps) at or after first, so that no step before the first
// sample reads as "no data". A series younger than one step starts at first. clipped says the
// range is shorter than since; a zero first (no samples) leaves the range as it is.
func dataRange(now, first time.Time, since, step time.Duration) (from time.Time, clipped bool) {
	from = now.Add(-since)
	if first.IsZero() || !first.After(from) {
		return from, false
	}
	from = first.Truncate(step)
	if from.Before(first) {
		from = from.Add(step)
	}
	if from.After(now) {
		from = first
	}
	return from, true
}

// dataRangeNote says in one line why the range is shorter than since.
func dataRangeNote(what string, now, first, from time.Time, since time.Duration) string {
	return fmt.Sprintf("%s have data for the last %s only: asked from %s (the first step with data) to now, not over the last %s",
		what, now.Sub(first).Round(time.Second), from.Local().Format(time.TimeOnly), since)
}

// earliestSample is the time of the oldest sample of the series selector picks in the window
// (now-since, now], the zero time when there is none. It reads the raw samples (a range
// selector at now): exact, and a few thousand values for a fleet's GPUs over 15 minutes.
func earliestSample(ctx context.Context, prometheusURL, selector string, now time.Time, since time.Duration) (time.Time, error) {
	q := url.Values{
		"query": {fmt.Sprintf("%s[%ds]", selector, int64(math.Ceil(since.Seconds())))},
		"time":  {strconv.FormatFloat(float64(now.UnixMilli())/1000, 'f', 3, 64)},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(prometheusURL, "/")+"/api/v1/query?"+q.Encode(), nil)
	if err != nil {
		return time.Time{}, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return time.Time{}, err
	}
	defer res.Body.Close()
	var reply struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Values [][2]any `json:"values"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(res.Body).Decode(&reply); err != nil {
		return time.Time{}, fmt.Errorf("Prometheus at %s: HTTP %d, %w", prometheusURL, res.StatusCode, err)
	}
	if reply.Status != "success" {
		return time.Time{}, fmt.Errorf("Prometheus at %s: %s", prometheusURL, reply.Error)
	}
	var first time.Time
	for _, s := range reply.Data.Result {
		if len(s.Values) == 0 {
			continue
		}
		sec, ok := s.Values[0][0].(float64) // samples come oldest first
		if !ok {
			return time.Time{}, fmt.Errorf("Prometheus at %s: a sample time %v is not a number", prometheusURL, s.Values[0][0])
		}
		if t := time.UnixMilli(int64(math.Round(sec * 1000))); first.IsZero() || t.Before(first) {
			first = t
		}
	}
	return first, nil
}
