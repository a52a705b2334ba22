//go:build integration

package testbed

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"
)

// The demo workload is the tests' data: these tests prove it reaches all three servers the way
// the seeds' platform does.

var bed Endpoints

func TestMain(m *testing.M) { os.Exit(MainForTests(m, &bed)) }

func TestDemoRequestIsOneTraceAcrossThreeServices(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := http.Get(bed.DemoURL + "/api/detect?slow=db")
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	traceID := res.Header.Get("X-Trace-Id")
	if res.StatusCode != 200 || len(traceID) != 32 {
		t.Fatalf("HTTP %d, trace ID %q", res.StatusCode, traceID)
	}

	var trace struct {
		Data []struct {
			Spans []struct {
				OperationName string `json:"operationName"`
				ProcessID     string `json:"processID"`
				Duration      int64  `json:"duration"`
				Tags          []struct {
					Key   string `json:"key"`
					Value any    `json:"value"`
				} `json:"tags"`
			} `json:"spans"`
			Processes map[string]struct {
				ServiceName string `json:"serviceName"`
			} `json:"processes"`
		} `json:"data"`
	}
	// Each service exports its spans in its own batches: wait until all three services' spans are
	// stored (backend 5: server, db_query, two client calls, serialize_response; detector 2;
	// enrichment 2).
	const wantSpans = 9
	for {
		err = getJSON(ctx, bed.JaegerURL+"/api/traces/"+traceID, &trace)
		if err == nil && len(trace.Data) == 1 && len(trace.Data[0].Spans) >= wantSpans {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("trace %s incomplete in Jaeger: %v %+v", traceID, err, trace)
		case <-time.After(500 * time.Millisecond):
		}
	}
	services := map[string]bool{}
	ops := map[string]int64{}
	profiled := 0
	for _, s := range trace.Data[0].Spans {
		services[trace.Data[0].Processes[s.ProcessID].ServiceName] = true
		ops[s.OperationName] = s.Duration
		for _, tag := range s.Tags {
			if tag.Key == "pyroscope.profile.id" {
				profiled++
			}
		}
	}
	for _, want := range []string{"nemotron-backend", "ai-detector", "ai-enrichment"} {
		if !services[want] {
			t.Errorf("trace lacks service %s (has %v)", want, services)
		}
	}
	// ?slow=db makes db_query 15× its normal 20 ms.
	if ops["db_query"] < 250_000 {
		t.Errorf("db_query took %d µs, want the slow path (≥ 250 ms); operations %v", ops["db_query"], ops)
	}
	// otel-profiling-go marks each service's local root span for trace-to-profile links.
	if profiled < 3 {
		t.Errorf("%d spans carry pyroscope.profile.id, want one per service", profiled)
	}
}

func TestDemoRequestDurationsReachPrometheus(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	q := url.Values{"query": {`count by (service) (http_request_duration_seconds_bucket{endpoint=~"/api/detect|/detect|/enrich"})`}}
	for {
		var res struct {
			Data struct {
				Result []struct {
					Metric map[string]string `json:"metric"`
				} `json:"result"`
			} `json:"data"`
		}
		err := getJSON(ctx, bed.PrometheusURL+"/api/v1/query?"+q.Encode(), &res)
		var got []string
		for _, r := range res.Data.Result {
			got = append(got, r.Metric["service"])
		}
		if err == nil && len(got) == 3 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("histograms by service = %s (%v), want the three demo services", strings.Join(got, ","), err)
		case <-time.After(time.Second):
		}
	}
}
