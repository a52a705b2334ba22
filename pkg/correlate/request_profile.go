package correlate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/flamegraph"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// NoMatchingServiceError: none of the trace's services matches the user's selector, so the user
// must change the query.
type NoMatchingServiceError struct {
	TraceID, LabelSelector string
	Services               []string // the trace's, sorted
}

// ErrNoMatchingService is what a NoMatchingServiceError is (errors.Is): the user's to fix.
var ErrNoMatchingService = errors.New("no service of the trace matches the selector")

func (e *NoMatchingServiceError) Is(target error) bool { return target == ErrNoMatchingService }

func (e *NoMatchingServiceError) Error() string {
	return fmt.Sprintf("trace %s has no spans of a service matching %s (its services: %s)",
		e.TraceID, e.LabelSelector, strings.Join(e.Services, ", "))
}

// SpanWindowPadding widens the range asked of Pyroscope for span profiles. A profiler uploads its
// samples in periods (10–60 s), so a 30 ms span's samples sit in a profile stamped up to a period
// away from the span; the span filter keeps the answer exact, the padding only finds the profile.
const SpanWindowPadding = models.MaxUploadPeriod

// MaxParallelProfileQueries bounds the Pyroscope calls one query makes at once: enough for a
// request's spans to be asked in one round, few enough not to flood Pyroscope.
const MaxParallelProfileQueries = 16

// RequestProfileQuery asks for the profile of one whole request.
type RequestProfileQuery struct {
	TraceID string
	// TraceIDs, when it holds more than one, asks for the merged profile of those requests
	// (Grafana's traceIdSelector) instead of TraceID's.
	TraceIDs []string
	// LabelSelector is the user's selector as typed (the error naming it quotes it), Matchers the
	// same parsed; service_name is set per service.
	LabelSelector string
	Matchers      []*labels.Matcher
	ProfileTypeID string
	MaxNodes      int64
	// From and To are the panel's range: the trace_id fallback searches it when the trace store
	// cannot say when the trace happened.
	From, To time.Time
	// CallSite cuts every service's graph to the stacks under it, root first
	// (stackTraceSelector); nil: whole graphs.
	CallSite []string
	// FrameFilter keeps only the stacks it keeps, in every service's graph (frameFilter).
	FrameFilter models.FrameFilter
	// PerService: the caller will show one graph per service, so a notice says when the
	// services cannot be told apart.
	PerService bool
}

// cutToCallSite asks every flame graph of p cut to the call site and filtered by the frame
// filter: each service's graph is cut before it becomes a node under the request's root, where
// the call site could not match.
type cutToCallSite struct {
	Profiles
	callSite    []string
	frameFilter models.FrameFilter
}

func (c cutToCallSite) MergedFlameGraph(ctx context.Context, q models.FlameGraphQuery) (*flamegraph.Node, error) {
	q.StackTraceSelector, q.FrameFilter = c.callSite, c.frameFilter
	return c.Profiles.MergedFlameGraph(ctx, q)
}

// RequestProfile is the profile of one whole request: a root, one node per service, their stacks.
type RequestProfile struct {
	Tree     *flamegraph.Node
	Services map[string]*flamegraph.Node
	// Spans holds each profiled span's own profile, keyed by its pyroscope.profile.id, when its
	// samples were matched by span (one query per span); empty otherwise. A span asked without
	// error is present, with an empty tree when it had no samples.
	Spans      SpanProfiles
	Notices    notices.List
	Start, End time.Time // the window asked of Pyroscope
	// noTraceSamples says, after "no sample", how the trace ID was looked for (profileByTraceID).
	noTraceSamples string
}

// ProfileOfRequest reads the trace, asks for each service's span profiles in parallel and merges
// them under one root with a service level. When no span has samples it falls back to the trace
// ID (profileByTraceID); when the trace cannot be read, it goes straight to that fallback with a
// notice. It fails only when nothing can be said about the request.
func ProfileOfRequest(ctx context.Context, traces Traces, profiles Profiles, q RequestProfileQuery) (*RequestProfile, error) {
	trace, traceErr := traces.Trace(ctx, q.TraceID)
	rp, err := ProfileOfTrace(ctx, profiles, q, trace, traceErr)
	if rp != nil && traceErr == nil && trace.Partial != "" {
		// The trace query says this once on its spans; a profile asked alone says it here.
		rp.warn(fmt.Sprintf("The trace store answered part of trace %s (%s): the spans it left out, and their samples, are not in this profile.", trace.TraceID, trace.Partial))
	}
	return rp, err
}

