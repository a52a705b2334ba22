//go:build integration

package testbed

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// The demo workload is the tests' data: these tests prove it reaches all three servers the way
// the seeds' platform does.

var bed Endpoints

func TestMain(m *testing.M) { os.Exit(MainForTests(m, &bed)) }

// demoRequestSpans is how many spans one GET /api/detect makes in each demo service, from
// cmd/hsi-demo's code (work.go, serve.go, engine.go): the backend's server span (otelhttp, its
// local root), db_query, one client span (otelhttp's transport) per call to the detector, the
// enrichment service and, when the bed runs one, the engine, and serialize_response; the
// detector's and the enrichment service's server spans with model.predict and enrich under them;
// the engine's llm_request. 11 spans with the engine, 10 without.
func demoRequestSpans(withEngine bool) map[string]int {
	spans := map[string]int{"nemotron-backend": 5, "ai-detector": 2, "ai-enrichment": 2}
	if withEngine {
		spans["nemotron-backend"]++
		spans["nemotron-llm"] = 1
	}
	return spans
}

// demoTraceTimeout bounds the wait for the request's spans in Jaeger. Each service's batch
// exporter sends every 500 ms and Jaeger stores them at once; the bound is generous for a busy
// machine, and the wait ends as soon as every span is there.
const demoTraceTimeout = 2 * time.Minute

type jaegerTrace struct {
	Data []struct {
		Spans []struct {
			SpanID        string `json:"spanID"`
			OperationName string `json:"operationName"`
			ProcessID     string `json:"processID"`
			Duration      int64  `json:"duration"`
			References    []struct {
				RefType string `json:"refType"`
				SpanID  string `json:"spanID"`
			} `json:"references"`
			Tags []struct {
				Key   string `json:"key"`
				Value any    `json:"value"`
			} `json:"tags"`
		} `json:"spans"`
		Processes map[string]struct {
			ServiceName string `json:"serviceName"`
		} `json:"processes"`
	} `json:"data"`
}

// demoSpan is one span of the request as the test reads it.
type demoSpan struct {
	service, operation string
	duration           int64 // µs
	profileID          bool  // carries pyroscope.profile.id
	localRoot          bool  // its parent is in another service, or it has none
	orphan             bool  // its parent is not stored (yet)
}

// demoSpans reads the request's spans from Jaeger's v1 reply, each span once.
func demoSpans(tr jaegerTrace) []demoSpan {
	if len(tr.Data) != 1 {
		return nil
	}
	d := tr.Data[0]
	service := map[string]string{} // span ID → service
	for _, s := range d.Spans {
		service[s.SpanID] = d.Processes[s.ProcessID].ServiceName
	}
	var out []demoSpan
	seen := map[string]bool{}
	for _, s := range d.Spans {
		if seen[s.SpanID] { // a batch the exporter sent again: one span
			continue
		}
		seen[s.SpanID] = true
		sp := demoSpan{service: service[s.SpanID], operation: s.OperationName, duration: s.Duration, localRoot: true}
		for _, r := range s.References {
			if r.RefType != "CHILD_OF" {
				continue
			}
			parent, ok := service[r.SpanID]
			sp.orphan = !ok
			sp.localRoot = ok && parent != sp.service
		}
		for _, tag := range s.Tags {
			sp.profileID = sp.profileID || tag.Key == "pyroscope.profile.id"
		}
		out = append(out, sp)
	}
	return out
}

// missingSpans says what the request's stored spans still lack against want (spans by service),
// "" when none: a service with fewer spans than its code makes, or a span whose parent is not
// stored yet.
func missingSpans(spans []demoSpan, want map[string]int) string {
	got := map[string]int{}
	orphans := 0
	for _, s := range spans {
		got[s.service]++
		if s.orphan {
			orphans++
		}
	}
	var missing []string
	for _, svc := range slices.Sorted(maps.Keys(want)) {
		if got[svc] < want[svc] {
			missing = append(missing, fmt.Sprintf("%s has %d of its %d spans", svc, got[svc], want[svc]))
		}
	}
	if orphans > 0 {
		missing = append(missing, fmt.Sprintf("%d span(s) whose parent is not stored", orphans))
	}
	return strings.Join(missing, ", ")
}

func TestDemoRequestIsOneTraceAcrossThreeServices(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), demoTraceTimeout)
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

	// Each service exports its spans in its own batches, and a service's spans as they end (the
	// backend's server span, its local root, ends last): wait until every span the request makes
	// is stored, each service's local root among them, before counting anything.
	want := demoRequestSpans(bed.EngineURL != "")
	var spans []demoSpan
	for {
		var tr jaegerTrace // a fresh value each time: json.Unmarshal merges into maps
		err = getJSON(ctx, bed.JaegerURL+"/api/traces/"+traceID, &tr)
		spans = demoSpans(tr)
		missing := missingSpans(spans, want)
		if err == nil && missing == "" {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("trace %s incomplete in Jaeger after %s: %v; %s", traceID, demoTraceTimeout, err, missing)
		case <-time.After(500 * time.Millisecond):
		}
	}
	ops := map[string]int64{}
	localRoots := map[string][]demoSpan{}
	for _, s := range spans {
		ops[s.operation] = s.duration
		if s.localRoot {
			localRoots[s.service] = append(localRoots[s.service], s)
		}
	}
	// ?slow=db makes db_query 15× its normal 20 ms.
	if ops["db_query"] < 250_000 {
		t.Errorf("db_query took %d µs, want the slow path (≥ 250 ms); operations %v", ops["db_query"], ops)
	}
	// otel-profiling-go marks each service's local root span (its first span of the request) for
	// trace-to-profile links, and no other span; the engine, like vLLM, is not profiled.
	for _, svc := range slices.Sorted(maps.Keys(want)) {
		roots := localRoots[svc]
		if len(roots) != 1 {
			t.Errorf("%s has %d local root spans, want 1: %+v", svc, len(roots), roots)
			continue
		}
		if wantID := slices.Contains(ProfiledDemoServices, svc); roots[0].profileID != wantID {
			t.Errorf("%s's local root span %q carries pyroscope.profile.id: %v, want %v", svc, roots[0].operation, roots[0].profileID, wantID)
		}
	}
	profiled := 0
	for _, s := range spans {
		if s.profileID {
			profiled++
		}
	}
	if profiled != len(ProfiledDemoServices) {
		t.Errorf("%d spans carry pyroscope.profile.id, want one per profiled service (%v)", profiled, ProfiledDemoServices)
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
