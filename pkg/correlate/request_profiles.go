package correlate

import (
	"context"
	"fmt"
	"maps"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// MaxParallelRequests bounds the requests whose profiles one query reads at once: each request
// fans out its own span-profile queries (MaxParallelProfileQueries).
const MaxParallelRequests = 4

// profileOfRequests is the merged flame graph of several requests, as Grafana's Pyroscope data
// source answers a traceIdSelector of several trace IDs: each request's profile read as for one
// trace (its spans' profiles, else its trace_id label), merged per service under one root. Each
// request's notices are kept, naming it; a request that cannot be read is a warning naming it,
// and the query fails only when none can be.
func profileOfRequests(ctx context.Context, traces Traces, pyro Profiles, q RequestProfileQuery) (*RequestProfile, error) {
	ids := q.TraceIDs
	parts := make([]*RequestProfile, len(ids))
	errs := make([]error, len(ids))
	safe.ForEach("request profile", len(ids), MaxParallelRequests, func(i int) error {
		one := q
		one.TraceID, one.TraceIDs = ids[i], nil
		parts[i], errs[i] = ProfileOfRequest(ctx, traces, pyro, one)
		return nil
	})
	var out *RequestProfile
	withSamples := 0
	for i, rp := range parts {
		if errs[i] != nil || rp == nil {
			continue
		}
		if out == nil {
			out = newRequestProfile(rp.Start, rp.End)
		}
		if rp.Start.Before(out.Start) {
			out.Start = rp.Start
		}
		if rp.End.After(out.End) {
			out.End = rp.End
		}
		if !rp.Tree.Empty() {
			withSamples++
		}
		out.absorb(rp)
		maps.Copy(out.Spans, rp.Spans) // span IDs are the requests' own
		for _, n := range rp.Notices {
			out.Notices = append(out.Notices, notices.Notice{Severity: n.Severity, Text: "Trace " + ids[i] + ": " + n.Text})
		}
	}
	if out == nil {
		for i, err := range errs {
			if err != nil {
				return nil, fmt.Errorf("none of the %d requests could be read; trace %s: %w", len(ids), ids[i], err)
			}
		}
		return nil, fmt.Errorf("none of the %d requests could be read", len(ids))
	}
	for i, err := range errs {
		if err != nil {
			out.Notices.Warnf("Trace %s is left out of the merged profile: %v", ids[i], err)
		}
	}
	out.Notices.Infof("The merged profile of %d requests (traceIdSelector), %d of them with samples: each request's samples matched as for one trace.", len(ids), withSamples)
	return out, nil
}
