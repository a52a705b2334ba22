package plugin

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// healthGPUs is a GPU store answering catalogue metrics from a table (metric → series), as
// prometheus.Client.GPUMetric does once it has read Prometheus' reply: a metric not in the
// table is not exported, with the notice the client gives.
type healthGPUs struct {
	series map[string][]models.GPUMetricSeries
	err    error
}

func (h *healthGPUs) GPUMetric(_ context.Context, name string, _ models.GPUFilter, _ string, _, _ time.Time, _ time.Duration) (*models.GPUMetricResult, error) {
	if h.err != nil {
		return nil, h.err
	}
	r := &models.GPUMetricResult{Metric: models.GPUMetricInfo{Name: name}}
	s, ok := h.series[name]
	if !ok {
		r.Notices.Warnf("no DCGM series of %s in this range", name)
		return r, nil
	}
	r.Sources, r.Series = []string{"DCGM_" + strings.ToUpper(name)}, s
	return r, nil
}

func (h *healthGPUs) GPUFigures(context.Context, models.GPUFilter, time.Time, time.Time, time.Duration) ([]classify.GPUSeries, notices.List, error) {
	return nil, nil, errNotFaked
}

func (h *healthGPUs) GPULabelValues(context.Context, string, models.GPUFilter, time.Time, time.Time) ([]string, error) {
	return nil, errNotFaked
}

// triageFleet: GPU 0 of node-a has an XID 79 at minute 20, GPU 1 is 60% full and serves a
// request that failed with a CUDA OOM at minute 25, and a tokenizer container of GPU 0's pod
// was OOM-killed at minute 10.
func triageFleet(start time.Time) (*healthGPUs, *memMetrics, *memTraces) {
	steps := 31
	times := make([]time.Time, steps)
	for i := range times {
		times[i] = start.Add(time.Duration(i) * time.Minute)
	}
	flat := func(v float64) []float64 {
		out := make([]float64, steps)
		for i := range out {
			out[i] = v
		}
		return out
	}
	xid := flat(0)
	for i := 20; i < steps; i++ {
		xid[i] = 79
	}
	gpu0 := map[string]string{"host": "node-a", "gpu": "0", "uuid": "GPU-aaaa", "pod": "llm-0", "namespace": "inference", "container": "server", "driver": "570.124.06"}
	gpu1 := map[string]string{"host": "node-a", "gpu": "1", "uuid": "GPU-bbbb", "pod": "llm-1", "namespace": "inference", "container": "server", "driver": "570.124.06"}
	gpus := &healthGPUs{series: map[string][]models.GPUMetricSeries{
		"xid_errors":      {{Labels: gpu0, Times: times, Values: xid}, {Labels: gpu1, Times: times, Values: flat(0)}},
		"fb_used_percent": {{Labels: gpu0, Times: times, Values: flat(50)}, {Labels: gpu1, Times: times, Values: flat(60)}},
		"pcie_replay":     {{Labels: gpu0, Times: times, Values: flat(0)}, {Labels: gpu1, Times: times, Values: flat(0)}},
	}}
	metrics := &memMetrics{kube: models.KubeAnswer{Step: time.Minute, Terminations: []models.ContainerTermination{{
		Namespace: "inference", Pod: "llm-0", Container: "tokenizer", Node: "node-a", Reason: "OOMKilled", ExitCode: 137,
		At: start.Add(10 * time.Minute), Restarts: 1, MemoryLimit: 4 << 30, Query: "max by (namespace, pod, container) (kube_pod_container_status_restarts_total)",
	}}}}
	at := start.Add(25 * time.Minute)
	id := "4bf92f3577b34da6a3ce929d0e0e4736"
	res := map[string]string{"host.name": "node-a", "k8s.pod.name": "llm-1", "k8s.namespace.name": "inference"}
	traces := &memTraces{traces: []models.Trace{{TraceID: id, Spans: []models.Span{
		{TraceID: id, SpanID: "00f067aa0ba902b7", Service: "gateway", Operation: "POST /v1/chat", Start: at.Add(-time.Second), Duration: 2 * time.Second, Status: models.StatusError},
		{TraceID: id, SpanID: "00f067aa0ba902b8", ParentSpanID: "00f067aa0ba902b7", Service: "llm", Operation: "generate", Start: at.Add(-500 * time.Millisecond),
			Duration: 600 * time.Millisecond, Status: models.StatusError, Resource: res, Attributes: map[string]string{"gpu.index": "1", "gen_ai.request.model": "llama-3-70b"},
			Events: []models.SpanEvent{{Name: models.ExceptionEvent, Time: at, Attributes: map[string]string{
				models.ExceptionType: "torch.OutOfMemoryError", models.ExceptionMessage: "CUDA out of memory. Tried to allocate 20.00 GiB."}}}},
	}}}}
	return gpus, metrics, traces
}

