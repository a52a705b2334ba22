package diagnose

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
)

// TailRequest is one request of an operation's slow tail, or of its median sample, diagnosed
// with the trace query's verdict.
type TailRequest struct {
	TraceID, SpanID string
	Start           time.Time
	// Duration is the operation's span: what the tail's threshold and excess are measured on.
	Duration time.Duration
	// Causes are the verdict's causes that lie in the operation's span (the span's own and its
	// descendants'), ranked by the time each explains.
	Causes []Cause
	// Why says why the request could not be diagnosed; "" when it was.
	Why string
	// Warnings are what its join said it lacked (a store that failed, a partial trace): its
	// verdict stands on less.
	Warnings []string
}

// Diagnosed says whether the request has a verdict.
func (r TailRequest) Diagnosed() bool { return r.Why == "" }

// TailRequestOf keeps what the tail needs of one request's join and diagnosis: the causes in
// the operation's span (the rest of the trace is another operation's time), and the join's
// warnings. The answer itself can be dropped after: a tail holds many requests.
func TailRequestOf(span models.Span, ans *correlate.TraceAnswer, d Diagnosis) TailRequest {
	r := TailRequest{TraceID: span.TraceID, SpanID: span.SpanID, Start: span.Start, Duration: span.Duration}
	if ans != nil {
		for _, n := range ans.Notices {
			if n.Severity == notices.Warning {
				r.Warnings = append(r.Warnings, n.Text)
			}
		}
	}
	if ans == nil || ans.Trace == nil {
		r.Why = "its trace could not be read"
		if len(r.Warnings) > 0 {
			r.Why = r.Warnings[0]
		}
		return r
	}
	inside := subtree(ans.Trace, span.SpanID)
	for _, c := range d.Verdict {
		if c.Explains <= 0 || inside != nil && !inside[c.SpanID] {
			continue // errors off the path explain no time; other operations' time is not this one's
		}
		r.Causes = append(r.Causes, c)
	}
	if len(r.Causes) == 0 {
		r.Why = "its verdict names no cause inside the operation's span"
	}
	return r
}

// subtree is the span's ID and its descendants'; nil when the trace does not hold the span
// (then every cause counts).
func subtree(t *models.Trace, spanID string) map[string]bool {
	if !slices.ContainsFunc(t.Spans, func(s models.Span) bool { return s.SpanID == spanID }) {
		return nil
	}
	children := map[string][]string{}
	for _, s := range t.Spans {
		children[s.ParentSpanID] = append(children[s.ParentSpanID], s.SpanID)
	}
	out := map[string]bool{}
	for todo := []string{spanID}; len(todo) > 0; {
		id := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		if out[id] {
			continue
		}
		out[id] = true
		todo = append(todo, children[id]...)
	}
	return out
}

// TailCause is one cause across the tail: how often, how long, and how much of the tail's
// extra time it makes, against the same cause in the median requests.
type TailCause struct {
	Kind, Service, Peer string
	// Title, Evidence and Action are those of the cause's largest instance in the tail.
	Title, Evidence, Action string
	// HotFunction is a CPU cause's hot function, the one its instances name most (by time).
	HotFunction string
	// Requests counts the diagnosed tail requests holding the cause, First those where it ranks
	// first.
	Requests, First int
	// Total is its time over the tail's requests; Median its median over those holding it.
	Total, Median time.Duration
	// PerTail and PerMedian are its mean time per diagnosed request of the tail and of the
	// median sample (0 where absent): "0 ms at the median, 640 ms in the tail".
	PerTail, PerMedian time.Duration
	// MedianRequests counts the median requests holding it.
	MedianRequests int
	// Added is the time the cause adds to the tail: its time in the tail less what the same
	// number of median requests spend on it (never below 0). Share is Added over the tail's
	// excess (TailDiagnosis.Excess).
	Added time.Duration
	Share float64
	// StandsOut says the cause is what makes the tail: a fifth or more of its excess, at least
	// twice its time at the median.
	StandsOut bool
	// Examples are the trace IDs of the tail requests holding it, the largest instance first
	// (at most MaxTailExamples).
	Examples []string
}

// TailDiagnosis is an operation's slow tail diagnosed together.
type TailDiagnosis struct {
	// Causes are ranked by the time they add to the tail.
	Causes []TailCause
	// Tail and Median are every request asked, diagnosed or not, as given.
	Tail, Median []TailRequest
	// TailDiagnosed and MedianDiagnosed count those with a verdict.
	TailDiagnosed, MedianDiagnosed int
	// Baseline is the operation's median duration over the range; Excess the diagnosed tail
	// requests' time over it, summed: what the shares divide.
	Baseline, Excess time.Duration
	// StandsOut says some cause makes the tail (TailCause.StandsOut).
	StandsOut bool
	// Summary is the answer in one paragraph: the cause, its figures and its remedy, or that
	// nothing stands out. HowSure says what the answer rests on and why some requests could not
	// be diagnosed.
	Summary string
	HowSure []string
}

