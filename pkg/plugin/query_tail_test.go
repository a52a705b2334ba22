package plugin

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// A tail scenario is an endpoint's traffic over the last hour, as OpenTelemetry and
// otel-profiling-go record it: each request is the endpoint's server span (profiled) in the
// API service, which works on the CPU, calls a vLLM engine (its llm_request span with vLLM's
// gen_ai.latency.* attributes, not profiled, as vLLM sends none) and then a database that sends
// no spans (a client span naming it in peer.service), and works on the CPU again. Normal
// requests vary a little in each part; the slow ones get one cause injected, hundreds of
// milliseconds of it: queueing in the engine, CPU in a hot function of the API, or a wait on
// the database. Every name is drawn from the seed, so no rule can key on the demo's words.
type tailScenario struct {
	service, engine, peer, operation, hot string
	traces                                []models.Trace
	cpu                                   map[string][]string // span ID → folded stacks (ns)
	// injected is each slow request's cause and how long it was made, by trace ID.
	injected map[string]injectedCause
	to       time.Time // the end of the hour the requests are in
}

type injectedCause struct {
	kind  string // the diagnose cause kind expected
	extra time.Duration
}

// tailMix is how many of n requests are slowed by each cause kind.
type tailMix map[string]int

func randomWord(rng *rand.Rand) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	b := make([]byte, 4+rng.IntN(5))
	for i := range b {
		b[i] = letters[rng.IntN(len(letters))]
	}
	return string(b)
}

func newTailScenario(seed uint64, n int, mix tailMix, to time.Time) *tailScenario {
	return newTailScenarioScaled(seed, n, mix, to, false)
}

// newTailScenarioScaled is newTailScenario; scaled stretches every part of each request by one
// factor of its own (up to 1.6 times, most requests near 1): a tail made by everything being a
// little slower at once, where no cause stands out.
func newTailScenarioScaled(seed uint64, n int, mix tailMix, to time.Time, scaled bool) *tailScenario {
	rng := rand.New(rand.NewPCG(seed, 34))
	sc := &tailScenario{
		service: randomWord(rng) + "-api", engine: randomWord(rng) + "-vllm", peer: randomWord(rng) + "-db",
		operation: "POST /v1/" + randomWord(rng), hot: "main." + randomWord(rng),
		cpu: map[string][]string{}, injected: map[string]injectedCause{}, to: to,
	}
	// Which requests are slow, and by what: the mix's counts, in random places.
	causes := make([]string, n)
	i := 0
	for _, kind := range slices.Sorted(func(yield func(string) bool) {
		for k := range mix {
			if !yield(k) {
				return
			}
		}
	}) {
		for range mix[kind] {
			causes[i] = kind
			i++
		}
	}
	rng.Shuffle(n, func(a, b int) { causes[a], causes[b] = causes[b], causes[a] })
	ms := func(lo, hi int) time.Duration { return time.Duration(lo+rng.IntN(hi-lo+1)) * time.Millisecond }
	for r := range n {
		start := to.Add(-time.Hour).Add(time.Duration(rng.Int64N(int64(59 * time.Minute)))).Truncate(time.Microsecond)
		traceID := fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64())
		cpuA, cpuB := ms(5, 15), ms(5, 15)
		queue, prefill, decode := ms(0, 4), ms(20, 40), ms(150, 260)
		wait := ms(10, 30)
		extra := ms(600, 1200)
		switch causes[r] {
		case "queue":
			queue += extra
		case "cpu":
			cpuB += extra
		case "downstream":
			wait += extra
		}
		if causes[r] != "" {
			sc.injected[traceID] = injectedCause{causes[r], extra}
		}
		if scaled {
			f := 1 + 0.6*math.Pow(rng.Float64(), 4)
			stretch := func(d *time.Duration) { *d = time.Duration(float64(*d) * f).Truncate(time.Microsecond) }
			for _, d := range []*time.Duration{&cpuA, &cpuB, &queue, &prefill, &decode, &wait} {
				stretch(d)
			}
		}
		id := func(k int) string { return traceID[:14] + fmt.Sprintf("%02x", k) }
		res := map[string]string{"host.name": "node-" + strconv.Itoa(1+r%3)}
		span := func(k int, parent int, service, op, kind string, at, dur time.Duration) models.Span {
			s := models.Span{TraceID: traceID, SpanID: id(k), Service: service, Operation: op, Kind: kind,
				Start: start.Add(at), Duration: dur, Attributes: map[string]string{}, Resource: res}
			if parent >= 0 {
				s.ParentSpanID = id(parent)
			}
			return s
		}
		gap := 200 * time.Microsecond
		engineAt := cpuA + gap
		engineDur := queue + prefill + decode
		callAt := engineAt + engineDur + 2*gap + 300*time.Microsecond
		total := callAt + wait + gap + cpuB
		root := span(0, -1, sc.service, sc.operation, "server", 0, total)
		root.Attributes[models.ProfileIDAttribute] = root.SpanID
		client := span(1, 0, sc.service, "POST", "client", engineAt, engineDur+2*gap)
		client.Attributes["server.address"] = sc.engine
		llm := span(2, 1, sc.engine, "llm_request", "server", engineAt+gap, engineDur)
		llm.Attributes[correlate.AttrResponseModel] = "chat-8b"
		llm.Attributes[correlate.AttrTimeInQueue] = strconv.FormatFloat(queue.Seconds(), 'f', 6, 64)
		llm.Attributes[correlate.AttrTimeInPrefill] = strconv.FormatFloat(prefill.Seconds(), 'f', 6, 64)
		llm.Attributes[correlate.AttrTimeInDecode] = strconv.FormatFloat(decode.Seconds(), 'f', 6, 64)
		llm.Attributes[correlate.AttrE2E] = strconv.FormatFloat(engineDur.Seconds(), 'f', 6, 64)
		db := span(3, 0, sc.service, "SELECT", "client", callAt, wait)
		db.Attributes["peer.service"] = sc.peer
		sc.traces = append(sc.traces, models.Trace{TraceID: traceID, Spans: []models.Span{root, client, llm, db}})
		// The API's CPU: its own handler around the calls, the hot function in what follows them.
		sc.cpu[root.SpanID] = []string{
			fmt.Sprintf("main.handle;main.decode %d", cpuA.Nanoseconds()),
			fmt.Sprintf("main.handle;%s %d", sc.hot, cpuB.Nanoseconds()),
		}
	}
	return sc
}

