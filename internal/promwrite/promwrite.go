// Package promwrite pushes simulated series into a Prometheus through its remote-write receiver
// (Prometheus' prompb protocol, snappy-compressed, POST /api/v1/write; the server runs with
// --web.enable-remote-write-receiver). The scenarios use it for what the bed cannot scrape from
// a real source: cAdvisor's CPU throttling of a pod, a GPU's series naming the pods sharing it,
// a serving engine's preemptions, each with the names and times its scenario drew.
package promwrite

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/klauspost/compress/snappy"
	"github.com/prometheus/prometheus/prompb"
)

// Series is one series to write: its labels (the metric name under __name__) and samples.
type Series struct {
	Labels  map[string]string
	Samples []Sample
}

// Sample is one value at one time.
type Sample struct {
	At    time.Time
	Value float64
}

// Client writes to one Prometheus.
type Client struct {
	URL  string // the server's base URL, e.g. http://127.0.0.1:9090
	HTTP *http.Client
}

// Write sends the series in one request. Samples of a series must come in time order and after
// any the server already holds of it.
func (c Client) Write(ctx context.Context, series []Series) error {
	req := &prompb.WriteRequest{}
	for _, s := range series {
		names := make([]string, 0, len(s.Labels))
		for n := range s.Labels {
			names = append(names, n)
		}
		sort.Strings(names) // remote write wants labels sorted by name
		ts := prompb.TimeSeries{}
		for _, n := range names {
			ts.Labels = append(ts.Labels, prompb.Label{Name: n, Value: s.Labels[n]})
		}
		for _, p := range s.Samples {
			ts.Samples = append(ts.Samples, prompb.Sample{Timestamp: p.At.UnixMilli(), Value: p.Value})
		}
		req.Timeseries = append(req.Timeseries, ts)
	}
	raw, err := req.Marshal()
	if err != nil {
		return err
	}
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.URL, "/")+"/api/v1/write", bytes.NewReader(snappy.Encode(nil, raw)))
	if err != nil {
		return err
	}
	hr.Header.Set("Content-Encoding", "snappy")
	hr.Header.Set("Content-Type", "application/x-protobuf")
	hr.Header.Set("X-Prometheus-Remote-Write-Version", "0.1.0")
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	resp, err := hc.Do(hr)
	if err != nil {
		return fmt.Errorf("remote write to %s: %w", c.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("remote write to %s: %s: %s", c.URL, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// Every returns the samples of f at every step from from to to (both included).
func Every(from, to time.Time, step time.Duration, f func(t time.Time) float64) []Sample {
	var out []Sample
	for t := from; !t.After(to); t = t.Add(step) {
		out = append(out, Sample{At: t, Value: f(t)})
	}
	return out
}
