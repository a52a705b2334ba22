package correlate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
)

// fakeSpanSearch answers a search as Jaeger does: whole traces (spans of other services and
// operations come along) of the service that started in the window, at most Limit traces, the
// newest (what the bed's Jaeger keeps, on both APIs, when it stops at its limit).
type fakeSpanSearch struct {
	spans []models.Span
	mu    sync.Mutex
	asked []models.TraceSearchQuery
}

func (f *fakeSpanSearch) SearchSpans(_ context.Context, q models.TraceSearchQuery) ([]models.Span, error) {
	f.mu.Lock()
	f.asked = append(f.asked, q)
	f.mu.Unlock()
	kept := map[string]bool{}
	var out []models.Span
	for _, s := range slices.Backward(f.spans) { // f.spans are in start order: newest last
		if s.Start.Before(q.Start) || !s.Start.Before(q.End) {
			continue
		}
		if !kept[s.TraceID] && len(kept) == q.Limit {
			continue
		}
		kept[s.TraceID] = true
		out = append(out, s)
	}
	slices.Reverse(out)
	return out, nil
}

var spanT0 = time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)

// opSpan is a span of trace n, starting at offset and lasting d; profiled spans carry the
// attribute otel-profiling-go sets.
func opSpan(n int, service, op string, offset, d time.Duration, profiled bool) models.Span {
	s := models.Span{
		TraceID: fmt.Sprintf("%032x", n), SpanID: fmt.Sprintf("%016x", n*16+len(op)), Service: service, Operation: op,
		Start: spanT0.Add(offset), Duration: d, Attributes: map[string]string{},
	}
	if profiled {
		s.Attributes[models.ProfileIDAttribute] = s.SpanID
	}
	return s
}

// A store answers in its own order (Jaeger lists the newest trace first, each trace's spans as
// they were reported): the spans kept come out by start, then span ID, whatever that order.
func TestFindOperationSpansOrdersTheSpansItKeepsByStartThenID(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 7))
		var spans []models.Span
		for n := range 40 {
			// Starts on a coarse grid, so that spans of several traces start at once.
			offset := time.Duration(rng.IntN(10)) * time.Second
			spans = append(spans, opSpan(n, "backend", "GET /api", offset, 50*time.Millisecond, true),
				opSpan(n, "backend", "db_query", offset, 20*time.Millisecond, false))
		}
		rng.Shuffle(len(spans), func(i, j int) { spans[i], spans[j] = spans[j], spans[i] })
		search := &inReplyOrder{spans: spans}
		found, err := FindOperationSpans(context.Background(), search, &models.SpanQuery{Service: "backend", Operation: "GET /api", Limit: 500},
			spanT0, spanT0.Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(found.Spans) != 40 {
			t.Fatalf("seed %d: %d spans kept, want the 40 GET /api spans", seed, len(found.Spans))
		}
		if !slices.IsSortedFunc(found.Spans, func(a, b models.Span) int {
			return cmp.Or(a.Start.Compare(b.Start), cmp.Compare(a.SpanID, b.SpanID))
		}) {
			t.Fatalf("seed %d: spans not by start, then ID: %v", seed, found.Spans)
		}
	}
}

// inReplyOrder answers every search with its spans as they are, in no particular order.
type inReplyOrder struct{ spans []models.Span }

func (f *inReplyOrder) SearchSpans(context.Context, models.TraceSearchQuery) ([]models.Span, error) {
	return slices.Clone(f.spans), nil
}

func TestFindOperationSpansKeepsTheServicesOperationInTheRangeOncePerSpan(t *testing.T) {
	in := opSpan(1, "backend", "GET /api", time.Minute, 300*time.Millisecond, true)
	search := &fakeSpanSearch{spans: []models.Span{
		in,
		in, // the same span twice (two pages of one trace)
		opSpan(1, "backend", "db_query", time.Minute, 200*time.Millisecond, false),
		opSpan(1, "detector", "GET /api", time.Minute, 100*time.Millisecond, true),
		opSpan(2, "backend", "GET /api", -time.Minute, time.Second, true),         // before the range
		opSpan(3, "backend", "GET /api", 2*time.Minute, 5*time.Millisecond, true), // shorter than minDuration
	}}
	q := &models.SpanQuery{Service: "backend", Operation: "GET /api", MinDuration: models.Duration(10 * time.Millisecond), Limit: 500}
	found, err := FindOperationSpans(context.Background(), search, q, spanT0, spanT0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Spans) != 1 || found.Spans[0].SpanID != in.SpanID {
		t.Fatalf("spans %+v, want only %s", found.Spans, in.SpanID)
	}
	if found.Traces != 2 || found.Truncated() || found.LimitNote() != "" {
		t.Errorf("traces %d, truncated %v, note %q", found.Traces, found.Truncated(), found.LimitNote())
	}
	if got := found.ProfiledOperations; len(got) != 1 || got[0] != "GET /api" {
		t.Errorf("profiled operations %q, want [GET /api] (db_query carries no profile; detector is another service)", got)
	}
	// Eight searches, one per eighth of the hour, each narrowed by the trace store's own filters.
	if len(search.asked) != 8 {
		t.Fatalf("%d searches, want 8", len(search.asked))
	}
	slices.SortFunc(search.asked, func(a, b models.TraceSearchQuery) int { return a.Start.Compare(b.Start) })
	for i, a := range search.asked {
		if a.Service != "backend" || a.Operation != "GET /api" || a.MinDuration != 10*time.Millisecond || a.Limit != 62 ||
			!a.Start.Equal(spanT0.Add(time.Duration(i)*7*time.Minute+time.Duration(i)*30*time.Second)) || a.End.Sub(a.Start) != 7*time.Minute+30*time.Second {
			t.Errorf("search %d asked %+v", i, a)
		}
	}
}

