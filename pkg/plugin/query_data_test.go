package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

func query(refID, model string) backend.DataQuery {
	var m map[string]any
	queryType := ""
	if json.Unmarshal([]byte(model), &m) == nil {
		queryType, _ = m["queryType"].(string)
	}
	now := time.Now()
	return backend.DataQuery{RefID: refID, QueryType: queryType, JSON: json.RawMessage(model),
		TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}}
}

func run(t *testing.T, ds *Datasource, qs ...backend.DataQuery) *backend.QueryDataResponse {
	t.Helper()
	res, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: qs})
	if err != nil {
		t.Fatalf("QueryData returned a Go error: %v", err)
	}
	return res
}

func wantError(t *testing.T, r backend.DataResponse, source backend.ErrorSource, parts ...string) {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("expected an error, got frames %v", r.Frames)
	}
	for _, p := range parts {
		if !strings.Contains(r.Error.Error(), p) {
			t.Errorf("error %q lacks %q", r.Error, p)
		}
	}
	if r.ErrorSource != source {
		t.Errorf("error source = %q, want %q", r.ErrorSource, source)
	}
}

func TestUnknownOrMissingQueryTypeNamesTheValidOnes(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{}, nil)
	res := run(t, ds, query("A", `{"queryType":"flamegraph"}`), query("B", `{}`))
	valid := slices.Sorted(maps.Keys(ds.queryHandlers()))
	// Every query type the editor offers has its handler, and no handler is for a type the
	// editor does not know.
	if want := slices.Sorted(slices.Values(models.QueryTypes)); !slices.Equal(valid, want) {
		t.Fatalf("handlers for %v, query types %v", valid, want)
	}
	// Every registered type is named, in order, so the user can pick the right one.
	list := "valid query types are " + strings.Join(valid, ", ")
	wantError(t, res.Responses["A"], backend.ErrorSourceDownstream, `unknown query type "flamegraph"`, list)
	wantError(t, res.Responses["B"], backend.ErrorSourceDownstream, "the query has no queryType", list)
}

func TestOneBadQueryDoesNotSpoilTheOthers(t *testing.T) {
	pyro := newFakePyroscope(t, &fakePyroscope{graph: &querierv1.FlameGraph{
		Names: []string{"total", "main.serializeResponse"}, Levels: []*querierv1.Level{{Values: []int64{0, 10, 0, 0}}, {Values: []int64{0, 10, 10, 1}}}, Total: 10,
	}}, nil)
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": pyro.URL}, nil)
	res := run(t, ds,
		query("good", `{"queryType":"profile","labelSelector":"{service_name=\"nemotron-backend\"}"}`),
		query("badJSON", `{"queryType":"profile","maxNodes":"lots"}`),
		query("badSelector", `{"queryType":"profile","labelSelector":"{bad"}`),
		query("rejected", `{"queryType":"profile","labelSelector":"{service_name=\"rejected\"}"}`),
		query("unknown", `{"queryType":"nope"}`),
	)
	if len(res.Responses) != 5 {
		t.Fatalf("responses = %d, want 5", len(res.Responses))
	}
	good := res.Responses["good"]
	if good.Error != nil || len(good.Frames) != 1 || good.Frames[0].Name != "response" || good.Frames[0].Rows() != 2 {
		t.Errorf("good query = %+v", good)
	}
	wantError(t, res.Responses["badJSON"], backend.ErrorSourceDownstream, `invalid profile query: field "maxNodes" must be a whole number from 1 to 1048576, got string`)
	wantError(t, res.Responses["badSelector"], backend.ErrorSourceDownstream, `invalid profile query: field "labelSelector" is not a label selector`, "unexpected end of input")
	wantError(t, res.Responses["rejected"], backend.ErrorSourceDownstream, "Pyroscope ("+pyro.URL+")", "invalid_argument", "parse error")
	wantError(t, res.Responses["unknown"], backend.ErrorSourceDownstream, "unknown query type")
}

func TestQueryNeedingAnUnsetUpstreamSaysSo(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{"jaegerUrl": "http://127.0.0.1:16686"}, nil)
	res := run(t, ds, query("A", `{"queryType":"profile"}`))
	wantError(t, res.Responses["A"], backend.ErrorSourceDownstream, "Pyroscope is not configured", "jsonData.pyroscopeUrl")
}

func TestQueryAgainstADownUpstreamNamesItsURLAndCause(t *testing.T) {
	down := closedURL(t)
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": down}, nil)
	res := run(t, ds, query("A", `{"queryType":"profile"}`))
	wantError(t, res.Responses["A"], backend.ErrorSourceDownstream, "Pyroscope ("+down+")", "connection refused")
}

func TestAPanickingHandlerBecomesThatQuerysError(t *testing.T) {
	h := perQuery("profile", func(_ context.Context, q backend.DataQuery) (data.Frames, error) {
		if q.RefID == "boom" {
			var m map[string]int
			m["x"]++ // nil map write: a real panic
		}
		return nil, nil
	})
	res, err := h(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "boom"}, {RefID: "fine"}}})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res.Responses["boom"], backend.ErrorSourcePlugin, "internal error while answering the profile query")
	if res.Responses["fine"].Error != nil {
		t.Errorf("the other query failed too: %v", res.Responses["fine"].Error)
	}
}

