package correlate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// OperationSpans are the spans of one service (and operation, when given) that a trace search
// found in a range.
type OperationSpans struct {
	Service, Operation string
	// Spans are the matching spans, one per span ID, in start order.
	Spans []models.Span
	// Traces is how many traces the searches answered, Limit how many they could: the range is
	// searched in Windows parts, and in FullWindows of them the search stopped at its limit, so
	// the store holds more spans there than were read.
	Traces, Limit, Windows, FullWindows int
	// ProfiledOperations are the service's operations, in the traces read, whose spans carry a
	// span profile (the pyroscope.profile.id attribute), sorted.
	ProfiledOperations []string
}

// Truncated says whether a search stopped at its limit.
func (o *OperationSpans) Truncated() bool { return o.FullWindows > 0 }

// Describe names what was read, for notices: "412 spans of nemotron-backend db_query in 412
// traces".
func (o *OperationSpans) Describe() string {
	return fmt.Sprintf("%d span(s) of %s in %d trace(s)", len(o.Spans), o.Subject(), o.Traces)
}

// Subject names the spans asked for: "nemotron-backend db_query".
func (o *OperationSpans) Subject() string {
	if o.Operation == "" {
		return o.Service + " (every operation)"
	}
	return o.Service + " " + o.Operation
}

// LimitNote says, when a search stopped at its limit, that the answer covers part of the range.
func (o *OperationSpans) LimitNote() string {
	if !o.Truncated() {
		return ""
	}
	where := "The trace search"
	if o.Windows > 1 {
		where = fmt.Sprintf("In %d of the %d parts of the range searched separately, the trace search", o.FullWindows, o.Windows)
	}
	return fmt.Sprintf("%s stopped at its limit (%d traces in all): the spans are those of the traces it returned, not every span of the range. Raise \"limit\" (at most %d) or narrow the range.", where, o.Limit, models.MaxSpanTraces)
}

// searchWindows is how many parts of the range are searched separately. Jaeger's search stops at
// its limit keeping the newest traces (both of its APIs, on the bed), so one search of a busy
// hour can miss its first three quarters entirely and a heatmap would show no traffic there; a
// search per eighth spreads what is read over the whole range.
const (
	searchWindows        = 8
	minTracesPerWindow   = 20
	parallelSpanSearches = 4
)

