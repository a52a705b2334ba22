package correlate

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/notices"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
)

// MaxSearchedServices bounds the searches of a slow-request list without a service: Jaeger
// searches one service at a time.
const MaxSearchedServices = 20

// minSearchDepth is the fewest traces each search asks for (see SlowestTraces).
const minSearchDepth = 50

// SlowTracesQuery asks for the slowest requests of a service and endpoint (both optional).
type SlowTracesQuery struct {
	Service, Endpoint string
	MinDuration       time.Duration
	Start, End        time.Time
	Limit             int
}

// SlowestTraces searches the query's service (or every service, one search each, in parallel)
// for each span name the endpoint may carry, keeps each trace once and returns the slowest
// first, at most Limit. Notes say what the list may miss; it fails only when every search does.
func SlowestTraces(ctx context.Context, search TraceSearch, q SlowTracesQuery) ([]models.TraceSummary, notices.List, error) {
	var notes notices.List
	services := []string{q.Service}
	if q.Service == "" {
		all, _, err := search.Services(ctx)
		if err != nil {
			return nil, nil, err
		}
		services = searchableServices(all)
		if len(services) > MaxSearchedServices {
			notes.Infof("Searched the first %d of %d services (alphabetically); set the query's service to search another.", MaxSearchedServices, len(services))
			services = services[:MaxSearchedServices]
		}
		if len(services) == 0 {
			return nil, notices.List{{Severity: notices.Info, Text: "The trace store knows no service yet."}}, nil
		}
	}
	var searches []models.TraceSearchQuery
	// The store's limit is a search depth: the most recent traces that match, not the slowest.
	// Asking deeper than the list is long finds the slow ones among more requests.
	depth := max(2*q.Limit, minSearchDepth)
	for _, svc := range services {
		for _, op := range endpointOperations(q.Endpoint) {
			searches = append(searches, models.TraceSearchQuery{Service: svc, Operation: op, MinDuration: q.MinDuration, Start: q.Start, End: q.End, Limit: depth})
		}
	}
	found := make([][]models.TraceSummary, len(searches))
	errs := make([]error, len(searches))
	for i := range errs {
		errs[i] = safe.ErrPanicked
	}
	fanOut(len(searches), func(i int) {
		found[i], errs[i] = search.FindTraces(ctx, searches[i])
	})
	byID := map[string]models.TraceSummary{}
	var firstErr error
	failed := 0
	for i, f := range found {
		if errs[i] != nil {
			failed++
			firstErr = cmp.Or(firstErr, errs[i])
			continue
		}
		for _, t := range f {
			// Searches of different services read the store at slightly different moments:
			// keep the copy that saw the most of a trace still arriving.
			if old, ok := byID[t.TraceID]; !ok || fuller(t, old) {
				byID[t.TraceID] = t
			}
		}
	}
	if failed == len(searches) {
		return nil, notes, firstErr
	}
	if failed > 0 {
		notes.Warnf("%d of %d trace searches failed, so the list may miss traces: %v", failed, len(searches), firstErr)
	}
	out := make([]models.TraceSummary, 0, len(byID))
	for _, t := range byID {
		out = append(out, t)
	}
	slices.SortFunc(out, func(a, b models.TraceSummary) int {
		return cmp.Or(cmp.Compare(b.Duration, a.Duration), a.Start.Compare(b.Start), cmp.Compare(a.TraceID, b.TraceID))
	})
	if len(out) > q.Limit {
		out = out[:q.Limit]
	}
	arriving := 0
	for _, t := range out {
		if t.RootMissing {
			arriving++
		}
	}
	if arriving > 0 {
		have := "has"
		if arriving > 1 {
			have = "have"
		}
		notes.Infof("%d of the %d traces listed %s no root span in the trace store yet (still arriving, or the caller is not traced): duration and root service cover only the spans stored so far; ask again in a few seconds.", arriving, len(out), have)
	}
	return out, notes, nil
}

// fuller reports whether a holds more of its trace than b: its root, then more spans.
func fuller(a, b models.TraceSummary) bool {
	if a.RootMissing != b.RootMissing {
		return !a.RootMissing
	}
	return a.Spans > b.Spans
}

// searchableServices drops Jaeger's own services (it traces its own queries), which would
// otherwise list the plugin's searches among the slow requests.
func searchableServices(all []string) []string {
	var out []string
	for _, s := range all {
		if !strings.HasPrefix(s, "jaeger") {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// endpointOperations are the span names an endpoint's server spans carry: the endpoint itself (a
// span name given as is, "GET /api/detect"), or OpenTelemetry's HTTP convention "METHOD route"
// for the usual methods. Jaeger matches operations exactly, so each is one search.
func endpointOperations(endpoint string) []string {
	switch {
	case endpoint == "":
		return []string{""}
	case strings.Contains(endpoint, " "):
		return []string{endpoint}
	}
	return []string{endpoint, "GET " + endpoint, "POST " + endpoint}
}