func triageQuery(start time.Time, body string) backend.DataQuery {
	return backend.DataQuery{RefID: "A", QueryType: models.QueryTypeTriage, JSON: []byte(`{"queryType":"triage"` + body + `}`),
		TimeRange: backend.TimeRange{From: start, To: start.Add(30 * time.Minute)}, Interval: time.Minute}
}

func triageColumn(f *data.Frame, name string) []string {
	fl, _ := f.FieldByName(name)
	if fl == nil {
		return nil
	}
	out := make([]string, fl.Len())
	for i := range out {
		v, _ := fl.ConcreteAt(i)
		out[i] = fmt.Sprint(v)
	}
	return out
}

func TestTriageAnswersEachViewFromItsStores(t *testing.T) {
	start := time.Unix(1_790_000_040, 0).UTC()
	gpus, metrics, traces := triageFleet(start)
	ds := withSources(t, map[string]any{"traceDatasourceUid": "jaeger-uid"}, correlate.Sources{
		GPUs: correlate.Ready[correlate.GPUStore](gpus), Metrics: correlate.Ready[correlate.MetricStore](metrics), Traces: correlate.Ready[correlate.TraceStore](traces),
	})
	res := run2(t, ds, triageQuery(start, ``))
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if len(res.Frames) != 1 || res.Frames[0].Name != "failures" {
		t.Fatalf("frames %v, want the failures table", res.Frames)
	}
	f := res.Frames[0]
	if got, want := strings.Join(triageColumn(f, "class id"), ","), "cudaOOM,xid,containerOOM"; got != want {
		t.Errorf("classes newest first: %s, want %s", got, want)
	}
	if got := triageColumn(f, "gpu"); strings.Join(got, ",") != "1,0,0" {
		t.Errorf("gpus %v", got)
	}
	links := triageColumn(f, "gpu dashboard")
	if !strings.HasPrefix(links[1], "/d/hsi-gpu-metrics?") || !strings.Contains(links[1], "var-host=node-a") || !strings.Contains(links[1], "var-gpu=0") {
		t.Errorf("XID's GPU link %q", links[1])
	}
	if tr := triageColumn(f, "traces")[0]; !strings.HasPrefix(tr, "/d/hsi-request-profiling/") || !strings.Contains(tr, "var-trace_id=4bf92f3577b34da6a3ce929d0e0e4736") {
		t.Errorf("CUDA OOM's trace link %q", tr)
	}
	reqIDs, _ := run2(t, ds, triageQuery(start, `,"view":"requests"`)).Frames[0].FieldByName("trace ID")
	if l := reqIDs.Config.Links; len(l) != 2 || l[1].Internal == nil || l[1].Internal.DatasourceUID != "jaeger-uid" {
		t.Errorf("a failed request's links %+v: want its verdict and the trace data source (jaeger-uid)", l)
	}
	evidence := strings.Join(triageColumn(f, "evidence"), "\n")
	for _, want := range []string{"torch.OutOfMemoryError: CUDA out of memory", "60%", "= 79", "OOMKilled, exit code 137, memory limit 4.0 GiB"} {
		if !strings.Contains(evidence, want) {
			t.Errorf("evidence lacks %q:\n%s", want, evidence)
		}
	}
	if m := triageColumn(f, "mapping")[0]; !strings.Contains(m, "model llama-3-70b") || !strings.Contains(m, "pod inference/llm-1") || !strings.Contains(m, "driver 570.124.06") {
		t.Errorf("CUDA OOM's mapping chain %q", m)
	}

	req := run2(t, ds, triageQuery(start, `,"view":"requests"`))
	if req.Error != nil || len(req.Frames) != 1 || req.Frames[0].Name != "requests" || req.Frames[0].Rows() != 1 {
		t.Fatalf("requests view: %v %v", req.Error, req.Frames)
	}
	if fb := triageColumn(req.Frames[0], "framebuffer used")[0]; !strings.Contains(fb, "60") {
		t.Errorf("the request's GPU framebuffer at the failure: %s", fb)
	}

	sig := run2(t, ds, triageQuery(start, `,"view":"signals"`))
	if sig.Error != nil || sig.Frames[0].Name != "signals" {
		t.Fatalf("signals view: %v %v", sig.Error, sig.Frames)
	}
	rows := strings.Join(triageColumn(sig.Frames[0], "signal"), "|") + "\n" + strings.Join(triageColumn(sig.Frames[0], "status"), "|")
	if !strings.Contains(rows, "ecc_dbe") || !strings.Contains(rows, "missing") {
		t.Errorf("the ECC series are not exported: the signals must say so:\n%s", rows)
	}

	only := run2(t, ds, triageQuery(start, `,"classes":["xid"]`))
	if got := triageColumn(only.Frames[0], "class id"); len(got) != 1 || got[0] != "xid" {
		t.Errorf("classes [xid]: %v", got)
	}
}

