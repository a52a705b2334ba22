package models

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestJoinSettingsDefaultsFitTheDemoAndOpenTelemetry(t *testing.T) {
	s := load(t, `{}`, nil)
	j := s.Join
	if s.bad.Join != nil || s.bad.GPU != nil {
		t.Fatalf("errors with no keys set: %v / %v", s.bad.Join, s.bad.GPU)
	}
	if j.HostAttribute != "host.name" || j.GPUAttribute != "gpu.index" || j.MapHost("gpu-node-1") != "gpu-node-1" {
		t.Errorf("span mapping defaults: %+v", j)
	}
	if j.GPUDashboardUID != "hsi-gpu-metrics" || j.RequestDashboardUID != "hsi-request-profiling" ||
		j.TraceDatasourceUID != "" || j.TraceDatasourceType != "jaeger" {
		t.Errorf("link defaults: %+v", j)
	}
	if j.LatencyYellow != 500*time.Millisecond || j.LatencyRed != time.Second {
		t.Errorf("thresholds %v %v", j.LatencyYellow, j.LatencyRed)
	}
	if len(j.LatencyHistograms) != 2 || j.LatencyHistograms[0].Metric != "http_request_duration_seconds" ||
		j.LatencyHistograms[1].EndpointLabel != "http_route" || !slices.Equal(j.LatencyHistograms[1].ServiceLabels, []string{"service_name", "job"}) {
		t.Errorf("histograms %+v", j.LatencyHistograms)
	}
}

func TestJoinSettingsReadEveryKey(t *testing.T) {
	s := load(t, `{
		"joinHostAttribute": "k8s.node.name", "joinGpuAttribute": "gpu.uuid",
		"joinHostMap": {"ip-10-0-0-1.ec2.internal": "gpu-node-1"},
		"traceDatasourceUid": "tempo-1", "traceDatasourceType": "tempo",
		"gpuDashboardUid": "my-gpus", "requestDashboardUid": "my-requests",
		"latencyHistograms": [{"metric": "rpc_server_duration_seconds_bucket", "serviceLabels": ["app"], "endpointLabel": "rpc_method"}],
		"latencyYellowMs": 200, "latencyRedMs": "400"
	}`, nil)
	j := s.Join
	if s.bad.Join != nil {
		t.Fatal(s.bad.Join)
	}
	if j.HostAttribute != "k8s.node.name" || j.GPUAttribute != "gpu.uuid" || j.MapHost("ip-10-0-0-1.ec2.internal") != "gpu-node-1" || j.MapHost("other") != "other" {
		t.Errorf("span mapping %+v", j)
	}
	if j.TraceDatasourceUID != "tempo-1" || j.TraceDatasourceType != "tempo" || j.GPUDashboardUID != "my-gpus" || j.RequestDashboardUID != "my-requests" {
		t.Errorf("links %+v", j)
	}
	// The _bucket suffix is the series, not the histogram: it is dropped.
	if len(j.LatencyHistograms) != 1 || j.LatencyHistograms[0].Metric != "rpc_server_duration_seconds" || j.LatencyHistograms[0].EndpointLabel != "rpc_method" {
		t.Errorf("histograms %+v", j.LatencyHistograms)
	}
	if j.LatencyYellow != 200*time.Millisecond || j.LatencyRed != 400*time.Millisecond {
		t.Errorf("thresholds %v %v", j.LatencyYellow, j.LatencyRed)
	}
}

func TestJoinSettingsNameTheInvalidKeyAndKeepItsDefault(t *testing.T) {
	cases := []struct{ jsonData, want string }{
		{`{"joinHostMap": ["a"]}`, "jsonData.joinHostMap must be an object of host names"},
		{`{"joinHostAttribute": 3}`, "jsonData.joinHostAttribute must be a string, got 3"},
		{`{"traceDatasourceType": "zipkin"}`, `jsonData.traceDatasourceType must be jaeger or tempo, got "zipkin"`},
		{`{"gpuDashboardUid": "a/b"}`, `jsonData.gpuDashboardUid must be a dashboard UID`},
		{`{"latencyHistograms": []}`, "jsonData.latencyHistograms must be a non-empty list"},
		{`{"latencyHistograms": [{"metric": "a b", "serviceLabels": ["s"], "endpointLabel": "e"}]}`, `item 1: metric must be a Prometheus metric name, got "a b"`},
		{`{"latencyHistograms": [{"metric": "m", "serviceLabels": [], "endpointLabel": "e"}]}`, "item 1: serviceLabels must list at least one label name"},
		{`{"latencyHistograms": [{"metric": "m", "serviceLabels": ["s"], "endpointLabel": "le"}]}`, "item 1: endpointLabel must be a label name other than le"},
		{`{"latencyHistograms": [{"metric": "m", "serviceLabels": ["service.name"], "endpointLabel": "e"}]}`, `serviceLabels item 1 must be a label name, got "service.name"`},
		{`{"latencyYellowMs": 2000}`, "jsonData.latencyYellowMs (2s) must be below jsonData.latencyRedMs (1s)"},
		{`{"latencyRedMs": -1}`, "jsonData.latencyRedMs must be a positive number of milliseconds"},
	}
	for _, c := range cases {
		s := load(t, c.jsonData, nil)
		if s.bad.Join == nil || !strings.Contains(s.bad.Join.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.jsonData, s.bad.Join, c.want)
			continue
		}
		if s.bad.GPU == nil || !strings.Contains(s.bad.GPU.Error(), c.want) {
			t.Errorf("%s: invalid GPU settings %v lack the join error", c.jsonData, s.bad.GPU)
		}
		// The invalid key keeps its default; the other keys are unaffected.
		d := DefaultJoinSettings()
		if s.Join.GPUDashboardUID != d.GPUDashboardUID || len(s.Join.LatencyHistograms) != 2 || s.Join.LatencyRed != time.Second ||
			s.Join.TraceDatasourceType != "jaeger" || s.Join.HostAttribute != "host.name" {
			t.Errorf("%s: defaults not kept: %+v", c.jsonData, s.Join)
		}
		// The upstreams do not depend on the join settings.
		if s.bad.Upstream(Pyroscope) != nil || s.bad.Upstream(Prometheus) != nil || s.bad.Upstream(Jaeger) != nil {
			t.Errorf("%s: an upstream was disabled", c.jsonData)
		}
	}
}