// Tail thresholds: what a cause needs to stand out, and how many requests make a tail worth
// shares (under it, one request more or less moves a share by tens of points).
const (
	standOutShare   = 0.2
	standOutRatio   = 2.0
	fewTailRequests = 5
	MaxTailExamples = 5
	// maxLackedShown is how many different warnings of the requests' joins the answer quotes.
	maxLackedShown = 3
)

// hexIDs are trace, span and profile IDs in a join's warnings: blanked, the same warning of
// different requests reads as one.
var hexIDs = regexp.MustCompile(`\b[0-9a-f]{16,32}\b`)

// Tail aggregates the diagnosed requests of a tail against those of the median sample;
// baseline is the operation's median duration over the range.
func Tail(tail, median []TailRequest, baseline time.Duration) TailDiagnosis {
	out := TailDiagnosis{Tail: tail, Median: median, Baseline: baseline}
	type key struct{ kind, service, peer string }
	type instance struct {
		c     Cause
		trace string
	}
	inTail := map[key][]instance{}
	first := map[key]int{}
	for _, r := range tail {
		if !r.Diagnosed() {
			continue
		}
		out.TailDiagnosed++
		out.Excess += max(r.Duration-baseline, 0)
		for i, c := range r.Causes {
			k := key{c.Kind, c.Service, c.Peer}
			inTail[k] = append(inTail[k], instance{c, r.TraceID})
			if i == 0 {
				first[k]++
			}
		}
	}
	atMedian := map[key]time.Duration{}
	medianHolds := map[key]int{}
	for _, r := range median {
		if !r.Diagnosed() {
			continue
		}
		out.MedianDiagnosed++
		seen := map[key]bool{}
		for _, c := range r.Causes {
			k := key{c.Kind, c.Service, c.Peer}
			atMedian[k] += c.Explains
			if !seen[k] {
				seen[k] = true
				medianHolds[k]++
			}
		}
	}
	if out.TailDiagnosed == 0 {
		out.HowSure = howSure(out)
		out.Summary = "No request of the tail could be diagnosed: " + strings.Join(out.HowSure, " ")
		return out
	}
	perMedian := func(k key) time.Duration {
		if out.MedianDiagnosed == 0 {
			return 0
		}
		return atMedian[k] / time.Duration(out.MedianDiagnosed)
	}
	// Causes the median requests have and the tail lacks make no time in the tail; they are
	// left out, the tail's own causes are ranked.
	for _, k := range slices.SortedFunc(maps.Keys(inTail), func(a, b key) int {
		return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.service, b.service), cmp.Compare(a.peer, b.peer))
	}) {
		list := inTail[k]
		slices.SortStableFunc(list, func(a, b instance) int { return cmp.Compare(b.c.Explains, a.c.Explains) })
		tc := TailCause{Kind: k.kind, Service: k.service, Peer: k.peer, Title: list[0].c.Title, Action: list[0].c.Action,
			First: first[k], PerMedian: perMedian(k), MedianRequests: medianHolds[k]}
		if len(list[0].c.Evidence) > 0 {
			tc.Evidence = list[0].c.Evidence[0]
		}
		times := make([]time.Duration, 0, len(list))
		hot := map[string]time.Duration{}
		seen := map[string]bool{}
		for _, in := range list {
			tc.Total += in.c.Explains
			times = append(times, in.c.Explains)
			if in.c.HotFunction != "" {
				hot[in.c.HotFunction] += in.c.Explains
			}
			if !seen[in.trace] {
				seen[in.trace] = true
				tc.Requests++
				if len(tc.Examples) < MaxTailExamples {
					tc.Examples = append(tc.Examples, in.trace)
				}
			}
		}
		slices.Sort(times)
		tc.Median = times[(len(times)-1)/2]
		if len(hot) > 0 {
			tc.HotFunction = slices.MaxFunc(slices.Sorted(maps.Keys(hot)), func(a, b string) int { return cmp.Compare(hot[a], hot[b]) })
		}
		tc.PerTail = tc.Total / time.Duration(out.TailDiagnosed)
		tc.Added = max(tc.Total-tc.PerMedian*time.Duration(out.TailDiagnosed), 0)
		if out.Excess > 0 {
			// The median sample's causes and the range's median duration differ a little, so a
			// cause that is the whole excess can come out a point over it.
			tc.Share = min(float64(tc.Added)/float64(out.Excess), 1)
		}
		tc.StandsOut = tc.Share >= standOutShare && float64(tc.PerTail) >= standOutRatio*float64(tc.PerMedian) && tc.Added >= minCause
		out.StandsOut = out.StandsOut || tc.StandsOut
		out.Causes = append(out.Causes, tc)
	}
	slices.SortStableFunc(out.Causes, func(a, b TailCause) int {
		return cmp.Or(cmp.Compare(b.Added, a.Added), cmp.Compare(b.Total, a.Total))
	})
	out.HowSure = howSure(out)
	out.Summary = tailSummary(out)
	return out
}

