//go:build integration

package protocol

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
)

// boundaryProxy is a recording reverse proxy in front of one real upstream of the bed: what the
// plugin binary asked, exactly as it arrived on the wire.
type boundaryProxy struct {
	name  string
	paths *regexp.Regexp // the upstream's API
	url   string

	mu   sync.Mutex
	asks []string // method and request URI
}

func newBoundaryProxy(t *testing.T, name, target string, paths *regexp.Regexp) *boundaryProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &boundaryProxy{name: name, paths: paths}
	rp := httputil.NewSingleHostReverseProxy(u)
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.asks = append(p.asks, r.Method+" "+r.RequestURI)
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	p.url = s.URL
	return p
}

func (p *boundaryProxy) requests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.asks...)
}

// TestBinaryStaysWithinItsBoundaries sends the plugin binary, wired to the real bed through
// recording proxies, a batch of hostile queries and resource calls: each real server must have
// been asked only its own API, a canary server nothing, no file outside the trace directory may
// be read, and the plugin must still be up and healthy afterwards.
func TestBinaryStaysWithinItsBoundaries(t *testing.T) {
	var canaryHits []string
	var canaryMu sync.Mutex
	canary := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		canaryMu.Lock()
		canaryHits = append(canaryHits, r.Method+" "+r.RequestURI)
		canaryMu.Unlock()
		_, _ = w.Write([]byte("CANARY-REACHED"))
	}))
	defer canary.Close()
	c := strings.TrimPrefix(canary.URL, "http://")

	pyroscope := newBoundaryProxy(t, "Pyroscope", bed.PyroscopeURL,
		regexp.MustCompile(`^/querier\.v1\.QuerierService/(ProfileTypes|LabelNames|LabelValues|SelectSeries|SelectMergeStacktraces|SelectMergeSpanProfile)$`))
	prometheus := newBoundaryProxy(t, "Prometheus", bed.PrometheusURL,
		regexp.MustCompile(`^/api/v1/(query|query_range|series|labels|label/[A-Za-z_][A-Za-z0-9_]*/values|status/buildinfo)$`))
	jaeger := newBoundaryProxy(t, "Jaeger", bed.JaegerURL, regexp.MustCompile(`^/api/(v3/)?(services|traces|traces/[0-9a-f]{32})$`))

	// A trace directory with one trace, and a marker file outside reached through links.
	root := t.TempDir()
	dir, outside := filepath.Join(root, "profiles"), filepath.Join(root, "outside")
	const marker = "OUTSIDE_MARKER_9b1c"
	trace := `{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "%s", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"stream": 7, "device": 0}}]}`
	for path, text := range map[string]string{
		filepath.Join(dir, "inside.json"):    strings.Replace(trace, "%s", "inside_kernel", 1),
		filepath.Join(outside, "leak.json"):  strings.Replace(trace, "%s", marker, 1),
		filepath.Join(outside, "other.json"): strings.Replace(trace, "%s", marker, 1),
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{"link.json": filepath.Join(outside, "leak.json"), "dir-link": outside} {
		if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
			t.Fatal(err)
		}
	}

	// A real slow request of the demo, so the valid trace query really reaches Jaeger.
	res, err := http.Get(bed.DemoURL + "/api/detect?slow=db")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	traceID := res.Header.Get("X-Trace-Id")
	if len(traceID) != 32 {
		t.Fatalf("the demo gave trace ID %q", traceID)
	}

	h, log := start(t, map[string]any{
		"pyroscopeUrl": pyroscope.url, "prometheusUrl": prometheus.url, "jaegerUrl": jaeger.url,
		"traceDirectories": []string{dir},
	})

	hostile := []string{
		canary.URL + "/x", "//" + c + "/x", "@" + c, "../../../etc/passwd", "..%2f..%2fx", "%2e%2e/x", "a%2Fb",
		"x?y=1", "x#y", "x;y", `..\x`, "x\x00y", "x\r\nX-Injected: 1", strings.Repeat("a", 20000), "http://[::1]/x",
	}
	ids := []string{traceID + "/../x", traceID + "?x", "../" + traceID, traceID[:31] + "*", canary.URL + "/" + traceID}

	// Queries: every field that could reach a URL or a path, each value in its own query.
	var queries []pluginhost.Query
	now := time.Now()
	add := func(model map[string]any) {
		queries = append(queries, pluginhost.Query{RefID: fmt.Sprintf("Q%d", len(queries)), From: now.Add(-15 * time.Minute), To: now, JSON: model})
	}
	for _, v := range append(hostile, ids...) {
		add(map[string]any{"queryType": "profile", "traceId": v})
		add(map[string]any{"queryType": "trace", "traceId": v})
		add(map[string]any{"queryType": "profile", "labelSelector": `{service_name="nemotron-backend"}`, "spanSelector": []string{v}})
		add(map[string]any{"queryType": "kernels", "traceId": v})
		add(map[string]any{"queryType": "kernels", "file": v})
		add(map[string]any{"queryType": "slowRequests", "service": v, "endpoint": v})
		add(map[string]any{"queryType": "triage", "services": []string{v}, "pods": []string{v}, "namespaces": []string{v}})
		add(map[string]any{"queryType": "gpuMetrics", "hosts": []string{v}, "gpuSelector": v})
		add(map[string]any{"queryType": "diff", "baseline": map[string]any{"traceId": v}, "comparison": map[string]any{"from": v}})
		add(map[string]any{"queryType": "profile", "pyroscopeUrl": v, "url": v, "path": v})
	}
	for _, f := range []string{"../outside/leak.json", filepath.Join(outside, "leak.json"), "link.json", "dir-link/other.json"} {
		add(map[string]any{"queryType": "kernels", "file": f})
	}
	add(map[string]any{"queryType": "trace", "traceId": traceID})
	add(map[string]any{"queryType": "kernels", "file": "inside.json"})

	qr, err := h.QueryData(ctx(t), queries...)
	if err != nil {
		t.Fatal(err)
	}
	answers := ""
	for _, r := range qr.Responses {
		answers += r.Error
		for _, f := range r.Frames {
			answers += string(f)
		}
	}
	if strings.Contains(answers, marker) {
		t.Error("an outside file's content came back in a query answer")
	}
	if !strings.Contains(answers, "inside_kernel") {
		t.Error("the file inside the trace directory was not read: the marker check proves nothing")
	}
	for _, q := range queries {
		if m := q.JSON; m["queryType"] == "kernels" && m["file"] != nil && m["file"] != "inside.json" {
			if r := qr.Responses[q.RefID]; r.Error == "" || !strings.Contains(r.Error, "file") {
				t.Errorf("kernels file %.60q: error %q, want one naming the file", m["file"], r.Error)
			}
		}
	}

	// Resources: every route, hostile parameters, unknown routes and other methods.
	q := url.QueryEscape
	calls := []string{"upstreams?url=" + q(canary.URL), "gpu-metrics?url=" + q(canary.URL), "trace-services?url=" + q(canary.URL)}
	for _, v := range append(hostile, ids...) {
		calls = append(calls,
			"profile-types?from="+q(v), "services?to="+q(v), "label-names?selector="+q(v),
			"label-values?label="+q(v), "label-values?label=service_name&selector="+q(v),
			"variable?query="+q(v), "variable?query="+q(`trace_ids("`+strings.ReplaceAll(v, `"`, `\"`)+`")`),
			"traces?service="+q(v)+"&operation="+q(v), "traces?service=nemotron-backend&minDuration="+q(v),
			"gpu-label-values?role="+q(v), "gpu-label-values?role=gpu&hosts="+q(v), "kernel-files?traceId="+q(v),
		)
	}
	calls = append(calls, "proxy?url="+q(canary.URL), "../upstreams", "api/v3/traces/"+traceID, "kernel-files/../../etc/passwd")
	for _, call := range calls {
		r, err := h.CallResource(ctx(t), call)
		if err != nil {
			t.Fatalf("%.80s: %v", call, err)
		}
		if strings.Contains(string(r.Body), "CANARY") || strings.Contains(string(r.Body), marker) {
			t.Errorf("%.80s: HTTP %d %.200s", call, r.Status, r.Body)
		}
		if r.Status >= 500 && r.Status != http.StatusBadGateway {
			t.Errorf("%.80s: HTTP %d %.200s", call, r.Status, r.Body)
		}
	}
	for _, method := range []string{"POST", "PUT", "DELETE"} {
		r, err := h.CallResourceWith(ctx(t), method, "traces?service="+q(canary.URL), []byte(canary.URL))
		if err != nil || r.Status != http.StatusMethodNotAllowed {
			t.Errorf("%s traces: %v %+v, want 405", method, err, r)
		}
	}

	// What reached the real servers: their own APIs only.
	jaegerTraces := 0
	for _, p := range []*boundaryProxy{pyroscope, prometheus, jaeger} {
		reqs := p.requests()
		t.Logf("%s was asked %d requests", p.name, len(reqs))
		if len(reqs) == 0 {
			t.Errorf("%s was never asked: the proxies record nothing", p.name)
		}
		for _, r := range reqs {
			_, uri, _ := strings.Cut(r, " ")
			path, rawQuery, _ := strings.Cut(uri, "?")
			if !p.paths.MatchString(path) || strings.ContainsAny(uri, "#\\ ") {
				t.Errorf("%s was asked %q, outside its API", p.name, r)
			}
			if p.name == "Pyroscope" && rawQuery != "" {
				t.Errorf("Pyroscope was asked %q: Connect calls carry nothing in the URL", r)
			}
			if strings.HasPrefix(path, "/api/v3/traces/") || strings.HasPrefix(path, "/api/traces/") {
				jaegerTraces++
				if !strings.HasSuffix(path, "/"+traceID) || rawQuery != "" {
					t.Errorf("Jaeger was asked %q; the only trace asked for is %s", r, traceID)
				}
			}
		}
	}
	if jaegerTraces == 0 {
		t.Errorf("Jaeger was never asked for trace %s", traceID)
	}
	canaryMu.Lock()
	if len(canaryHits) > 0 {
		t.Errorf("the canary was contacted: %q", canaryHits)
	}
	canaryMu.Unlock()

	// Still up, still healthy.
	if h.Exited() {
		t.Fatalf("the plugin exited; log:\n%s", log)
	}
	health, err := h.CheckHealth(ctx(t))
	if err != nil || health.Status != pluginv2.CheckHealthResponse_OK {
		t.Errorf("health after the batch: %v %v", health, err)
	}
	var types []json.RawMessage
	if r, err := h.CallResource(ctx(t), "profile-types"); err != nil || r.Status != 200 || json.Unmarshal(r.Body, &types) != nil || len(types) == 0 {
		t.Errorf("profile-types after the batch: %v %+v", err, r)
	}
}