// FindOperationSpans searches the traces of q's service (and operation) between from and to and
// keeps the spans of that service and operation at least q.MinDuration long that started in the
// range. The search goes through the trace store's own filters (service, operation, duration), so
// it works with any profile store; the range is searched in searchWindows parts, q.Limit traces
// in all.
func FindOperationSpans(ctx context.Context, search SpanSearch, q *models.SpanQuery, from, to time.Time) (*OperationSpans, error) {
	windows := searchWindows
	if to.Sub(from) < searchWindows*time.Second {
		windows = 1
	}
	per := max(int(q.Limit)/windows, minTracesPerWindow)
	width := to.Sub(from) / time.Duration(windows)
	answers := make([][]models.Span, windows)
	// The first failure cancels the searches not yet answered: the store is down or slow for all
	// of them, and the query must fail within one upstream timeout, not one per round of searches.
	err := safe.FailFast(ctx, "span search", windows, parallelSpanSearches, func(ctx context.Context, i int) (err error) {
		start, end := from.Add(time.Duration(i)*width), from.Add(time.Duration(i+1)*width)
		if i == windows-1 {
			end = to
		}
		answers[i], err = search.SearchSpans(ctx, models.TraceSearchQuery{
			Service: q.Service, Operation: q.Operation, MinDuration: time.Duration(q.MinDuration),
			Start: start, End: end, Limit: per,
		})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := &OperationSpans{Service: q.Service, Operation: q.Operation, Limit: per * windows, Windows: windows}
	seen := map[string]bool{}
	profiledOps := map[string]bool{}
	allTraces := map[string]bool{}
	for _, spans := range answers {
		traces := map[string]bool{}
		for _, s := range spans {
			traces[s.TraceID] = true
			allTraces[s.TraceID] = true
			if id, _ := s.ProfileID(); s.Service == q.Service && id != "" {
				profiledOps[s.Operation] = true
			}
			if s.Service != q.Service || (q.Operation != "" && s.Operation != q.Operation) ||
				s.Duration < time.Duration(q.MinDuration) || s.Start.Before(from) || s.Start.After(to) || seen[s.SpanID] {
				continue
			}
			seen[s.SpanID] = true
			out.Spans = append(out.Spans, s)
		}
		if len(traces) >= per {
			out.FullWindows++
		}
	}
	out.Traces = len(allTraces)
	out.ProfiledOperations = slices.Sorted(maps.Keys(profiledOps))
	models.SortSpans(out.Spans) // the stores answer in their own order
	return out, nil
}

// SpanHeatmapCell is one cell of a span heatmap: the spans that ended a time bucket (XMax is the
// bucket's right edge) with a duration in [YMin, YMax) seconds.
type SpanHeatmapCell struct {
	XMax       time.Time
	YMin, YMax float64
	Count      int64
}

// SpanHeatmap is an operation's span durations over time.
type SpanHeatmap struct {
	Step  time.Duration
	Cells []SpanHeatmapCell
	// Exemplars are the slowest span of each time bucket, in time order.
	Exemplars []models.Span
}

// Heatmap shape: at most maxHeatmapColumns time buckets over the range (Grafana's Pyroscope data
// source draws 64 as well); durations in buckets two per doubling, fine enough to tell 20 ms
// from 30 ms and coarse enough that a few hundred spans still make a picture.
const (
	maxHeatmapColumns  = 64
	bucketsPerDoubling = 2
)

// heatmapSteps are the time steps a span heatmap rounds up to, so buckets stay put when the
// dashboard refreshes (they are aligned to multiples of the step).
var heatmapSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// HeatmapStep is the time bucket of a span heatmap over [from, to]: at least interval (the
// panel's) and range/64, rounded up to a round step.
func HeatmapStep(from, to time.Time, interval time.Duration) time.Duration {
	want := max(interval, to.Sub(from)/maxHeatmapColumns, time.Second)
	for _, s := range heatmapSteps {
		if s >= want {
			return s
		}
	}
	return want.Round(time.Hour)
}

// DurationBucket is the duration bucket of d: [lo, hi) seconds, bounds at 2^(k/2) ms.
func DurationBucket(d time.Duration) (lo, hi float64) {
	ms := max(float64(d)/float64(time.Millisecond), 1e-3)
	k := math.Floor(math.Log2(ms) * bucketsPerDoubling)
	bound := func(k float64) float64 { return math.Pow(2, k/bucketsPerDoubling) / 1000 }
	return bound(k), bound(k + 1)
}

// BuildSpanHeatmap counts spans per time bucket (by their end: a span is seen when it finished)
// and duration bucket, and picks the slowest span of each time bucket as its exemplar.
func BuildSpanHeatmap(spans []models.Span, step time.Duration) SpanHeatmap {
	h := SpanHeatmap{Step: step}
	type key struct {
		x  int64
		lo float64
	}
	cells := map[key]*SpanHeatmapCell{}
	slowest := map[int64]models.Span{}
	for _, s := range spans {
		end := s.Start.Add(s.Duration)
		// The bucket (x-step, x] holding the end, x a multiple of step since the epoch.
		x := int64(math.Ceil(float64(end.UnixNano())/float64(step))) * int64(step)
		lo, hi := DurationBucket(s.Duration)
		k := key{x, lo}
		if cells[k] == nil {
			cells[k] = &SpanHeatmapCell{XMax: time.Unix(0, x).UTC(), YMin: lo, YMax: hi}
		}
		cells[k].Count++
		if cur, ok := slowest[x]; !ok || s.Duration > cur.Duration {
			slowest[x] = s
		}
	}
	for _, c := range cells {
		h.Cells = append(h.Cells, *c)
	}
	slices.SortFunc(h.Cells, func(a, b SpanHeatmapCell) int {
		return cmp.Or(a.XMax.Compare(b.XMax), cmp.Compare(a.YMin, b.YMin))
	})
	for _, x := range slices.Sorted(maps.Keys(slowest)) {
		h.Exemplars = append(h.Exemplars, slowest[x])
	}
	return h
}

// SpanProfile is the merged profile of an operation's slow spans.
type SpanProfile struct {
	Tree *flamegraph.Node
	// Merged are the spans whose samples were asked for, slowest first.
	Merged []models.Span
	// Matching counts the profiled spans over the threshold before the MaxMergedSpans bound.
	Matching int
	// Threshold is the duration a span had to reach (from minDuration or the percentile).
	Threshold time.Duration
	Notices   notices.List
}

// Percentile is the nearest-rank p-th percentile of the spans' durations (0 for none).
func Percentile(spans []models.Span, p float64) time.Duration {
	if len(spans) == 0 {
		return 0
	}
	d := make([]time.Duration, len(spans))
	for i, s := range spans {
		d[i] = s.Duration
	}
	slices.Sort(d)
	rank := int(math.Ceil(p / 100 * float64(len(d))))
	return d[min(max(rank, 1), len(d))-1]
}

// ProfileSpans merges the profiles of the operation's profiled spans at least as slow as the
// threshold (q.MinDuration, or q.Percentile of every span found) in one Pyroscope call with the
// list of their IDs (the pyroscope.profile.id attribute otel-profiling-go sets on the spans it
// profiles: each service's root spans). At most MaxMergedSpans spans, the slowest, are merged.
func ProfileSpans(ctx context.Context, profiles Profiles, q *models.SpanQuery, found *OperationSpans) (*SpanProfile, error) {
	sp := &SpanProfile{Threshold: time.Duration(q.MinDuration)}
	if q.Percentile > 0 {
		sp.Threshold = Percentile(found.Spans, q.Percentile)
	}
	var profiled []models.Span
	var unprofiled int
	var malformed []string
	for _, s := range found.Spans {
		id, bad := s.ProfileID()
		if bad {
			malformed = append(malformed, s.Attributes[models.ProfileIDAttribute])
		}
		if id == "" {
			unprofiled++
			continue
		}
		if s.Duration >= sp.Threshold {
			s.SpanID = id
			profiled = append(profiled, s)
		}
	}
	if len(found.Spans) == 0 {
		return nil, fmt.Errorf("the trace search found no span of %s in the range (%d trace(s) read): check the service and operation (the editor lists those the trace store knows) or widen the range", found.Subject(), found.Traces)
	}
	if len(profiled) == 0 && unprofiled > 0 {
		return nil, &UnprofiledSpansError{Found: found}
	}
	sp.Matching = len(profiled)
	slices.SortStableFunc(profiled, func(a, b models.Span) int { return cmp.Compare(b.Duration, a.Duration) })
	sp.Merged = profiled[:min(len(profiled), models.MaxMergedSpans)]
	if len(sp.Merged) == 0 {
		return nil, fmt.Errorf("none of the %s reached the threshold of %s", found.Describe(), sp.Threshold)
	}
	ids := make([]string, len(sp.Merged))
	start, end := sp.Merged[0].Start, sp.Merged[0].Start.Add(sp.Merged[0].Duration)
	for i, s := range sp.Merged {
		ids[i] = s.SpanID
		if s.Start.Before(start) {
			start = s.Start
		}
		if e := s.Start.Add(s.Duration); e.After(end) {
			end = e
		}
	}
	tree, err := profiles.MergedFlameGraph(ctx, models.FlameGraphQuery{
		ProfileTypeID: q.ProfileTypeID,
		LabelSelector: ServiceSelector(nil, q.Service),
		SpanSelector:  ids,
		Start:         start.Add(-SpanWindowPadding),
		End:           end.Add(SpanWindowPadding),
		MaxNodes:      q.MaxNodes,
	})
	if err != nil {
		return nil, err
	}
	sp.Tree = tree
	sp.Notices = sp.describe(q, found, unprofiled)
	if len(malformed) > 0 {
		sp.Notices = append(sp.Notices, notices.Notice{Severity: notices.Warning, Text: MalformedProfileIDs(malformed)})
	}
	return sp, nil
}

// MalformedProfileIDs says that spans carried a profile ID that is not a span ID, and were
// treated as unprofiled.
func MalformedProfileIDs(values []string) string {
	return fmt.Sprintf("%d span(s) carry a %s that is not a span ID (16 hex digits), for example %q: they were left out as unprofiled (the trace store may have mangled their attributes)",
		len(values), models.ProfileIDAttribute, values[0])
}

// UnprofiledSpansError says that the operation's spans carry no span profile, and which
// operations of the service do.
type UnprofiledSpansError struct {
	Found *OperationSpans
}

// ErrUnprofiledSpans is what an UnprofiledSpansError is (errors.Is): the user picked an
// operation without span profiles.
var ErrUnprofiledSpans = errors.New("the spans carry no span profile")

func (e *UnprofiledSpansError) Is(target error) bool { return target == ErrUnprofiledSpans }

func (e *UnprofiledSpansError) Error() string {
	msg := fmt.Sprintf("none of the %s carries the %s attribute, so none has a span profile: otel-profiling-go profiles the spans that start a service's work (its root spans), and their samples include their child spans'", e.Found.Describe(), models.ProfileIDAttribute)
	if ops := e.Found.ProfiledOperations; len(ops) > 0 {
		return msg + fmt.Sprintf("; operations of %s with span profiles: %s", e.Found.Service, joinQuoted(ops))
	}
	return msg
}

func joinQuoted(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	return strings.Join(quoted, ", ")
}

// describe says what was merged and how much evidence it holds.
func (sp *SpanProfile) describe(q *models.SpanQuery, found *OperationSpans, unprofiled int) notices.List {
	var wall time.Duration
	for _, s := range sp.Merged {
		wall += s.Duration
	}
	threshold := "every span"
	switch {
	case q.Percentile > 0:
		threshold = fmt.Sprintf("spans at or above p%g (%s, of %d spans found)", q.Percentile, sp.Threshold.Round(10*time.Microsecond), len(found.Spans))
	case sp.Threshold > 0:
		threshold = fmt.Sprintf("spans of at least %s", sp.Threshold)
	}
	text := fmt.Sprintf("Merged the span profiles of %d span(s) of %s (%s; %s of wall time in all)", len(sp.Merged), found.Subject(), threshold, wall.Round(time.Millisecond))
	if sp.Matching > len(sp.Merged) {
		text += fmt.Sprintf("; %d matched, the slowest %d were merged (the bound of one request)", sp.Matching, len(sp.Merged))
	}
	if unprofiled > 0 {
		text += fmt.Sprintf("; %d span(s) without %s left out", unprofiled, models.ProfileIDAttribute)
	}
	out := notices.List{{Severity: notices.Info, Text: text + "."}}
	if note := found.LimitNote(); note != "" {
		out = append(out, notices.Notice{Severity: notices.Warning, Text: note})
	}
	total := int64(0)
	if sp.Tree != nil {
		total = sp.Tree.Total
	}
	switch {
	case total == 0:
		out = append(out, notices.Notice{Severity: notices.Warning, Text: fmt.Sprintf("Pyroscope holds no samples for these %d span(s): spans shorter than the profiler's 10 ms period often get none, the profiles may not be uploaded yet (wait for the next upload, 10–60 s), or the service sends no span profiles.", len(sp.Merged))})
	case isCPUProfile(q.ProfileTypeID):
		samples := time.Duration(total) / ProfilerSampleInterval
		share := float64(total) / float64(wall)
		text := fmt.Sprintf("They hold about %d CPU sample(s) (%s of CPU at 100 Hz, %.0f%% of their wall time).", samples, time.Duration(total).Round(time.Millisecond), 100*share)
		if samples < minAggregateSamples {
			out = append(out, notices.Notice{Severity: notices.Warning, Text: text + fmt.Sprintf(" Under %d samples a function's share moves by several points from one set of spans to the next: widen the range or lower the threshold for more.", minAggregateSamples)})
		} else {
			out = append(out, notices.Notice{Severity: notices.Info, Text: text})
		}
	}
	return out
}

// minAggregateSamples is the fewest samples under which a merged profile's shares are a hint
// rather than a measurement (as for a diff's sides).
const minAggregateSamples = 100

// isCPUProfile says whether the profile type's values are CPU time in nanoseconds, whose
// samples can be counted from the total (name:cpu:nanoseconds:...).
func isCPUProfile(profileTypeID string) bool {
	parts := strings.Split(profileTypeID, ":")
	return len(parts) == 5 && parts[1] == "cpu" && parts[2] == "nanoseconds"
}

// SpanHeatmapAnswer is an operation's spans as heatmap cells, and what to say about them.
type SpanHeatmapAnswer struct {
	Found   *OperationSpans
	Heatmap SpanHeatmap
	Step    time.Duration
	Notices notices.List
}

// SpanHeatmapOf finds an operation's spans over [from, to] with the trace store's own search and
// buckets their durations per step (the panel's interval, within the heatmap's bounds).
func SpanHeatmapOf(ctx context.Context, search SpanSearch, q *models.SpanQuery, from, to time.Time, interval time.Duration) (*SpanHeatmapAnswer, error) {
	found, err := FindOperationSpans(ctx, search, q, from, to)
	if err != nil {
		return nil, err
	}
	ans := &SpanHeatmapAnswer{Found: found, Step: HeatmapStep(from, to, interval)}
	ans.Heatmap = BuildSpanHeatmap(found.Spans, ans.Step)
	if len(found.Spans) == 0 {
		ans.Notices.Warn(NoSpans(found))
		return ans, nil
	}
	ans.Notices.Infof("%s, from the trace store's search, in %s steps; exemplars: the slowest span of each step.", found.Describe(), ans.Step)
	if note := found.LimitNote(); note != "" {
		ans.Notices.Warn(note)
	}
	return ans, nil
}

// SpanProfileOf merges the profiles of an operation's spans slower than a duration or a
// percentile: one profile call with their span IDs, answering what a single short span has too
// few samples to show. No span found, or none with a span profile (an operation the profiler
// does not mark, such as a child span), is an empty profile whose notice says so and names the
// operations that have span profiles: a dashboard panel on such an operation reads as advice,
// not as an error.
func SpanProfileOf(ctx context.Context, search SpanSearch, profiles Profiles, q *models.SpanQuery, from, to time.Time) (*SpanProfile, error) {
	found, err := FindOperationSpans(ctx, search, q, from, to)
	if err != nil {
		return nil, err
	}
	if len(found.Spans) == 0 {
		sp := &SpanProfile{}
		sp.Notices.Warn(NoSpans(found))
		return sp, nil
	}
	sp, err := ProfileSpans(ctx, profiles, q, found)
	if errors.Is(err, ErrUnprofiledSpans) {
		empty := &SpanProfile{}
		empty.Notices.Warn(err.Error())
		return empty, nil
	}
	return sp, err
}

// NoSpans says why a span query found nothing.
func NoSpans(found *OperationSpans) string {
	return fmt.Sprintf("The trace search found no span of %s in the range (%d trace(s) read): check the service and operation (the editor lists those the trace store knows) or widen the range.",
		found.Subject(), found.Traces)
}