// Grafana's alerting sends the rule's top-level queryType, empty for rules written by file
// provisioning, the HTTP API or Terraform: the model's queryType routes them.
func TestAlertRulesRouteByTheModelsQueryType(t *testing.T) {
	ds := newTestDatasource(t, map[string]any{}, nil)
	alert := func(refID, topLevel, model string) backend.DataQuery {
		q := query(refID, model)
		q.QueryType = topLevel
		return q
	}
	res := run(t, ds,
		alert("model", "", `{"refId":"model","datasource":{"type":"hsi-profiling-datasource","uid":"x"},"queryType":"gpuClass","format":"shares","intervalMs":1000,"maxDataPoints":43200}`),
		alert("topLevelWins", "profile", `{"queryType":"gpuClass"}`),
		alert("neither", "", `{"refId":"neither","intervalMs":1000}`),
		alert("notJSON", "", `{"queryType":`),
	)
	// Routed to gpuClass: its own error about the unset Prometheus, not "no queryType".
	wantError(t, res.Responses["model"], backend.ErrorSourceDownstream, "Prometheus is not configured")
	wantError(t, res.Responses["topLevelWins"], backend.ErrorSourceDownstream, "Pyroscope is not configured")
	wantError(t, res.Responses["neither"], backend.ErrorSourceDownstream, "the query has no queryType: valid query types are")
	wantError(t, res.Responses["notJSON"], backend.ErrorSourceDownstream, "the query has no queryType")
}

// A misspelt field is not silently ignored: the answer warns, naming the field and the one meant;
// a failed query says it after its error.
func TestMisspeltFieldsAreNamedInTheAnswer(t *testing.T) {
	pyro := newFakePyroscope(t, &fakePyroscope{graph: &querierv1.FlameGraph{
		Names: []string{"total", "main.serializeResponse"}, Levels: []*querierv1.Level{{Values: []int64{0, 10, 0, 0}}, {Values: []int64{0, 10, 10, 1}}}, Total: 10,
	}}, nil)
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": pyro.URL}, nil)
	res := run(t, ds,
		query("A", `{"queryType":"profile","labelselector":"{service_name=\"nemotron-backend\"}","refId":"A"}`),
		query("B", `{"queryType":"profile","labelSelector":"{bad","spanselector":["00f067aa0ba902b7"]}`),
	)
	a := res.Responses["A"]
	if a.Error != nil || len(a.Frames) == 0 || a.Frames[0].Meta == nil || len(a.Frames[0].Meta.Notices) == 0 {
		t.Fatalf("A: %+v", a)
	}
	if n := a.Frames[0].Meta.Notices[0]; n.Text != `Query: unknown field "labelselector" was ignored: did you mean "labelSelector"?.` || n.Severity != data.NoticeSeverityWarning {
		t.Errorf("A's notice %+v", n)
	}
	wantError(t, res.Responses["B"], backend.ErrorSourceDownstream, `field "labelSelector" is not a label selector`, `(also: unknown field "spanselector" was ignored: did you mean "spanSelector"?)`)
}

// Each query carries its range to the clients, so the panels of one refresh (Grafana sends them
// one range, in requests of their own) read a Pyroscope reply once, and the next refresh reads
// it anew while samples may still come: a request's span profiles are asked over the request's
// own window, whatever the panel's range, so only the range tells one refresh's reads from the
// next one's. A request minutes old has all its samples: the next refreshes read it no more.
func TestPanelsOfOneRefreshReadAPyroscopeReplyOnce(t *testing.T) {
	recent := demoLikeTrace(time.Now().Add(-5 * time.Second))
	old := demoLikeTrace(time.Now().Add(-10 * time.Minute))
	old.TraceID = "00f067aa0ba902b700f067aa0ba902b7"
	for i := range old.Spans {
		old.Spans[i].TraceID, old.Spans[i].SpanID = old.TraceID, fmt.Sprintf("%016x", i+100)
		if _, profiled := old.Spans[i].Attributes[models.ProfileIDAttribute]; profiled {
			old.Spans[i].Attributes[models.ProfileIDAttribute] = old.Spans[i].SpanID
		}
	}
	pyro := &spanPyroscope{bySpan: map[string][]string{}}
	for _, tr := range []models.Trace{recent, old} {
		for _, s := range tr.Spans {
			pyro.bySpan[s.SpanID] = []string{"main.handle;main.work 10"}
		}
	}
	jaeger := newJaegerFake(t, &jaegerFake{Traces: []models.Trace{recent, old}}, nil)
	ds := newTestDatasource(t, map[string]any{"pyroscopeUrl": serveQuerier(t, pyro), "jaegerUrl": jaeger.URL}, nil)
	spanCalls := func() int {
		pyro.mu.Lock()
		defer pyro.mu.Unlock()
		return len(pyro.spanCalls)
	}
	for _, tc := range []struct {
		trace models.Trace
		want  []int // span-profile calls in all after each panel: two of one refresh, then the next refresh's
	}{
		{recent, []int{3, 3, 6}},
		{old, []int{9, 9, 9}},
	} {
		panel := query("A", `{"queryType":"profile","traceId":"`+tc.trace.TraceID+`"}`)
		next := panel
		next.TimeRange = backend.TimeRange{From: panel.TimeRange.From.Add(30 * time.Second), To: panel.TimeRange.To.Add(30 * time.Second)}
		for i, q := range []backend.DataQuery{panel, panel, next} {
			if r := run(t, ds, q).Responses["A"]; r.Error != nil || len(r.Frames) == 0 {
				t.Fatalf("trace %s, panel %d: %v, %v", tc.trace.TraceID, i+1, r.Error, r.Frames)
			}
			if n := spanCalls(); n != tc.want[i] {
				t.Errorf("trace %s, after panel %d (%s): %d span-profile calls in all, want %d", tc.trace.TraceID, i+1,
					[]string{"first of a refresh", "second of the refresh", "the next refresh"}[i], n, tc.want[i])
			}
		}
	}
}
