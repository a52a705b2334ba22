package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"slices"
	"sort"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/models"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/safe"
	"github.com/hsi-profiling/hsi-profiling-datasource/pkg/selfprofile"
)

// queryHandler answers one query of one type.
type queryHandler func(ctx context.Context, q backend.DataQuery) backend.DataResponse

// newQueryMux registers one handler per query type; anything else gets an error naming the
// valid types.
func (d *Datasource) newQueryMux() *datasource.QueryTypeMux {
	handlers := d.queryHandlers()
	mux := datasource.NewQueryTypeMux()
	valid := make([]string, 0, len(handlers))
	for queryType, h := range handlers {
		mux.HandleFunc(queryType, perQuery(queryType, h))
		valid = append(valid, queryType)
	}
	sort.Strings(valid)
	mux.HandleFunc("", perQuery("", func(_ context.Context, q backend.DataQuery) backend.DataResponse {
		what := fmt.Sprintf("unknown query type %q", q.QueryType)
		if q.QueryType == "" {
			what = "the query has no queryType"
		}
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream,
			fmt.Sprintf("%s: valid query types are %s", what, strings.Join(valid, ", ")))
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

// perQuery runs each query of a request concurrently; a failing or panicking query affects only
// its own response, never the others and never the QueryData call.
func perQuery(queryType string, h queryHandler) backend.QueryDataHandlerFunc {
	return func(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
		answers := make([]backend.DataResponse, len(req.Queries))
		safe.ForEach("query", len(req.Queries), 0, func(i int) error {
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

func runQuery(ctx context.Context, queryType string, h queryHandler, q backend.DataQuery) (r backend.DataResponse) {
	defer func() {
		if p := recover(); p != nil {
			backend.Logger.Error("query handler panicked", "queryType", queryType, "refId", q.RefID, "panic", p, "stack", string(debug.Stack()))
			r = backend.ErrDataResponseWithSource(backend.StatusInternal, backend.ErrorSourcePlugin,
				fmt.Sprintf("internal error while answering the %s query; the plugin logged the details", queryType))
		}
	}()
	// Self-profiling samples carry the query type, so this plugin can show its own hot paths.
	selfprofile.Do(ctx, queryType, func(ctx context.Context) { r = h(ctx, q) })
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

// errorResponse turns err into the query's error response: upstream failures and bad input are
// downstream errors (the user or the upstream must act), anything else is the plugin's.
func errorResponse(err error) backend.DataResponse {
	if backend.IsDownstreamError(err) {
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, err.Error())
	}
	return backend.ErrDataResponseWithSource(backend.StatusInternal, backend.ErrorSourcePlugin, err.Error())
}

// badQuery is the response to a query the user must fix.
func badQuery(queryType string, err error) backend.DataResponse {
	return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream,
		fmt.Sprintf("invalid %s query: %v", queryType, err))
}

func withFrames(f ...*data.Frame) backend.DataResponse { return backend.DataResponse{Frames: f} }