// datasource is a data source over the scenario's traces and span profiles, with no GPU store.
func (sc *tailScenario) datasource(t *testing.T) (*Datasource, *memTraces, *memProfiles) {
	traces := &memTraces{traces: sc.traces}
	profiles := &memProfiles{bySpan: map[string]map[string][]string{cpuTypeID: sc.cpu}}
	return withSources(t, map[string]any{}, correlate.Sources{
		Profiles: correlate.Ready[correlate.ProfileStore](profiles),
		Traces:   correlate.Ready[correlate.TraceStore](traces),
		Metrics:  correlate.Ready[correlate.MetricStore](&memMetrics{}),
	}), traces, profiles
}

func (sc *tailScenario) model(extra string) string {
	return fmt.Sprintf(`{"queryType":"tail","service":%q,"operation":%q,"limit":1500%s}`, sc.service, sc.operation, extra)
}

// tailRow is one cause of the tail causes frame.
type tailRow struct {
	cause, kind                      string
	share, atMedian, inTail, added   float64
	requests, first                  int64
	standsOut                        bool
	example, evidence, action, hotFn string
}

func tailRows(t *testing.T, f *data.Frame) []tailRow {
	t.Helper()
	if f.Name != "tail causes" {
		t.Fatalf("frame %q, want tail causes", f.Name)
	}
	get := func(name string, row int) any {
		fld, i := f.FieldByName(name)
		if i < 0 {
			t.Fatalf("tail causes has no field %q", name)
		}
		return fld.At(row)
	}
	var out []tailRow
	for row := range f.Rows() {
		out = append(out, tailRow{
			cause: get("cause", row).(string), kind: get("kind", row).(string),
			share: get("share", row).(float64), atMedian: get("atMedian", row).(float64), inTail: get("inTail", row).(float64),
			added: get("added", row).(float64), requests: get("requests", row).(int64), first: get("first", row).(int64),
			standsOut: get("standsOut", row).(bool), example: get("exampleTraceID", row).(string), evidence: get("evidence", row).(string),
			action: get("action", row).(string), hotFn: get("hotFunction", row).(string),
		})
	}
	return out
}

