package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/resource/httpadapter"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/pyroscope"
)

// withSources is a data source of these settings whose stores are in-memory fakes: the
// plugin's routing (QueryData and CallResource) and its error and notice mapping, tested without
// a wire. Stores left unset
// are unavailable, as when they are not configured.
func withSources(t testing.TB, jsonData map[string]any, src correlate.Sources) *Datasource {
	t.Helper()
	raw, err := json.Marshal(jsonData)
	if err != nil {
		t.Fatal(err)
	}
	settings, invalid, err := models.LoadSettings(backend.DataSourceInstanceSettings{JSONData: raw})
	if err != nil {
		t.Fatal(err)
	}
	ds := &Datasource{settings: settings, invalid: invalid, src: src}
	ds.queries = ds.newQueryMux()
	ds.resources = httpadapter.New(ds.newResourceMux())
	return ds
}

// figuresOnly is a GPU store that answers GPUFigures only.
type figuresOnly struct{ figures correlate.GPUFigures }

func (f figuresOnly) GPUFigures(ctx context.Context, filter models.GPUFilter, start, end time.Time, step time.Duration) ([]classify.GPUSeries, notices.List, error) {
	return f.figures.GPUFigures(ctx, filter, start, end, step)
}

var errNotFaked = errors.New("not answered by this fake")

func (figuresOnly) GPUMetric(context.Context, string, models.GPUFilter, string, time.Time, time.Time, time.Duration) (*models.GPUMetricResult, error) {
	return nil, errNotFaked
}

func (figuresOnly) GPULabelValues(context.Context, string, models.GPUFilter, time.Time, time.Time) ([]string, error) {
	return nil, errNotFaked
}

// answerGPUClass answers one gpuClass query against a figure store with these classification
// settings, through the plugin's handler and its error mapping.
func answerGPUClass(ctx context.Context, figures correlate.GPUFigures, q backend.DataQuery, _ *models.GPUClassQuery, cs models.ClassifySettings) backend.DataResponse {
	ds := &Datasource{settings: &models.Settings{Classify: cs}, src: correlate.Sources{GPUs: correlate.Ready[correlate.GPUStore](figuresOnly{figures})}}
	return runQuery(ctx, models.QueryTypeGPUClass, ds.queryGPUClass, q)
}

func TestAHandlersErrorsAreFiledOnceByWhoseTheyAre(t *testing.T) {
	ds := withSources(t, map[string]any{}, correlate.Sources{
		GPUs: correlate.Ready[correlate.GPUStore](figuresOnly{&fakeFigures{err: backend.DownstreamError(errors.New("Prometheus (http://p): 503"))}}),
	})
	run := func(model string) backend.DataResponse {
		q := classQuery(model, 30*time.Second)
		res, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Responses["A"]
	}
	for _, c := range []struct {
		name, model, text string
		status            backend.Status
		source            backend.ErrorSource
	}{
		{"the query's own field", `{"queryType":"gpuClass","minStep":"fast"}`, "invalid gpuClass query: ", backend.StatusBadRequest, backend.ErrorSourceDownstream},
		{"an upstream that failed", `{"queryType":"gpuClass"}`, "Prometheus (http://p): 503", backend.StatusBadRequest, backend.ErrorSourceDownstream},
	} {
		r := run(c.model)
		if r.Error == nil || r.Status != c.status || r.ErrorSource != c.source || !strings.Contains(r.Error.Error(), c.text) {
			t.Errorf("%s: %v (status %d, source %s)", c.name, r.Error, r.Status, r.ErrorSource)
		}
	}
	// A store that is not configured says how to configure it.
	r := run2(t, withSources(t, map[string]any{}, correlate.Sources{
		GPUs: correlate.Unavailable[correlate.GPUStore](backend.DownstreamError(errors.New("Prometheus is not configured: set its URL"))),
	}), classQuery(`{"queryType":"gpuClass"}`, time.Minute))
	if r.Error == nil || r.ErrorSource != backend.ErrorSourceDownstream || !strings.Contains(r.Error.Error(), "not configured") {
		t.Errorf("unavailable store: %v", r.Error)
	}
}

func TestNoticesOfAnAnswerComeOnceWithTheirProducersSeverity(t *testing.T) {
	// The figures lack a bitmask (a warning classify.Coverage gives) and the step is the
	// producer's info: both reach the first frame, each once, with the severity it was born with.
	src := &fakeFigures{gpus: []classGPU{{gpuOf("node-a", "0", "A100"), nodeB2}}}
	r := run2(t, withSources(t, map[string]any{}, correlate.Sources{GPUs: correlate.Ready[correlate.GPUStore](figuresOnly{src})}),
		classQuery(`{"queryType":"gpuClass","format":"summary"}`, 30*time.Second))
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	seen := map[string]data.NoticeSeverity{}
	for _, n := range r.Frames[0].Meta.Notices {
		if _, dup := seen[n.Text]; dup {
			t.Errorf("notice %q twice", n.Text)
		}
		seen[n.Text] = n.Severity
	}
	var info, warning bool
	for text, sev := range seen {
		info = info || (sev == data.NoticeSeverityInfo && strings.Contains(text, "classes are judged at each"))
		warning = warning || (sev == data.NoticeSeverityWarning && strings.Contains(text, "no clock-event bitmask"))
	}
	if !info || !warning {
		t.Errorf("notices %v: want the method as info and the missing bitmask as a warning", seen)
	}
}

func run2(t *testing.T, ds *Datasource, q backend.DataQuery) backend.DataResponse {
	t.Helper()
	res, err := ds.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{q}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Responses[q.RefID]
}

// profileClient is the real Pyroscope client of a data source built from settings.
func (d *Datasource) profileClient(t testing.TB) *pyroscope.Client {
	t.Helper()
	store, err := d.src.Profiles.Get()
	if err != nil {
		t.Fatal(err)
	}
	return store.(*pyroscope.Client)
}

func TestTheQueriesOfARequestRunAtMostGrafanasConcurrentQueryCountAtOnce(t *testing.T) {
	for _, c := range []struct {
		config map[string]string
		want   int
	}{
		{map[string]string{backend.ConcurrentQueryCount: "3"}, 3},
		{nil, defaultConcurrentQueries}, // Grafana sent none: its own default
	} {
		var mu sync.Mutex
		running, most := 0, 0
		h := perQuery("profile", func(context.Context, backend.DataQuery) (data.Frames, error) {
			mu.Lock()
			running++
			most = max(most, running)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond) // long enough for the others to start, if they may
			mu.Lock()
			running--
			mu.Unlock()
			return nil, nil
		})
		queries := make([]backend.DataQuery, 3*c.want)
		for i := range queries {
			queries[i] = backend.DataQuery{RefID: fmt.Sprint(i)}
		}
		ctx := backend.WithGrafanaConfig(context.Background(), backend.NewGrafanaCfg(c.config))
		res, err := h(ctx, &backend.QueryDataRequest{Queries: queries})
		if err != nil || len(res.Responses) != len(queries) {
			t.Fatalf("%d answers, %v", len(res.Responses), err)
		}
		if most > c.want {
			t.Errorf("config %v: %d queries ran at once, want at most %d", c.config, most, c.want)
		}
	}
}
