package frames

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

var traceStart = time.Date(2026, 11, 22, 16, 0, 0, 0, time.UTC)

func i64(v int64) *int64 { return &v }

func spanRows() []correlate.SpanRow {
	sp := func(id, service, op string, startMs, durMs int) models.Span {
		return models.Span{SpanID: id, Service: service, Operation: op,
			Start: traceStart.Add(time.Duration(startMs) * time.Millisecond), Duration: time.Duration(durMs) * time.Millisecond}
	}
	return []correlate.SpanRow{
		{Span: new(sp("b000000000000001", "nemotron-backend", "GET /api/detect", 0, 500)), Self: 25 * time.Millisecond,
			ProfileID: "b000000000000001", CPU: i64(310e6), HotFunction: "crypto/sha256.block", HotSelf: 250e6, Host: "gpu-node-1",
			GPU: &correlate.GPUWindow{GPUs: []classify.GPU{{Host: "gpu-node-1", Index: "0"}, {Host: "gpu-node-1", Index: "1"}}, Class: classify.Idle, ClassShare: 0.75, Util: 35, MemActivity: 12.5, PCIe: 2.5e9, Samples: 4}},
		{Span: new(sp("b000000000000002", "nemotron-backend", "db_query", 5, 300)), Depth: 1, Self: 300 * time.Millisecond, Host: "gpu-node-1",
			GPU: &correlate.GPUWindow{GPUs: []classify.GPU{{Host: "gpu-node-1", Index: "0"}, {Host: "gpu-node-1", Index: "1"}}, Class: classify.Idle, ClassShare: 1, Util: 30, MemActivity: math.NaN(), PCIe: math.NaN(), Samples: 2}},
		{Span: new(sp("d000000000000001", "ai-detector", "GET /detect", 310, 80)), Depth: 1, Self: 10 * time.Millisecond,
			ProfileID: "d000000000000001", CPU: i64(0), Host: "gpu-node-1", GPUs: []string{"0"},
			GPU: &correlate.GPUWindow{GPUs: []classify.GPU{{Host: "gpu-node-1", Index: "0"}}, Class: classify.ComputeBound, ClassShare: 1, Evidence: []string{"compute 92% > computeBoundPct 80", "memory 40% < 60"}, Util: 92, MemActivity: 40, PCIe: 1e9, Samples: 1}},
		// No host: no GPU cells and no GPU link value.
		{Span: new(sp("e000000000000001", "ai-enrichment", "GET /enrich", 395, 70)), Depth: 1, Self: 70 * time.Millisecond, GPUs: []string{"0", "1"}},
	}
}

var fullLinks = TraceLinks{TraceDatasourceUID: "jaeger-uid", TraceDatasourceType: "jaeger", GPUDashboardUID: "hsi-gpu-metrics", DatasourceUID: "hsi-uid", DatasourceName: "HSI Profiling"}

func field(t *testing.T, f *data.Frame, name string) *data.Field {
	t.Helper()
	fld, i := f.FieldByName(name)
	if i < 0 {
		t.Fatalf("frame %q has no field %q", f.Name, name)
	}
	return fld
}