// One store failing leaves the others' classes and a warning; all failing is the error.
func TestTriageDegradesPerStore(t *testing.T) {
	start := time.Unix(1_790_000_040, 0).UTC()
	gpus, metrics, traces := triageFleet(start)
	traces.err = errJaegerDown
	ds := withSources(t, nil, correlate.Sources{
		GPUs: correlate.Ready[correlate.GPUStore](gpus), Metrics: correlate.Ready[correlate.MetricStore](metrics), Traces: correlate.Ready[correlate.TraceStore](traces),
	})
	res := run2(t, ds, triageQuery(start, ``))
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if got := strings.Join(triageColumn(res.Frames[0], "class id"), ","); got != "xid,containerOOM" {
		t.Errorf("with Jaeger down: %s, want the XID and the OOM kill", got)
	}
	var warned bool
	for _, n := range res.Frames[0].Meta.Notices {
		warned = warned || n.Severity == data.NoticeSeverityWarning && strings.Contains(n.Text, "storage backend unavailable")
	}
	if !warned {
		t.Errorf("notices %+v: want Jaeger's failure as a warning", res.Frames[0].Meta.Notices)
	}

	inst, err := NewDatasource(context.Background(), backend.DataSourceInstanceSettings{JSONData: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	none := inst.(*Datasource)
	defer none.Dispose()
	if res := run2(t, none, triageQuery(start, ``)); res.Error == nil || !strings.Contains(res.Error.Error(), "not configured") {
		t.Errorf("no store at all: %v, want why", res.Error)
	}
}

func TestTriageRejectsBadQueries(t *testing.T) {
	ds := withSources(t, nil, correlate.Sources{})
	start := time.Unix(1_790_000_040, 0).UTC()
	for body, want := range map[string]string{
		`,"view":"timeline"`:          `field "view" must be one of failures, requests, signals`,
		`,"classes":["oom"]`:          `field "classes" item 1: unknown class "oom"`,
		`,"services":[""]`:            `field "services" item 1 is empty`,
		`,"hosts":"gpu-node-1"`:       `hosts`,
		`,"gpuSelector":"{cluster=}"`: `gpuSelector`,
	} {
		res := run2(t, ds, triageQuery(start, body))
		if res.Error == nil || !strings.Contains(res.Error.Error(), "invalid triage query") || !strings.Contains(res.Error.Error(), want) {
			t.Errorf("%s: %v, want an invalid query naming %q", body, res.Error, want)
		}
		if res.Status != backend.StatusBadRequest {
			t.Errorf("%s: status %v, want 400", body, res.Status)
		}
	}
}
