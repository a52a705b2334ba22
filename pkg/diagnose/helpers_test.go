package diagnose

import (
	"fmt"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// Hand-built answers: the diagnosis is pure, so its tests build what the join would have found.

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func jspan(id, parent, service, op string, startMs, durMs int) models.Span {
	return models.Span{
		TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: id, ParentSpanID: parent, Service: service, Operation: op,
		Start: t0.Add(ms(startMs)), Duration: ms(durMs),
		Attributes: map[string]string{}, Resource: map[string]string{"host.name": "gpu-node-1"},
	}
}

// tree builds a profile from "a;b;c value" stacks.
func tree(stacks ...string) *flamegraph.Node {
	root := flamegraph.New()
	for _, st := range stacks {
		path, val, _ := strings.Cut(st, " ")
		var v int64
		fmt.Sscan(val, &v)
		leaf := &flamegraph.Node{Total: v, Self: v}
		names := strings.Split(path, ";")
		n := leaf
		n.Name = names[len(names)-1]
		for i := len(names) - 2; i >= 0; i-- {
			n = &flamegraph.Node{Name: names[i], Total: v, Children: []*flamegraph.Node{n}}
		}
		sub := flamegraph.New()
		sub.Total = v
		sub.Children = []*flamegraph.Node{n}
		root.Merge(sub)
	}
	return root
}

// demoJoinTrace is the demo's request: the backend's root with db_query and serialize_response, the
// detector's root with model.predict (gpu.index=0), the enrichment's root with enrich
// (gpu.index=1). The services' local roots carry pyroscope.profile.id.
func demoJoinTrace() *models.Trace {
	spans := []models.Span{
		jspan("b000000000000001", "", "nemotron-backend", "GET /api/detect", 0, 500),
		jspan("b000000000000002", "b000000000000001", "nemotron-backend", "db_query", 5, 300),
		jspan("d000000000000001", "b000000000000001", "ai-detector", "GET /detect", 310, 80),
		jspan("d000000000000002", "d000000000000001", "ai-detector", "model.predict", 312, 70),
		jspan("e000000000000001", "b000000000000001", "ai-enrichment", "GET /enrich", 395, 70),
		jspan("e000000000000002", "e000000000000001", "ai-enrichment", "enrich", 396, 65),
		jspan("b000000000000003", "b000000000000001", "nemotron-backend", "serialize_response", 470, 25),
	}
	for _, i := range []int{0, 2, 4} {
		spans[i].Attributes[models.ProfileIDAttribute] = spans[i].SpanID
	}
	spans[3].Attributes["gpu.index"] = "0"
	spans[5].Attributes["gpu.index"] = "1"
	return &models.Trace{TraceID: spans[0].TraceID, Spans: spans}
}

// gpuSeries is one GPU with a reading every second from t0-2s to t0+3s: util rises 10 per
// second from utilAtT0 at t0, DRAM_ACTIVE 0.5, PCIe 1e9 + 2e9 bytes/s.
func gpuSeries(host, index string, utilAtT0 float64) classify.GPUSeries {
	s := classify.GPUSeries{GPU: classify.GPU{Host: host, Index: index, UUID: "GPU-" + index}}
	for sec := -2; sec <= 3; sec++ {
		f := classify.Missing()
		f.GPUUtil = utilAtT0 + 10*float64(sec)
		f.DRAMActive = 0.5
		f.PCIeTx, f.PCIeRx = 1e9, 2e9
		s.Samples = append(s.Samples, classify.Sample{Time: t0.Add(time.Duration(sec) * time.Second), Figures: f})
	}
	return s
}

// answerOf joins tr with the CPU profiles and GPU series given, as correlate.JoinRequest does.
func answerOf(tr *models.Trace, cpu correlate.SpanProfiles, gpus []classify.GPUSeries) *correlate.TraceAnswer {
	rows := correlate.JoinTrace(correlate.TraceJoin{Trace: tr, CPU: cpu, GPUSeries: gpus, GPUStep: time.Second, GPUsKnown: gpus != nil,
		Classify: classify.NewWindows(gpus, classify.DefaultThresholds()).Dominant, Join: models.DefaultJoinSettings()})
	return &correlate.TraceAnswer{Trace: tr, Rows: rows}
}

// verdictOf diagnoses ans and returns its verdict.
func verdictOf(ans *correlate.TraceAnswer) []Cause { return Request(ans).Verdict }

func causeKinds(cs []Cause) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Kind+" "+c.Service)
	}
	return strings.Join(out, ", ")
}