// ProfileOfTrace is ProfileOfRequest once the trace has been read (or reading it failed with
// traceErr), so that the trace query reads the trace once for its rows and its profile.
func ProfileOfTrace(ctx context.Context, profiles Profiles, q RequestProfileQuery, trace *models.Trace, traceErr error) (*RequestProfile, error) {
	if len(q.CallSite) > 0 || !q.FrameFilter.Empty() {
		profiles = cutToCallSite{profiles, q.CallSite, q.FrameFilter}
	}
	if traceErr != nil {
		return profileByTraceID(ctx, profiles, q, nil, q.From, q.To, traceErr)
	}
	plan := PlanTraceProfile(trace, q.Matchers)
	if len(plan.Queries) == 0 {
		return nil, &NoMatchingServiceError{TraceID: q.TraceID, LabelSelector: q.LabelSelector, Services: TraceServices(trace, nil)}
	}
	var window func() (*RequestProfile, error)
	if isHeapProfile(q.ProfileTypeID) {
		// Heap samples carry no span or trace ID (Pyroscope's span profiles cover CPU and wall
		// profiles only), so the services' samples around the request are asked at once, beside
		// the span profiles, rather than after them and a trace-ID round: one round of waiting,
		// not three. The span profiles still win where a profiler labels its allocations.
		var cancel context.CancelFunc
		window, cancel = windowAsked(ctx, profiles, q, plan)
		defer cancel()
	}
	results := AskSpanProfiles(ctx, profiles, q.ProfileTypeID, q.MaxNodes, q.Matchers, plan)
	rp := newRequestProfile(plan.Start.Add(-SpanWindowPadding), plan.End.Add(SpanWindowPadding))
	var failed []SpanProfileResult
	spansWithSamples := 0
	for _, r := range results {
		if r.Err != nil {
			failed = append(failed, r)
			continue
		}
		if plan.PerSpan {
			rp.Spans[r.Query.SpanIDs[0]] = r.Tree
		}
		if !r.Tree.Empty() {
			spansWithSamples += len(r.Query.SpanIDs)
			if plan.PerSpan {
				rp.add(r.Query.Service, r.Tree) // kept in rp.Spans as it is
			} else {
				rp.move(r.Query.Service, r.Tree)
			}
		}
	}
	if len(failed) == len(results) {
		return nil, failed[0].Err
	}
	if len(failed) > 0 {
		rp.warn(fmt.Sprintf("%d of %d span-profile queries failed, so the graph lacks their samples: %v",
			len(failed), len(results), failed[0].Err))
	}
	if rp.Tree.Empty() && len(failed) == 0 && window != nil {
		return window()
	}
	if rp.Tree.Empty() && len(failed) == 0 {
		byTrace, err := profileByTraceID(ctx, profiles, q, plan.Services, rp.Start, rp.End, nil)
		if err != nil || !byTrace.Tree.Empty() {
			return byTrace, err
		}
		if isHeapProfile(q.ProfileTypeID) {
			return profileOverWindow(ctx, profiles, q, plan.Services, plan.Start, plan.End)
		}
		byTrace.warn(fmt.Sprintf("No profile samples for trace %s yet: none of its spans has span-profile samples (span_id labels, as otel-profiling-go adds) and no sample %s. Profilers upload every 10–15 s, so a request of the last seconds may not be there yet; otherwise check that its services (%s) push span profiles of type %s to this Pyroscope.",
			q.TraceID, byTrace.noTraceSamples, strings.Join(plan.Services, ", "), q.ProfileTypeID))
		return byTrace, nil
	}
	rp.info(spanMatchNotice(q.TraceID, plan, spansWithSamples, rp.Services))
	return rp, nil
}