func TestTraceSpansFrameLeavesMissingCellsEmpty(t *testing.T) {
	f := TraceSpans("4bf92f3577b34da6a3ce929d0e0e4736", spanRows(), "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "memory:alloc_space:bytes:space:bytes", fullLinks)
	if f.Name != "spans" || f.Rows() != 4 || f.Meta.PreferredVisualization != data.VisTypeTable {
		t.Fatalf("frame %q rows %d", f.Name, f.Rows())
	}
	cpu, alloc := field(t, f, "cpu"), field(t, f, "alloc_space")
	if cpu.Config.Unit != "ns" || alloc.Config.Unit != "bytes" {
		t.Errorf("units %q %q", cpu.Config.Unit, alloc.Config.Unit)
	}
	// A profiled span without samples is 0; a span without a profile of its own is empty.
	if v, _ := cpu.ConcreteAt(2); v != int64(0) {
		t.Errorf("detector root cpu = %v", v)
	}
	if _, ok := cpu.ConcreteAt(1); ok {
		t.Error("db_query has no profile of its own, yet shows CPU")
	}
	if _, ok := alloc.ConcreteAt(0); ok {
		t.Error("allocations shown without an allocation profile")
	}
	if _, ok := field(t, f, "gpuMemActivity").ConcreteAt(1); ok {
		t.Error("a GPU figure no GPU reported is shown")
	}
	if _, ok := field(t, f, "gpuClass").ConcreteAt(3); ok {
		t.Error("a span without host shows a GPU class")
	}
	gpus, vars := field(t, f, "gpus"), field(t, f, "gpuVar")
	// Rows with figures name the GPUs they come from; without, those the service names.
	want := [][2]string{{"0,1", "$__all"}, {"0,1", "$__all"}, {"0", "0"}, {"", ""}}
	for i, w := range want {
		if gpus.At(i) != w[0] || vars.At(i) != w[1] {
			t.Errorf("row %d: gpus %q var %q, want %v", i, gpus.At(i), vars.At(i), w)
		}
	}
	if v, _ := field(t, f, "gpuEvidence").ConcreteAt(2); v != "compute 92% > computeBoundPct 80; memory 40% < 60" {
		t.Errorf("evidence %v", v)
	}
	if v, _ := field(t, f, "gpuClassShare").ConcreteAt(0); v != 75.0 {
		t.Errorf("class share %v", v)
	}
	checkGolden(t, "trace_spans", f)
}

func TestTraceSpansLinksUseGrafanasInterpolation(t *testing.T) {
	f := TraceSpans("4bf92f3577b34da6a3ce929d0e0e4736", spanRows(), "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "memory:alloc_space:bytes:space:bytes", fullLinks)
	linkJSON := func(name string) string {
		b, err := json.Marshal(field(t, f, name).Config.Links)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	cases := map[string]string{
		"spanID":      `[{"title":"Open span in trace","internal":{"query":{"query":"${__data.fields.traceID}"},"datasourceUid":"jaeger-uid","panelsState":{"trace":{"spanId":"${__value.raw}"}}}}]`,
		"hotFunction": `[{"title":"Span profile","internal":{"query":{"labelSelector":"{service_name=\"${__data.fields.service}\"}","profileTypeId":"process_cpu:cpu:nanoseconds:cpu:nanoseconds","queryType":"profile","spanSelector":["${__data.fields.profileID}"]},"datasourceUid":"hsi-uid","datasourceName":"HSI Profiling"}}]`,
		"gpus":        `[{"title":"GPU dashboard","url":"/d/hsi-gpu-metrics?var-host=${__data.fields.host}\u0026var-gpu=${__data.fields.gpuVar}\u0026var-mig=${__data.fields.migVar}\u0026${__url_time_range}"}]`,
	}
	for name, want := range cases {
		if got := linkJSON(name); got != want {
			t.Errorf("%s links:\n got %s\nwant %s", name, got, want)
		}
	}
	// Every ${__data.fields.X} names a field of the frame.
	for _, fld := range f.Fields {
		for _, l := range fld.Config.Links {
			b, _ := json.Marshal(l)
			for _, part := range strings.Split(string(b), "${__data.fields.")[1:] {
				name, _, _ := strings.Cut(part, "}")
				if _, i := f.FieldByName(name); i < 0 {
					t.Errorf("link on %s refers to missing field %q", fld.Name, name)
				}
			}
		}
	}
	// Tempo wants a TraceQL query of the trace ID; no trace data source, no span link; no
	// data source UID (not known), no function link.
	tempo := TraceSpans("4bf92f3577b34da6a3ce929d0e0e4736", spanRows(), "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "memory:alloc_space:bytes:space:bytes",
		TraceLinks{TraceDatasourceUID: "tempo-uid", TraceDatasourceType: "tempo", GPUDashboardUID: "g"})
	if q := field(t, tempo, "spanID").Config.Links[0].Internal.Query.(map[string]any); q["queryType"] != "traceql" {
		t.Errorf("tempo query %v", q)
	}
	none := TraceSpans("4bf92f3577b34da6a3ce929d0e0e4736", spanRows(), "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "memory:alloc_space:bytes:space:bytes", TraceLinks{})
	if len(field(t, none, "spanID").Config.Links) != 0 || len(field(t, none, "hotFunction").Config.Links) != 0 || len(field(t, none, "gpus").Config.Links) != 0 {
		t.Error("links without targets")
	}
}

func TestTraceSpansFrameOfNoSpansIsTyped(t *testing.T) {
	f := TraceSpans("4bf92f3577b34da6a3ce929d0e0e4736", nil, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "memory:alloc_space:bytes:space:bytes", TraceLinks{})
	if f.Rows() != 0 || len(f.Fields) != 25 {
		t.Errorf("rows %d fields %d", f.Rows(), len(f.Fields))
	}
	checkGolden(t, "trace_spans_empty", f)
}

func TestTraceSpansNameEachMIGInstance(t *testing.T) {
	parent := classify.GPU{Host: "gpu-node-1", Index: "0", UUID: "GPU-5fd4a0b2", Model: "NVIDIA A100-SXM4-40GB"}
	one, two := parent, parent
	one.MIG, one.MIGProfile = "1", "3g.20gb"
	two.MIG, two.MIGProfile = "2", "1g.5gb"
	row := func(gpus ...classify.GPU) correlate.SpanRow {
		return correlate.SpanRow{Span: &models.Span{SpanID: "e000000000000002", Service: "ai-enrichment", Operation: "enrich", Start: traceStart, Duration: time.Second},
			Host: "gpu-node-1", GPUs: []string{"0"}, GPU: &correlate.GPUWindow{GPUs: gpus, Class: classify.Idle, ClassShare: 1, Util: 1, Samples: 1}}
	}
	f := TraceSpans("4bf92f3577b34da6a3ce929d0e0e4736", []correlate.SpanRow{row(two), row(one, two)}, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "memory:alloc_space:bytes:space:bytes", fullLinks)
	gpus, gpuVars, migVars := field(t, f, "gpus"), field(t, f, "gpuVar"), field(t, f, "migVar")
	want := [][3]string{{"0 MIG 1g.5gb #2", "0", "2"}, {"0 MIG 3g.20gb #1,0 MIG 1g.5gb #2", "$__all", "$__all"}}
	for i, w := range want {
		if gpus.At(i) != w[0] || gpuVars.At(i) != w[1] || migVars.At(i) != w[2] {
			t.Errorf("row %d: gpus %q gpu var %q mig var %q, want %v", i, gpus.At(i), gpuVars.At(i), migVars.At(i), w)
		}
	}
}
