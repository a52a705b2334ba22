package plugin

import (
	"context"
	"errors"
	"sort"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// profileOfRequest answers the whole request's profile (correlate.ProfileOfRequest) once
// Pyroscope is known to be set up and the user's selector parses; q.Matchers is set here.
func (d *Datasource) profileOfRequest(ctx context.Context, q correlate.RequestProfileQuery) (*correlate.RequestProfile, error) {
	pyro, err := d.pyroscopeClient()
	if err != nil {
		return nil, err
	}
	matchers, err := models.ParseLabelSelector(q.LabelSelector)
	if err != nil {
		return nil, backend.DownstreamError(err)
	}
	q.Matchers = matchers
	rp, err := correlate.ProfileOfRequest(ctx, correlate.TracesFunc(d.traceFromJaeger), pyro, q)
	return rp, requestProfileError(err)
}

// requestProfileError files a selector that matches none of the trace's services as the user's
// to fix; the upstreams' errors come already filed.
func requestProfileError(err error) error {
	if _, ok := errors.AsType[*correlate.NoMatchingServiceError](err); ok {
		return backend.DownstreamError(err)
	}
	return err
}

func (d *Datasource) traceFromJaeger(ctx context.Context, traceID string) (*models.Trace, error) {
	jae, err := d.jaegerClient()
	if err != nil {
		return nil, err
	}
	return jae.Trace(ctx, traceID)
}

// fanOut runs fn(0..n-1) in parallel, at most correlate.MaxParallelProfileQueries at once, and
// waits. A panic in one call is logged (safe.ForEach) and leaves that call's result untouched.
func fanOut(n int, fn func(i int)) {
	safe.ForEach("parallel upstream call", n, correlate.MaxParallelProfileQueries, func(i int) error { fn(i); return nil })
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