// windowAsked starts profileOverWindow for the plan's services and returns its answer's getter,
// and the cancel that drops it when the span profiles answer instead.
func windowAsked(ctx context.Context, profiles Profiles, q RequestProfileQuery, plan TraceProfilePlan) (get func() (*RequestProfile, error), cancel context.CancelFunc) {
	ctx, cancel = context.WithCancel(ctx)
	type answer struct {
		rp  *RequestProfile
		err error
	}
	done := make(chan answer, 1)
	go func() {
		safe.GrowStack()
		a := answer{err: safe.ErrPanicked}
		defer func() { done <- a }()
		_ = safe.Do("window profile", func() error {
			a.rp, a.err = profileOverWindow(ctx, profiles, q, plan.Services, plan.Start, plan.End)
			return nil
		})
	}()
	return func() (*RequestProfile, error) { a := <-done; return a.rp, a.err }, cancel
}

// SpanProfileResult is the answer to one query of a plan.
type SpanProfileResult struct {
	Query SpanProfileQuery
	Tree  *flamegraph.Node
	Err   error
}

// AskSpanProfiles asks each query of the plan in parallel (span profiles over the spans' window
// padded by SpanWindowPadding), one result per query in plan order.
func AskSpanProfiles(ctx context.Context, profiles Profiles, profileTypeID string, maxNodes int64, matchers []*labels.Matcher,
	plan TraceProfilePlan,
) []SpanProfileResult {
	results := make([]SpanProfileResult, len(plan.Queries))
	for i := range results {
		results[i] = SpanProfileResult{Query: plan.Queries[i], Err: safe.ErrPanicked}
	}
	fanOut(len(plan.Queries), func(i int) {
		sq := plan.Queries[i]
		tree, err := profiles.MergedFlameGraph(ctx, models.FlameGraphQuery{
			ProfileTypeID: profileTypeID,
			LabelSelector: ServiceSelector(matchers, sq.Service),
			SpanSelector:  sq.SpanIDs,
			Start:         sq.Start.Add(-SpanWindowPadding),
			End:           sq.End.Add(SpanWindowPadding),
			MaxNodes:      maxNodes,
		})
		results[i] = SpanProfileResult{Query: sq, Tree: tree, Err: err}
	})
	return results
}

// Ways a request's samples are matched by its trace ID, as the notices name them.
const (
	byTraceSelector = "trace_id_selector (Pyroscope 2.x)"
	byTraceIDLabel  = "the trace_id label"
)

// profileByTraceID is the fallback when no span's samples can be found: the samples carrying the
// trace ID. First by trace_id_selector, as Pyroscope 2.x keeps each sample's trace ID (the client
// checks that the server really filters, see pyroscope.Client.MergedFlameGraph); then by the
// trace_id label, which older SDKs (the seeds' Python tag_wrapper) put on their series: the only
// way on Pyroscope 1.x and for a 2.x window refused to the selector. One query per service when
// the services are known, else one for all. traceErr, when set, is why the trace's spans could
// not be used.
func profileByTraceID(ctx context.Context, profiles Profiles, q RequestProfileQuery,
	services []string, start, end time.Time, traceErr error,
) (*RequestProfile, error) {
	traceMatcher := TraceIDMatcher(q.TraceID)
	plain, labelled := map[string]string{}, map[string]string{}
	for _, svc := range services {
		plain[svc] = ServiceSelector(q.Matchers, svc)
		labelled[svc] = ServiceSelector(q.Matchers, svc, traceMatcher)
	}
	if len(services) == 0 {
		plain[""] = Selector(q.Matchers)
		labelled[""] = Selector(append(append([]*labels.Matcher{}, q.Matchers...), traceMatcher))
	}
	bySelector, selectorErrs := profilesBySelector(ctx, profiles, q, q.TraceID, plain, start, end)
	ignored := selectorErrs.find(models.ErrTraceSelectorIgnored) != nil
	refused := selectorErrs.find(models.ErrTraceSelectorRefused)
	if !ignored && refused == nil && !bySelector.Tree.Empty() {
		return tracedProfile(q, bySelector, byTraceSelector, selectorErrs.first(), traceErr)
	}
	if split, ok := errors.AsType[*models.TraceSelectorSplitError](refused); ok && split.From.After(start) && !split.From.After(end) {
		return profileAcrossSplit(ctx, profiles, q, plain, labelled, start, split.From, end, traceErr)
	}

	byLabel, labelErrs := profilesBySelector(ctx, profiles, q, "", labelled, start, end)
	labelClause := fmt.Sprintf("carries the label trace_id=%q", q.TraceID)
	switch {
	case ignored:
		byLabel.noTraceSamples = labelClause + " (this Pyroscope ignores trace_id_selector, as 1.x does, so only the label could be asked)"
	case refused != nil:
		byLabel.noTraceSamples = fmt.Sprintf("%s (trace_id_selector could not be asked: %v)", labelClause, refused)
	default:
		byLabel.noTraceSamples = fmt.Sprintf("carries trace ID %s (asked by trace_id_selector and by the label trace_id=%q)", q.TraceID, q.TraceID)
	}
	// Errors of the selector way other than "cannot filter" are failures like any other.
	var selectorErr error
	if !ignored && refused == nil {
		selectorErr = selectorErrs.first()
	}
	found := !byLabel.Tree.Empty()
	firstErr := cmp.Or(labelErrs.first(), selectorErr)
	switch {
	case traceErr != nil && !found && firstErr == nil:
		return nil, fmt.Errorf("%w; and no profile sample in the panel's time range %s", traceErr, byLabel.noTraceSamples)
	case traceErr != nil && !found:
		return nil, errors.Join(traceErr, firstErr)
	case firstErr != nil && !found:
		return nil, firstErr
	case !found:
		return byLabel, nil
	}
	if refused != nil {
		byLabel.info(fmt.Sprintf("%v; so samples were matched by the trace_id label only.", refused))
	}
	return tracedProfile(q, byLabel, byTraceIDLabel, firstErr, traceErr)
}

