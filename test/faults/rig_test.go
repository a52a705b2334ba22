//go:build integration

// Package faults runs the plugin binary with each upstream of the real test bed behind its own
// fault-injecting proxy (internal/faultproxy), switches one upstream at a time to each fault,
// and checks what every query type and resource route answers: the other upstreams' parts are
// kept, a notice or error names the failing upstream, its URL and the cause, the answer comes
// within the configured timeout, the process stays up, and no secret of secureJsonData shows
// anywhere (logs, frames, notices, errors, resource replies, health messages, the plugin's own
// trace spans). TestKernelBucketFaults does the same for a kernel-trace bucket of the bed's S3
// store.
package faults

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/faultproxy"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

var (
	bed    testbed.Endpoints
	binary string
)

func TestMain(m *testing.M) {
	os.Exit(testbed.MainWithPlugin(m, &bed, testbed.PluginBuild{Path: &binary}))
}

const (
	// upstreamTimeout is every upstream's jsonData.<upstream>TimeoutSeconds: short, so that the
	// slow fault is cheap, long enough for the real bed to answer on a busy machine.
	upstreamTimeout = 4 * time.Second
	// margin is what an answer may take beyond the timeout: the healthy upstreams' share of the
	// work and the plugin's own.
	margin = 2 * time.Second
	// responseLimit is Grafana's GF_RESPONSE_LIMIT for these tests: the huge fault's body (1 GiB)
	// is cut after this much, so the fault costs little.
	responseLimit = 4 << 20
)

// secrets are the data source's secureJsonData: Pyroscope with basic auth, Prometheus, Jaeger
// and Tempo with a bearer token each, all random so that no other text can contain them by chance; and,
// where a test reads kernel-trace buckets, the bed's S3 keys (kernelBucket.<name>.accessKey and
// .secretKey).
type secrets struct {
	pyroscopeUser, pyroscopePassword string
	prometheusToken, jaegerToken     string
	tempoToken                       string
	s3AccessKey, s3SecretKey         string
}

func newSecrets() secrets {
	r := func(prefix string) string {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		return prefix + hex.EncodeToString(b)
	}
	return secrets{pyroscopeUser: "hsi-reader", pyroscopePassword: r("pw-"), prometheusToken: r("prom-tok-"), jaegerToken: r("jaeger-tok-"), tempoToken: r("tempo-tok-")}
}

func (s secrets) basic() string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(s.pyroscopeUser+":"+s.pyroscopePassword))
}

// forbidden are the strings that must never leave the plugin: each secret, and the Basic
// header's base64, which carries the password in a form a plain search would miss. (An S3
// secret key never leaves the plugin in any form: SigV4 sends only an HMAC made with it.)
func (s secrets) forbidden() []string {
	out := []string{s.pyroscopePassword, strings.TrimPrefix(s.basic(), "Basic "), s.prometheusToken, s.jaegerToken, s.tempoToken}
	for _, k := range []string{s.s3AccessKey, s.s3SecretKey} {
		if k != "" {
			out = append(out, k)
		}
	}
	return out
}

// leaked returns the first secret found in text, or "".
func (s secrets) leaked(text []byte) string {
	for _, f := range s.forbidden() {
		if bytes.Contains(text, []byte(f)) {
			return f
		}
	}
	return ""
}

// syncBuffer is the plugin's log output, written by go-plugin's goroutines while tests read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// upstreams in the order messages name them.
var upstreams = []string{"Pyroscope", "Prometheus", "Jaeger", "Tempo"}

// rig is one plugin process whose four upstreams are proxies in front of the bed; traceStore
// (jsonData.traceStore) says which of Jaeger and Tempo its queries read.
type rig struct {
	host    *pluginhost.Host
	log     *syncBuffer
	proxies map[string]*faultproxy.Proxy
	secrets secrets
}

