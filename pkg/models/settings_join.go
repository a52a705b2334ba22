package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
)

// SpanMatch is how spans map to hosts and GPUs (the join's keys of the settings).
type SpanMatch struct {
	// HostAttribute is the span resource attribute naming the host a span ran on
	// (jsonData.joinHostAttribute, default host.name); a span attribute of that name is used
	// when the resource lacks it.
	HostAttribute string
	// HostMap maps a span's host to the value of DCGM's host label (jsonData.joinHostMap, an
	// object {"span host": "DCGM host"}); hosts not listed map to themselves.
	HostMap map[string]string
	// GPUAttribute is the span attribute naming the GPU a span used, by index or UUID, several
	// separated by commas (jsonData.joinGpuAttribute, default gpu.index). A service that sets it
	// on any of a trace's spans is joined to those GPUs; other spans to every GPU of their host.
	GPUAttribute string
}

// JoinSettings holds how spans map to hosts and GPUs, where data links point, and which
// request-duration histograms the slowRequests query reads. Every key is optional; the defaults
// fit the demo and OpenTelemetry's conventions.
type JoinSettings struct {
	// SpanMatch is how spans map to hosts and GPUs: all the trace join reads of these settings.
	SpanMatch

	// TraceDatasourceUID is the trace data source that span links open in Explore
	// (jsonData.traceDatasourceUid); empty: spans carry no trace link.
	TraceDatasourceUID string
	// TraceDatasourceType is jaeger (default; tempo when traces are read from Tempo) or tempo: the query model of that data source.
	TraceDatasourceType string
	// GPUDashboardUID is the dashboard GPU links open (jsonData.gpuDashboardUid).
	GPUDashboardUID string
	// RequestDashboardUID is the Request-Level Profiling dashboard slow traces link to
	// (jsonData.requestDashboardUid).
	RequestDashboardUID string

	// LatencyHistograms are the request-duration histograms slowRequests reads, each queried
	// (jsonData.latencyHistograms, a list; default the demo's and OpenTelemetry's).
	LatencyHistograms []LatencyHistogram
	// LatencyYellow and LatencyRed are the latency thresholds: below yellow is green, from red on
	// is red (jsonData.latencyYellowMs, latencyRedMs; default 500 ms and 1 s).
	LatencyYellow, LatencyRed time.Duration
}

// LatencyHistogram is one classic Prometheus histogram of request durations in seconds.
type LatencyHistogram struct {
	// Metric is the histogram's name without the _bucket suffix.
	Metric string `json:"metric"`
	// ServiceLabels name the service; the first one a series has wins (OpenTelemetry's
	// service_name, else job as Prometheus' OTLP receiver sets it).
	ServiceLabels []string `json:"serviceLabels"`
	// EndpointLabel names the endpoint (route).
	EndpointLabel string `json:"endpointLabel"`
}

// Defaults of the join settings.
const (
	DefaultHostAttribute       = "host.name"
	DefaultGPUAttribute        = "gpu.index"
	DefaultGPUDashboardUID     = "hsi-gpu-metrics"
	DefaultRequestDashboardUID = "hsi-request-profiling"
	TraceDatasourceJaeger      = "jaeger"
	TraceDatasourceTempo       = "tempo"
	DefaultLatencyYellow       = 500 * time.Millisecond
	DefaultLatencyRed          = time.Second
)

// DefaultLatencyHistograms are the demo's histogram (service, endpoint) and OpenTelemetry's HTTP
// server duration as Prometheus names it (http_route; service_name when resource attributes are
// promoted, else job).
func DefaultLatencyHistograms() []LatencyHistogram {
	return []LatencyHistogram{
		{Metric: "http_request_duration_seconds", ServiceLabels: []string{"service"}, EndpointLabel: "endpoint"},
		{Metric: "http_server_request_duration_seconds", ServiceLabels: []string{"service_name", "job"}, EndpointLabel: "http_route"},
	}
}

// DefaultJoinSettings returns the settings used when jsonData sets none of the keys.
func DefaultJoinSettings() JoinSettings {
	return JoinSettings{
		SpanMatch:           SpanMatch{HostAttribute: DefaultHostAttribute, HostMap: map[string]string{}, GPUAttribute: DefaultGPUAttribute},
		TraceDatasourceType: TraceDatasourceJaeger,
		GPUDashboardUID:     DefaultGPUDashboardUID,
		RequestDashboardUID: DefaultRequestDashboardUID,
		LatencyHistograms:   DefaultLatencyHistograms(),
		LatencyYellow:       DefaultLatencyYellow,
		LatencyRed:          DefaultLatencyRed,
	}
}

// MapHost returns the DCGM host label value of a span's host.
func (j SpanMatch) MapHost(spanHost string) string {
	if h, ok := j.HostMap[spanHost]; ok {
		return h
	}
	return spanHost
}

// metricNameRE is Prometheus' classic metric name syntax; the histograms' names are printed into
// PromQL through the parser's AST, and this keeps odd names out of the settings in the first place.
var metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// dashboardUIDRE is Grafana's dashboard UID syntax (it goes into a URL path).
var dashboardUIDRE = regexp.MustCompile(`^[a-zA-Z0-9\-_]{1,40}$`)