// profileAcrossSplit matches a request's samples over a range that Pyroscope 2.x in v1-v2 dual
// mode serves trace_id_selector over only from its split on (models.TraceSelectorSplitError):
// by the selector over [split, end], by the trace_id label over [start, split). Samples written
// by otel-profiling-go carry their trace ID only as the column the selector reads (2.x strips
// the label, on the v1 write path too), so the label half finds only older SDKs' samples.
func profileAcrossSplit(ctx context.Context, profiles Profiles, q RequestProfileQuery,
	plain, labelled map[string]string, start, split, end time.Time, traceErr error,
) (*RequestProfile, error) {
	after, afterErrs := profilesBySelector(ctx, profiles, q, q.TraceID, plain, split, end)
	before, beforeErrs := profilesBySelector(ctx, profiles, q, "", labelled, start, split.Add(-time.Millisecond))
	rp := newRequestProfile(start, end)
	rp.absorb(after)
	rp.absorb(before)
	way := fmt.Sprintf("trace_id_selector over %s (this Pyroscope, 2.x in v1-v2 dual mode, serves it only over its v2 storage) and by the trace_id label before that, over %s,",
		timeSpan(split, end), timeSpan(start, split))
	rp.noTraceSamples = fmt.Sprintf("carries trace ID %s (asked by %s)", q.TraceID, way)
	firstErr := cmp.Or(afterErrs.first(), beforeErrs.first())
	switch found := !rp.Tree.Empty(); {
	case traceErr != nil && !found && firstErr == nil:
		return nil, fmt.Errorf("%w; and no profile sample in the panel's time range %s", traceErr, rp.noTraceSamples)
	case traceErr != nil && !found:
		return nil, errors.Join(traceErr, firstErr)
	case firstErr != nil && !found:
		return nil, firstErr
	case !found:
		return rp, nil
	}
	return tracedProfile(q, rp, way, firstErr, traceErr)
}

// timeSpan writes a range as a notice names it: "12:03:10–12:15:00 UTC", with dates where the
// ends fall on different days.
func timeSpan(from, to time.Time) string {
	from, to = from.UTC(), to.UTC()
	if from.YearDay() != to.YearDay() || from.Year() != to.Year() {
		return from.Format("2006-01-02 15:04:05") + "–" + to.Format("2006-01-02 15:04:05 UTC")
	}
	return from.Format("15:04:05") + "–" + to.Format("15:04:05 UTC")
}

// absorb merges another profile's samples: per service where it has them, else under the root.
func (rp *RequestProfile) absorb(other *RequestProfile) {
	if len(other.Services) == 0 {
		rp.Tree.Merge(other.Tree)
		return
	}
	for _, svc := range slices.Sorted(maps.Keys(other.Services)) {
		rp.add(svc, other.Services[svc])
	}
}