// newRig starts the proxies and the plugin, which exports its spans to the bed's Jaeger.
// Everything is stopped when t's test ends.
func newRig(t *testing.T, sec secrets, traceDir, traceStore string) *rig {
	t.Helper()
	r := &rig{log: &syncBuffer{}, proxies: map[string]*faultproxy.Proxy{}, secrets: sec}
	for name, p := range map[string]struct {
		target string
		opts   faultproxy.Options
	}{
		"Pyroscope": {bed.PyroscopeURL, faultproxy.Options{Authorization: sec.basic()}},
		// Prometheus says 400 (bad_data) with its JSON error: the reply whose text its client
		// quotes in the error.
		"Prometheus": {bed.PrometheusURL, faultproxy.Options{Authorization: "Bearer " + sec.prometheusToken, ClientErrorStatus: http.StatusBadRequest}},
		"Jaeger":     {bed.JaegerURL, faultproxy.Options{Authorization: "Bearer " + sec.jaegerToken}},
		// Tempo's 4xx is a 403 (Jaeger's the default 401): both refusals are covered.
		"Tempo": {bed.TempoURL, faultproxy.Options{Authorization: "Bearer " + sec.tempoToken, ClientErrorStatus: http.StatusForbidden}},
	} {
		proxy, err := faultproxy.New(p.target, p.opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(proxy.Close)
		r.proxies[name] = proxy
	}
	timeout := upstreamTimeout.Seconds()
	settings := pluginhost.DataSource{
		UID: "hsi-faults", Name: "HSI Profiling",
		JSONData: map[string]any{
			"pyroscopeUrl": r.proxies["Pyroscope"].URL(), "pyroscopeAuth": "basic", "pyroscopeBasicAuthUser": sec.pyroscopeUser,
			"prometheusUrl": r.proxies["Prometheus"].URL(), "prometheusAuth": "bearer",
			"jaegerUrl": r.proxies["Jaeger"].URL(), "jaegerAuth": "bearer",
			"tempoUrl": r.proxies["Tempo"].URL(), "tempoAuth": "bearer", "tempoTenant": bed.TempoTenant,
			"traceStore":              traceStore,
			"pyroscopeTimeoutSeconds": timeout, "prometheusTimeoutSeconds": timeout, "jaegerTimeoutSeconds": timeout, "tempoTimeoutSeconds": timeout,
			"traceDirectories": []string{traceDir},
		},
		SecureJSONData: map[string]string{
			"pyroscopeBasicAuthPassword": sec.pyroscopePassword,
			"prometheusBearerToken":      sec.prometheusToken,
			"jaegerBearerToken":          sec.jaegerToken,
			"tempoBearerToken":           sec.tempoToken,
		},
		GrafanaConfig: map[string]string{"GF_RESPONSE_LIMIT": fmt.Sprint(responseLimit)},
	}
	h, err := pluginhost.Start(binary, settings, r.log,
		// Grafana's tracing settings for plugins, every span sampled and exported quickly.
		"GF_INSTANCE_OTLP_ADDRESS="+bed.JaegerOTLP, "GF_INSTANCE_OTLP_PROPAGATION=w3c",
		"GF_INSTANCE_OTLP_SAMPLER_TYPE=const", "GF_INSTANCE_OTLP_SAMPLER_PARAM=1", "OTEL_BSP_SCHEDULE_DELAY=200")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	r.host = h
	return r
}

func (r *rig) set(t *testing.T, name string, f faultproxy.Fault) {
	t.Helper()
	if err := r.proxies[name].Set(f); err != nil {
		t.Fatal(err)
	}
}

// checkCredentials says whether every request each proxy saw carried its upstream's
// credentials, and that each saw some: the secrets were in use, so their absence elsewhere
// means something.
func (r *rig) checkCredentials(t *testing.T) {
	t.Helper()
	for name, p := range r.proxies {
		reqs := p.Requests()
		if len(reqs) == 0 {
			t.Errorf("%s's proxy saw no request", name)
		}
		for _, req := range reqs {
			if !req.AuthOK {
				t.Errorf("%s got %s %s without its configured credentials", name, req.Method, req.Path)
				break
			}
		}
	}
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// slowRequest is a demo request slow in its database step whose whole-request profile the plugin
// answers from span profiles (testbed.SlowRequest), as a user picks a slow request from the
// dashboard, and the span IDs of its nemotron-backend spans.
func slowRequest(t *testing.T) (traceID string, spanIDs []string) {
	t.Helper()
	h, err := pluginhost.Start(binary, pluginhost.DataSource{UID: "hsi-direct", JSONData: map[string]any{
		"pyroscopeUrl": bed.PyroscopeURL, "prometheusUrl": bed.PrometheusURL, "jaegerUrl": bed.JaegerURL,
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	if traceID, err = testbed.SlowRequest(t.Context(), bed, testbed.HostNotice(h)); err != nil {
		t.Fatal(err)
	}
	var trace struct {
		Data []struct {
			Spans []struct {
				SpanID    string `json:"spanID"`
				ProcessID string `json:"processID"`
			} `json:"spans"`
			Processes map[string]struct{ ServiceName string } `json:"processes"`
		} `json:"data"`
	}
	res, err := http.Get(bed.JaegerURL + "/api/traces/" + traceID)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if err := json.NewDecoder(res.Body).Decode(&trace); err != nil || len(trace.Data) != 1 {
		t.Fatalf("trace %s from Jaeger: %v", traceID, err)
	}
	for _, s := range trace.Data[0].Spans {
		if trace.Data[0].Processes[s.ProcessID].ServiceName == "nemotron-backend" {
			spanIDs = append(spanIDs, s.SpanID)
		}
	}
	if len(spanIDs) == 0 {
		t.Fatalf("trace %s has no nemotron-backend span", traceID)
	}
	return traceID, spanIDs
}