// loadJoin reads the JoinSettings keys of jsonData; it returns the invalid ones, each naming its
// key. Invalid keys keep their defaults, so the rest of the join still works.
func loadJoin(j jsonFields, out *JoinSettings) error {
	*out = DefaultJoinSettings()
	var errs []error
	note := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	str := func(key string, dst *string, check func(string) error) {
		v, err := j.str(key)
		v = strings.TrimSpace(v)
		if err == nil && v != "" && check != nil {
			err = check(v)
		}
		if err != nil {
			note(err)
			return
		}
		if v != "" {
			*dst = v
		}
	}
	nonEmptyAttr := func(key string) func(string) error {
		return func(v string) error {
			if len(v) > 200 {
				return fmt.Errorf("jsonData.%s must be an attribute name (at most 200 characters)", key)
			}
			return nil
		}
	}
	str("joinHostAttribute", &out.HostAttribute, nonEmptyAttr("joinHostAttribute"))
	str("joinGpuAttribute", &out.GPUAttribute, nonEmptyAttr("joinGpuAttribute"))
	str("traceDatasourceUid", &out.TraceDatasourceUID, nil)
	str("traceDatasourceType", &out.TraceDatasourceType, func(v string) error {
		if v != TraceDatasourceJaeger && v != TraceDatasourceTempo {
			return fmt.Errorf("jsonData.traceDatasourceType must be jaeger or tempo, got %q", truncate(v, 40))
		}
		return nil
	})
	uid := func(key string) func(string) error {
		return func(v string) error {
			if !dashboardUIDRE.MatchString(v) {
				return fmt.Errorf("jsonData.%s must be a dashboard UID (letters, digits, - and _, at most 40), got %q", key, truncate(v, 40))
			}
			return nil
		}
	}
	str("gpuDashboardUid", &out.GPUDashboardUID, uid("gpuDashboardUid"))
	str("requestDashboardUid", &out.RequestDashboardUID, uid("requestDashboardUid"))
	note(loadHostMap(j, out))
	note(loadLatencyHistograms(j, out))
	note(loadLatencyThresholds(j, out))
	return errors.Join(errs...)
}

func loadHostMap(j jsonFields, out *JoinSettings) error {
	raw, ok := j["joinHostMap"]
	if !ok || string(raw) == "null" {
		return nil
	}
	m := map[string]string{}
	if err := json.Unmarshal(raw, &m); err != nil {
		return fmt.Errorf(`jsonData.joinHostMap must be an object of host names, such as {"node-a.example.com": "node-a"}, got %s`, truncate(string(raw), 40))
	}
	for k, v := range m {
		out.HostMap[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return nil
}

func loadLatencyHistograms(j jsonFields, out *JoinSettings) error {
	raw, ok := j["latencyHistograms"]
	if !ok || string(raw) == "null" {
		return nil
	}
	const example = `[{"metric": "http_request_duration_seconds", "serviceLabels": ["service"], "endpointLabel": "endpoint"}]`
	var list []LatencyHistogram
	if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
		return fmt.Errorf("jsonData.latencyHistograms must be a non-empty list such as %s, got %s", example, truncate(string(raw), 40))
	}
	for i := range list {
		h := &list[i]
		h.Metric = strings.TrimSuffix(strings.TrimSpace(h.Metric), "_bucket")
		h.EndpointLabel = strings.TrimSpace(h.EndpointLabel)
		if !metricNameRE.MatchString(h.Metric) {
			return fmt.Errorf("jsonData.latencyHistograms item %d: metric must be a Prometheus metric name, got %q", i+1, truncate(h.Metric, 40))
		}
		if len(h.ServiceLabels) == 0 {
			return fmt.Errorf("jsonData.latencyHistograms item %d: serviceLabels must list at least one label name", i+1)
		}
		for k, l := range h.ServiceLabels {
			h.ServiceLabels[k] = strings.TrimSpace(l)
			if !ValidLabelName(h.ServiceLabels[k]) {
				return fmt.Errorf("jsonData.latencyHistograms item %d: serviceLabels item %d must be a label name, got %q", i+1, k+1, truncate(l, 40))
			}
		}
		if !ValidLabelName(h.EndpointLabel) || h.EndpointLabel == "le" {
			return fmt.Errorf("jsonData.latencyHistograms item %d: endpointLabel must be a label name other than le, got %q", i+1, truncate(h.EndpointLabel, 40))
		}
	}
	out.LatencyHistograms = list
	return nil
}

func loadLatencyThresholds(j jsonFields, out *JoinSettings) error {
	var errs []error
	read := func(key string, dst *time.Duration) {
		ms, err := j.number(key)
		switch {
		case err != nil:
			errs = append(errs, err)
		case ms < 0:
			errs = append(errs, fmt.Errorf("jsonData.%s must be a positive number of milliseconds, got %v", key, ms))
		case ms > 0:
			*dst = time.Duration(ms * float64(time.Millisecond))
		}
	}
	yellow, red := out.LatencyYellow, out.LatencyRed
	read("latencyYellowMs", &yellow)
	read("latencyRedMs", &red)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if yellow >= red {
		return fmt.Errorf("jsonData.latencyYellowMs (%v) must be below jsonData.latencyRedMs (%v)", yellow, red)
	}
	out.LatencyYellow, out.LatencyRed = yellow, red
	return nil
}