func runTail(t *testing.T, ds *Datasource, model string) backend.DataResponse {
	t.Helper()
	ctx := backend.WithPluginContext(context.Background(), pluginCtx)
	res, err := ds.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pluginCtx, Queries: []backend.DataQuery{query("A", model)}})
	if err != nil {
		t.Fatalf("QueryData returned a Go error: %v", err)
	}
	return res.Responses["A"]
}

// TestTailRanksRandomMixesAsInjected: on randomised endpoints whose slow requests mix queueing
// in the engine, CPU in a hot function and a wait on a database among normal traffic, the tail's
// causes come out in the injected order with their shares of the tail's excess within 10 points
// of the injected time's, each standing out, and the median comparison names what the tail has
// and the median lacks.
func TestTailRanksRandomMixesAsInjected(t *testing.T) {
	mixes := []tailMix{
		{"queue": 15, "cpu": 7, "downstream": 3},
		{"cpu": 12, "downstream": 8, "queue": 5},
		{"downstream": 14, "queue": 11},
		{"cpu": 25},
	}
	kinds := map[string]string{"queue": "queue", "cpu": "cpu", "downstream": "downstream"}
	for i, mix := range mixes {
		seed := uint64(1000 + i*7919)
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			now := time.Now()
			sc := newTailScenario(seed, 500, mix, now)
			ds, _, _ := sc.datasource(t)
			r := runTail(t, ds, sc.model(`,"maxTraces":30`))
			if r.Error != nil {
				t.Fatalf("tail failed: %v", r.Error)
			}
			if len(r.Frames) != 3 {
				t.Fatalf("want summary, causes and requests, got %d frames", len(r.Frames))
			}
			summary, _ := r.Frames[0].Fields[0].At(0).(string)
			rows := tailRows(t, r.Frames[1])
			t.Logf("%s\nnotices:\n%s", summary, frameNotices(r.Frames[0]))
			for _, row := range rows {
				t.Logf("%-50s share %.2f added %.0f ms, median %.0f ms, tail %.0f ms, in %d first %d, stands out %t",
					row.cause, row.share, row.added, row.atMedian, row.inTail, row.requests, row.first, row.standsOut)
			}
			// What was injected into the requests the tail holds: each cause's time over the
			// tail's total time beyond the operation's median request.
			tail := tailGroup(t, r.Frames[2], "tail")
			expected, excess := map[string]float64{}, 0.0
			median := sc.medianDuration()
			for _, id := range tail {
				excess += max(sc.duration(id)-median, 0).Seconds()
				if in, ok := sc.injected[id]; ok {
					expected[kinds[in.kind]] += in.extra.Seconds()
				}
			}
			for k := range expected {
				expected[k] /= excess
			}
			if len(tail) < len(sc.injected) {
				t.Fatalf("the tail holds %d requests, fewer than the %d slowed", len(tail), len(sc.injected))
			}
			got := map[string]tailRow{}
			for _, row := range rows {
				got[row.kind] = row
				if _, ok := expected[row.kind]; !ok && row.share >= 0.1 {
					t.Errorf("%s was not injected, yet has %.0f%% of the excess", row.cause, 100*row.share)
				}
			}
			for kind, want := range expected {
				row, ok := got[kind]
				if !ok {
					t.Fatalf("no %s cause in the tail, injected %.0f%% of its excess", kind, 100*want)
				}
				if math.Abs(row.share-want) > 0.10 {
					t.Errorf("%s: share %.0f%%, injected %.0f%%", row.cause, 100*row.share, 100*want)
				}
				if want >= 0.25 && !row.standsOut {
					t.Errorf("%s: %.0f%% of the excess injected, yet it does not stand out", row.cause, 100*want)
				}
				if want >= 0.25 && row.atMedian*2 > row.inTail {
					t.Errorf("%s: %.0f ms at the median against %.0f ms in the tail, not what the tail has and the median lacks", row.cause, row.atMedian, row.inTail)
				}
			}
			// The ranking: the kind injected most leads whenever it leads the next by 10 points.
			order := slices.SortedFunc(func(yield func(string) bool) {
				for k := range expected {
					if !yield(k) {
						return
					}
				}
			}, func(a, b string) int { return cmp.Compare(expected[b], expected[a]) })
			if len(order) == 1 || expected[order[0]]-expected[order[1]] >= 0.10 {
				if rows[0].kind != order[0] {
					t.Errorf("first cause %s, injected most: %s (%.0f%%)", rows[0].cause, order[0], 100*expected[order[0]])
				}
				if !strings.HasPrefix(strings.ToLower(summary), strings.ToLower(rows[0].cause)) || !strings.Contains(summary, "Remedy: ") {
					t.Errorf("the summary does not name the first cause with its remedy: %s", summary)
				}
			}
			for _, row := range rows[:len(expected)] {
				if row.example == "" || sc.injected[row.example].kind != row.kind {
					t.Errorf("%s: example %q is not a request slowed by it", row.cause, row.example)
				}
			}
		})
	}
}