// tracedProfile adds the notices of a request's samples found by its trace ID, the named way.
func tracedProfile(q RequestProfileQuery, rp *RequestProfile, way string, partialErr, traceErr error) (*RequestProfile, error) {
	switch {
	case traceErr != nil && way == byTraceIDLabel:
		rp.warn(fmt.Sprintf("Could not read the trace's spans (%v); matched the samples labelled trace_id=%q in the panel's time range instead, without span detail.", traceErr, q.TraceID))
	case traceErr != nil:
		rp.warn(fmt.Sprintf("Could not read the trace's spans (%v); matched the samples of trace %s by %s in the panel's time range instead, without span detail.", traceErr, q.TraceID, way))
	case way == byTraceIDLabel:
		rp.info(fmt.Sprintf("No span of trace %s has span-profile samples; matched by the trace_id label instead (older SDKs tag samples this way): samples in %d service(s)%s.",
			q.TraceID, max(len(rp.Services), 1), serviceList(rp.Services)))
	default:
		rp.info(fmt.Sprintf("No span of trace %s has span-profile samples; matched by %s instead, which keeps each sample's trace ID: samples in %d service(s)%s.",
			q.TraceID, way, max(len(rp.Services), 1), serviceList(rp.Services)))
	}
	if partialErr != nil {
		rp.warn(fmt.Sprintf("Some trace_id queries failed, so the graph may lack samples: %v", partialErr))
	}
	if q.PerService && len(rp.Services) == 0 {
		rp.warn("perService: no per-service flame graphs, because without the trace's spans the services are not known: the samples were matched by trace ID across all services in one query, which does not say which service each came from. They need the trace's spans from the trace store (Jaeger or Tempo).")
	}
	return rp, nil
}

// isHeapProfile reports whether samples of this type come from a heap profile (Pyroscope names
// them memory:...): those are taken at allocation, outside any span's labels (Pyroscope's span
// profiles cover CPU and wall profiles only, in every SDK), so span and trace IDs do not match
// them.
func isHeapProfile(profileTypeID string) bool {
	return strings.HasPrefix(profileTypeID, "memory:")
}

// UploadPeriod is how long a profiler collects before it uploads: samples are stamped with the
// start of their period, so a request's samples sit up to one period before it. 15 s is
// pyroscope-go's default, and longer than the seeds' SDKs use.
const UploadPeriod = 15 * time.Second

// profileOverWindow is the last resort for heap profiles, whose samples no span or trace label can
// reach: each service's samples stamped in the request's upload period. It is how a request's
// allocations can be shown at all; the notice says that other requests of that period are included.
func profileOverWindow(ctx context.Context, profiles Profiles, q RequestProfileQuery,
	services []string, start, end time.Time,
) (*RequestProfile, error) {
	selectors := map[string]string{}
	for _, svc := range services {
		selectors[svc] = ServiceSelector(q.Matchers, svc)
	}
	start, end = start.Add(-UploadPeriod), end.Add(time.Second)
	rp, errs := profilesBySelector(ctx, profiles, q, "", selectors, start, end)
	err := errs.first()
	if rp.Tree.Empty() {
		if err != nil {
			return nil, err
		}
		rp.warn(fmt.Sprintf("No profile samples for trace %s: its services (%s) have no %s samples around it. Check that they push profiles of this type to this Pyroscope.",
			q.TraceID, strings.Join(services, ", "), q.ProfileTypeID))
		return rp, nil
	}
	rp.warn(fmt.Sprintf("No %s sample carries the span IDs of trace %s (heap profiles cannot record them: Pyroscope's span profiles cover CPU and wall profiles); showing what its services (%s) sampled from %s before the request to its end instead, which includes other requests of that period.",
		q.ProfileTypeID, q.TraceID, strings.Join(slices.Sorted(maps.Keys(rp.Services)), ", "), UploadPeriod))
	if err != nil {
		rp.warn(fmt.Sprintf("Some services' queries failed, so the graph may lack samples: %v", err))
	}
	return rp, nil
}

