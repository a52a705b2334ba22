package models

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// queryParsers are every query type's decoder, as the handlers call them on a DataQuery's JSON.
var queryParsers = map[string]func(json.RawMessage) (any, error){
	QueryTypeProfile:      func(r json.RawMessage) (any, error) { return ParseProfileQuery(r) },
	QueryTypeTrace:        func(r json.RawMessage) (any, error) { return ParseTraceQuery(r) },
	QueryTypeSlowRequests: func(r json.RawMessage) (any, error) { return ParseSlowRequestsQuery(r) },
	QueryTypeGPUMetrics:   func(r json.RawMessage) (any, error) { return ParseGPUMetricsQuery(r) },
	QueryTypeGPUClass:     func(r json.RawMessage) (any, error) { return ParseGPUClassQuery(r) },
	QueryTypeGPULocal:     func(r json.RawMessage) (any, error) { return ParseGPULocalQuery(r) },
	QueryTypeKernels:      func(r json.RawMessage) (any, error) { return ParseKernelsQuery(r) },
}

// reencode writes a validated query back as query JSON, in the form its decoder reads (the
// fields Go's encoder would write differently are spelled out).
func reencode(q any) ([]byte, error) {
	switch q := q.(type) {
	case *GPUClassQuery:
		return json.Marshal(struct {
			GPUFilter
			Format  string `json:"format"`
			MinStep string `json:"minStep"`
		}{q.GPUFilter, q.Format, q.MinStep.String()})
	case *SlowRequestsQuery:
		return json.Marshal(map[string]any{"service": q.Service, "endpoint": q.Endpoint, "limit": q.Limit,
			"minDuration": time.Duration(q.MinDuration).String()})
	}
	return json.Marshal(q)
}

