package tail

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/diagnose"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// Verdicts keeps the requests' verdicts of recent tail queries for a short while, so that the
// panels of one dashboard refresh (the answer, the bar chart and the tables of the same tail,
// another percentile of the same endpoint: Grafana sends them one range) diagnose each request
// once: a verdict is a request's join and diagnosis, seconds of upstream work. A verdict is kept
// for the range it was made over, as the trace query's joins are shared: the next refresh asks
// anew. Only what the tail reads of a verdict is kept (its causes' figures and first line of
// evidence, about a kilobyte a cause), never the join's spans and profiles. A request asked by
// two queries at once is diagnosed once.
type Verdicts struct {
	ttl time.Duration
	max int

	flights singleflight.Group
	mu      sync.Mutex
	kept    map[string]keptVerdict
	order   []string // keys in the order kept, the oldest first
}

type keptVerdict struct {
	r    diagnose.TailRequest
	when time.Time
}

// Defaults of the verdicts an instance keeps: a refresh's panels ask within seconds of each
// other (those below the fold when scrolled to); half a minute covers a slow one. 500 verdicts
// hold a dozen dashboards' tails, in a megabyte or two.
const (
	DefaultVerdictTTL = 30 * time.Second
	DefaultVerdictMax = 500
)

// NewVerdicts keeps up to max verdicts, each for ttl.
func NewVerdicts(ttl time.Duration, max int) *Verdicts {
	return &Verdicts{ttl: ttl, max: max}
}

func (v *Verdicts) limits() (time.Duration, int) {
	ttl, most := v.ttl, v.max
	if ttl <= 0 {
		ttl = DefaultVerdictTTL
	}
	if most <= 0 {
		most = DefaultVerdictMax
	}
	return ttl, most
}

// Len is how many verdicts are kept now.
func (v *Verdicts) Len() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return len(v.kept)
}

// get is the request's verdict over the query's range: kept, being made by another query, or
// made now by diagnose.
func (v *Verdicts) get(ctx context.Context, q Query, span models.Span, diagnoseIt func(context.Context) diagnose.TailRequest) diagnose.TailRequest {
	if v == nil {
		return diagnoseIt(ctx)
	}
	key := fmt.Sprintf("%s|%s|%s|%d|%d", span.TraceID, span.SpanID, q.ProfileTypeID, q.From.UnixNano(), q.To.UnixNano())
	if r, ok := v.lookup(key); ok {
		return r
	}
	r, _, err := safe.Share(&v.flights, ctx, key, func(ctx context.Context) (diagnose.TailRequest, error) {
		r := diagnoseIt(ctx)
		if ctx.Err() != nil {
			return r, ctx.Err() // a cancelled join is not a verdict: never kept, retried alone
		}
		if r.Diagnosed() {
			v.keep(key, compact(r))
		}
		return r, nil
	})
	if err != nil && r.TraceID == "" {
		r = diagnose.TailRequest{TraceID: span.TraceID, SpanID: span.SpanID, Start: span.Start, Duration: span.Duration,
			Why: fmt.Sprintf("its join was cancelled (%v)", err)}
	}
	return r
}

func (v *Verdicts) lookup(key string) (diagnose.TailRequest, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	ttl, _ := v.limits()
	k, ok := v.kept[key]
	if !ok || time.Since(k.when) > ttl {
		return diagnose.TailRequest{}, false
	}
	return k.r, true
}

func (v *Verdicts) keep(key string, r diagnose.TailRequest) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.kept == nil {
		v.kept = map[string]keptVerdict{}
	}
	ttl, most := v.limits()
	now := time.Now()
	// Drop the expired, then the oldest beyond max.
	drop := 0
	for drop < len(v.order) {
		k, ok := v.kept[v.order[drop]]
		if ok && now.Sub(k.when) <= ttl && len(v.order)-drop < most {
			break
		}
		delete(v.kept, v.order[drop])
		drop++
	}
	v.order = v.order[drop:]
	if _, ok := v.kept[key]; !ok {
		v.order = append(v.order, key)
	}
	v.kept[key] = keptVerdict{r, now}
}

// compact is what the tail reads of a verdict (diagnose.Tail): each cause's kind, service, peer,
// title, time, span, hot function, remedy and first line of evidence.
func compact(r diagnose.TailRequest) diagnose.TailRequest {
	causes := make([]diagnose.Cause, len(r.Causes))
	for i, c := range r.Causes {
		causes[i] = diagnose.Cause{Kind: c.Kind, Title: c.Title, Service: c.Service, Peer: c.Peer, SpanID: c.SpanID,
			Explains: c.Explains, Share: c.Share, Action: c.Action, HotFunction: c.HotFunction}
		if len(c.Evidence) > 0 {
			causes[i].Evidence = []string{c.Evidence[0]}
		}
	}
	r.Causes = causes
	return r
}