// tailGroup is the trace IDs of the tail requests frame's group ("tail" or "median").
func tailGroup(t testing.TB, f *data.Frame, group string) []string {
	t.Helper()
	if f.Name != "tail requests" {
		t.Fatalf("frame %q, want tail requests", f.Name)
	}
	g, _ := f.FieldByName("group")
	ids, _ := f.FieldByName("traceID")
	var out []string
	for row := range f.Rows() {
		if g.At(row).(string) == group {
			out = append(out, ids.At(row).(string))
		}
	}
	return out
}

// duration is the request's duration (its root span's).
func (sc *tailScenario) duration(traceID string) time.Duration {
	for _, tr := range sc.traces {
		if tr.TraceID == traceID {
			return tr.Spans[0].Duration
		}
	}
	return 0
}

// medianDuration is the nearest-rank median of the requests' durations, as the tail takes it.
func (sc *tailScenario) medianDuration() time.Duration {
	d := make([]time.Duration, len(sc.traces))
	for i, tr := range sc.traces {
		d[i] = tr.Spans[0].Duration
	}
	slices.Sort(d)
	return d[int(math.Ceil(0.5*float64(len(d))))-1]
}

// TestTailWhereNothingStandsOutSaysSo: a tail made by every part of each request being a little
// slower at once names no cause as the tail's, and says so.
func TestTailWhereNothingStandsOutSaysSo(t *testing.T) {
	for _, seed := range []uint64{5, 77, 901} {
		sc := newTailScenarioScaled(seed, 400, nil, time.Now(), true)
		ds, _, _ := sc.datasource(t)
		r := runTail(t, ds, sc.model(""))
		if r.Error != nil {
			t.Fatal(r.Error)
		}
		summary := r.Frames[0].Fields[0].At(0).(string)
		standsOut := r.Frames[0].Fields[1].At(0).(bool)
		if standsOut || !strings.HasPrefix(summary, "Nothing stands out") {
			t.Errorf("seed %d: %s", seed, summary)
		}
		for _, row := range tailRows(t, r.Frames[1]) {
			if row.standsOut {
				t.Errorf("seed %d: %s stands out (%.0f ms at the median, %.0f ms in the tail, %.0f%%)", seed, row.cause, row.atMedian, row.inTail, 100*row.share)
			}
		}
	}
}

// unreadableTraces is a trace store whose search finds every trace but which cannot read some.
type unreadableTraces struct {
	*memTraces
	unreadable map[string]bool
}

func (u unreadableTraces) Trace(ctx context.Context, traceID string) (*models.Trace, error) {
	if u.unreadable[traceID] {
		return nil, fmt.Errorf("jaeger: trace %s: 500 Internal Server Error", traceID)
	}
	return u.memTraces.Trace(ctx, traceID)
}