// FuzzParseQuery feeds arbitrary query JSON to every query type's decoder. Whatever comes in:
// no panic; an error says where (a quoted field name or "query JSON") in at most a few hundred
// characters, never the Go struct's path; a query that validates is JSON again and reads back
// to the same query (validation is idempotent, so what the handlers use is what was checked).
func FuzzParseQuery(f *testing.F) {
	seeds := []string{
		`{"refId":"A","queryType":"profile"}`,
		`{"refId":"span-flamegraph-refId","queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}","profileTypeId":"","groupBy":[],"spanSelector":["9a1c2b3d4e5f6a7b"],"datasource":{"type":"hsi-profiling-datasource","uid":"hsi"},"intervalMs":1000}`,
		`{"labelSelector":"{service_name=~\"ai-.*\", span_name!=\"x\"}","groupBy":["service_name"],"limit":3,"maxNodes":100}`,
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","perService":true}`,
		`{"traceId":"a3ce929d0e0e4736","baseline":{"from":"now-2h","to":"now-1h"},"comparison":{"labelSelector":"{a=\"b\"}","spanSelector":["9A1C2B3D4E5F6A7B"]}}`,
		`{"baseline":{"traceId":"x"}}`,
		`{"labelSelector":"{a=\"b\"} or vector(1)"}`,
		`{"profileTypeId":"a:b:c:d:e\"} or {"}`,
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","allocTypeId":"memory:alloc_objects:count:space:bytes","maxNodes":512}`,
		`{"service":"nemotron-backend","endpoint":"/api/detect","limit":50,"minDuration":"1.5s"}`,
		`{"service":"x\"} or vector(1)","minDuration":250}`,
		`{"metrics":["gpu_utilization","fb_used_percent"],"hosts":["gpu-node-1"],"gpus":["0","GPU-5fd4"],"aggregation":"host"}`,
		`{"hosts":["x\"} or vector(1) #"],"gpuSelector":"{cluster=\"prod\"}","models":["NVIDIA A100-SXM4-80GB"]}`,
		`{"gpuSelector":"{__name__=~\".+\"}"}`,
		`{"hosts":["fixture-node-a"],"gpus":["0","3"],"format":"shares","minStep":"1m"}`,
		`{"minStep":"1d"}`,
		`{"view":"processes"}`,
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","file":"run1/trace.json"}`,
		`{"file":"../../etc/passwd"}`,
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","view":"diff"}`,
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","view":"diff","baseline":{"recent":25,"match":"bucket:fleet/infer/*/infer_*"}}`,
		`{"file":"infer/x.json","view":"diff","baseline":{"traceId":"a3ce929d0e0e4736"}}`,
		`{"traceId":"a3ce929d0e0e4736","view":"diff","baseline":{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736"}}`,
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","view":"diff","baseline":{"recent":1e3,"match":"[","traceId":7}}`,
		`{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","view":"diff","baseline":"recent"}`,
		`{"gpus":[1]}`,
		`{"maxNodes":"many"}`,
		`[]`, `null`, `"x"`, `{`, ``,
	}
	// 10,000-character values in every free-text field: errors quote them truncated.
	long := strings.Repeat(`x"}`, 3334)
	for _, field := range []string{"labelSelector", "profileTypeId", "allocTypeId", "traceId", "service", "endpoint", "aggregation", "format", "minStep", "view", "file", "gpuSelector"} {
		b, _ := json.Marshal(map[string]string{field: long})
		seeds = append(seeds, string(b))
	}
	b, _ := json.Marshal(map[string][]string{"hosts": {long}, "spanSelector": {long}, "groupBy": {long}, "metrics": {long}})
	seeds = append(seeds, string(b))
	for _, field := range []string{"match", "traceId", "recent"} {
		b, _ := json.Marshal(map[string]any{"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "view": "diff", "baseline": map[string]string{field: long}})
		seeds = append(seeds, string(b))
	}
	for _, s := range seeds {
		for i := range len(queryParsers) {
			f.Add(uint8(i), []byte(s))
		}
	}
	names := sortedJSONKeys(queryParsers)
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		name := names[int(which)%len(names)]
		parse := queryParsers[name]
		q, err := parse(raw)
		if err != nil {
			msg := err.Error()
			if !strings.Contains(msg, `"`) && !strings.Contains(msg, "query JSON") {
				t.Fatalf("%s: error %q names no field", name, msg)
			}
			if strings.Contains(msg, "GPUFilter") {
				t.Fatalf("%s: error %q names the Go struct, not the field", name, msg)
			}
			if len(msg) > 1024 && len(msg) > len(raw)/2 {
				t.Fatalf("%s: error of %d characters for %d bytes of input", name, len(msg), len(raw))
			}
			return
		}
		again, err := reencode(q)
		if err != nil {
			t.Fatalf("%s: a valid query does not marshal: %v", name, err)
		}
		q2, err := parse(again)
		if err != nil {
			t.Fatalf("%s: the validated query %s does not read back: %v", name, again, err)
		}
		if !reflect.DeepEqual(q, q2) {
			t.Fatalf("%s: validation is not idempotent:\n%#v\n%#v", name, q, q2)
		}
		if p, ok := q.(*ProfileQuery); ok {
			now := time.UnixMilli(1_700_000_000_000)
			for side, d := range map[string]*DiffSide{"baseline": p.Baseline, "comparison": p.Comparison} {
				if d == nil {
					continue
				}
				if _, _, err := d.Range(now.Add(-time.Hour), now, now, side); err != nil && !strings.Contains(err.Error(), `"`+side+".") {
					t.Fatalf("range error %q does not name %s", err, side)
				}
			}
		}
	})
}

// FuzzLoadSettings loads arbitrary jsonData and secureJsonData. Whatever comes in: no panic; a
// failure names jsonData; no error anywhere in the settings repeats a secret.
func FuzzLoadSettings(f *testing.F) {
	f.Add([]byte(`{"pyroscopeUrl":"http://pyroscope:4040","pyroscopeAuth":"basic","pyroscopeBasicAuthUser":"u","prometheusUrl":"https://prom:9090/","prometheusTlsSkipVerify":true,"jaegerUrl":"http://jaeger:16686","jaegerTimeoutSeconds":"5","minStep":"1m"}`),
		[]byte(`{"pyroscopeBasicAuthPassword":"s3cret-password-1"}`))
	f.Add([]byte(`{"pyroscopeUrl":"ftp://x","prometheusAuth":"bearer","jaegerTimeoutSeconds":1e9,"minStep":"-1s","nvmlEnabled":"yes"}`),
		[]byte(`{"pyroscopeTlsClientKey":"-----BEGIN KEY----- s3cret"}`))
	f.Add([]byte(`{"dcgmMetricNames":{"gpu_utilization":"MY_UTIL"},"dcgmLabelNames":{"host":"node"},"gpuMaxSeries":10,"latencyHistograms":[{"metric":"http_request_duration_seconds","serviceLabels":["service"],"endpointLabel":"endpoint"}],"hostMap":{"a":"b"},"traceDirectories":["/var/lib/profiles","rel"],"traceMaxFiles":"x"}`),
		[]byte(`{"prometheusBearerToken":"tok-1234567890"}`))
	f.Add([]byte(`{"classifyThresholds":{"computeBound":2},"selfProfilingUrl":"http://user:pw@x"}`), []byte(`{}`))
	f.Add([]byte(`[1,2]`), []byte(`null`))
	f.Add([]byte(`{"pyroscopeUrl":"http://u:tok-1234567890@host"}`), []byte(`{"pyroscopeBearerToken":"tok-1234567890"}`))
	f.Fuzz(func(t *testing.T, jsonData, secureJSON []byte) {
		secure := map[string]string{}
		if json.Unmarshal(secureJSON, &secure) != nil {
			secure = nil
		}
		s, bad, err := LoadSettings(backend.DataSourceInstanceSettings{JSONData: jsonData, DecryptedSecureJSONData: secure})
		if err != nil {
			if !strings.Contains(err.Error(), "jsonData") {
				t.Fatalf("error %q does not name jsonData", err)
			}
			return
		}
		var errs []error
		for _, u := range s.Upstreams() {
			errs = append(errs, bad.Upstream(u.Name))
		}
		errs = append(errs, bad.MinStep, bad.GPU, bad.NVML, bad.Kernels, bad.Join)
		for _, e := range errs {
			if e == nil {
				continue
			}
			msg := e.Error()
			if msg == "" {
				t.Fatal("empty settings error")
			}
			for k, v := range secure {
				// A secret that is also typed into jsonData is not the errors' leak.
				if len(v) >= 8 && strings.Contains(msg, v) && !strings.Contains(string(jsonData), v) {
					t.Fatalf("settings error repeats secureJsonData.%s: %s", k, msg)
				}
			}
		}
		if s.MinStep <= 0 {
			t.Fatalf("min step %v", s.MinStep)
		}
		for _, u := range s.Upstreams() {
			if u.Timeout < time.Second || u.Timeout > MaxTimeout {
				t.Fatalf("%s timeout %v", u.Name, u.Timeout)
			}
		}
		_ = fmt.Sprint(s.DCGM, s.Classify, s.Join)
	})
}
