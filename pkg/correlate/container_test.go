package correlate

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// fakeContainers answers each pod's cAdvisor figures from memory (none: no series) and records
// what was asked.
type fakeContainers struct {
	byPod map[string]models.ContainerCPU
	err   error

	mu    sync.Mutex
	asked []models.ContainerQuery
}

func (f *fakeContainers) ContainerCPU(_ context.Context, q models.ContainerQuery) (models.ContainerCPU, error) {
	f.mu.Lock()
	f.asked = append(f.asked, q)
	f.mu.Unlock()
	if f.err != nil {
		return models.ContainerCPU{}, f.err
	}
	if c, ok := f.byPod[q.Pod]; ok {
		return c, nil
	}
	n := math.NaN()
	return models.ContainerCPU{Pod: q.Pod, Periods: n, ThrottledPeriods: n, ThrottledSeconds: n, UsageSeconds: n, QuotaCPUs: n,
		Missing: []string{models.CadvisorPeriods, models.CadvisorThrottledPeriods, models.CadvisorThrottledSeconds, models.CadvisorUsageSeconds, models.CadvisorQuota}}, nil
}

// containerTrace: a gateway (profiled, its pod named by k8s.* attributes) calling a worker
// (profiled, no k8s attributes: its host stands for its pod) and an unprofiled cache.
func containerTrace() *models.Trace {
	gw := jspan("g", "", "gateway", "POST /v1/run", 0, 1200)
	gw.Attributes[models.ProfileIDAttribute] = "00000000000000a1"
	gw.Resource[PodAttribute], gw.Resource[NamespaceAttribute], gw.Resource[ContainerAttribute] = "gateway-7f9c-x2", "edge", "app"
	w := jspan("w", "g", "worker", "infer", 100, 1000)
	w.Attributes[models.ProfileIDAttribute] = "00000000000000a2"
	c := jspan("c", "g", "cache", "GET", 1110, 50)
	return &models.Trace{TraceID: "c1", Spans: []models.Span{gw, w, c}}
}

// The profiled spans' pods are asked over their spans' windows, each once; the figures land on
// the rows of their pod, and a pod without series gets an info notice naming the series.
func TestContainersOfProfiledSpansAreReadAndJoined(t *testing.T) {
	tr := containerTrace()
	fake := &fakeContainers{byPod: map[string]models.ContainerCPU{
		"gateway-7f9c-x2": {Namespace: "edge", Pod: "gateway-7f9c-x2", Container: "app", Periods: 600, ThrottledPeriods: 400, ThrottledSeconds: 12, UsageSeconds: 6, QuotaCPUs: 0.1},
	}}
	ans, err := JoinRequest(context.Background(), TraceSources{Traces: Ready[Traces](fakeTraces{trace: tr}), Profiles: Unavailable[Profiles](errors.New("no Pyroscope")),
		GPUs: Unavailable[GPUFigures](errors.New("no GPUs")), Containers: Ready[Containers](fake)},
		TraceQuery{TraceID: "c1", Join: models.DefaultJoinSettings().SpanMatch})
	if err != nil {
		t.Fatal(err)
	}
	asked := map[string]models.ContainerQuery{}
	for _, q := range fake.asked {
		asked[q.Pod] = q
	}
	g, w := asked["gateway-7f9c-x2"], asked["gpu-node-1"]
	if len(fake.asked) != 2 || g.Namespace != "edge" || g.Container != "app" || !g.Start.Equal(tr.Spans[0].Start) || w.Container != "" {
		t.Fatalf("asked %+v", fake.asked)
	}
	for _, r := range ans.Rows {
		got := r.Container != nil
		if want := r.Span.SpanID == "g"; got != want {
			t.Errorf("span %s: container figures %v, want %v", r.Span.SpanID, got, want)
		}
	}
	if n := noticeText(ans.Notices); !strings.Contains(n, "no cAdvisor CPU series (container_cpu_cfs_throttled_seconds_total, container_cpu_usage_seconds_total) for gpu-node-1") {
		t.Errorf("notices:\n%s", n)
	}
}

// A failing read costs only the throttling figures, with a warning naming the pod; no
// application Prometheus means no read and no notice.
func TestContainerReadsThatFailLeaveTheJoinStanding(t *testing.T) {
	tr := containerTrace()
	for name, src := range map[string]Source[Containers]{
		"failing":     Ready[Containers](&fakeContainers{err: errors.New("Prometheus (http://p): timed out")}),
		"unavailable": Unavailable[Containers](errors.New("no Prometheus URL")),
	} {
		ans, err := JoinRequest(context.Background(), TraceSources{Traces: Ready[Traces](fakeTraces{trace: tr}), Profiles: Unavailable[Profiles](errors.New("no Pyroscope")),
			GPUs: Unavailable[GPUFigures](errors.New("no GPUs")), Containers: src},
			TraceQuery{TraceID: "c1", Join: models.DefaultJoinSettings().SpanMatch})
		if err != nil || len(ans.Rows) != 3 {
			t.Fatalf("%s: %v, %d rows", name, err, len(ans.Rows))
		}
		n := noticeText(ans.Notices)
		if failing := strings.Contains(n, "No CPU throttling figures for pod edge/gateway-7f9c-x2/app: Prometheus (http://p): timed out"); failing != (name == "failing") {
			t.Errorf("%s: notices:\n%s", name, n)
		}
	}
}