// TestTailAnswersInPartWhenRequestsOrStoresFail: requests whose trace cannot be read, and a
// profile store that is down, leave an answer with notices that say what is missing; only the
// trace search failing fails the query, saying so.
func TestTailAnswersInPartWhenRequestsOrStoresFail(t *testing.T) {
	sc := newTailScenario(42, 400, tailMix{"queue": 14, "downstream": 6}, time.Now())
	unreadable := map[string]bool{}
	for id := range sc.injected {
		if len(unreadable) < 5 {
			unreadable[id] = true
		}
	}
	profiles := &memProfiles{err: errPyroscopeDown}
	ds := withSources(t, map[string]any{}, correlate.Sources{
		Profiles: correlate.Ready[correlate.ProfileStore](profiles),
		Traces:   correlate.Ready[correlate.TraceStore](unreadableTraces{&memTraces{traces: sc.traces}, unreadable}),
		Metrics:  correlate.Ready[correlate.MetricStore](&memMetrics{}),
	})
	r := runTail(t, ds, sc.model(`,"maxTraces":30`))
	if r.Error != nil {
		t.Fatalf("a partial failure failed the query: %v", r.Error)
	}
	notes := frameNotices(r.Frames[0])
	for _, want := range []string{"5 of the 2", "could not be diagnosed", "500 Internal Server Error", "lacked a signal", "Pyroscope"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notices lack %q:\n%s", want, notes)
		}
	}
	rows := tailRows(t, r.Frames[1])
	if rows[0].kind != "queue" || !rows[0].standsOut {
		t.Errorf("first cause %s: the queue does not need the profiles and should still lead", rows[0].cause)
	}
	reqs := r.Frames[2]
	why, _ := reqs.FieldByName("why")
	ids, _ := reqs.FieldByName("traceID")
	for row := range reqs.Rows() {
		if unreadable[ids.At(row).(string)] != (why.At(row).(string) != "") {
			t.Errorf("request %s: why %q", ids.At(row), why.At(row))
		}
	}

	down := withSources(t, map[string]any{}, correlate.Sources{
		Traces: correlate.Ready[correlate.TraceStore](&memTraces{err: errJaegerDown}),
	})
	r = runTail(t, down, sc.model(""))
	if r.Error == nil || !strings.Contains(r.Error.Error(), errJaegerDown.Error()) {
		t.Errorf("trace search down: %v", r.Error)
	}
}

// TestTailWithNothingToAskSaysWhatToSet: with no trace store configured, or no endpoint chosen
// (a dashboard's variables listing nothing yet), each panel gets its own empty frame whose answer
// and notice say what to set, not a red error.
func TestTailWithNothingToAskSaysWhatToSet(t *testing.T) {
	noStore := newTestDatasource(t, map[string]any{"pyroscopeUrl": "http://127.0.0.1:1"}, nil)
	withStore := withSources(t, map[string]any{}, correlate.Sources{Traces: correlate.Ready[correlate.TraceStore](&memTraces{})})
	for _, c := range []struct {
		ds    *Datasource
		model string
		want  string
	}{
		{noStore, `{"queryType":"tail","service":"api","operation":"POST /v1/chat","parts":["summary"]}`, "jsonData.jaegerUrl"},
		{withStore, `{"queryType":"tail","service":"api","operation":"","parts":["summary"]}`, `set "service" and "operation"`},
		{withStore, `{"queryType":"tail","parts":["summary"]}`, "pick them in Service and Endpoint"},
	} {
		r := runTail(t, c.ds, c.model)
		if r.Error != nil || len(r.Frames) != 1 || r.Frames[0].Name != "tail summary" {
			t.Fatalf("%s: %v, %d frames, want the summary alone", c.model, r.Error, len(r.Frames))
		}
		answer := r.Frames[0].Fields[0].At(0).(string)
		if !strings.Contains(answer, c.want) || !strings.Contains(frameNotices(r.Frames[0]), c.want) {
			t.Errorf("%s: answer %q, notices %q: want what to set (%s)", c.model, answer, frameNotices(r.Frames[0]), c.want)
		}
	}
	// A trace store that is set up but not available to this instance stays an error.
	none := withSources(t, map[string]any{}, correlate.Sources{})
	if r := runTail(t, none, `{"queryType":"tail","service":"api","operation":"x"}`); r.Error == nil {
		t.Error("a trace store that was not set up answered no error")
	}
}

