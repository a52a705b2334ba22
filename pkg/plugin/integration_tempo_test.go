//go:build integration

package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/hsi-profiling/hsi-profiling-datasource/internal/testbed"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// tempoDatasource is the bed with Tempo as the only trace store (no Jaeger URL).
func tempoDatasource(t *testing.T, extra map[string]any) *Datasource {
	settings := map[string]any{
		"pyroscopeUrl": bed.PyroscopeURL, "prometheusUrl": bed.PrometheusURL,
		"tempoUrl": bed.TempoURL, "tempoTenant": bed.TempoTenant,
	}
	for k, v := range extra {
		settings[k] = v
	}
	return newTestDatasource(t, settings, nil)
}

// With only Tempo configured, every query type and route that reads traces answers from it as
// it answers from Jaeger: the verdict, the request's profile, slow requests, the span heatmap and
// profile, the triage's failed requests, the trace variables and
// the editor's pickers, and the health check.
func TestRealTempoOnlyAnswersEveryTraceReadingQuery(t *testing.T) {
	t.Logf("the bed's Tempo: %s (%s)", bed.TempoURL, bed.TempoVersion)
	jds, tds := bedDatasource(t), tempoDatasource(t, nil)

	res := checkHealth(t, tds)
	if res.Status != backend.HealthStatusOk || !strings.Contains(res.Message, "Tempo: OK (version ") || !strings.Contains(res.Message, "Jaeger: not configured") {
		t.Errorf("health = %v %q", res.Status, res.Message)
	}

	// The verdict: the same spans and the same first cause from either store. The request's
	// profiles arrive in uploads, so its verdict may change between two answers a few seconds
	// apart: both stores are asked again, side by side, until their answers agree or a minute
	// has passed.
	id := demoRequest(t, "db")
	traceAnswer(t, jds, id, demoTraceServices...)
	traceAnswer(t, tds, id, demoTraceServices...)
	var last string
	agreed := false
	for deadline := time.Now().Add(time.Minute); !agreed && time.Now().Before(deadline); {
		fromJaeger, fromTempo := traceAnswer(t, jds, id, demoTraceServices...), traceAnswer(t, tds, id, demoTraceServices...)
		jv, tv := verdictRows(t, fromJaeger)[0], verdictRows(t, fromTempo)[0]
		j, tp := fromJaeger.Frames[0].Rows(), fromTempo.Frames[0].Rows()
		agreed = j == tp && jv.kind == tv.kind && jv.service == tv.service && jv.cause == tv.cause
		last = fmt.Sprintf("%d spans from Jaeger, %d from Tempo; first cause from Jaeger %q (%s in %s), from Tempo %q (%s in %s)",
			j, tp, jv.cause, jv.kind, jv.service, tv.cause, tv.kind, tv.service)
		if !agreed {
			time.Sleep(3 * time.Second)
		}
	}
	if !agreed {
		t.Errorf("the two stores' answers never agreed within a minute: %s", last)
	}

	one := func(ds *Datasource, model string) backend.DataResponse {
		t.Helper()
		return run(t, ds, query("A", model)).Responses["A"]
	}
	ok := func(what string, r backend.DataResponse) []*data.Frame {
		t.Helper()
		if r.Error != nil || len(r.Frames) == 0 {
			t.Fatalf("%s with Tempo: %v", what, r.Error)
		}
		return r.Frames
	}

	// The whole request's profile, per service: the same services as with Jaeger.
	model := fmt.Sprintf(`{"queryType":"profile","traceId":%q,"profileTypeId":%q,"perService":true}`, id, cpuType)
	eventuallyTrue(t, "the same services in the per-service profile from both stores", func() (bool, string) {
		j, tp := serviceNodes(ok("profile traceId", one(jds, model))[0]), serviceNodes(ok("profile traceId", one(tds, model))[0])
		return slices.Equal(j, tp), fmt.Sprintf("Jaeger's services %v, Tempo's %v", j, tp)
	})

	// Slow requests: the request is among the slowest of its service.
	eventuallyTrue(t, "the slow request listed from Tempo", func() (bool, string) {
		fs := ok("slowRequests", one(tds, `{"queryType":"slowRequests","service":"nemotron-backend","limit":50}`))
		for _, f := range fs {
			if f.Name == "slow traces" {
				table, _ := f.StringTable(-1, -1)
				return strings.Contains(table, id), table
			}
		}
		return false, "no slow traces frame"
	})

	// The span heatmap and the span profile: spans found, and samples for them.
	heat := ok("spanHeatmap", one(tds, `{"queryType":"spanHeatmap","service":"nemotron-backend","operation":"db_query"}`))
	if heat[0].Rows() == 0 {
		t.Errorf("span heatmap from Tempo has no rows: %s", frameNotices(heat[0]))
	}
	sp := ok("spanProfile", one(tds, `{"queryType":"spanProfile","service":"nemotron-backend","operation":"GET /api/detect","minDuration":"200ms"}`))
	if rootTotal(t, sp[0]) <= 0 {
		t.Errorf("span profile from Tempo has no samples: %s", frameNotices(sp[0]))
	}

	// The triage reads failed requests from the trace store: a model load that ran out of GPU
	// memory, sent as a server records it, is told from Tempo's copy.
	service := fmt.Sprintf("hsi-tempo-loader-%d", time.Now().UnixNano())
	oomID, err := testbed.SendSpans(context.Background(), bed.JaegerOTLP, time.Now().Add(-3*time.Second), []testbed.SentSpan{
		{Service: service, Name: "POST /v2/repository/models/llama/load", Kind: trace.SpanKindServer, Parent: -1, End: 2 * time.Second,
			Resource: []attribute.KeyValue{attribute.String("host.name", "gpu-node-1")}, Status: codes.Error, StatusMessage: "failed to load model"},
		{Service: service, Name: "load_model", Parent: 0, Start: 10 * time.Millisecond, End: 1900 * time.Millisecond,
			Attributes: []attribute.KeyValue{attribute.String("gpu.index", "1"), attribute.String("model.name", "llama-3-70b")},
			Events: []testbed.SentEvent{{Name: "exception", At: 1890 * time.Millisecond, Attributes: []attribute.KeyValue{
				attribute.String("exception.type", testbed.OOMExceptionType), attribute.String("exception.message", testbed.OOMExceptionMessage)}}},
			Status: codes.Error, StatusMessage: testbed.OOMStatusMessage},
	})
	if err != nil {
		t.Fatal(err)
	}
	eventuallyTrue(t, "the failed load triaged from Tempo", func() (bool, string) {
		now := time.Now()
		rows := triageRows(t, run2(t, tds, backend.DataQuery{RefID: "A", QueryType: models.QueryTypeTriage, Interval: 15 * time.Second,
			JSON:      json.RawMessage(`{"queryType":"triage","services":["` + service + `"]}`),
			TimeRange: backend.TimeRange{From: now.Add(-10 * time.Minute), To: now.Add(time.Minute)}}), "failures")
		for _, r := range rows {
			if strings.Contains(r["traces"], oomID) {
				return r["class id"] == models.ClassCUDAOOMLoad, fmt.Sprint(r)
			}
		}
		return false, fmt.Sprintf("%d rows, none of trace %s", len(rows), oomID)
	})

	// Variables and pickers.
	code, services, body := variable(t, tds, "trace_services()", nil)
	if code != 200 || !containsValue(services, "nemotron-backend") {
		t.Errorf("trace_services from Tempo: HTTP %d %s", code, body)
	}
	_, jops, _ := variable(t, jds, "trace_operations(nemotron-backend)", nil)
	code, tops, body := variable(t, tds, "trace_operations(nemotron-backend)", nil)
	if code != 200 || !slices.Equal(valuesOf(jops), valuesOf(tops)) {
		t.Errorf("trace_operations: Jaeger %v, Tempo HTTP %d %s", valuesOf(jops), code, body)
	}
	code, ids, body := variable(t, tds, "trace_ids(nemotron-backend, 300ms)", nil)
	if code != 200 || !containsValue(ids, id) {
		t.Errorf("trace_ids from Tempo lack %s: HTTP %d %s", id, code, body)
	}
	for _, path := range []string{"trace-services", "trace-operations?service=nemotron-backend", "traces?service=nemotron-backend&minDuration=300ms&limit=200"} {
		if status, body := traceResource(t, tds, path); status != 200 || (strings.HasPrefix(path, "traces") && !strings.Contains(body, id)) {
			t.Errorf("%s from Tempo: HTTP %d %s", path, status, body)
		}
	}

	// A service without a request-duration histogram in Prometheus: its latency table comes from
	// Tempo's TraceQL metrics, and says so.
	eventuallyTrue(t, "the loader's latency from Tempo's metrics", func() (bool, string) {
		fs := ok("slowRequests", one(tds, `{"queryType":"slowRequests","service":"`+service+`"}`))
		for _, f := range fs {
			if f.Name == "latency" && f.Rows() > 0 {
				table, _ := f.StringTable(-1, -1)
				return strings.Contains(table, "Tempo's TraceQL metrics") && strings.Contains(table, "POST /v2/repository/models/llama/load") &&
					strings.Contains(frameNotices(f), "from Tempo's TraceQL metrics"), table + frameNotices(f)
			}
		}
		return false, "no latency rows"
	})
}

func valuesOf(vs []variableValue) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Value
	}
	slices.Sort(out)
	return out
}

func containsValue(vs []variableValue, want string) bool {
	return slices.Contains(valuesOf(vs), want)
}

// eventuallyTrue polls cond each second for up to a minute.
func eventuallyTrue(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	var last string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		var done bool
		if done, last = cond(); done {
			return
		}
	}
	t.Errorf("%s: not within a minute; last: %s", what, last)
}
