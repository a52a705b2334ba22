//go:build integration

package prometheus

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/api"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/promwrite"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// A pod's cAdvisor CPU series, written into the bed's real Prometheus through its remote-write
// receiver under names drawn for this run: ContainerCPU reads its throttling over a window
// around a span, picks the throttled container of the pod when none is named, and says what is
// missing for a pod Prometheus holds nothing of.
func TestRealContainerCPUReadsCadvisorThrottling(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	pod := fmt.Sprintf("infer-%d-%x", rng.IntN(100), rng.Uint32())
	quota, per := 0.25+0.5*rng.Float64(), 0.5+2*rng.Float64()
	// Prometheus refuses samples before the end of the fixtures' backfilled blocks: the series
	// start after it, and the span sits a window inside them.
	from := bed.FixtureEnd.Add(time.Second).Truncate(time.Second)
	if wait := time.Until(from.Add(90 * time.Second)); wait > 0 {
		t.Logf("waiting %s for the bed to hold 90 s of new samples", wait.Round(time.Second))
		time.Sleep(wait)
	}
	end := time.Now().Truncate(time.Second)
	series := promwrite.CadvisorCPU(promwrite.Container{Namespace: "serving", Pod: pod, Container: "server"}, quota, per, from, end, time.Second)
	// A sidecar in the same pod, never throttled.
	series = append(series, promwrite.CadvisorCPU(promwrite.Container{Namespace: "serving", Pod: pod, Container: "envoy"}, 0.1, 0, from, end, time.Second)...)
	// A relabelled copy of another pod, as a cluster whose scrape config renames cAdvisor's
	// labels and whose recording rules rename the throttling counters would hold it.
	copied := fmt.Sprintf("copy-%x", rng.Uint32())
	renamed := map[string]string{}
	for _, m := range models.CadvisorMetrics[:3] {
		renamed[m] = "k8s_" + fmt.Sprint(rng.IntN(1000)) + ":" + m
	}
	for _, sr := range promwrite.CadvisorCPU(promwrite.Container{Namespace: "serving", Pod: copied, Container: "server"}, quota, per, from, end, time.Second) {
		l := map[string]string{"kubernetes_namespace": sr.Labels["namespace"], "kubernetes_pod_name": sr.Labels["pod"], "kubernetes_container": sr.Labels["container"]}
		for k, v := range sr.Labels {
			if k != "namespace" && k != "pod" && k != "container" {
				l[k] = v
			}
		}
		l["__name__"] = cmp.Or(renamed[l["__name__"]], l["__name__"])
		series = append(series, promwrite.Series{Labels: l, Samples: sr.Samples})
	}
	if err := (promwrite.Client{URL: bed.PrometheusURL}).Write(ctx, series); err != nil {
		t.Fatal(err)
	}
	ac, err := api.NewClient(api.Config{Address: bed.PrometheusURL})
	if err != nil {
		t.Fatal(err)
	}
	c := newClient(bed.PrometheusURL, newQueryAPI(ac))
	span := end.Add(-40 * time.Second)
	q := models.ContainerQuery{Namespace: "serving", Pod: pod, Start: span, End: span.Add(700 * time.Millisecond)}
	var got models.ContainerCPU
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got, err = c.ContainerCPU(ctx, q); err != nil {
			t.Fatal(err)
		}
		if len(got.Missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	if got.Container != "server" || len(got.Missing) != 0 {
		t.Fatalf("answer %+v: want the throttled container, every figure", got)
	}
	if math.Abs(got.ThrottledPerCPUSecond()-per) > 0.01*per || math.Abs(got.QuotaCPUs-quota) > 1e-9 {
		t.Errorf("throttled per CPU-second %.3f (want %.3f), quota %.3f (want %.3f)", got.ThrottledPerCPUSecond(), per, got.QuotaCPUs, quota)
	}
	if r := got.ThrottledPeriods / got.Periods; math.Abs(r-1) > 0.01 {
		t.Errorf("throttled periods share %.3f, want 1", r)
	}
	if w := got.End.Sub(got.Start); w != models.ContainerRateWindow || !strings.Contains(got.Queries[0], `pod="`+pod+`"`) {
		t.Errorf("window %s, queries %q", w, got.Queries)
	}
	named, err := c.ContainerCPU(ctx, models.ContainerQuery{Namespace: "serving", Pod: pod, Container: "envoy", Start: q.Start, End: q.End})
	if err != nil || named.Container != "envoy" || named.Throttled() {
		t.Errorf("the named sidecar: %+v, %v", named, err)
	}
	// A span whose pod is known but not its container: the container named after its service
	// answers, although the other is throttled more.
	byService, err := c.ContainerCPU(ctx, models.ContainerQuery{Namespace: "serving", Pod: pod, Service: "envoy", Start: q.Start, End: q.End})
	if err != nil || byService.Container != "envoy" {
		t.Errorf("the service's container: %+v, %v", byService, err)
	}
	// The copy under its own names, through the settings' overrides.
	relabelled := c.WithContainers(models.ContainerSettings{MetricNames: renamed,
		LabelNames: map[string]string{"namespace": "kubernetes_namespace", "pod": "kubernetes_pod_name", "container": "kubernetes_container"}})
	viaCopy, err := relabelled.ContainerCPU(ctx, models.ContainerQuery{Namespace: "serving", Pod: copied, Start: q.Start, End: q.End})
	if err != nil || viaCopy.Container != "server" || len(viaCopy.Missing) != 0 || math.Abs(viaCopy.ThrottledPerCPUSecond()-per) > 0.01*per ||
		!strings.Contains(strings.Join(viaCopy.Queries, " "), renamed[models.CadvisorThrottledSeconds]) {
		t.Errorf("the relabelled copy through the overrides: %+v, %v", viaCopy, err)
	}
	none, err := c.ContainerCPU(ctx, models.ContainerQuery{Pod: pod + "-gone", Start: q.Start, End: q.End})
	if err != nil || len(none.Missing) != 5 || !math.IsNaN(none.ThrottledSeconds) {
		t.Errorf("a pod without series: %+v, %v", none, err)
	}
}
