package prometheus

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// kube-state-metrics' series as Prometheus answers the triage's queries: a container's restart
// counter rising twice (once OOM-killed, once crashed), another's flat, the reasons and exit
// codes set from the restart's step on.
func TestContainerTerminationsDatesEachRestartWithItsReason(t *testing.T) {
	start := time.Unix(1_790_000_000, 0).UTC()
	end := start.Add(30 * time.Minute)
	at := func(min int) float64 { return float64(start.Add(time.Duration(min) * time.Minute).Unix()) }
	pts := func(vals ...[2]float64) [][2]any {
		var out [][2]any
		for _, v := range vals {
			out = append(out, [2]any{v[0], strconv.FormatFloat(v[1], 'f', -1, 64)})
		}
		return out
	}
	tok := map[string]string{"namespace": "inference", "pod": "embedder-0", "container": "tokenizer"}
	srv := map[string]string{"namespace": "inference", "pod": "llm-0", "container": "server"}
	with := func(l map[string]string, k, v string) map[string]string {
		out := map[string]string{k: v}
		for a, b := range l {
			out[a] = b
		}
		return out
	}
	f := &fakeDCGM{
		rangeAnswer: func(_ []string, q string) []fakeStream {
			switch {
			case strings.Contains(q, KubeRestarts):
				return []fakeStream{
					{Metric: tok, Values: pts([2]float64{at(-1), 0}, [2]float64{at(10), 0}, [2]float64{at(11), 1}, [2]float64{at(20), 1}, [2]float64{at(21), 2})},
					{Metric: srv, Values: pts([2]float64{at(-1), 3}, [2]float64{at(29), 3})},
				}
			case strings.Contains(q, KubeLastReason):
				return []fakeStream{
					{Metric: with(tok, "reason", "OOMKilled"), Values: pts([2]float64{at(11), 1}, [2]float64{at(20), 1})},
					{Metric: with(tok, "reason", "Error"), Values: pts([2]float64{at(21), 1}, [2]float64{at(29), 1})},
					{Metric: with(srv, "reason", "Completed"), Values: pts([2]float64{at(-1), 1}, [2]float64{at(29), 1})},
				}
			case strings.Contains(q, KubeLastExit):
				return []fakeStream{{Metric: tok, Values: pts([2]float64{at(11), 137}, [2]float64{at(20), 137}, [2]float64{at(21), 1})}}
			}
			return nil
		},
		instantAnswer: func(q string) []fakeStream {
			switch {
			case strings.Contains(q, KubePodInfo):
				return []fakeStream{{Metric: map[string]string{"namespace": "inference", "pod": "embedder-0", "node": "gpu-node-9"}, Values: pts([2]float64{at(30), 1})}}
			case strings.Contains(q, KubeMemoryLimit):
				return []fakeStream{{Metric: tok, Values: pts([2]float64{at(30), 2 << 30})}}
			}
			return nil
		},
	}
	c, _ := newFakeDCGM(t, f)
	ans, err := c.ContainerTerminations(context.Background(), models.GPUFilter{Namespaces: []string{"inference"}}, start, end)
	if err != nil {
		t.Fatal(err)
	}
	if ans.Missing || len(ans.Terminations) != 2 {
		t.Fatalf("got %+v, want the tokenizer's two restarts", ans)
	}
	newest, first := ans.Terminations[0], ans.Terminations[1]
	if first.Reason != "OOMKilled" || first.ExitCode != 137 || !first.At.Equal(start.Add(11*time.Minute)) || first.Node != "gpu-node-9" || first.MemoryLimit != 2<<30 {
		t.Errorf("first restart: %+v", first)
	}
	if newest.Reason != "Error" || newest.ExitCode != 1 || !newest.At.Equal(start.Add(21*time.Minute)) {
		t.Errorf("second restart: %+v", newest)
	}
	// The restarts, then the reasons and exit codes in one range query and the nodes and limits in
	// one instant query (labelled unions).
	if r, i := f.requestsTo("/api/v1/query_range"), f.requestsTo("/api/v1/query"); len(r) != 2 || len(i) != 1 || !strings.Contains(r[1].Query, partLabel) {
		t.Errorf("%d range and %d instant queries, want 2 and 1", len(r), len(i))
	}
	for _, r := range f.requests {
		if r.Query != "" && strings.Contains(r.Query, "kube_") && !strings.Contains(r.Query, `namespace="inference"`) {
			t.Errorf("query without the namespace filter: %s", r.Query)
		}
	}
}

func TestContainerTerminationsWithoutKubeStateMetricsSaysMissing(t *testing.T) {
	c, _ := newFakeDCGM(t, &fakeDCGM{})
	start := time.Unix(1_790_000_000, 0).UTC()
	ans, err := c.ContainerTerminations(context.Background(), models.GPUFilter{}, start, start.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if !ans.Missing || len(ans.Terminations) != 0 {
		t.Fatalf("no restart series at all: %+v, want Missing", ans)
	}
	f := &fakeDCGM{stored: []fakeStream{{Metric: map[string]string{"__name__": KubeRestarts, "pod": "p"}, Values: [][2]any{{float64(start.Unix() + 60), "0"}}}}}
	c, _ = newFakeDCGM(t, f)
	f.rangeAnswer = func([]string, string) []fakeStream { return nil }
	ans, err = c.ContainerTerminations(context.Background(), models.GPUFilter{Pods: []string{"other"}}, start, start.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if ans.Missing {
		t.Fatalf("kube-state-metrics is there, only no pod of the filter: %+v", ans)
	}
}

func TestContainerTerminationsFailsWithPrometheus(t *testing.T) {
	c, _ := newFakeDCGM(t, &fakeDCGM{status: 503})
	start := time.Unix(1_790_000_000, 0).UTC()
	if _, err := c.ContainerTerminations(context.Background(), models.GPUFilter{}, start, start.Add(time.Hour)); err == nil || !strings.Contains(err.Error(), "503") && !strings.Contains(err.Error(), "overloaded") {
		t.Fatalf("err = %v, want Prometheus' failure", err)
	}
}
