package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/correlate"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/gputrace"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/selfprofile"
)

// queryHandler answers one query of one type: parse, one call, frames. Its error is mapped to
// the query's error response once, by the mux (errorResponse).
type queryHandler func(ctx context.Context, q backend.DataQuery) (data.Frames, error)

// queryHandlers is every query type's handler, one a line; models.QueryTypes lists the same
// types (a test checks it).
func (d *Datasource) queryHandlers() map[string]queryHandler {
	return map[string]queryHandler{
		models.QueryTypeProfile:      d.queryProfile,
		models.QueryTypeMetrics:      d.queryMetrics,
		models.QueryTypeBoth:         d.queryBoth,
		models.QueryTypeDiff:         d.queryDiff,
		models.QueryTypeTrace:        d.queryTrace,
		models.QueryTypeSlowRequests: d.querySlowRequests,
		models.QueryTypeSpanHeatmap:  d.querySpanHeatmap,
		models.QueryTypeSpanProfile:  d.querySpanProfile,
		models.QueryTypeTail:         d.queryTail,
		models.QueryTypeGPUMetrics:   d.queryGPUMetrics,
		models.QueryTypeGPUClass:     d.queryGPUClass,
		models.QueryTypeGPULocal:     d.queryGPULocal,
		models.QueryTypeKernels:      d.queryKernels,
		models.QueryTypeTriage:       d.queryTriage,
	}
}

// newQueryMux registers one handler per query type; anything else gets an error naming the
// valid types.
func (d *Datasource) newQueryMux() *datasource.QueryTypeMux {
	handlers := d.queryHandlers()
	mux := datasource.NewQueryTypeMux()
	valid := slices.Sorted(maps.Keys(handlers))
	for queryType, h := range handlers {
		mux.HandleFunc(queryType, perQuery(queryType, h))
	}
	mux.HandleFunc("", perQuery("", func(_ context.Context, q backend.DataQuery) (data.Frames, error) {
		what := fmt.Sprintf("unknown query type %q", q.QueryType)
		if q.QueryType == "" {
			what = "the query has no queryType"
		}
		return nil, backend.DownstreamError(fmt.Errorf("%s: valid query types are %s", what, strings.Join(valid, ", ")))
	}))
	return mux
}

// withModelQueryTypes gives each query without a top-level queryType the one in its model.
// Grafana's alerting sends the alert query's top-level queryType, not the model's, and rules
// written by file provisioning, the HTTP API or Terraform usually carry it only in the model;
// dashboards and Explore set both alike. A top-level queryType, when set, still decides.
func withModelQueryTypes(req *backend.QueryDataRequest) *backend.QueryDataRequest {
	var queries []backend.DataQuery
	for i, q := range req.Queries {
		if q.QueryType != "" {
			continue
		}
		var model struct {
			QueryType string `json:"queryType"`
		}
		// A model that does not decode keeps its empty type: the mux's error names the valid ones.
		if json.Unmarshal(q.JSON, &model) != nil || model.QueryType == "" {
			continue
		}
		if queries == nil {
			queries = slices.Clone(req.Queries)
		}
		queries[i].QueryType = model.QueryType
	}
	if queries == nil {
		return req
	}
	routed := *req
	routed.Queries = queries
	return &routed
}

// perQuery runs the queries of a request concurrently, at most Grafana's concurrent query
// count at once (GF_CONCURRENT_QUERY_COUNT, which Grafana sends to every plugin; 10 without it,
// as Grafana's Infinity data source does); a failing or panicking query affects only its own
// response, never the others and never the QueryData call.
func perQuery(queryType string, h queryHandler) backend.QueryDataHandlerFunc {
	return func(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
		answers := make([]backend.DataResponse, len(req.Queries))
		safe.ForEach("query", len(req.Queries), concurrentQueries(ctx), func(i int) error {
			answers[i] = runQuery(ctx, queryType, h, req.Queries[i]) // recovers its own panic, naming the query type
			return nil
		})
		res := backend.NewQueryDataResponse()
		for i, q := range req.Queries {
			res.Responses[q.RefID] = answers[i]
		}
		return res, nil
	}
}

// defaultConcurrentQueries is Grafana's own default for concurrent_query_count's fallback.
const defaultConcurrentQueries = 10

// concurrentQueries is how many queries of one request run at once.
func concurrentQueries(ctx context.Context) int {
	if n, err := backend.GrafanaConfigFromContext(ctx).ConcurrentQueryCount(); err == nil && n > 0 {
		return n
	}
	return defaultConcurrentQueries
}

func runQuery(ctx context.Context, queryType string, h queryHandler, q backend.DataQuery) (r backend.DataResponse) {
	defer func() {
		if p := recover(); p != nil {
			backend.Logger.Error("query handler panicked", "queryType", queryType, "refId", q.RefID, "panic", p, "stack", string(debug.Stack()))
			r = backend.ErrDataResponseWithSource(backend.StatusInternal, backend.ErrorSourcePlugin,
				fmt.Sprintf("internal error while answering the %s query; the plugin logged the details", queryType))
		}
	}()
	ctx = models.WithRefresh(ctx, models.Refresh{From: q.TimeRange.From, To: q.TimeRange.To})
	// Self-profiling samples carry the query type, so this plugin can show its own hot paths.
	selfprofile.Do(ctx, queryType, func(ctx context.Context) {
		frames, err := h(ctx, q)
		if err != nil {
			r = errorResponse(queryType, err)
			return
		}
		r = backend.DataResponse{Frames: frames}
	})
	return withFieldWarnings(r, models.FieldWarnings(queryType, q.JSON))
}

// withFieldWarnings tells the user which fields of the query were ignored: a warning on the first
// frame of an answer, a sentence after the error of a failed query (a misspelt field is often why
// it failed).
func withFieldWarnings(r backend.DataResponse, warnings []string) backend.DataResponse {
	if len(warnings) == 0 {
		return r
	}
	text := strings.Join(warnings, "; ")
	if r.Error != nil {
		r.Error = fmt.Errorf("%w (also: %s)", r.Error, text)
		return r
	}
	if len(r.Frames) == 0 {
		r.Frames = data.Frames{data.NewFrame("")}
	}
	f := r.Frames[0]
	if f.Meta == nil {
		f.Meta = &data.FrameMeta{}
	}
	f.Meta.Notices = append([]data.Notice{{Severity: data.NoticeSeverityWarning, Text: "Query: " + text + "."}}, f.Meta.Notices...)
	return r
}

// errorResponse turns a handler's error into the query's error response, the one place errors
// are filed: the query's own fields, a user's choice that matches nothing (a selector none of the
// trace's services matches, spans without profiles, a trace file outside its directories), an
// upstream that failed or is not set up (backend.DownstreamError) are the user's or the
// upstream's to act on; anything else is the plugin's.
func errorResponse(queryType string, err error) backend.DataResponse {
	switch {
	case errors.Is(err, models.ErrInvalidQuery):
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream,
			fmt.Sprintf("invalid %s query: %v", queryType, err))
	case usersChoice(err), backend.IsDownstreamError(err):
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, err.Error())
	}
	return backend.ErrDataResponseWithSource(backend.StatusInternal, backend.ErrorSourcePlugin, err.Error())
}

// usersChoice says whether err is one of the domain errors a user's choice causes.
func usersChoice(err error) bool {
	return errors.Is(err, correlate.ErrNoMatchingService) || errors.Is(err, correlate.ErrUnprofiledSpans) ||
		errors.Is(err, gputrace.ErrChosenFile)
}
