package prometheus

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// fakeCadvisorProm answers as a Prometheus holding cAdvisor's series of the pods under one
// label spelling: the label and metric names of the series API, and each figure's query with
// the pod's container (throttled seconds = the pod's value) when the query names the pod under
// that spelling. noSeriesAPI answers the series API 404, as a proxy without it does.
type fakeCadvisorProm struct {
	podLabel, ctrLabel string
	pods               map[string]float64
	metrics            []string // the cAdvisor metric names held
	noSeriesAPI        bool

	mu      sync.Mutex
	queries []string
}

func (f *fakeCadvisorProm) serve(t *testing.T) *Client {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		reply := func(data any) {
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
		}
		switch r.URL.Path {
		case "/api/v1/labels", "/api/v1/label/__name__/values":
			if f.noSeriesAPI {
				http.NotFound(w, r)
				return
			}
			if len(f.pods) == 0 || len(f.metrics) == 0 {
				reply([]string{})
			} else if r.URL.Path == "/api/v1/labels" {
				reply([]string{"__name__", "namespace", f.podLabel, f.ctrLabel, "instance", "job"})
			} else {
				reply(f.metrics)
			}
			return
		case "/api/v1/query":
		default:
			http.NotFound(w, r)
			return
		}
		q := r.Form.Get("query")
		f.mu.Lock()
		f.queries = append(f.queries, q)
		f.mu.Unlock()
		result := []map[string]any{}
		for pod, v := range f.pods {
			held := slices.ContainsFunc(f.metrics, func(m string) bool { return strings.Contains(q, m+"{") })
			if held && strings.Contains(q, f.podLabel+`="`+pod+`"`) {
				result = append(result, map[string]any{"metric": map[string]string{"namespace": "ns", f.podLabel: pod, f.ctrLabel: "server"}, "value": []any{1.7e9, strconv.FormatFloat(v, 'g', -1, 64)}})
			}
		}
		reply(map[string]any{"resultType": "vector", "result": result})
	}))
	t.Cleanup(s.Close)
	c, err := New(models.Upstream{Name: models.Prometheus, URL: s.URL}, s.Client())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// read asks ContainerCPU of the pod and returns the figures and the queries it sent.
func (f *fakeCadvisorProm) read(t *testing.T, c *Client, pod string) (models.ContainerCPU, []string) {
	t.Helper()
	f.mu.Lock()
	before := len(f.queries)
	f.mu.Unlock()
	at := time.Unix(1_700_000_000, 0)
	got, err := c.ContainerCPU(t.Context(), models.ContainerQuery{Namespace: "ns", Pod: pod, Start: at, End: at.Add(time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return got, slices.Clone(f.queries[before:])
}

var allCadvisorMetrics = []string{models.CadvisorPeriods, models.CadvisorThrottledPeriods, models.CadvisorThrottledSeconds, models.CadvisorUsageSeconds,
	models.CadvisorQuota, models.CadvisorPeriod}

// What Prometheus holds decides what is asked: the spelling its series carry (a cluster whose
// kubelets still write pod_name and container_name is not first asked under the newer labels),
// no query for a pod when it holds no cAdvisor series, none for a figure whose series it lacks;
// and a Prometheus without the series API is asked every spelling in turn, as before.
func TestContainerCPUAsksOnlyWhatPrometheusHolds(t *testing.T) {
	figures := len(containerCounters) + 1
	t.Run("older spelling", func(t *testing.T) {
		f := &fakeCadvisorProm{podLabel: "pod_name", ctrLabel: "container_name", pods: map[string]float64{"a": 2, "b": 3}, metrics: allCadvisorMetrics}
		c := f.serve(t)
		for pod, want := range f.pods {
			got, asked := f.read(t, c, pod)
			if got.Pod != pod || got.Container != "server" || got.ThrottledSeconds != want || len(got.Missing) != 0 {
				t.Errorf("pod %s: %+v", pod, got)
			}
			if len(asked) != figures || slices.ContainsFunc(asked, func(q string) bool { return !strings.Contains(q, `pod_name="`+pod+`"`) }) {
				t.Errorf("pod %s: asked %q, want %d queries under pod_name", pod, asked, figures)
			}
		}
		gone, asked := f.read(t, c, "gone")
		if len(gone.Missing) != figures || len(asked) != figures {
			t.Errorf("a pod without series: %+v after %d queries, want every figure missing after one spelling's", gone, len(asked))
		}
	})
	t.Run("no cAdvisor", func(t *testing.T) {
		f := &fakeCadvisorProm{podLabel: "pod", ctrLabel: "container"}
		got, asked := f.read(t, f.serve(t), "a")
		if len(asked) != 0 || len(got.Missing) != figures || got.Pod != "a" || got.End.Sub(got.Start) != models.ContainerRateWindow {
			t.Errorf("%+v after %q: want every figure missing, no query", got, asked)
		}
	})
	t.Run("no limits", func(t *testing.T) {
		// The quota's series are absent where no container has a CPU limit.
		f := &fakeCadvisorProm{podLabel: "pod", ctrLabel: "container", pods: map[string]float64{"a": 1}, metrics: allCadvisorMetrics[:4]}
		got, asked := f.read(t, f.serve(t), "a")
		if len(asked) != 4 || !slices.Equal(got.Missing, []string{models.CadvisorQuota}) || got.ThrottledSeconds != 1 || len(got.Queries) != 4 {
			t.Errorf("%+v after %q: want the counters' 4 queries, the quota missing", got, asked)
		}
	})
	t.Run("no series API", func(t *testing.T) {
		f := &fakeCadvisorProm{podLabel: "pod_name", ctrLabel: "container_name", pods: map[string]float64{"a": 2}, metrics: allCadvisorMetrics, noSeriesAPI: true}
		got, asked := f.read(t, f.serve(t), "a")
		if got.ThrottledSeconds != 2 || len(asked) != 2*figures {
			t.Errorf("%+v after %d queries: want the figures after both spellings' queries", got, len(asked))
		}
	})
}
