//go:build integration

// Package protocol tests the plugin binary the way Grafana runs it: built from ./pkg, launched
// through hashicorp go-plugin's handshake and spoken to over the SDK's pluginv2 gRPC services,
// against the real servers of the test bed.
package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/pluginhost"
	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
)

var (
	bed    testbed.Endpoints
	binary string
	// binaryCGO is the plugin built with cgo, so with NVML (pkg/nvml), as the linux/amd64
	// release is: this machine has no NVIDIA driver.
	binaryCGO string
)

func TestMain(m *testing.M) {
	os.Exit(testbed.MainWithPlugin(m, &bed, testbed.PluginBuild{Path: &binary}, testbed.PluginBuild{CGO: true, Path: &binaryCGO}))
}

func start(t *testing.T, jsonData map[string]any) (*pluginhost.Host, *bytes.Buffer) {
	t.Helper()
	var log bytes.Buffer
	h, err := pluginhost.Start(binary, pluginhost.DataSource{UID: "hsi-test", Name: "HSI Profiling", JSONData: jsonData}, &log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	return h, &log
}

func allUpstreams() map[string]any {
	return map[string]any{"pyroscopeUrl": bed.PyroscopeURL, "prometheusUrl": bed.PrometheusURL, "jaegerUrl": bed.JaegerURL}
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func TestBinaryHealthAgainstTheRealServers(t *testing.T) {
	h, _ := start(t, allUpstreams())
	res, err := h.CheckHealth(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != pluginv2.CheckHealthResponse_OK {
		t.Fatalf("health = %v %q", res.Status, res.Message)
	}
	for _, part := range []string{"Pyroscope: OK (", "Prometheus: OK (version 2."} {
		if !strings.Contains(res.Message, part) {
			t.Errorf("message %q lacks %q", res.Message, part)
		}
	}
	// The demo's four services at least; more when tests have sent traces of their own (the
	// plugin's, Triton's, the scenarios' randomly named services).
	m := regexp.MustCompile(`Jaeger: OK \((\d+) services, API v3\)`).FindStringSubmatch(res.Message)
	if len(m) < 2 {
		t.Fatalf("message %q does not report Jaeger's services through API v3", res.Message)
	}
	if n, _ := strconv.Atoi(m[1]); n < 4 {
		t.Errorf("message %q reports fewer services than the demo's four", res.Message)
	}
}

func TestBinaryHealthNamesADownUpstream(t *testing.T) {
	settings := allUpstreams()
	settings["jaegerUrl"] = "http://127.0.0.1:1" // nothing listens on port 1
	h, _ := start(t, settings)
	res, err := h.CheckHealth(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	want := "Jaeger: unreachable (dial tcp 127.0.0.1:1: connect: connection refused)"
	if res.Status != pluginv2.CheckHealthResponse_ERROR || !strings.Contains(res.Message, want) ||
		!strings.Contains(res.Message, "Pyroscope: OK") || !strings.Contains(res.Message, "Prometheus: OK") {
		t.Errorf("health = %v %q, want ERROR naming %q with the others OK", res.Status, res.Message, want)
	}
}

func TestBinaryAnswersQueriesAndKeepsRunningAfterBadOnes(t *testing.T) {
	h, _ := start(t, allUpstreams())
	now := time.Now()
	res, err := h.QueryData(ctx(t),
		pluginhost.Query{RefID: "A", From: now.Add(-15 * time.Minute), To: now, JSON: map[string]any{
			"queryType": "profile", "labelSelector": `{service_name="nemotron-backend"}`,
			"profileTypeId": "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
		}},
		pluginhost.Query{RefID: "B", From: now.Add(-time.Minute), To: now, JSON: map[string]any{"queryType": "nope"}},
		pluginhost.Query{RefID: "C", From: now.Add(-time.Minute), To: now, JSON: map[string]any{"queryType": "profile", "maxNodes": []int{1}}},
	)
	if err != nil {
		t.Fatal(err)
	}
	a := res.Responses["A"]
	if a.Error != "" {
		t.Fatalf("A: %s", a.Error)
	}
	frames, err := data.UnmarshalArrowFrames(a.Frames)
	if err != nil {
		t.Fatal(err)
	}
	f := frames[0]
	if f.Name != "response" || f.Meta.PreferredVisualization != data.VisTypeFlameGraph || f.Rows() < 2 {
		t.Fatalf("A: frame %q, %d rows, meta %+v", f.Name, f.Rows(), f.Meta)
	}
	label, _ := f.FieldByName("label")
	if !contains(label.Config.TypeConfig.Enum.Text, "main.dbQuery") {
		t.Errorf("A: flame graph of the demo backend lacks main.dbQuery")
	}
	if b := res.Responses["B"]; !strings.Contains(b.Error, `unknown query type "nope": valid query types are both, diff, `) || b.ErrorSource != "downstream" {
		t.Errorf("B: %q (%s)", b.Error, b.ErrorSource)
	}
	if c := res.Responses["C"]; !strings.Contains(c.Error, `field "maxNodes" must be a whole number from 1 to 1048576, got array`) {
		t.Errorf("C: %q", c.Error)
	}
	if h.Exited() {
		t.Fatal("the plugin process exited")
	}
	if res, err := h.CheckHealth(ctx(t)); err != nil || res.Status != pluginv2.CheckHealthResponse_OK {
		t.Errorf("after bad queries: health %v, %v", res, err)
	}
}

func TestBinaryServesResources(t *testing.T) {
	h, _ := start(t, allUpstreams())
	res, err := h.CallResource(ctx(t), "profile-types")
	if err != nil {
		t.Fatal(err)
	}
	var types []struct{ ID string }
	if res.Status != 200 || json.Unmarshal(res.Body, &types) != nil || len(types) == 0 {
		t.Fatalf("profile-types: HTTP %d %s", res.Status, res.Body)
	}
	res, err = h.CallResource(ctx(t), "upstreams")
	if err != nil || res.Status != 200 || !strings.Contains(string(res.Body), `"name":"Jaeger","configured":true`) {
		t.Errorf("upstreams: %v %+v", err, res)
	}
}

func TestBinaryAnswersAWholeRequestProfile(t *testing.T) {
	h, _ := start(t, allUpstreams())
	res, err := http.Get(bed.DemoURL + "/api/detect?slow=model")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	traceID := res.Header.Get("X-Trace-Id")
	// Spans reach Jaeger within a second, span profiles Pyroscope at the demo's next upload (2 s).
	var services []string
	var notice string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(time.Second) {
		now := time.Now()
		qr, err := h.QueryData(ctx(t), pluginhost.Query{RefID: "A", From: now.Add(-time.Minute), To: now, JSON: map[string]any{
			"queryType": "profile", "traceId": traceID, "perService": true,
		}})
		if err != nil {
			t.Fatal(err)
		}
		a := qr.Responses["A"]
		if a.Error != "" {
			notice = a.Error
			continue
		}
		frames, err := data.UnmarshalArrowFrames(a.Frames)
		if err != nil {
			t.Fatal(err)
		}
		services = services[:0]
		for _, f := range frames[1:] {
			services = append(services, f.Name)
		}
		if len(frames[0].Meta.Notices) > 0 {
			notice = frames[0].Meta.Notices[0].Text
		}
		if strings.Contains(notice, "matched by span ID") && len(services) == 3 {
			label, _ := frames[1].FieldByName("label") // ai-detector (frames in service order) is slow in modelPredict
			if frames[0].Name != "response" || frames[1].Name != "ai-detector" || !contains(label.Config.TypeConfig.Enum.Text, "main.modelPredict") {
				t.Errorf("frames %q, %q: %v", frames[0].Name, frames[1].Name, label.Config.TypeConfig.Enum.Text)
			}
			return
		}
	}
	t.Fatalf("trace %s: services %v, last notice or error: %s", traceID, services, notice)
}

func TestBinaryFillsTemplateVariables(t *testing.T) {
	h, _ := start(t, allUpstreams())
	res, err := h.CallResource(ctx(t), "variable?query="+url.QueryEscape("services()"))
	if err != nil {
		t.Fatal(err)
	}
	var values []struct{ Text, Value string }
	if res.Status != 200 || json.Unmarshal(res.Body, &values) != nil {
		t.Fatalf("variable: HTTP %d %s", res.Status, res.Body)
	}
	var names []string
	for _, v := range values {
		names = append(names, v.Value)
	}
	for _, want := range []string{"ai-detector", "ai-enrichment", "nemotron-backend"} {
		if !contains(names, want) {
			t.Errorf("services() = %v, lacks %s", names, want)
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// With HSI_SELF_PROFILING_URL set, the binary pushes its own profiles to Pyroscope, and the plugin
// itself can show them.
func TestBinaryProfilesItselfWhenAsked(t *testing.T) {
	var log bytes.Buffer
	h, err := pluginhost.Start(binary, pluginhost.DataSource{UID: "hsi-self", JSONData: allUpstreams()}, &log,
		"HSI_SELF_PROFILING_URL="+bed.PyroscopeURL)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Stop()
	deadline := time.Now().Add(60 * time.Second) // pyroscope-go uploads every 15 s
	for {
		now := time.Now()
		res, err := h.QueryData(ctx(t), pluginhost.Query{RefID: "self", From: now.Add(-5 * time.Minute), To: now, JSON: map[string]any{
			"queryType": "profile", "labelSelector": `{service_name="hsi-profiling-datasource"}`,
			"profileTypeId": "memory:inuse_space:bytes:space:bytes",
		}})
		if err != nil {
			t.Fatal(err)
		}
		if r := res.Responses["self"]; r.Error == "" {
			frames, err := data.UnmarshalArrowFrames(r.Frames)
			if err == nil && len(frames) == 1 && frames[0].Rows() > 1 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no self-profile in Pyroscope after 60 s; plugin log:\n%s", log.String())
		}
		time.Sleep(2 * time.Second)
	}
}