// profilesBySelector asks one flame graph per selector in parallel, of trace traceID's samples
// alone when it is set (trace_id_selector), and merges them; a selector keyed "" goes straight
// under the root (no service level). It returns the errors besides, in selector order.
func profilesBySelector(ctx context.Context, profiles Profiles, q RequestProfileQuery, traceID string, selectors map[string]string, start, end time.Time) (*RequestProfile, queryErrors) {
	keys := slices.Sorted(maps.Keys(selectors))
	results := make([]SpanProfileResult, len(keys))
	for i := range results {
		results[i].Err = safe.ErrPanicked
	}
	fanOut(len(keys), func(i int) {
		tree, err := profiles.MergedFlameGraph(ctx, models.FlameGraphQuery{
			ProfileTypeID: q.ProfileTypeID, LabelSelector: selectors[keys[i]], TraceID: traceID,
			Start: start, End: end, MaxNodes: q.MaxNodes,
		})
		results[i] = SpanProfileResult{Query: SpanProfileQuery{Service: keys[i]}, Tree: tree, Err: err}
	})
	rp := newRequestProfile(start, end)
	var errs queryErrors
	for _, r := range results {
		switch {
		case r.Err != nil:
			errs = append(errs, r.Err)
		case r.Query.Service == "":
			rp.Tree.Merge(r.Tree) // services unknown without the trace: no service level
		default:
			rp.move(r.Query.Service, r.Tree)
		}
	}
	return rp, errs
}

// queryErrors are the failed calls of one fan-out.
type queryErrors []error

func (e queryErrors) first() error {
	if len(e) == 0 {
		return nil
	}
	return e[0]
}

// find returns the first error that is target, or nil.
func (e queryErrors) find(target error) error {
	for _, err := range e {
		if errors.Is(err, target) {
			return err
		}
	}
	return nil
}

func spanMatchNotice(traceID string, plan TraceProfilePlan, spansWithSamples int, services map[string]*flamegraph.Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Whole request %s, matched by span ID: ", traceID)
	if plan.PerSpan {
		fmt.Fprintf(&b, "%d of %d profiled span(s) had samples", spansWithSamples, plan.AskedSpans)
	} else {
		fmt.Fprintf(&b, "%d span(s) asked in one query per service", plan.AskedSpans)
	}
	fmt.Fprintf(&b, ", in %d of %d service(s)%s.", len(services), len(plan.Services), serviceList(services))
	if plan.ProfiledSpans == 0 {
		b.WriteString(" No span carries pyroscope.profile.id, so every span of the trace was asked for.")
	} else if !plan.PerSpan {
		fmt.Fprintf(&b, " Spans with samples are counted per service above %d profiled spans.", MaxSpanQueries)
	}
	var missing []string
	for _, svc := range plan.Services {
		if services[svc] == nil {
			missing = append(missing, svc)
		}
	}
	if len(missing) > 0 {
		fmt.Fprintf(&b, " No samples for: %s.", strings.Join(missing, ", "))
	}
	if len(plan.Malformed) > 0 {
		b.WriteString(" " + MalformedProfileIDs(plan.Malformed) + ".")
	}
	return b.String()
}

func serviceList(services map[string]*flamegraph.Node) string {
	if len(services) == 0 {
		return ""
	}
	return " (" + strings.Join(slices.Sorted(maps.Keys(services)), ", ") + ")"
}

func newRequestProfile(start, end time.Time) *RequestProfile {
	return &RequestProfile{Tree: flamegraph.New(), Services: map[string]*flamegraph.Node{}, Spans: SpanProfiles{}, Start: start, End: end}
}

// add merges a service's samples under the service's node in the whole graph; the service's own
// graph is that node's view (flamegraph.Node.AsRoot), renewed on each add: the samples are
// copied once, not twice (Services are only read once built).
func (rp *RequestProfile) add(service string, tree *flamegraph.Node) {
	if under := rp.Tree.AddUnder(service, tree); under != nil {
		rp.Services[service] = under.AsRoot()
	}
}

// move is add for a tree nothing else holds (a profile store's answer, not kept per span): the
// first tree of a service becomes its node as it is, not copied.
func (rp *RequestProfile) move(service string, tree *flamegraph.Node) {
	if under := rp.Tree.MoveUnder(service, tree); under != nil {
		rp.Services[service] = under.AsRoot()
	}
}

func (rp *RequestProfile) info(text string) { rp.Notices.Info(text) }

func (rp *RequestProfile) warn(text string) { rp.Notices.Warn(text) }

// fanOut runs fn(0..n-1) in parallel, at most MaxParallelProfileQueries at once, and waits. A
// panic in one call is logged (safe.ForEach) and leaves that call's result untouched.
func fanOut(n int, fn func(i int)) {
	safe.ForEach("parallel upstream call", n, MaxParallelProfileQueries, func(i int) error { fn(i); return nil })
}
