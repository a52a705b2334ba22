//go:build integration

package plugin

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// BenchmarkRealTraceProfile runs the whole-request profile of a real slow demo request (three
// services) through the plugin against the test bed's Jaeger and Pyroscope, and sets its wall
// time against the upstream calls it made in the same query, from the plugin's own spans: the
// time a call was in flight (the Jaeger call, then the slowest Pyroscope call) and all calls added
// up. What is left over is the plugin's own work and its waiting between calls.
func BenchmarkRealTraceProfile(b *testing.B) {
	calls := recordUpstreamCalls(b)
	ds := newTestDatasource(b, map[string]any{"pyroscopeUrl": bed.PyroscopeURL, "jaegerUrl": bed.JaegerURL}, nil)
	q := benchProfiledRequest(b, ds)
	calls.callTimes(b)
	var wall, inFlight, sum, slowest time.Duration
	var n, made int
	for b.Loop() {
		forgetKeptReplies(b, ds) // each query a first refresh's: its span profiles asked
		t0 := time.Now()
		res, err := ds.QueryData(b.Context(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
		wall += time.Since(t0)
		if err != nil || res.Responses["A"].Error != nil {
			b.Fatal(err, res.Responses["A"].Error)
		}
		if s := serviceNodes(res.Responses["A"].Frames[0]); !slices.Equal(s, demoServices) {
			b.Fatalf("services in the profile: %v, want %v", s, demoServices)
		}
		f, s, sl, c := calls.callTimes(b)
		inFlight, sum, slowest, made, n = inFlight+f, sum+s, slowest+sl, made+c, n+1
	}
	reportAgainstCalls(b, n, wall, inFlight, sum, slowest, made)
}

// benchProfiledRequest makes slow demo requests until one's whole-request profile shows all three
// services matched by span (sampling is at 100 Hz: a short span may get no sample), and returns
// the query for it.
func benchProfiledRequest(b *testing.B, ds *Datasource) backend.DataQuery {
	var last string
	for range 3 {
		res, err := http.Get(bed.DemoURL + "/api/detect?slow=db")
		if err != nil {
			b.Fatal(err)
		}
		res.Body.Close()
		id := res.Header.Get("X-Trace-Id")
		if res.StatusCode != 200 || len(id) != 32 {
			b.Fatalf("demo answered %s with trace ID %q", res.Status, id)
		}
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
			time.Sleep(time.Second)
			// A query of its own each time, as a refresh: a reply kept for the last one's range
			// would show the samples of a second ago.
			q := query("A", fmt.Sprintf(`{"queryType":"profile","traceId":%q,"profileTypeId":%q}`, id, cpuType))
			r, err := ds.QueryData(b.Context(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
			if err != nil {
				b.Fatal(err)
			}
			if e := r.Responses["A"].Error; e != nil {
				last = e.Error()
				continue
			}
			f := r.Responses["A"].Frames[0]
			if s := serviceNodes(f); slices.Equal(s, demoServices) && strings.Contains(frameNotices(f), "matched by span ID") {
				return q
			}
			last = fmt.Sprintf("services with samples: %v; notices: %s", serviceNodes(f), frameNotices(f))
		}
	}
	b.Fatalf("no slow request got samples in all three services: %s", last)
	return backend.DataQuery{}
}
