// Package tail answers "why is p99 up?": an operation's slow tail over a range, each request
// joined and diagnosed as the trace query does (correlate.JoinRequest, diagnose.Request), the
// verdicts added up against those of the operation's median requests (diagnose.Tail). It owns
// the work the requests share: one trace search for the tail and the median sample, the GPU
// and lever reads (correlate.TraceSources.Shared), a bounded fan-out of joins, and the verdicts
// kept for the next panel of the same refresh (Verdicts).
package tail

import (
	"context"
	"fmt"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/classify"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// ParallelJoins is how many requests are joined at once: the default tail's 30 joins (20 tail
// requests, 10 median ones) go in three rounds. A join of a typical request holds one or two of
// the 16 connections a data source keeps per upstream (upstream.MaxConcurrentRequests) at a time,
// so ten leave room for a dashboard's other panels; a join of a large request asks more, and
// waits for connections within its timeout like any other query.
const ParallelJoins = 10

// Query is one tail question over the panel's range.
type Query struct {
	correlate.TailSearch
	ProfileTypeID string
	From, To      time.Time
	// What every request's join takes, as the trace query's.
	Join        models.SpanMatch
	SLO         time.Duration
	Thresholds  classify.Thresholds
	SettingsErr error
}

// Sources are the stores the tail reads: the trace search, and the joins' stores.
type Sources struct {
	Search correlate.Source[correlate.SpanSearch]
	Joins  correlate.TraceSources
}

// Answer is the tail diagnosed, with what was searched and what the user must know.
type Answer struct {
	Sample    *correlate.TailSample
	Diagnosis diagnose.TailDiagnosis
	Notices   notices.List
}

// Explain chooses the operation's tail and median sample with one trace search, joins and
// diagnoses each request (at most ParallelJoins at once; a request that fails is counted, not
// fatal) and aggregates them. It fails only when the trace search does: without it there are
// no requests. verdicts, when not nil, keeps each request's verdict for the next query asking
// it over the same range (another panel of the same refresh).
func Explain(ctx context.Context, src Sources, q Query, verdicts *Verdicts) (*Answer, error) {
	search, err := src.Search.Get()
	if err != nil {
		return nil, err
	}
	sample, err := correlate.FindTail(ctx, search, q.TailSearch, q.From, q.To)
	if err != nil {
		return nil, err
	}
	ans := &Answer{Sample: sample}
	if note := sample.Found.LimitNote(); note != "" {
		ans.Notices.Warn(note)
	}
	if q.SettingsErr != nil {
		ans.Notices.Warnf("Some GPU, join or cAdvisor settings are invalid and use their defaults: %v", q.SettingsErr)
	}
	if len(sample.Found.Spans) == 0 {
		ans.Notices.Warn(correlate.NoSpans(sample.Found))
		return ans, nil
	}
	if len(sample.Tail) == 0 {
		ans.Notices.Warnf("No request of %s reached the tail's threshold (%s, %s) in the range: nothing to diagnose.",
			sample.Found.Subject(), sample.Threshold, sample.ThresholdFrom)
		return ans, nil
	}
	ans.Notices.Infof("The tail: the %d request(s) of %s at or over %s (%s), the newest %d diagnosed; compared with %d request(s) around its median (%s), from %s.",
		sample.Over, sample.Found.Subject(), sample.Threshold.Round(time.Millisecond), sample.ThresholdFrom, len(sample.Tail),
		len(sample.MedianSample), sample.Median.Round(time.Millisecond), sample.Found.Describe())

	spans := append(append([]models.Span{}, sample.Tail...), sample.MedianSample...)
	diagnosed := make([]diagnose.TailRequest, len(spans))
	joins := src.Joins.Shared()
	safe.ForEach("tail request", len(spans), ParallelJoins, func(i int) error {
		diagnosed[i] = verdicts.get(ctx, q, spans[i], func(ctx context.Context) diagnose.TailRequest {
			return diagnoseOne(ctx, joins, q, spans[i])
		})
		return nil
	})
	// A join that panicked (logged) leaves its slot empty: say so rather than count it diagnosed.
	for i := range diagnosed {
		if diagnosed[i].TraceID == "" {
			s := spans[i]
			diagnosed[i] = diagnose.TailRequest{TraceID: s.TraceID, SpanID: s.SpanID, Start: s.Start, Duration: s.Duration, Why: safe.ErrPanicked.Error()}
		}
	}
	ans.Diagnosis = diagnose.Tail(diagnosed[:len(sample.Tail)], diagnosed[len(sample.Tail):], sample.Median)
	if ans.Diagnosis.TailDiagnosed < len(sample.Tail) {
		ans.Notices.Warnf("%d of the %d tail request(s) could not be diagnosed: the shares rest on the others.",
			len(sample.Tail)-ans.Diagnosis.TailDiagnosed, len(sample.Tail))
	}
	return ans, nil
}

// diagnoseOne joins and diagnoses one request; a join that fails is a request not diagnosed,
// with the join's error as the reason.
func diagnoseOne(ctx context.Context, src correlate.TraceSources, q Query, span models.Span) diagnose.TailRequest {
	ans, err := correlate.JoinRequest(ctx, src, correlate.TraceQuery{
		TraceID: span.TraceID, ProfileTypeID: q.ProfileTypeID, From: q.From, To: q.To,
		Join: q.Join, SLO: q.SLO, Thresholds: q.Thresholds,
	})
	if err != nil {
		r := diagnose.TailRequestOf(span, nil, diagnose.Diagnosis{})
		r.Why = fmt.Sprintf("its join failed (%v)", err)
		return r
	}
	return diagnose.TailRequestOf(span, ans, diagnose.Request(ans))
}
