//go:build integration

package dashboards

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/frames"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/plugin"
)

var bed testbed.Endpoints

func TestMain(m *testing.M) { os.Exit(testbed.MainForTests(m, &bed)) }

// slowRequest is a demo request slow in its database step whose whole-request profile the plugin
// answers from span profiles (testbed.SlowRequest), as a user picks it from the slow traces.
func slowRequest(t *testing.T, ds *plugin.Datasource) string {
	t.Helper()
	notice := func(ctx context.Context, traceID string) (string, error) {
		q := backend.DataQuery{RefID: "A", QueryType: "profile", JSON: json.RawMessage(fmt.Sprintf(`{"queryType":"profile","traceId":%q}`, traceID)),
			TimeRange: backend.TimeRange{From: time.Now().Add(-time.Hour), To: time.Now()}}
		r, err := ds.QueryData(ctx, &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
		if err != nil {
			return "", err
		}
		a := r.Responses["A"]
		if a.Error != nil {
			return "", a.Error
		}
		if len(a.Frames) == 0 || a.Frames[0].Meta == nil || len(a.Frames[0].Meta.Notices) == 0 {
			return "", fmt.Errorf("a whole-request profile without notices")
		}
		return a.Frames[0].Meta.Notices[0].Text, nil
	}
	traceID, err := testbed.SlowRequest(t.Context(), bed, notice)
	if err != nil {
		t.Fatal(err)
	}
	return traceID
}

// Every plugin panel of every dashboard answers with rows, with Jaeger and with Tempo as the
// only trace store; the Prometheus panels answer from Prometheus.
func TestRealEveryDashboardPanelAnswers(t *testing.T) {
	t.Run("Jaeger", func(t *testing.T) { everyPluginPanelAnswers(t, map[string]any{"jaegerUrl": bed.JaegerURL}) })
	t.Run("Tempo", func(t *testing.T) {
		everyPluginPanelAnswers(t, map[string]any{"tempoUrl": bed.TempoURL, "tempoTenant": bed.TempoTenant})
	})
	prometheusPanelsAnswer(t)
}

// everyPluginPanelAnswers runs every dashboard's plugin queries on the bed, traces read from the
// trace store traceStore's settings name.
func everyPluginPanelAnswers(t *testing.T, traceStore map[string]any) {
	// The test bed captures no GPU kernel traces: the kernels panel reads a small PyTorch
	// profiler trace written below for the request's trace ID, as the seeds would capture it.
	traceDir := t.TempDir()
	settings := map[string]any{
		"pyroscopeUrl": bed.PyroscopeURL, "prometheusUrl": bed.PrometheusURL, "traceDirectories": []string{traceDir},
	}
	for k, v := range traceStore {
		settings[k] = v
	}
	jsonData, _ := json.Marshal(settings)
	inst, err := plugin.NewDatasource(context.Background(), backend.DataSourceInstanceSettings{UID: "hsi-profiling", JSONData: jsonData})
	if err != nil {
		t.Fatal(err)
	}
	ds := inst.(*plugin.Datasource)
	defer ds.Dispose()
	traceID := slowRequest(t, ds)
	if _, err := testbed.WriteKernelTrace(traceDir, traceID); err != nil {
		t.Fatal(err)
	}
	values := sampleValues(traceID)

	// The span join carries the kernel trace: the file names the request, not a span, so its
	// 20 µs of kernel time go on the root span.
	tq := backend.DataQuery{RefID: "T", QueryType: "trace", JSON: json.RawMessage(fmt.Sprintf(`{"queryType":"trace","traceId":%q}`, traceID)),
		TimeRange: backend.TimeRange{From: time.Now().Add(-time.Hour), To: time.Now()}}
	tr, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{tq}})
	if err != nil || tr.Responses["T"].Error != nil {
		t.Fatalf("trace query: %v %v", err, tr.Responses["T"].Error)
	}
	spans := tr.Responses["T"].Frames[0]
	kernelTime, _ := spans.FieldByName("gpuKernelTime")
	if kernelTime == nil || kernelTime.Len() == 0 {
		t.Fatalf("spans frame has no gpuKernelTime column: %v", spans.Fields)
	}
	if v, ok := kernelTime.ConcreteAt(0); !ok || fmt.Sprint(v) != "20000" {
		t.Errorf("root span's GPU kernel time = %v (%v), want 20000 ns", v, ok)
	}

	for name, qs := range pluginTargets(t, values) {
		res, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: qs})
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range qs {
			r := res.Responses[q.RefID]
			if r.Error != nil {
				t.Errorf("%s: %v\n  query %s", name, r.Error, q.JSON)
				continue
			}
			if len(r.Frames) == 0 {
				t.Errorf("%s: no frames\n  query %s", name, q.JSON)
			}
			rows := 0
			var notices []string
			for _, f := range r.Frames {
				if f.Meta != nil && f.Meta.PreferredVisualization == data.VisTypeFlameGraph && !frames.FlameGraphHasSamples(f) {
					continue // the empty answer's one root row of 0 samples
				}
				rows += f.Rows()
				if f.Meta != nil {
					for _, n := range f.Meta.Notices {
						notices = append(notices, n.Text)
					}
				}
			}
			if rows == 0 {
				t.Errorf("%s: frames without rows; notices %q\n  query %s", name, notices, q.JSON)
			}
		}
	}

}

// prometheusPanelsAnswer runs the panels whose natural source is Prometheus itself there,
// through its HTTP API.
func prometheusPanelsAnswer(t *testing.T) {
	values := sampleValues("")
	for _, d := range load(t) {
		for _, p := range d.Panels {
			if p.Datasource == nil || p.Datasource.Type != "prometheus" {
				continue
			}
			for _, raw := range p.Targets {
				var target struct{ Expr string }
				_ = json.Unmarshal(interpolate(raw, values), &target)
				expr := strings.ReplaceAll(target.Expr, "$__rate_interval", "1m")
				var reply struct {
					Status string
					Data   struct{ Result []any }
					Error  string
				}
				res, err := http.Get(bed.PrometheusURL + "/api/v1/query?query=" + url.QueryEscape(expr))
				if err != nil {
					t.Fatal(err)
				}
				_ = json.NewDecoder(res.Body).Decode(&reply)
				res.Body.Close()
				if reply.Status != "success" || len(reply.Data.Result) == 0 {
					t.Errorf("%s: %s: Prometheus: %s %s (%d series)", d.File, p.Title, reply.Status, reply.Error, len(reply.Data.Result))
				}
			}
		}
	}
}
