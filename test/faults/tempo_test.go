//go:build integration

package faults

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/tempofake"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/otlptrace"
)

// With Tempo as the trace store (Jaeger configured but not chosen), every query type and route
// under every fault of Tempo: the parts the other upstreams give stay, Tempo is named with its
// URL and the cause, within the timeout, no secret anywhere.
func TestTraceReadingQueriesUnderEveryTempoFault(t *testing.T) {
	traceID, spanIDs := slowRequest(t)
	waitInTempo(t, traceID)
	traceDir := t.TempDir()
	if _, err := testbed.WriteKernelTrace(traceDir, traceID); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, newSecrets(), traceDir, "tempo")
	runMatrix(t, r, tempoCases(queryCases(traceID, spanIDs)), tempoRoutes(resourceCases(traceID)), []string{"Tempo"})
	for _, req := range r.proxies["Jaeger"].Requests() {
		if req.Path != "/api/v3/services" && req.Path != "/api/services" {
			t.Errorf("Jaeger, configured but not the trace store, was asked %s %s", req.Method, req.Path)
		}
	}
	if len(r.proxies["Tempo"].Requests()) == 0 {
		t.Error("Tempo's proxy saw no request")
	}
	if s := r.secrets.leaked(r.log.Bytes()); s != "" {
		t.Errorf("the plugin's log carries the secret %q", s)
	}
}

// tempoCases are the query cases with Tempo where they read Jaeger.
func tempoCases(cases []queryCase) []queryCase {
	for i := range cases {
		c := &cases[i]
		for j, u := range c.uses {
			if u == "Jaeger" {
				c.uses[j] = "Tempo"
			}
		}
		if k, ok := c.keep["Jaeger"]; ok {
			c.keep["Tempo"] = k
			delete(c.keep, "Jaeger")
		}
		if v, ok := c.say["Jaeger"]; ok {
			c.say["Tempo"] = v
			delete(c.say, "Jaeger")
		}
	}
	return cases
}

func tempoRoutes(routes []resourceCase) []resourceCase {
	for i := range routes {
		if routes[i].upstream == "Jaeger" {
			routes[i].upstream = "Tempo"
		}
	}
	return routes
}

// waitInTempo waits until the bed's Tempo holds the trace (Jaeger forwards it a moment after it
// takes it).
func waitInTempo(t *testing.T, traceID string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest(http.MethodGet, bed.TempoURL+"/api/traces/"+traceID, nil)
		req.Header.Set("X-Scope-OrgID", bed.TempoTenant)
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s never reached the bed's Tempo: %v", traceID, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// A multi-tenant Tempo asked without a tenant, and a trace Tempo answers only in part: the
// trace query says what to set, and answers the part with a warning that says so.
func TestTempoWithoutTenantAndWithAPartialTrace(t *testing.T) {
	traceID, _ := slowRequest(t)
	waitInTempo(t, traceID)
	query := map[string]any{"queryType": "trace", "traceId": traceID, "profileTypeId": cpu}

	noTenant := startPlugin(t, map[string]any{"pyroscopeUrl": bed.PyroscopeURL, "prometheusUrl": bed.PrometheusURL, "tempoUrl": bed.TempoURL})
	a := ask(t, noTenant, query)
	for _, want := range []string{"Tempo (" + bed.TempoURL + "): HTTP 401: no org id", "jsonData.tempoTenant"} {
		if !strings.Contains(a.text, want) {
			t.Errorf("without a tenant, the answer lacks %q: %s", want, a.text)
		}
	}
	health, err := noTenant.CheckHealth(ctxFor(t, time.Minute))
	if err != nil || health.Status != pluginv2.CheckHealthResponse_ERROR || !strings.Contains(health.Message, "Tempo: HTTP 401: no org id") {
		t.Errorf("health without a tenant: %v %v", health, err)
	}

	// A Tempo whose size limit the trace exceeds: a fake holding the bed's copy of the trace.
	small := partialTempo(t, traceID)
	partial := startPlugin(t, map[string]any{"pyroscopeUrl": bed.PyroscopeURL, "prometheusUrl": bed.PrometheusURL, "tempoUrl": small.URL})
	a = ask(t, partial, query)
	if a.err != "" || len(a.frames) == 0 || a.frames[0].Rows() == 0 {
		t.Fatalf("partial trace: %s\n%s", a.shape(), a.text)
	}
	if !strings.Contains(a.text, "Trace exceeds maximum size of") {
		t.Errorf("the partial trace's answer does not say it is partial: %s", a.text)
	}
}

// partialTempo is a Tempo fake holding the bed's copy of the trace, with a size limit that keeps
// about half of it.
func partialTempo(t *testing.T, traceID string) *tempofake.Server {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, bed.TempoURL+"/api/traces/"+traceID, nil)
	req.Header.Set("X-Scope-OrgID", bed.TempoTenant)
	req.Header.Set("Accept", "application/protobuf")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body bytes.Buffer
	if _, err := body.ReadFrom(res.Body); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("trace %s from the bed's Tempo: HTTP %d %v", traceID, res.StatusCode, err)
	}
	td, err := otlptrace.UnmarshalProto(body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	fake, err := tempofake.Start(tempofake.Options{HTTPAddr: "127.0.0.1:0", OTLPAddr: "127.0.0.1:0", MaxBytesPerTrace: body.Len() / 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fake.Close)
	fake.Add("", td)
	return fake
}

func startPlugin(t *testing.T, jsonData map[string]any) *pluginhost.Host {
	t.Helper()
	h, err := pluginhost.Start(binary, pluginhost.DataSource{UID: fmt.Sprintf("hsi-tempo-%d", time.Now().UnixNano()), JSONData: jsonData}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	return h
}

func ask(t *testing.T, h *pluginhost.Host, json map[string]any) answer {
	t.Helper()
	now := time.Now()
	res, err := h.QueryData(ctxFor(t, time.Minute), pluginhost.Query{RefID: "A", From: now.Add(-time.Hour), To: now, JSON: json})
	if err != nil {
		t.Fatal(err)
	}
	return decode(res.Responses["A"])
}