// tailSummary says the answer: the cause that makes the tail with its figures and remedy (and
// the next one that also stands out), or that nothing does.
func tailSummary(d TailDiagnosis) string {
	n := d.TailDiagnosed
	mean := d.Excess / time.Duration(n)
	if !d.StandsOut {
		largest := slices.MaxFunc(d.Causes, func(a, b TailCause) int { return cmp.Compare(a.PerTail, b.PerTail) })
		return fmt.Sprintf("Nothing stands out: the tail's %d diagnosed request(s) last on average %s more than the median request (%s), spread over causes the median requests have too; the largest, %s, takes %s per request in the tail against %s at the median.",
			n, inMs(mean), inMs(d.Baseline), largest.Title, inMs(largest.PerTail), inMs(largest.PerMedian))
	}
	var b strings.Builder
	at := slices.IndexFunc(d.Causes, func(c TailCause) bool { return c.StandsOut })
	top := d.Causes[at]
	fmt.Fprintf(&b, "%s makes the tail: %s per request at the median, %s in the tail, %.0f%% of the time the tail's %d request(s) spend over the median request (%s); it is in %d of them, first in %d.",
		capitalise(top.Title), inMs(top.PerMedian), inMs(top.PerTail), 100*top.Share, n, inMs(d.Baseline), top.Requests, top.First)
	if top.HotFunction != "" {
		fmt.Fprintf(&b, " Hot function: %s.", top.HotFunction)
	}
	if top.Action != "" {
		fmt.Fprintf(&b, " Remedy: %s.", strings.TrimSuffix(top.Action, "."))
	}
	for _, c := range d.Causes[at+1:] {
		if c.StandsOut {
			fmt.Fprintf(&b, " Next: %s (%.0f%% of the excess, %s at the median, %s in the tail).", c.Title, 100*c.Share, inMs(c.PerMedian), inMs(c.PerTail))
			break
		}
	}
	return b.String()
}

// howSure says how many requests the answer rests on and why the others have no verdict.
func howSure(d TailDiagnosis) []string {
	out := []string{fmt.Sprintf("Diagnosed %d of the %d tail request(s) asked and %d of the %d median request(s) they are compared with.",
		d.TailDiagnosed, len(d.Tail), d.MedianDiagnosed, len(d.Median))}
	why := map[string]int{}
	warned := 0
	lacked := map[string]int{} // a warning, its request's IDs blanked, by the requests it came with
	for _, r := range slices.Concat(d.Tail, d.Median) {
		if !r.Diagnosed() {
			why[r.Why]++
			continue
		}
		if len(r.Warnings) > 0 {
			warned++
		}
		seen := map[string]bool{}
		for _, w := range r.Warnings {
			if w = hexIDs.ReplaceAllString(w, "…"); !seen[w] {
				seen[w] = true
				lacked[w]++
			}
		}
	}
	for _, w := range slices.Sorted(maps.Keys(why)) {
		out = append(out, fmt.Sprintf("%d request(s) not diagnosed: %s.", why[w], strings.TrimSuffix(w, ".")))
	}
	if warned > 0 {
		// The most common first: a store that is down says so in every request.
		common := slices.SortedFunc(maps.Keys(lacked), func(a, b string) int { return cmp.Or(cmp.Compare(lacked[b], lacked[a]), cmp.Compare(a, b)) })
		var lines []string
		for _, w := range common[:min(len(common), maxLackedShown)] {
			lines = append(lines, fmt.Sprintf("%d: %s", lacked[w], strings.TrimSuffix(w, ".")))
		}
		out = append(out, fmt.Sprintf("%d diagnosed request(s) lacked a signal, so their verdicts stand on less; what their joins said, by how many requests: %s.",
			warned, strings.Join(lines, "; ")))
	}
	if d.TailDiagnosed > 0 && d.TailDiagnosed < fewTailRequests {
		out = append(out, fmt.Sprintf("Only %d tail request(s): one request more or less moves a share by tens of points; widen the range or lower the threshold.", d.TailDiagnosed))
	}
	if d.MedianDiagnosed == 0 && d.TailDiagnosed > 0 {
		out = append(out, "No median request could be diagnosed: the shares compare the tail with nothing, as if the median request spent no time on any cause.")
	}
	return out
}

// ms prints a duration in milliseconds, as the panels do.
func inMs(d time.Duration) string {
	return fmt.Sprintf("%d ms", d.Round(time.Millisecond).Milliseconds())
}

func capitalise(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
