package correlate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// fakeSearch is a trace store in memory: traces by service and root operation.
type fakeSearch struct {
	services []string
	traces   map[string][]models.TraceSummary // "service operation" ("service " for any) → traces
	failFor  string                           // a service whose searches fail

	mu    sync.Mutex
	asked []models.TraceSearchQuery
}

func (f *fakeSearch) Services(context.Context) ([]string, string, error) {
	return f.services, "v3", nil // the API a Jaeger v2 answers on
}

func (f *fakeSearch) FindTraces(_ context.Context, q models.TraceSearchQuery) ([]models.TraceSummary, error) {
	f.mu.Lock()
	f.asked = append(f.asked, q)
	f.mu.Unlock()
	if q.Service == f.failFor {
		return nil, errors.New("Jaeger (http://jaeger:16686): HTTP 500")
	}
	var out []models.TraceSummary
	for key, ts := range f.traces {
		svc, op, _ := strings.Cut(key, " ")
		if svc == q.Service && (q.Operation == "" || op == q.Operation) {
			for _, t := range ts {
				if t.Duration >= q.MinDuration {
					out = append(out, t)
				}
			}
		}
	}
	return out, nil
}

func summary(id string, durMs int, startS int) models.TraceSummary {
	return models.TraceSummary{TraceID: id, Duration: ms(durMs), Start: t0.Add(time.Duration(startS) * time.Second)}
}

func ids(ts []models.TraceSummary) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.TraceID)
	}
	return strings.Join(out, ",")
}

func TestSlowestTracesAcrossServicesSlowestFirstEachOnce(t *testing.T) {
	f := &fakeSearch{
		services: []string{"nemotron-backend", "jaeger-all-in-one", "ai-detector"},
		traces: map[string][]models.TraceSummary{
			// The same request found from two services' searches.
			"nemotron-backend GET /api/detect": {summary("a", 900, 1), summary("b", 120, 2), summary("c", 450, 3)},
			"ai-detector GET /detect":          {summary("a", 900, 1), summary("d", 450, 0)},
		},
	}
	got, notes, err := SlowestTraces(context.Background(), f, SlowTracesQuery{Start: t0, End: t0.Add(time.Hour), Limit: 3})
	if err != nil || len(notes) != 0 {
		t.Fatalf("%v %v", err, notes)
	}
	// Equal durations: the earlier first.
	if ids(got) != "a,d,c" {
		t.Errorf("got %s, want a,d,c", ids(got))
	}
	// Jaeger's own service is not searched; each search asks deeper than the list.
	var searched []string
	for _, q := range f.asked {
		searched = append(searched, q.Service)
		if q.Limit != 50 || !q.Start.Equal(t0) {
			t.Errorf("search %+v", q)
		}
	}
	slices.Sort(searched)
	if !slices.Equal(searched, []string{"ai-detector", "nemotron-backend"}) {
		t.Errorf("searched %v", searched)
	}
}

func TestSlowestTracesSearchesEachSpanNameOfAnEndpoint(t *testing.T) {
	f := &fakeSearch{traces: map[string][]models.TraceSummary{
		"nemotron-backend /api/detect":      {summary("plain", 300, 0)},
		"nemotron-backend POST /api/detect": {summary("post", 600, 0)},
		"nemotron-backend GET /other":       {summary("other", 900, 0)},
	}}
	got, _, err := SlowestTraces(context.Background(), f, SlowTracesQuery{Service: "nemotron-backend", Endpoint: "/api/detect", MinDuration: ms(200), Limit: 10})
	if err != nil || ids(got) != "post,plain" {
		t.Fatalf("%v %s", err, ids(got))
	}
	var ops []string
	for _, q := range f.asked {
		ops = append(ops, q.Operation)
		if q.MinDuration != ms(200) {
			t.Errorf("min duration %s", q.MinDuration)
		}
	}
	slices.Sort(ops)
	if !slices.Equal(ops, []string{"/api/detect", "GET /api/detect", "POST /api/detect"}) {
		t.Errorf("operations %v", ops)
	}
	// A span name given whole is searched as is.
	f.asked = nil
	if _, _, err := SlowestTraces(context.Background(), f, SlowTracesQuery{Service: "nemotron-backend", Endpoint: "GET /other", Limit: 10}); err != nil || len(f.asked) != 1 || f.asked[0].Operation != "GET /other" {
		t.Errorf("%v %+v", err, f.asked)
	}
}

func TestSlowestTracesSaysWhatTheListMayMiss(t *testing.T) {
	var many []string
	for i := range 25 {
		many = append(many, fmt.Sprintf("svc-%02d", i))
	}
	f := &fakeSearch{services: many, failFor: "svc-03", traces: map[string][]models.TraceSummary{"svc-01 ": {summary("x", 100, 0)}}}
	got, notes, err := SlowestTraces(context.Background(), f, SlowTracesQuery{Limit: 5})
	if err != nil || ids(got) != "x" {
		t.Fatalf("%v %s", err, ids(got))
	}
	text := strings.Join(notes.Texts(), "\n")
	wantParts(t, text, "Searched the first 20 of 25 services (alphabetically)", "1 of 20 trace searches failed, so the list may miss traces: Jaeger (http://jaeger:16686): HTTP 500")
	// Every search failing is the list's error; no service is a note, not an error.
	f = &fakeSearch{services: []string{"svc-03"}, failFor: "svc-03"}
	if _, _, err := SlowestTraces(context.Background(), f, SlowTracesQuery{Limit: 5}); err == nil || !strings.Contains(err.Error(), "HTTP 500") {
		t.Errorf("error %v", err)
	}
	f = &fakeSearch{services: []string{"jaeger-query"}}
	if got, notes, err := SlowestTraces(context.Background(), f, SlowTracesQuery{Limit: 5}); err != nil || len(got) != 0 || !slices.Equal(notes.Texts(), []string{"The trace store knows no service yet."}) {
		t.Errorf("%v %v %v", got, notes, err)
	}
}

// A trace still arriving: one service's search saw only the callee's spans (no root, shorter), the
// other's the whole request. The list keeps the whole copy; a trace seen only partly is listed with
// a note that says its figures are partial.
func TestSlowestTracesKeepsTheFullestCopyAndNamesTracesStillArriving(t *testing.T) {
	partial := summary("a", 60, 1)
	partial.RootService, partial.RootMissing, partial.Spans = "ai-detector", true, 4
	whole := summary("a", 430, 1)
	whole.RootService, whole.Spans = "nemotron-backend", 9
	late := summary("b", 80, 2)
	late.RootService, late.RootMissing, late.Spans = "ai-detector", true, 3
	for _, order := range [][]models.TraceSummary{{partial, whole}, {whole, partial}} {
		f := &fakeSearch{
			services: []string{"ai-detector", "nemotron-backend"},
			traces: map[string][]models.TraceSummary{
				"ai-detector GET /detect":          {order[0], late},
				"nemotron-backend GET /api/detect": {order[1]},
			},
		}
		got, notes, err := SlowestTraces(context.Background(), f, SlowTracesQuery{Limit: 10})
		if err != nil || ids(got) != "a,b" {
			t.Fatalf("%v %s", err, ids(got))
		}
		if got[0].RootService != "nemotron-backend" || got[0].Duration != ms(430) || got[0].RootMissing {
			t.Errorf("kept %+v, want the whole request's copy", got[0])
		}
		if len(notes) != 1 || !strings.Contains(notes[0].Text, "1 of the 2 traces listed has no root span in the trace store yet") {
			t.Errorf("notes %q", notes)
		}
	}
}