// TestTailQueryRefusesBadFields: each mistake is named with its field.
func TestTailQueryRefusesBadFields(t *testing.T) {
	ds := withSources(t, map[string]any{}, correlate.Sources{Traces: correlate.Ready[correlate.TraceStore](&memTraces{})})
	for model, want := range map[string]string{
		`{"queryType":"tail","service":"api","operation":"x","percentile":100}`:           `"percentile"`,
		`{"queryType":"tail","service":"api","operation":"x","maxTraces":101}`:            `"maxTraces"`,
		`{"queryType":"tail","service":"api","operation":"x","percentile":90,"slo":true}`: "exclude each other",
		`{"queryType":"tail","service":"api","operation":"x","parts":["flames"]}`:         `"parts"`,
		`{"queryType":"tail","service":"api","operation":"x","minDuration":"fast"}`:       "minDuration",
	} {
		r := runTail(t, ds, model)
		if r.Error == nil || !strings.Contains(r.Error.Error(), want) || !strings.Contains(r.Error.Error(), "invalid tail query") {
			t.Errorf("%s: %v, want an error naming %s", model, r.Error, want)
		}
	}
}

// TestTailPanelsOfOneRefreshDiagnoseEachRequestOnce: the summary, causes and requests panels of
// one tail, and then another percentile of the same endpoint, read each request's profiles once.
func TestTailPanelsOfOneRefreshDiagnoseEachRequestOnce(t *testing.T) {
	sc := newTailScenario(7, 300, tailMix{"cpu": 15}, time.Now())
	ds, _, profiles := sc.datasource(t)
	ctx := backend.WithPluginContext(context.Background(), pluginCtx)
	// A refresh asks every panel over the same range.
	at := func(q backend.DataQuery) backend.DataQuery {
		q.TimeRange = backend.TimeRange{From: sc.to.Add(-time.Hour), To: sc.to}
		return q
	}
	var qs []backend.DataQuery
	for i, part := range models.TailParts {
		qs = append(qs, at(query(string(rune('A'+i)), sc.model(`,"parts":["`+part+`"]`))))
	}
	res, err := ds.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pluginCtx, Queries: qs})
	if err != nil {
		t.Fatal(err)
	}
	asked := map[string]int{}
	for _, c := range profiles.flameCalls() {
		for _, id := range c.SpanSelector {
			asked[id]++
		}
	}
	for id, n := range asked {
		if n > 1 {
			t.Errorf("span %s's profile read %d times", id, n)
		}
	}
	for ref, r := range res.Responses {
		if r.Error != nil || len(r.Frames) != 1 {
			t.Fatalf("%s: %v, %d frames", ref, r.Error, len(r.Frames))
		}
	}
	requests := res.Responses["C"]
	before := len(profiles.flameCalls())
	// p90 holds p95's requests and more: only the new ones are joined.
	res, err = ds.QueryData(ctx, &backend.QueryDataRequest{PluginContext: pluginCtx, Queries: []backend.DataQuery{at(query("D", sc.model(`,"percentile":90`)))}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Responses["D"]
	if r.Error != nil {
		t.Fatal(r.Error)
	}
	p95 := tailGroup(t, requests.Frames[0], "tail")
	p90 := tailGroup(t, r.Frames[2], "tail")
	newOnes := 0
	for _, id := range p90 {
		if !slices.Contains(p95, id) {
			newOnes++
		}
	}
	if got := len(profiles.flameCalls()) - before; got > newOnes+len(tailGroup(t, r.Frames[2], "median")) {
		t.Errorf("p90 after p95 asked %d span profiles, for %d requests p95 had not diagnosed (and its median sample)", got, newOnes)
	}
}