// Jaeger stops at its limit keeping the newest traces: searched as one, a busy range would lose
// its first minutes; searched in eighths, every part is read, and the note says which were cut.
func TestFindOperationSpansReadsEveryPartOfABusyRange(t *testing.T) {
	var spans []models.Span
	for i := range 400 { // one request every 9 s over the hour
		spans = append(spans, opSpan(i+1, "backend", "op", time.Duration(i)*9*time.Second, 20*time.Millisecond, true))
	}
	q := &models.SpanQuery{Service: "backend", Operation: "op", Limit: 320} // 40 traces per eighth of 50
	found, err := FindOperationSpans(context.Background(), &fakeSpanSearch{spans: spans}, q, spanT0, spanT0.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(found.Spans); n != 320 {
		t.Errorf("%d spans read, want 8 × 40", n)
	}
	if first := found.Spans[0].Start; first.After(spanT0.Add(5 * time.Minute)) {
		t.Errorf("the first span read starts at %s: the range's start is missing", first)
	}
	if note := found.LimitNote(); !strings.Contains(note, "In 8 of the 8 parts of the range searched separately, the trace search stopped at its limit (320 traces in all)") {
		t.Errorf("note %q", note)
	}
}

func TestHeatmapStepIsRoundAndAtLeastAPanelIntervalAndASixtyFourthOfTheRange(t *testing.T) {
	for _, c := range []struct {
		rng, interval, want time.Duration
	}{
		{time.Hour, 0, time.Minute},             // 56 s → 1 m
		{15 * time.Minute, 0, 15 * time.Second}, // 14 s → 15 s
		{15 * time.Minute, 20 * time.Second, 30 * time.Second},
		{10 * time.Second, 0, time.Second},
		{7 * 24 * time.Hour, 0, 6 * time.Hour}, // 2.6 h → 6 h
	} {
		if got := HeatmapStep(spanT0, spanT0.Add(c.rng), c.interval); got != c.want {
			t.Errorf("range %s interval %s: step %s, want %s", c.rng, c.interval, got, c.want)
		}
	}
}

func TestDurationBucketsAreTwoPerDoublingAndHoldTheDuration(t *testing.T) {
	for _, d := range []time.Duration{time.Microsecond, 900 * time.Microsecond, 20 * time.Millisecond, 30 * time.Millisecond, 437 * time.Millisecond, 3 * time.Second} {
		lo, hi := DurationBucket(d)
		s := d.Seconds()
		if s < lo*(1-1e-9) || s >= hi {
			t.Errorf("%s: bucket [%g, %g) s does not hold %g s", d, lo, hi, s)
		}
		if r := hi / lo; r < 1.414 || r > 1.415 {
			t.Errorf("%s: bucket [%g, %g) is not a half doubling (ratio %g)", d, lo, hi, r)
		}
	}
	// 20 ms and 30 ms are told apart, the point of the heatmap for short spans.
	a, _ := DurationBucket(20 * time.Millisecond)
	b, _ := DurationBucket(30 * time.Millisecond)
	if a == b {
		t.Errorf("20 ms and 30 ms share bucket %g", a)
	}
}

func TestSpanHeatmapCountsSpansByEndAndDurationAndKeepsTheSlowestOfEachStep(t *testing.T) {
	step := time.Minute
	spans := []models.Span{
		opSpan(1, "b", "op", 5*time.Second, 20*time.Millisecond, true),
		opSpan(2, "b", "op", 10*time.Second, 21*time.Millisecond, true),                       // same cell as the first
		opSpan(3, "b", "op", 20*time.Second, 400*time.Millisecond, true),                      // slowest of the first minute
		opSpan(4, "b", "op", 59*time.Second+900*time.Millisecond, 200*time.Millisecond, true), // ends in the second minute
	}
	h := BuildSpanHeatmap(spans, step)
	if len(h.Cells) != 3 {
		t.Fatalf("cells %+v, want 3", h.Cells)
	}
	first := h.Cells[0]
	if !first.XMax.Equal(spanT0.Add(time.Minute)) || first.Count != 2 || first.YMin > 0.020 || first.YMax <= 0.021 {
		t.Errorf("first cell %+v: the two ~20 ms spans ending before 10:01", first)
	}
	if last := h.Cells[2]; !last.XMax.Equal(spanT0.Add(2*time.Minute)) || last.Count != 1 {
		t.Errorf("last cell %+v: the span ending at 10:01:00.1 belongs to the bucket ending 10:02", last)
	}
	if len(h.Exemplars) != 2 || h.Exemplars[0].TraceID != spans[2].TraceID || h.Exemplars[1].TraceID != spans[3].TraceID {
		t.Errorf("exemplars %+v, want the 400 ms span, then the 200 ms one", h.Exemplars)
	}
}

func TestPercentileIsTheNearestRank(t *testing.T) {
	var spans []models.Span
	for i := 1; i <= 20; i++ {
		spans = append(spans, opSpan(i, "b", "op", 0, time.Duration(i)*time.Millisecond, true))
	}
	for p, want := range map[float64]time.Duration{50: 10 * time.Millisecond, 95: 19 * time.Millisecond, 99: 20 * time.Millisecond, 1: time.Millisecond} {
		if got := Percentile(spans, p); got != want {
			t.Errorf("p%g = %s, want %s", p, got, want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("no spans: 0")
	}
}

func TestSpanProfileMergesTheSlowProfiledSpansInOneCallAndSaysWhatItHolds(t *testing.T) {
	var spans []models.Span
	prof := &fakeProfiles{bySpan: map[string][]string{}}
	for i := 1; i <= 10; i++ {
		s := opSpan(i, "backend", "db_query", time.Duration(i)*time.Second, time.Duration(i)*10*time.Millisecond, true)
		spans = append(spans, s)
		prof.bySpan[s.SpanID] = []string{fmt.Sprintf("main;query %d", int64(i)*int64(10*time.Millisecond))}
	}
	spans = append(spans, opSpan(11, "backend", "db_query", time.Second, time.Second, false)) // no span profile
	// A span whose attributes a trace store mangled: its profile ID is a number, not a span ID.
	mangled := opSpan(12, "backend", "db_query", time.Second, 2*time.Second, true)
	mangled.Attributes[models.ProfileIDAttribute] = "44249"
	spans = append(spans, mangled)
	found := &OperationSpans{Service: "backend", Operation: "db_query", Spans: spans, Traces: 12, Limit: 500}
	q := &models.SpanQuery{Service: "backend", Operation: "db_query", Percentile: 70, ProfileTypeID: models.DefaultProfileTypeID, MaxNodes: 100}

	sp, err := ProfileSpans(context.Background(), prof, q, found)
	if err != nil {
		t.Fatal(err)
	}
	calls := prof.spanCalls()
	if len(calls) != 1 {
		t.Fatalf("%d Pyroscope calls, want one with every span ID", len(calls))
	}
	// p70 of the 12 spans found (10..100 ms, 1 s and 2 s) is 90 ms: the spans of 90 and 100 ms;
	// the unprofiled 1 s span and the mangled 2 s one are not asked for.
	if sp.Threshold != 90*time.Millisecond || len(calls[0].SpanSelector) != 2 || calls[0].LabelSelector != `{service_name="backend"}` ||
		slices.Contains(calls[0].SpanSelector, "44249") {
		t.Errorf("threshold %s, call %+v: want the three profiled spans of at least 80 ms of backend", sp.Threshold, calls[0])
	}
	if first, last := spans[0].Start, spans[9].Start.Add(spans[9].Duration); !calls[0].Start.Before(spans[8].Start) || calls[0].End.Before(last) || calls[0].Start.Before(first.Add(-2*SpanWindowPadding)) {
		t.Errorf("window %s–%s does not cover the spans with the upload padding", calls[0].Start, calls[0].End)
	}
	if want := int64(190 * time.Millisecond); sp.Tree.Total != want {
		t.Errorf("merged total %d, want %d (90+100 ms of CPU)", sp.Tree.Total, want)
	}
	text := noticeText(sp.Notices)
	for _, want := range []string{"Merged the span profiles of 2 span(s) of backend db_query", "p70 (90ms, of 12 spans found)", "190ms of wall time",
		"2 span(s) without pyroscope.profile.id left out", "about 19 CPU sample(s)", "Under 100 samples",
		`1 span(s) carry a pyroscope.profile.id that is not a span ID (16 hex digits), for example "44249": they were left out as unprofiled`} {
		if !strings.Contains(text, want) {
			t.Errorf("notices lack %q:\n%s", want, text)
		}
	}
}

func TestSpanProfileKeepsTheSlowestSpansUpToTheBound(t *testing.T) {
	var spans []models.Span
	for i := 1; i <= models.MaxMergedSpans+5; i++ {
		spans = append(spans, opSpan(i, "b", "op", 0, time.Duration(i)*time.Microsecond, true))
	}
	prof := &fakeProfiles{}
	found := &OperationSpans{Service: "b", Operation: "op", Spans: spans, Traces: len(spans), Limit: models.MaxSpanTraces}
	sp, err := ProfileSpans(context.Background(), prof, &models.SpanQuery{Service: "b", Operation: "op", ProfileTypeID: models.DefaultProfileTypeID}, found)
	if err != nil {
		t.Fatal(err)
	}
	if len(sp.Merged) != models.MaxMergedSpans || sp.Merged[len(sp.Merged)-1].Duration != 6*time.Microsecond {
		t.Errorf("merged %d spans down to %s, want the slowest %d (down to 6µs)", len(sp.Merged), sp.Merged[len(sp.Merged)-1].Duration, models.MaxMergedSpans)
	}
	text := noticeText(sp.Notices)
	for _, want := range []string{fmt.Sprintf("%d matched, the slowest %d were merged", len(spans), models.MaxMergedSpans), "holds no samples"} {
		if !strings.Contains(text, want) {
			t.Errorf("notices lack %q:\n%s", want, text)
		}
	}
}

func TestSpanProfileOfAnUnprofiledOperationNamesTheOperationsThatAreProfiled(t *testing.T) {
	found := &OperationSpans{Service: "backend", Operation: "db_query", Traces: 2, Limit: 500,
		Spans:              []models.Span{opSpan(1, "backend", "db_query", 0, 300*time.Millisecond, false)},
		ProfiledOperations: []string{"GET /api/detect"}}
	_, err := ProfileSpans(context.Background(), &fakeProfiles{}, &models.SpanQuery{Service: "backend", Operation: "db_query", ProfileTypeID: models.DefaultProfileTypeID}, found)
	var unprofiled *UnprofiledSpansError
	if !errors.As(err, &unprofiled) || !strings.Contains(err.Error(), `operations of backend with span profiles: "GET /api/detect"`) {
		t.Errorf("error %v: should say the operation has no span profile and name the one that has", err)
	}
}

// failingSearch fails every search that starts with a live context, as a down store does.
type failingSearch struct {
	mu   sync.Mutex
	live int
}

func (f *failingSearch) SearchSpans(ctx context.Context, _ models.TraceSearchQuery) ([]models.Span, error) {
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	f.mu.Lock()
	f.live++
	f.mu.Unlock()
	return nil, errors.New("Jaeger (http://jaeger:16686): timed out (4s)")
}

// A store that fails fails the query within one round of searches, with the store's own words:
// the searches after the first failure are not sent.
func TestFindOperationSpansFailsOnceWhenTheStoreFails(t *testing.T) {
	f := &failingSearch{}
	_, err := FindOperationSpans(context.Background(), f, &models.SpanQuery{Service: "b", Limit: 500}, spanT0, spanT0.Add(time.Hour))
	if err == nil || !strings.Contains(err.Error(), "Jaeger (http://jaeger:16686): timed out") {
		t.Errorf("error %v", err)
	}
	if f.live > parallelSpanSearches {
		t.Errorf("%d searches reached the store after it failed; at most the first round of %d should", f.live, parallelSpanSearches)
	}
}

// Asked for an operation whose spans carry no span profile, the span profile query answers an
// empty profile whose warning names the operations that have one, not an error.
func TestSpanProfileOfAnUnprofiledOperationIsAnEmptyAnswerWithAdvice(t *testing.T) {
	search := &fakeSpanSearch{spans: []models.Span{
		opSpan(1, "backend", "GET /api/detect", time.Minute, 400*time.Millisecond, true),
		opSpan(1, "backend", "db_query", time.Minute, 300*time.Millisecond, false),
	}}
	q := &models.SpanQuery{Service: "backend", Operation: "db_query", ProfileTypeID: models.DefaultProfileTypeID, Limit: 10}
	sp, err := SpanProfileOf(context.Background(), search, &fakeProfiles{}, q, spanT0, spanT0.Add(time.Hour))
	if err != nil || sp.Tree != nil || len(sp.Merged) != 0 {
		t.Fatalf("span profile %+v, %v: want an empty answer", sp, err)
	}
	if text := strings.Join(sp.Notices.Texts(), "\n"); !strings.Contains(text, `operations of backend with span profiles: "GET /api/detect"`) {
		t.Errorf("notices %q should name the operation that has span profiles", text)
	}
}
